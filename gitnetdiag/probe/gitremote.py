"""``diagnose [REMOTE]``: a remote of the user's checkout, as git itself resolves it.

A remote name is read with ``git remote get-url`` (``--push`` for pushes), so
``remote.<name>.pushurl`` and the ``url.<base>.insteadOf`` / ``pushInsteadOf`` rewrites
apply exactly as for the user's own ``git push``. The URL's transport is probed; the other
transport is derived from it where the host follows the common forms
(:mod:`gitnetdiag.remotederive`) and kept only when its port accepts a TCP connection
within :data:`ANSWER_TIMEOUT_S` (a derived URL nothing answers would otherwise be a failed
protocol the user never asked for). Every choice is a note for the terminal and the report.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gitnetdiag.errors import UsageError
from gitnetdiag.probe.gitpush import secret_config_env, url_credential_split
from gitnetdiag.proc import run, scratch_dir
from gitnetdiag.redaction import redact_text, redact_url
from gitnetdiag.remotederive import Derived, classify, derive, how_to_add

ANSWER_TIMEOUT_S = 3.0
"""How long a derived transport's port may take to accept a connection."""
PUSH_CHECK_REF = "refs/heads/gitnetdiag/push-check"
"""The ref a push check asks to delete, in a dry run (nothing is sent, nothing changes), and
a derived transport's ``ls-remote`` asks for (the answer is the refs, none of them)."""
DEFAULT_REMOTE = "origin"


@dataclass(frozen=True, kw_only=True)
class ResolvedRemote:
    """The URLs a remote gives each transport option, and what was done to get them."""

    name: str
    """The remote's name as the user knows it (``origin``), "" when a URL was given."""
    urls: dict[str, str]
    """``--http`` / ``--ssh`` / ``--git`` -> URL."""
    notes: tuple[str, ...]
    """What the terminal and the report say: derived URLs, transports left out and why."""


def looks_like_url(text: str) -> bool:
    """A URL (``scheme://`` or scp-like ``user@host:path``) rather than a remote name."""
    return "://" in text or (":" in text and classify(text) is not None)


def in_checkout(cwd: Path) -> bool:
    """Whether ``cwd`` is inside a git work tree (or a bare repository)."""
    proc = run(["git", "rev-parse", "--git-dir"], cwd=cwd, check=False, timeout_s=10,
               what="git rev-parse")
    return proc.returncode == 0


def remote_url(name: str, *, push: bool, cwd: Path) -> str:
    """``git remote get-url [--push] NAME`` in ``cwd``, or one usage error."""
    argv = ["git", "remote", "get-url", *(["--push"] if push else []), name]
    proc = run(argv, cwd=cwd, check=False, timeout_s=10, what="git remote get-url")
    if proc.returncode != 0:
        known = run(["git", "remote"], cwd=cwd, check=False, timeout_s=10, what="git remote")
        names = known.stdout.split() if known.returncode == 0 else []
        if not in_checkout(cwd):
            raise UsageError(f"no remote {name!r}: {cwd} is not a git checkout",
                             reference="no-remote",
                             hint="run in the repository that is slow, or give a URL "
                             "(gitnetdiag diagnose https://host/team/repo.git)")
        raise UsageError(f"this checkout has no remote {name!r}", reference="no-remote",
                         hint=("its remotes: " + ", ".join(names)) if names
                         else "it has no remote: give a URL or --http/--ssh/--git")
    return proc.stdout.strip()


LS_REMOTE_TIMEOUT_S = 15.0
"""How long a derived transport's ``git ls-remote`` may take (connect, auth, refs)."""


