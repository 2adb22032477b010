"""A git remote's URL as transports: which one it is, and the others derived from it. Pure.

``gitnetdiag diagnose origin`` probes what the checkout's remote names (its URL as
``git remote get-url`` gives it, ``insteadOf`` rewrites applied). One URL is one transport;
the comparison the diagnosis rests on needs the others. Hosting services serve the same
repository at the same path over HTTPS and SSH (``https://host/team/repo.git`` and
``git@host:team/repo.git``, the SSH login ``git``), so where the URL has one of these common
forms the other is derived and *marked derived*: the command probes a derived transport only
when its port answers, and the report says which URL was derived from which. A form with no
counterpart (a path under a user's home, ``~user/repo``; a relative scp-like path; git://,
which hosts rarely serve) derives nothing, and the report says how to add the others.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

_SCP_LIKE = re.compile(r"(?:(?P<user>[^@/\s]+)@)?(?P<host>[^@/:\s\[\]]+|\[[^\]\s]+\]):"
                       r"(?P<path>[^\s]*)")
_SSH_SCHEMES = frozenset({"ssh", "git+ssh", "ssh+git"})
DERIVED_SSH_USER = "git"
"""The SSH login of a derived SSH URL: the one GitHub, GitLab, Bitbucket and Gitea document
for their SSH clone URLs (``git@host:owner/repo.git``)."""


@dataclass(frozen=True, kw_only=True)
class RemoteUrl:
    """A remote URL read as one transport."""

    option: str
    """The command-line option that takes it: ``--http``, ``--ssh`` or ``--git``."""
    host: str
    """Host name or address (an IPv6 address without its brackets)."""
    path: str
    """The repository's path on the host, with its leading ``/``."""
    url: str
    """The URL as given."""


@dataclass(frozen=True, kw_only=True)
class Derived:
    """A transport's URL derived from another's, to be probed only when its port answers."""

    option: str
    """``--http`` or ``--ssh``."""
    url: str
    """The derived URL."""
    host: str
    port: int
    """Where the derived transport listens by default (443 for HTTPS, 22 for SSH)."""
    note: str
    """What the terminal and the report say of it ("SSH URL derived from the HTTPS remote")."""


def classify(url: str) -> RemoteUrl | None:
    """``url`` as one transport, None when it is none git pushes over the network (a local
    path, ``file://``, a foreign scheme)."""
    if "://" not in url:
        found = _SCP_LIKE.fullmatch(url)
        if found is None or "/" in found.group("host"):
            return None
        path = found.group("path")
        return RemoteUrl(option="--ssh", host=found.group("host").strip("[]"),
                         path=path if path.startswith("/") else "/" + path, url=url)
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    option = ("--http" if scheme in ("http", "https") else "--ssh" if scheme in _SSH_SCHEMES
              else "--git" if scheme == "git" else None)
    if option is None or not host:
        return None
    return RemoteUrl(option=option, host=host, path=parts.path or "/", url=url)


def _derivable_path(remote: RemoteUrl) -> bool:
    """A path the other transport serves alike: absolute, no home-directory form, a
    repository below the host's root."""
    return (remote.path.startswith("/") and not remote.path.startswith("/~")
            and remote.path.strip("/") != "")


def _host_in_url(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def derive(remote: RemoteUrl) -> tuple[Derived, ...]:
    """The other transport of a URL in one of the common forms (HTTPS <-> SSH), none for
    git:// or a path with no counterpart."""
    if not _derivable_path(remote):
        return ()
    host = _host_in_url(remote.host)
    if remote.option == "--http":
        return (Derived(option="--ssh", url=f"ssh://{DERIVED_SSH_USER}@{host}{remote.path}",
                        host=remote.host, port=22,
                        note="SSH URL derived from the HTTPS remote"),)
    if remote.option == "--ssh":
        return (Derived(option="--http", url=f"https://{host}{remote.path}", host=remote.host,
                        port=443, note="HTTPS URL derived from the SSH remote"),)
    return ()


def how_to_add(given: str) -> str:
    """The hint of a remote whose other transports could not be derived."""
    others = [o for o in ("--http", "--ssh") if o != given]
    return ("only this transport was probed: give " + " and ".join(others)
            + " with the other URLs of the same repository to compare transports")

