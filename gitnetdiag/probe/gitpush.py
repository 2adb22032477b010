"""Running the real git CLI for a probe: push, delete the throwaway branch, ls-remote.

Only two kinds of ref update are ever sent: ``<oid>:refs/heads/gitnetdiag/probe-<id>``
(create the throwaway branch) and ``:refs/heads/gitnetdiag/probe-<id>`` (delete
it). No --force, --mirror, --all or --prune. :func:`classify_git_stderr` is pure
and maps git's messages to failure kinds.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from gitnetdiag.errors import EnvironmentProblem, GitnetdiagError, NetworkError
from gitnetdiag.probe.repo import check_safe_ref
from gitnetdiag.proc import kill_group


class Protocol(StrEnum):
    """The ways a probe pushes."""

    H1 = "h1"
    H2 = "h2"
    SSH = "ssh"
    GIT = "git"

    @property
    def is_http(self) -> bool:
        return self in (Protocol.H1, Protocol.H2)


class FailureKind(StrEnum):
    """Why a git run did not succeed."""

    HUNG = "hung"
    """It did not finish within the timeout (a stall, e.g. HTTP/2 flow control)."""
    TIMEOUT = "timeout"
    """git itself reported a connection or operation timeout."""
    REFUSED = "refused"
    """TCP connection refused (nothing listening, or a REJECT rule)."""
    UNREACHABLE = "unreachable"
    """No route, unknown host."""
    RESET = "reset"
    """Connection reset or closed by the peer mid-way."""
    TLS = "tls"
    """TLS handshake or certificate verification failed."""
    AUTH = "auth"
    """Authentication failed (HTTP 401/403, SSH key refused)."""
    HOST_KEY = "host-key"
    """The SSH host key could not be verified."""
    REJECTED = "rejected"
    """The server refused the ref update (hook, permissions)."""
    INTERRUPTED = "interrupted"
    """Stopped by Ctrl-C or a signal."""
    OTHER = "other"
    """Anything else; see the last stderr line."""


_RULES: tuple[tuple[FailureKind, tuple[str, ...]], ...] = (
    (FailureKind.HOST_KEY, ("host key verification failed", "no matching host key")),
    (
        FailureKind.TLS,
        (
            "ssl certificate problem", "server certificate verification failed",
            "ssl_connect", "ssl routines", "tls connect error", "certificate verify failed",
            "ssl: no alternative certificate subject name", "gnutls",
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
    (FailureKind.REFUSED, ("connection refused",)),
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


def classify_git_stderr(stderr: str) -> FailureKind:
    """The failure kind git's stderr points to (first matching rule wins)."""
    lowered = stderr.lower()
    for kind, needles in _RULES:
        if any(needle in lowered for needle in needles):
            return kind
    return FailureKind.OTHER


def last_stderr_line(stderr: str) -> str:
    """The last non-empty line of git's stderr, progress carriage returns resolved."""
    for line in reversed(stderr.replace("\r", "\n").splitlines()):
        if line.strip():
            return line.strip()
    return ""


def error_for_failure(kind: FailureKind, url: str, line: str) -> GitnetdiagError:
    """The user-facing error for a failed git run against ``url`` (already redacted)."""
    hints = {
        FailureKind.REFUSED: ("refused", "nothing listens on that port, or a firewall rejects it"),
        FailureKind.UNREACHABLE: ("unreachable", "check the host name and the route to it"),
        FailureKind.TLS: (
            "tls-verification",
            "pass the server's CA with --ca-file (or --insecure to skip verification)",
        ),
        FailureKind.AUTH: ("auth-failed", "check --ssh-key / the HTTP credentials for this remote"),
        FailureKind.HOST_KEY: (
            "ssh-host-key", "add the server's host key to known_hosts (--ssh-known-hosts)"
        ),
        FailureKind.RESET: ("connection-reset", "a firewall or proxy closed the connection"),
        FailureKind.TIMEOUT: ("network-timeout", "the path drops packets or the server is down"),
        FailureKind.REJECTED: (
            "push-rejected", "the server refused the throwaway branch; allow gitnetdiag/probe-*"
        ),
    }
    reference, hint = hints.get(kind, ("git-failed", "run the same git command by hand"))
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

    protocol: Protocol
    """Protocol (selects http.version for HTTP)."""
    url: str
    """Remote URL as given (may hold credentials: never store it unredacted)."""
    ca_file: str | None = None
    """CA bundle for HTTPS verification."""
    insecure: bool = False
    """Skip HTTPS certificate verification."""
    ssh_command: str | None = None
    """GIT_SSH_COMMAND for SSH."""

    def config_args(self) -> list[str]:
        """``-c`` options for this transport."""
        args = ["-c", "core.hooksPath=/dev/null", "-c", "credential.interactive=never"]
        if self.protocol.is_http:
            version = "HTTP/1.1" if self.protocol is Protocol.H1 else "HTTP/2"
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
        # The environment's GIT_SSL_CAINFO beats -c http.sslCAInfo: set both.
        if self.ca_file:
            env["GIT_SSL_CAINFO"] = self.ca_file
        if self.insecure:
            env["GIT_SSL_NO_VERIFY"] = "1"
        if self.ssh_command:
            env["GIT_SSH_COMMAND"] = self.ssh_command
        if extra:
            env.update(extra)
        return env


def push_argv(transport: Transport, oid: str, branch: str) -> list[str]:
    """git push creating ``refs/heads/<branch>`` at ``oid``."""
    ref = f"refs/heads/{branch}"
    check_safe_ref(ref)
    return [
        "git", *transport.config_args(), "push", "--progress", "--no-verify",
        transport.url, f"{oid}:{ref}",
    ]


def delete_argv(transport: Transport, branch: str) -> list[str]:
    """git push deleting ``refs/heads/<branch>``."""
    ref = f"refs/heads/{branch}"
    check_safe_ref(ref)
    return ["git", *transport.config_args(), "push", "--no-verify", transport.url, f":{ref}"]


def ls_remote_argv(transport: Transport, *patterns: str) -> list[str]:
    """git ls-remote of the remote (optionally limited to patterns)."""
    return ["git", *transport.config_args(), "ls-remote", transport.url, *patterns]


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
    try:
        proc = subprocess.Popen(
            list(argv), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise EnvironmentProblem(
            "the program 'git' is not installed", hint="install the Debian package 'git'",
            reference="missing-program",
        ) from exc
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc)
        out, err = proc.communicate()
    except BaseException:
        kill_group(proc)
        proc.communicate()
        raise
    wall_s = time.monotonic() - started
    stderr = err.decode(errors="replace")
    if stderr_path is not None:
        stderr_path.write_text(stderr)
    return GitRun(
        argv=tuple(argv), exit_code=None if timed_out else proc.returncode, wall_s=wall_s,
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


def delete_outcome(run: GitRun) -> str:
    """``deleted``, ``absent`` (the branch was never created) or ``failed``."""
    if run.ok:
        return "deleted"
    if "remote ref does not exist" in run.stderr.lower():
        return "absent"
    return "failed"
