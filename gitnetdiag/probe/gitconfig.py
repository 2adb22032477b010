"""The isolated config every git run of gitnetdiag reads.

A probe must reach the server the way the user's git does (credential helper,
CA bundle, proxy, extra headers, SSH command, URL rewrites), yet nothing else
of the user's config may change what is pushed: ``push.followTags`` would add
the user's tags, ``remote.pushDefault``/mirror settings other refs,
``push.pushOption`` options a server hook acts on, ``core.hooksPath`` a
pre-push hook. So the config git would see (system, global, the ``--repo``
repository's own, and ``-c``/``GIT_CONFIG_*`` from the environment) is read
once, filtered through an allowlist of transport settings, and written to one
private file that every git run gets as ``GIT_CONFIG_GLOBAL`` with
``GIT_CONFIG_NOSYSTEM=1`` (:func:`gitnetdiag.probe.gitpush.isolate_config_env`).
Entries that hold a secret (``http.extraHeader``, URLs with a password) stay
out of the file: they reach git through its environment only, so nothing
secret is left on disk, even after SIGKILL.

    user's config (all scopes) --allowlist--+--> isolated file (no secrets) --> every git run
                                            +--> secret entries (memory) --GIT_CONFIG_KEY_n--^
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from gitnetdiag.errors import ExternalCommandError
from gitnetdiag.proc import OnTimeout, run_binary
from gitnetdiag.redaction import secrets_from_url

ALLOWED_KEYS = re.compile(
    r"""^(
        credential\..+            # helpers, usernames, useHttpPath (also per URL)
      | http\..+                  # sslCAInfo, sslVerify, proxy, extraHeader, cookies (per URL too)
      | url\..+\.(insteadof|pushinsteadof)
      | core\.sshcommand | ssh\.variant | core\.gitproxy | core\.askpass
      | protocol\..+              # protocol.version, protocol.<name>.allow
      | safe\.directory           # the lab's clients rely on it (system config)
    )$""",
    re.VERBOSE,
)
"""Keys (as ``git config --list`` prints them, lowercased) that reach the server the
user's way and cannot add refs or change what is pushed."""

_CONFIG_TIMEOUT_S = 30.0


def filter_config(entries: list[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
    """Keep the allowed ``(key, value)`` entries, in order (multi-valued keys such as
    ``credential.helper`` keep their order; an empty value still resets the list)."""
    return [(key, value) for key, value in entries if ALLOWED_KEYS.match(key.lower())]


def parse_config_list(output: bytes) -> list[tuple[str, str | None]]:
    """``git config --list -z`` output -> ``(key, value)``; a key without ``=`` is None."""
    entries: list[tuple[str, str | None]] = []
    for item in output.decode(errors="surrogateescape").split("\0"):
        if not item:
            continue
        key, newline, value = item.partition("\n")
        entries.append((key, value if newline else None))
    return entries


def _quote(value: str) -> str:
    escaped = (value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
               .replace("\t", "\\t"))
    return f'"{escaped}"'


def render_config(entries: list[tuple[str, str | None]]) -> str:
    """A config file holding exactly ``entries`` (one section header per entry keeps
    the order of multi-valued keys across sections)."""
    lines = ["# gitnetdiag: the user's transport settings only (see gitnetdiag.probe.gitconfig)"]
    for key, value in entries:
        section, _, rest = key.partition(".")
        subsection, dot, name = rest.rpartition(".")
        if not dot:
            subsection, name = "", rest
        if subsection:
            sub = subsection.replace("\\", "\\\\").replace('"', '\\"')
            lines.append(f'[{section} "{sub}"]')
        else:
            lines.append(f"[{section}]")
        lines.append(f"\t{name}" if value is None else f"\t{name} = {_quote(value)}")
    return "\n".join(lines) + "\n"


def read_user_config(repo: Path | None, env: dict[str, str] | None = None) -> bytes:
    """Every config entry git would apply for ``repo`` (or outside any repository)."""
    argv = ["git", "config", "--list", "--includes", "-z"]
    run_env = dict(os.environ if env is None else env)
    cwd = repo if repo is not None else Path("/")
    if repo is None:
        # Outside a repository git still reads system, global and command scopes.
        run_env["GIT_CEILING_DIRECTORIES"] = "/"
    proc = run_binary(argv, what="git config --list", cwd=cwd, env=run_env,
                      timeout_s=_CONFIG_TIMEOUT_S, missing_hint="install the Debian package 'git'",
                      on_timeout=OnTimeout(
                          hint="check the include.path files of your git config"))
    # Exit 1 with no output: no config file at all.
    if proc.returncode not in (0, 1):
        line = proc.stderr.decode(errors="replace").strip().splitlines()
        raise ExternalCommandError(
            f"cannot read your git config: {line[-1] if line else proc.returncode}",
            hint="fix the config file git names (git config --list shows the same error)",
            reference="git-config",
        )
    return proc.stdout


def _holds_secret(key: str, value: str | None) -> bool:
    subsection = key.partition(".")[2].rpartition(".")[0]
    return (key.lower().endswith(".extraheader") or bool(secrets_from_url(value or ""))
            or bool(secrets_from_url(subsection)))


def split_secret_entries(entries: list[tuple[str, str | None]]
                         ) -> tuple[list[tuple[str, str | None]], list[tuple[str, str | None]]]:
    """(entries for the file, entries that hold a secret): ``http.extraHeader`` values and
    anything carrying a URL with a password or token (a proxy, an ``insteadOf``). Every
    entry of a key that has one secret goes with it, so a multi-valued key (extraHeader,
    where an empty value resets the list) keeps its order."""
    secret_keys = {key.lower() for key, value in entries if _holds_secret(key, value)}
    public = [(k, v) for k, v in entries if k.lower() not in secret_keys]
    secret = [(k, v) for k, v in entries if k.lower() in secret_keys]
    return public, secret


@dataclass(frozen=True, kw_only=True)
class IsolatedConfig:
    """The isolated config: a file without secrets, and the secret entries, which reach
    git only through its environment (``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``)."""

    path: Path
    """The file every git run reads as its global config (no secret in it)."""
    secret_entries: tuple[tuple[str, str | None], ...] = field(default=(), repr=False)
    """Entries kept in memory only (:func:`split_secret_entries`)."""


def write_isolated_config(dest: Path, repo: Path | None = None) -> IsolatedConfig:
    """Write the filtered config, less its secrets, to ``dest`` (0600 all the same)."""
    public, secret = split_secret_entries(filter_config(parse_config_list(
        read_user_config(repo))))
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(render_config(public))
    return IsolatedConfig(path=dest, secret_entries=tuple(secret))