def _git_env() -> dict[str, str]:
    """git never prompts; ssh runs in batch mode unless the user set their own command."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GCM_INTERACTIVE": "never", "LC_ALL": "C"}
    configured = run(["git", "config", "--get", "core.sshCommand"], check=False, timeout_s=10,
                     what="git config")
    if "GIT_SSH_COMMAND" not in env and not configured.stdout.strip():
        env["GIT_SSH_COMMAND"] = "ssh -o BatchMode=yes"
    return env


def unreachable(other: Derived) -> str | None:
    """Why a derived transport is left out, None when it serves the repository to this
    user: its port answers within :data:`ANSWER_TIMEOUT_S`, then ``git ls-remote`` (read-only;
    the user's own credentials and SSH keys, no prompt) lists its refs. A derived SSH URL the
    user has no key for, or an HTTPS one their credential helper cannot answer, is no
    transport to compare: probed, it would only fail."""
    try:
        socket.create_connection((other.host, other.port), timeout=ANSWER_TIMEOUT_S).close()
    except OSError:
        return f"{other.host} port {other.port} did not answer within {ANSWER_TIMEOUT_S:.0f} s"
    proc = run(["git", "ls-remote", "--heads", other.url, PUSH_CHECK_REF], check=False,
               timeout_s=LS_REMOTE_TIMEOUT_S, what="git ls-remote", env=_git_env())
    if proc.returncode == 0:
        return None
    said = [line.strip() for line in (proc.stderr or "").splitlines() if line.strip()]
    return "git ls-remote: " + redact_text(said[-1] if said else f"exit {proc.returncode}")


def resolve_remote(remote: str, *, push: bool, cwd: Path,
                   left_out: Callable[[Derived], str | None] = unreachable) -> ResolvedRemote:
    """The URLs of ``remote`` (a remote name of the checkout in ``cwd``, or a URL)."""
    name = "" if looks_like_url(remote) else remote
    url = remote if not name else remote_url(name, push=push, cwd=cwd)
    parsed = classify(url)
    where = f"remote {name!r}" if name else "the URL"
    if parsed is None:
        raise UsageError(f"{where} is {redact_url(url)}: not a URL gitnetdiag probes over the "
                         "network", reference="unsupported-url",
                         hint="a local path or file:// remote has no network to diagnose; "
                         "give an https://, ssh:// or git:// URL")
    urls = {parsed.option: url}
    notes = [f"{where} {redact_url(url)}" + (" (push URL)" if push and name else "")]
    derived = derive(parsed)
    for other in derived:
        why = left_out(other)
        if why is None:
            urls[other.option] = other.url
            notes.append(f"{other.note}: {redact_url(other.url)}")
        else:
            notes.append(f"{other.note} ({redact_url(other.url)}) left out: {why}")
    if not derived:
        notes.append(how_to_add(parsed.option))
    return ResolvedRemote(name=name, urls=urls, notes=tuple(notes))


PUSH_CHECK_TIMEOUT_S = 20.0
_MAY_PUSH = "remote ref does not exist"
"""git's words when receive-pack answered the dry run and checked the ref (others report it
``[deleted]`` and exit 0)."""
_REFUSED = ("403", "permission denied", "read only", "read-only", "access denied",
            "not allowed", "denied to", "forbidden", "write access")
"""Words of a server refusing receive-pack: an HTTP 403 (``The requested URL returned
error: 403``), a read-only deploy key's or an SSH server's refusal, git daemon's ``access
denied or repository not exported`` when receive-pack is not enabled."""


def push_refused(url: str) -> str | None:
    """git's words when the server refuses pushes to ``url``, else None (pushes allowed,
    or the check could not tell: the run's pushes then say what happens).

    A dry-run delete of a ref that is not there (``git push --dry-run URL :ref``): git
    opens receive-pack, reads its advertisement and stops; no pack, no ref update. No
    prompt: a credential the helper does not have is a refusal, not a question. It runs in
    an empty scratch repository: the user's checkout is not touched. A credential in the
    URL (``https://x-access-token:TOKEN@host/...``) reaches git through its environment and
    a helper answering from it, as the probes' pushes do
    (:func:`~gitnetdiag.probe.gitpush.secret_config_env`): no process's argv holds it."""
    env = _git_env()
    secret_config_env(env, (), url)
    plain, _user, _password = url_credential_split(url)
    with scratch_dir("gitnetdiag-push-check-") as scratch:
        run(["git", "init", "-q", str(scratch)], timeout_s=10, what="git init")
        proc = run(["git", "push", "--dry-run", "--porcelain", plain, f":{PUSH_CHECK_REF}"],
                   cwd=scratch, check=False, timeout_s=PUSH_CHECK_TIMEOUT_S,
                   what="git push --dry-run", env=env)
    said = " ".join(line.strip() for line in (proc.stderr or "").splitlines()
                    if line.strip().startswith(("fatal:", "error:", "remote:", "ERROR")))
    if proc.returncode == 0 or _MAY_PUSH in said:
        return None
    lowered = said.lower()
    return redact_text(said) if any(word in lowered for word in _REFUSED) else None
