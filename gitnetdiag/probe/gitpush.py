"""Running the real git CLI for a probe: push, delete the throwaway branch, ls-remote.

Only two kinds of ref update are ever sent: ``<oid>:refs/heads/gitnetdiag/probe-<id>``
(create the throwaway branch) and ``:refs/heads/gitnetdiag/probe-<id>`` under a lease
on the pushed object (delete it, and nothing else). No --force, --mirror, --all or
--prune; the user's config cannot add tags, submodules, push options or hooks
(:data:`PUSH_SAFETY_CONFIG`, and :mod:`gitnetdiag.probe.gitconfig` for the rest).
:func:`classify_git_stderr` is pure and maps git's messages to failure kinds.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from gitnetdiag.errors import GitnetdiagError, NetworkError
from gitnetdiag.outcomes import FailureKind as FailureKind  # re-exported: probes classify
from gitnetdiag.probe.repo import check_safe_ref
from gitnetdiag.proc import kill_group, start
from gitnetdiag.rundir.failures import FAILURE_HINTS, GENERIC_FAILURE, failure_hint
from gitnetdiag.safefile import keep_file
from gitnetdiag.vocabulary import TransportKind

_RULES: tuple[tuple[FailureKind, tuple[str, ...]], ...] = (
    (
        FailureKind.HOST_KEY,
        (
            "host key verification failed", "no matching host key", "host key is known",
            "remote host identification has changed",
        ),
    ),
    # Before TLS: the client's TLS library meeting a plain-HTTP answer (GnuTLS, OpenSSL).
    (
        FailureKind.PLAIN_HTTP,
        ("an unexpected tls packet was received", "wrong version number"),
    ),
    (
        FailureKind.TLS,
        (
            "ssl certificate problem", "server certificate verification failed",
            "ssl_connect", "ssl routines", "tls connect error", "certificate verify failed",
            "ssl: no alternative certificate subject name", "gnutls",
            "problem with the ssl ca cert",
        ),
    ),
    (
        FailureKind.AUTH,
        (
            "permission denied (publickey", "authentication failed", "could not read username",
            "returned error: 401", "returned error: 403", "http 401", "http 403",
            "terminal prompts disabled", "permission denied, please try again",
        ),
    ),
    # An answered request: git then also says "the remote end hung up unexpectedly", which
    # is the consequence of the status, not a reset.
    (FailureKind.HTTP_STATUS, ("rpc failed; http ", "the requested url returned error: ")),
    # curl 7.8x+ says "Failed to connect to H port P after N ms: Couldn't connect to
    # server" for a refused port and drops the errno text.
    (
        FailureKind.REFUSED,
        ("connection refused", "couldn't connect to server", "could not connect to server"),
    ),
    (
        FailureKind.UNREACHABLE,
        (
            "no route to host", "network is unreachable", "could not resolve host",
            "name or service not known", "temporary failure in name resolution",
            "unable to look up", "could not resolve hostname",
        ),
    ),
    # curl 7.88 says only this for a refused connection (errno text when it has one wins).
    (FailureKind.REFUSED, ("couldn't connect to server",)),
    # An answer that is not git's protocol (an HTML page, garbage pkt-lines): git then also
    # says "the remote end hung up unexpectedly", the consequence, not a reset.
    (FailureKind.OTHER, ("protocol error: ",)),
    (
        FailureKind.RESET,
        (
            "connection reset", "recv failure", "send failure", "broken pipe",
            "the remote end hung up unexpectedly", "connection closed by",
            "empty reply from server", "unexpected disconnect", "early eof",
            "http/2 stream", "remote end hung up",
        ),
    ),
    (FailureKind.TIMEOUT, ("timed out", "timeout")),
    (
        FailureKind.REJECTED,
        ("[remote rejected]", "pre-receive hook declined", "! [rejected]", "denied"),
    ),
)


_HTTP_STATUS_RE = re.compile(r"RPC failed; HTTP (\d{3})|returned error: (\d{3})")


def http_status_of(stderr: str) -> int | None:
    """The HTTP status git reported for a failed request (``RPC failed; HTTP 308``,
    ``The requested URL returned error: 502``), None when it reported none."""
    match = _HTTP_STATUS_RE.search(stderr)
    if match is None:
        return None
    return int(match.group(1) or match.group(2))


def classify_git_stderr(stderr: str) -> FailureKind:
    """The failure kind git's stderr points to (first matching rule wins)."""
    lowered = stderr.lower()
    for kind, needles in _RULES:
        if any(needle in lowered for needle in needles):
            return kind
    return FailureKind.OTHER


