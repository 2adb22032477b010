"""Remote URLs checked before anything runs, for the command line and ``watch.yaml`` alike.

Pure: one :class:`~gitnetdiag.errors.UsageError` names what is wrong with a URL (not UTF-8,
a foreign scheme, no host, a password where the protocol takes none) with a hint, never
echoing a secret (the URL is shown redacted). :func:`endpoint_of` is the host and port a URL
connects to.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from gitnetdiag.errors import UsageError
from gitnetdiag.redaction import redact_url, without_fragment


def check_url_text(option: str, url: str, name: str | None = None) -> None:
    """A URL from the command line whose bytes are not UTF-8 (Python keeps them as lone
    surrogates) cannot reach git or the reports: refused with the byte named."""
    try:
        url.encode("utf-8")
    except UnicodeEncodeError as exc:
        raw = url[exc.start].encode("utf-8", "surrogateescape")
        raise UsageError(
            f"{name or option} URL has a byte that is not UTF-8 (0x{raw[0]:02x} at position "
            f"{exc.start})", reference="bad-url",
            hint=f"percent-encode it (%{raw[0]:02X}) as URLs are written") from exc


_SCHEMES = {"--http": ("http", "https"), "--ssh": ("ssh",), "--git": ("git",)}
_USERINFO = re.compile(r"//[^/@]*@")


def check_url(option: str, url: str, name: str | None = None) -> str:
    """A remote URL git can push to over ``option``'s protocol, or one usage error.

    Checked before anything runs: a malformed or foreign URL would otherwise
    fail deep in a probe (or, worse, be measured as nothing and called healthy). ``name``
    is what the messages call the URL (``targets[0].urls.ssh`` in ``watch.yaml``); the
    option by default.
    """
    check_url_text(option, url, name)
    label = name or option
    url = without_fragment(url)  # never sent by git; a token there would reach its argv
    shown = _USERINFO.sub("//***@", url)  # the URL may not parse: redact by hand
    schemes = _SCHEMES[option]
    if option == "--ssh" and "://" not in url and re.fullmatch(r"[^\s/:]+:\S*", url.split("@")[-1]):
        if ":" in url.rpartition("@")[0]:
            raise _password_in_url(option, label, url.rpartition("@")[2])
        return url  # scp-like user@host:path
    try:
        parts = urlsplit(url)
        port = parts.port
        host = parts.hostname
    except ValueError as exc:
        raise UsageError(f"{label} {shown} is not a valid URL: {exc}",
                         hint=f"give a URL such as {_EXAMPLE_URL[option]}",
                         reference="bad-url") from exc
    if parts.scheme.lower() not in schemes:
        found = f"scheme {parts.scheme!r}" if parts.scheme else "no scheme"
        raise UsageError(f"{label} {shown} has {found}; {label} takes "
                         + " or ".join(f"{s}://" for s in schemes) + " URLs",
                         hint=f"give a URL such as {_EXAMPLE_URL[option]}",
                         reference="unsupported-url")
    if not host or port == 0:
        raise UsageError(f"{label} {shown} names no host", reference="bad-url",
                         hint=f"give a URL such as {_EXAMPLE_URL[option]}")
    if option != "--http" and (parts.password is not None
                               or (option == "--git" and parts.username is not None)):
        raise _password_in_url(option, label, redact_url(_USERINFO.sub("//", url)))
    return url


def _password_in_url(option: str, label: str, without: str) -> UsageError:
    """A password (or, for git://, any credential) in an SSH or git:// URL: neither takes
    one, and ssh would read ``user:pw`` as a host or login name."""
    command_line = label == option
    label = f"{label} URL" if command_line else label
    key, others = ("--ssh-key", "--http or --ssh") if command_line else ("ssh_key", "an h1, h2 "
                                                                           "or ssh URL")
    if option == "--git":
        return UsageError(
            f"{label} carries a user or password: git:// has no authentication",
            reference="credentials-in-url",
            hint=f"remove them ({without}); for a remote that needs credentials use {others}")
    return UsageError(
        f"{label} carries a password: SSH authenticates with keys, not a password in the "
        "URL", reference="credentials-in-url",
        hint=f"remove ':password' (keep the login: ssh://git@host/path) and give {key}, "
        "or load the key into ssh-agent")


_EXAMPLE_URL = {"--http": "https://git.example.com/team/repo.git",
                "--ssh": "ssh://git@git.example.com/team/repo.git",
                "--git": "git://git.example.com/team/repo.git"}


DEFAULT_PORTS = {"https": 443, "http": 80, "ssh": 22, "git": 9418}
"""The port of each scheme a URL gives none for."""


def endpoint_of(url: str) -> tuple[str, int]:
    """(host, port) a URL connects to; scp-like ``user@host:path`` is SSH on port 22."""
    if "://" not in url:
        match = re.fullmatch(r"(?:[^@/:]+@)?([^/:]+):.*", url)
        if match is None:
            raise UsageError(f"cannot read the remote URL {redact_url(url)!r}")
        return match.group(1), 22
    parts = urlsplit(url)
    if not parts.hostname or parts.scheme not in DEFAULT_PORTS:
        raise UsageError(
            f"cannot read the remote URL {redact_url(url)!r}",
            hint="use https://host/path, ssh://user@host/path or git://host/path",
        )
    try:
        port = parts.port or DEFAULT_PORTS[parts.scheme]
    except ValueError as exc:
        raise UsageError(f"bad port in {redact_url(url)!r}") from exc
    return parts.hostname, port