_BOILERPLATE = (
    "please make sure you have the correct access rights", "and the repository exists.",
    "fatal: could not read from remote repository.", "error: failed to push some refs",
)


def failure_line(stderr: str) -> str:
    """The stderr line that says why git failed: the one that decided the failure kind,
    else the last line that is not git's generic "make sure you have access" epilogue."""
    lines = [line.strip() for line in stderr.replace("\r", "\n").splitlines() if line.strip()]
    kind = classify_git_stderr(stderr)
    for rule_kind, needles in _RULES:
        if rule_kind is kind:
            for line in lines:
                if any(needle in line.lower() for needle in needles):
                    return line
    for line in reversed(lines):
        if not line.lower().startswith(_BOILERPLATE):
            return line
    return lines[-1] if lines else ""


def last_stderr_line(stderr: str) -> str:
    """The last non-empty line of git's stderr, progress carriage returns resolved."""
    for line in reversed(stderr.replace("\r", "\n").splitlines()):
        if line.strip():
            return line.strip()
    return ""


def error_for_failure(kind: FailureKind, url: str, line: str) -> GitnetdiagError:
    """The user-facing error for a failed git run against ``url`` (already redacted)."""
    reference = FAILURE_HINTS.get(kind, GENERIC_FAILURE)[0]
    hint = failure_hint(kind.value, line)
    return NetworkError(f"{url}: {line or kind.value}", hint=hint, reference=reference)


@dataclass(frozen=True, kw_only=True)
class GitRun:
    """Outcome of one git invocation."""

    argv: tuple[str, ...]
    """The command line (URLs inside are not redacted: do not store it as is)."""
    exit_code: int | None
    """Exit code, None when killed after the timeout."""
    wall_s: float
    """Wall time from start to exit or kill."""
    timed_out: bool
    """True when the timeout expired and the run was killed."""
    stderr: str
    """Everything git wrote to stderr."""
    stdout: str
    """Everything git wrote to stdout."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def failure_kind(self) -> FailureKind | None:
        if self.timed_out:
            return FailureKind.HUNG
        if self.exit_code == 0:
            return None
        return classify_git_stderr(self.stderr)


@dataclass(frozen=True, kw_only=True)
class Transport:
    """How to reach one remote with one protocol."""

    protocol: TransportKind
    """Protocol (selects http.version for HTTP)."""
    url: str
    """Remote URL as given (may hold credentials: never store it unredacted)."""
    ca_file: str | None = None
    """CA bundle for HTTPS verification."""
    insecure: bool = False
    """Skip HTTPS certificate verification."""
    ssh_command: str | None = None
    """GIT_SSH_COMMAND for SSH."""
    global_config: str | None = None
    """The isolated global config file every git run reads instead of the user's system
    and global config (:func:`gitnetdiag.probe.gitconfig.write_isolated_config`)."""
    secret_config: tuple[tuple[str, str | None], ...] = field(default=(), repr=False)
    """Config entries holding secrets (extraHeader): given to git in its environment."""

    @property
    def command_url(self) -> str:
        """The URL as git's command line gets it: without the password or token of its
        user part, which reach git through its environment (:meth:`env`)."""
        return url_credential_split(self.url)[0] if self.protocol.is_http else self.url

    def config_args(self) -> list[str]:
        """``-c`` options for this transport."""
        args = [*PUSH_SAFETY_CONFIG, "-c", "credential.interactive=never"]
        if self.protocol.is_http:
            version = "HTTP/1.1" if self.protocol is TransportKind.H1 else "HTTP/2"
            args += ["-c", f"http.version={version}"]
            if self.ca_file:
                args += ["-c", f"http.sslCAInfo={self.ca_file}"]
            if self.insecure:
                args += ["-c", "http.sslVerify=false"]
        return args

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env["GIT_TERMINAL_PROMPT"] = "0"
        env["LC_ALL"] = "C"
        for name in ("GIT_TRACE2_EVENT", "GIT_TRACE_CURL", "GIT_TRACE", "SSLKEYLOGFILE"):
            env.pop(name, None)
        if self.global_config:
            isolate_config_env(env, self.global_config)
        # The environment's GIT_SSL_CAINFO beats -c http.sslCAInfo: set both.
        if self.ca_file:
            env["GIT_SSL_CAINFO"] = self.ca_file
        if self.insecure:
            env["GIT_SSL_NO_VERIFY"] = "1"
        if self.ssh_command:
            env["GIT_SSH_COMMAND"] = self.ssh_command
        if self.protocol.is_http:
            secret_config_env(env, self.secret_config, self.url)
        if extra:
            env.update(extra)
        return env


CREDENTIAL_HELPER = (
    '!f() { test "$1" = get || exit 0; printf "username=%s\\n" "$GITNETDIAG_USERNAME"; '
    'test -z "$GITNETDIAG_PASSWORD" || printf "password=%s\\n" "$GITNETDIAG_PASSWORD"; }; f'
)
"""A credential helper answering from the environment git inherits from gitnetdiag:
neither the helper's command line nor any file holds the password."""


def url_credential_split(url: str) -> tuple[str, str | None, str | None]:
    """(URL without its secret, user name, password) of an HTTP(S) URL (pure).

    ``user:password@`` keeps ``user@`` (git then asks its helper for the password at
    once, as it uses a password in the URL); a bare ``token@`` user is removed whole.
    """
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:
        return url, None, None
    if username is None or parts.scheme.lower() not in ("http", "https"):
        return url, None, None
    host = parts.netloc.rpartition("@")[2]
    user_part = parts.netloc.rpartition("@")[0].partition(":")[0]
    netloc = f"{user_part}@{host}" if password is not None else host
    return (parts._replace(netloc=netloc).geturl(), unquote(username),
            unquote(password) if password is not None else None)


def secret_config_env(env: dict[str, str], entries: Sequence[tuple[str, str | None]],
                      url: str) -> None:
    """Add ``entries`` and the URL's credential to ``env`` as command-scope config
    (``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``): git reads them
    after the isolated file, and no file or command line holds them."""
    pairs = [(key, "true" if value is None else value) for key, value in entries]
    _url, username, password = url_credential_split(url)
    if username is not None:
        # Only this helper answers: with the password in the URL git asked no helper.
        pairs += [("credential.helper", ""), ("credential.helper", CREDENTIAL_HELPER)]
        env["GITNETDIAG_USERNAME"] = username
        env["GITNETDIAG_PASSWORD"] = password or ""
    if not pairs:
        return
    base = int(env.get("GIT_CONFIG_COUNT", "0") or 0)
    for n, (key, value) in enumerate(pairs, start=base):
        env[f"GIT_CONFIG_KEY_{n}"] = key
        env[f"GIT_CONFIG_VALUE_{n}"] = value
    env["GIT_CONFIG_COUNT"] = str(base + len(pairs))


PUSH_SAFETY_CONFIG = (
    "-c", "core.hooksPath=/dev/null", "-c", "push.followTags=false",
    "-c", "push.recurseSubmodules=no", "-c", "push.pushOption=", "-c", "push.gpgSign=false",
    "-c", "push.negotiate=false",
)
"""Whatever config is in force, a push sends the one ref update it names: no tags,
submodules, push options, signatures or client hooks (``push.pushOption=`` empties the
list)."""

_PUSH_FLAGS = ("--no-verify", "--no-follow-tags", "--no-recurse-submodules", "--no-signed")

_CONFIG_ENV_DROP = ("GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_DIR",
                    "GIT_WORK_TREE", "GIT_NAMESPACE")


def isolate_config_env(env: dict[str, str], global_config: str) -> None:
    """Make ``env`` read only ``global_config``: no system config, no user global config,
    no config injected through the environment (it was folded into the file already)."""
    for name in [n for n in env if n.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))]:
        del env[name]
    for name in _CONFIG_ENV_DROP:
        env.pop(name, None)
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["GIT_CONFIG_GLOBAL"] = global_config


def push_argv(transport: Transport, oid: str, branch: str) -> list[str]:
    """git push creating ``refs/heads/<branch>`` at ``oid``."""
    ref = f"refs/heads/{branch}"
    check_safe_ref(ref)
    return [
        "git", *transport.config_args(), "push", "--progress", *_PUSH_FLAGS,
        transport.command_url, f"{oid}:{ref}",
    ]


def delete_argv(transport: Transport, branch: str, expected_oid: str) -> list[str]:
    """git push deleting ``refs/heads/<branch>`` only while it still points at
    ``expected_oid`` (the lease): a delete can never remove anything but our push."""
    ref = f"refs/heads/{branch}"
    check_safe_ref(ref)
    if len(expected_oid) not in (40, 64) or not all(c in "0123456789abcdef" for c in expected_oid):
        raise ValueError(f"not a full object id: {expected_oid!r}")
    return [
        "git", *transport.config_args(), "push", *_PUSH_FLAGS,
        f"--force-with-lease={ref}:{expected_oid}", transport.command_url, f":{ref}",
    ]


_WRITING_RE = re.compile(
    r"Writing objects: +\d+% \((\d+)/(\d+)\), ([\d.]+) (bytes|KiB|MiB|GiB)")
_TOTAL_RE = re.compile(r"^Total (\d+) ", re.MULTILINE)
_PROGRESS_UNITS = {"bytes": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


@dataclass(frozen=True, kw_only=True)
class PackProgress:
    """What git push's progress says it wrote into the connection."""

    objects: int | None
    """Objects in the pack (``Total N``), None when the pack was not finished."""
    written_bytes: int | None
    """Bytes of pack written (``Writing objects: ..., X MiB``; git rounds it), None when
    git printed no such line."""

    @property
    def pack_finished(self) -> bool:
        """The whole pack was handed to the transport, so the server may apply the push."""
        return self.objects is not None


def parse_pack_progress(stderr: str) -> PackProgress:
    """Read ``Writing objects`` and ``Total`` from git push's stderr (``--progress``)."""
    text = stderr.replace("\r", "\n")
    written = None
    for match in _WRITING_RE.finditer(text):
        written = int(float(match.group(3)) * _PROGRESS_UNITS[match.group(4)])
    total = _TOTAL_RE.search(text)
    return PackProgress(objects=int(total.group(1)) if total else None, written_bytes=written)


def ls_remote_argv(transport: Transport, *patterns: str) -> list[str]:
    """git ls-remote of the remote (optionally limited to patterns)."""
    return ["git", *transport.config_args(), "ls-remote", transport.command_url, *patterns]


def run_git(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout_s: float,
    stderr_path: Path | None = None,
) -> GitRun:
    """Run git in its own session with a timeout; a timeout kills the whole group.

    A KeyboardInterrupt while waiting kills the group too and propagates.
    """
    started = time.monotonic()
    proc = start(argv, isolate="session", cwd=cwd, env=env,
                 missing_hint="install the Debian package 'git'")
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc)
        out, err = proc.communicate()
    except KeyboardInterrupt as exc:
        kill_group(proc)
        out, err = proc.communicate()
        partial = _git_run(argv, proc.returncode, started, False, out, err, stderr_path)
        raise GitInterrupted(partial) from exc
    except BaseException:
        kill_group(proc)
        proc.communicate()
        raise
    return _git_run(argv, None if timed_out else proc.returncode, started, timed_out, out, err,
                    stderr_path)


class GitInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM while git ran: the group was killed; ``run`` holds what git wrote
    until then (whether the pack was finished decides what the clean-up must wait for)."""

    def __init__(self, run: GitRun) -> None:
        super().__init__()
        self.run = run


def _git_run(argv: Sequence[str], exit_code: int | None, started: float, timed_out: bool,
             out: bytes, err: bytes, stderr_path: Path | None) -> GitRun:
    stderr = err.decode(errors="replace")
    if stderr_path is not None:  # a full run directory: the run's manifest says so
        keep_file(stderr_path, stderr.encode())
    return GitRun(
        argv=tuple(argv), exit_code=exit_code, wall_s=time.monotonic() - started,
        timed_out=timed_out, stderr=stderr, stdout=out.decode(errors="replace"),
    )


def parse_ls_remote(stdout: str) -> dict[str, str]:
    """``ref -> oid`` from ``git ls-remote`` output."""
    refs: dict[str, str] = {}
    for line in stdout.splitlines():
        parts = line.split("\t", 1)
        if len(parts) == 2:
            refs[parts[1].strip()] = parts[0].strip()
    return refs


