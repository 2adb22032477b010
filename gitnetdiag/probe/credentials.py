"""HTTP credentials and TLS/proxy settings for a URL, looked up the way git does.

The native HTTP/2 probe talks to the same server as ``git push``; a real host
wants the same credential git would send, and the same CA, verification and
proxy settings. Sources, in git's order::

    Authorization   URL userinfo (user:password@)  ->  `git credential fill`
                    (the user's helpers; never a prompt; approve/reject are
                    never called, so the probe cannot change what is stored)
    extra headers   http.extraHeader, http.<url>.extraHeader (all that apply,
                    in config order, an empty value clears the list)
    CA bundle       explicit ca_file  >  GIT_SSL_CAINFO  >  http[.<url>].sslCAInfo
                    >  the system's default store
    verification    GIT_SSL_NO_VERIFY  >  http[.<url>].sslVerify
    proxy           http[.<url>].proxy  >  https_proxy / HTTPS_PROXY / all_proxy,
                    skipped for hosts in no_proxy

Secret values (passwords, tokens, header values) live only in fields that are
kept out of ``repr`` and every ``to_dict``; what may be recorded is the
*source* of each setting.
"""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from gitnetdiag.errors import NetworkError
from gitnetdiag.proc import OnTimeout, run
from gitnetdiag.redaction import redact_url

GIT_TIMEOUT_S = 30.0
PROXY_ENV = ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")
PLAIN_PROXY_ENV = ("http_proxy", "all_proxy", "ALL_PROXY")
"""An ``http://`` remote's proxy variables: libcurl reads ``http_proxy`` in lower case only."""


def _git(
    args: list[str], env: Mapping[str, str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return run(
        ["git", *args], what=f"git {args[0]}", input_bytes=stdin.encode(), env=env,
        timeout_s=GIT_TIMEOUT_S, check=False, missing_hint="install git",
        on_timeout=OnTimeout(
            error=NetworkError, reference="credential-helper-timeout",
            hint="a credential helper may be waiting for input; check credential.helper"),
    )


def no_prompt_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with every way git could ask a human switched off.

    An empty GIT_ASKPASS wins over core.askPass and SSH_ASKPASS and means "none".
    """
    result = dict(os.environ if env is None else env)
    result.update(GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="", SSH_ASKPASS="")
    return result


# --------------------------------------------------------------------------
# git config, matched against a URL like git's urlmatch.c
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _UrlParts:
    scheme: str
    user: str | None
    host: str
    port: int | None
    path: str


def _url_parts(url: str) -> _UrlParts | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname:
        return None
    default = {"https": 443, "http": 80}.get(parts.scheme.lower())
    return _UrlParts(
        scheme=parts.scheme.lower(),
        user=unquote(parts.username) if parts.username else None,
        host=parts.hostname.lower(),
        port=port if port is not None else default,
        path=parts.path or "/",
    )


def _host_matches(pattern: str, host: str) -> bool:
    """``*`` matches one whole label, as in git's urlmatch."""
    wanted, labels = pattern.split("."), host.split(".")
    return len(wanted) == len(labels) and all(
        w == "*" or w == label for w, label in zip(wanted, labels, strict=True)
    )


def url_specificity(config_url: str, url: str) -> tuple[int, int] | None:
    """How specifically ``http.<config_url>.*`` applies to ``url``; None if it does not.

    A longer matching path wins, then a matching user name (git's order).
    """
    pattern, target = _url_parts(config_url), _url_parts(url)
    if pattern is None or target is None:
        return None
    if pattern.scheme != target.scheme or not _host_matches(pattern.host, target.host):
        return None
    if pattern.port != target.port:
        return None
    if pattern.user is not None and pattern.user != target.user:
        return None
    prefix = pattern.path.rstrip("/")
    if prefix and not (target.path == prefix or target.path.startswith(prefix + "/")):
        return None
    return len(prefix), int(pattern.user is not None)


def _config_entries(section_key: str, env: Mapping[str, str]) -> list[tuple[str, str]]:
    """(full key, value) of every ``http[.<url>].<key>`` entry, in config order."""
    proc = _git(["config", "--null", "--get-regexp", rf"^http\..*{section_key}$"], env)
    entries = []
    for record in proc.stdout.split("\0"):
        name, _, value = record.partition("\n")
        if name:
            entries.append((name, value))
    return entries


def extra_headers(url: str, env: Mapping[str, str]) -> tuple[str, ...]:
    """The ``http.extraHeader`` values git sends to ``url``.

    git's rule: an entry applies when its URL is at least as specific as the
    most specific one applied so far; an empty value empties the list.
    """
    headers: list[str] = []
    best: tuple[int, int] = (-1, -1)
    for name, value in _config_entries("extraheader", env):
        config_url = name[len("http.") : -len(".extraheader")]
        spec = (0, 0) if name.lower() == "http.extraheader" else url_specificity(config_url, url)
        if spec is None or spec < best:
            continue
        best = spec
        if value:
            headers.append(value)
        else:
            headers.clear()
    return tuple(headers)


def url_config(key: str, url: str, env: Mapping[str, str], *, as_bool: bool = False) -> str | None:
    """``git config --get-urlmatch http.<key> URL``: the value git uses for ``url``. The URL
    reaches git's argv without its user info, query and fragment (where tokens sit): a
    urlmatch reads scheme, host, port, path and user name only, and no token may reach
    another process's argv."""
    args = ["config", *(["--type=bool"] if as_bool else []), "--get-urlmatch", f"http.{key}",
            _strip_userinfo(url)]
    proc = _git(args, env)
    value = proc.stdout.strip()
    return value if proc.returncode == 0 and value else None


# --------------------------------------------------------------------------
# Credentials
# --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Credential:
    """A user name and password (or token) for one URL."""

    username: str
    password: str = field(repr=False)
    source: str
    """``url`` (userinfo in the URL) or ``credential-helper``."""

    def basic_header(self) -> str:
        token = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        return f"Basic {token}"


def _strip_userinfo(url: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return parts._replace(netloc=host, query="", fragment="").geturl()


def credential_fill(url: str, env: Mapping[str, str], username: str | None = None
                    ) -> Credential | None:
    """Ask the user's credential helpers, as git does after a 401; None when none has one."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    request = f"protocol={parts.scheme}\nhost={host}\npath={parts.path.lstrip('/')}\n"
    if username:
        request += f"username={username}\n"
    proc = _git(["credential", "fill"], no_prompt_env(env), stdin=request + "\n")
    if proc.returncode != 0:
        return None
    answer: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            answer[key] = value
    if "password" not in answer:
        return None
    return Credential(username=answer.get("username", ""), password=answer["password"],
                      source="credential-helper")


def url_credential(url: str) -> Credential | None:
    """The ``user:password@`` of the URL; a user without password is not a credential."""
    parts = urlsplit(url)
    if parts.username is None or parts.password is None:
        return None
    return Credential(username=unquote(parts.username), password=unquote(parts.password),
                      source="url")


# --------------------------------------------------------------------------
# Everything the native HTTP/2 client needs for one URL
# --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Proxy:
    """An HTTP proxy to CONNECT through."""

    host: str
    port: int
    authorization: str | None = field(default=None, repr=False)
    """``Proxy-Authorization`` value from the proxy URL's userinfo (secret)."""
    display: str
    """The proxy URL without credentials."""
    scheme: str = "http"
    """``http`` (CONNECT) or a SOCKS scheme (:data:`SOCKS_SCHEMES`)."""
    username: str | None = field(default=None, repr=False)
    """A SOCKS proxy's user name from the URL (SOCKS5 RFC 1929, SOCKS4 user id)."""
    password: str | None = field(default=None, repr=False)
    """A SOCKS5 proxy's password from the URL (secret)."""


@dataclass(kw_only=True)
class HttpAccess:
    """How to reach one smart-HTTP URL as git would: TLS, proxy, headers, credential.

    The credential is looked up lazily (:meth:`credential_after_401`), like git,
    which asks its helpers only once the server answered 401.
    """

    url: str = field(repr=False)
    """The remote URL as given (may hold userinfo)."""
    ca_file: str | None
    """CA bundle to verify the server with; None for the system's default store."""
    ca_source: str
    """Where ``ca_file`` came from: ``option``, ``GIT_SSL_CAINFO``, ``http.sslCAInfo``
    or ``system``."""
    verify: bool
    """False under ``http.sslVerify=false`` or ``GIT_SSL_NO_VERIFY``."""
    proxy: Proxy | None
    """CONNECT proxy for this URL, or None."""
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    """``http.extraHeader`` lines, split (secret values)."""
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    warnings: list[str] = field(default_factory=list)
    """What the probe could not do as git does (recorded in the ledger)."""
    credential: Credential | None = field(default=None, repr=False)
    post_authorized: bool = False
    """An empty receive-pack POST was accepted as is: pushes need nothing more."""

    @property
    def display_url(self) -> str:
        return redact_url(_strip_userinfo(self.url))

    def request_headers(self) -> list[tuple[str, str]]:
        """Headers for every request: the extra headers, then the credential once known."""
        headers = list(self.headers)
        if self.credential is not None:
            headers.append(("authorization", self.credential.basic_header()))
        return headers

    def credential_after_401(self) -> Credential | None:
        """The credential git would try after a 401: URL userinfo, else the helpers."""
        if self.credential is None:
            username = urlsplit(self.url).username
            self.credential = url_credential(self.url) or credential_fill(
                _strip_userinfo(self.url), self.env, unquote(username) if username else None
            )
        return self.credential

    @property
    def auth_source(self) -> str:
        """What authenticated the probe: ``none``, ``url``, ``credential-helper``,
        ``extra-header`` or ``extra-header+...``; never the secret itself."""
        parts = []
        if any(name.lower() == "authorization" for name, _ in self.headers):
            parts.append("extra-header")
        if self.credential is not None:
            parts.append(self.credential.source)
        return "+".join(parts) or "none"


def _split_header(line: str) -> tuple[str, str] | None:
    name, sep, value = line.partition(":")
    if not sep or not name.strip():
        return None
    return name.strip().lower(), value.strip()


def proxy_setting(url: str, env: Mapping[str, str]) -> tuple[str, str] | None:
    """``(proxy URL, the setting it came from)`` git uses for ``url``: ``http[.<url>].proxy``,
    else the environment's proxy variables; None when none is set."""
    configured = url_config("proxy", url, env)
    if configured is not None:
        return configured, "http.proxy"
    names = PLAIN_PROXY_ENV if url.startswith("http://") else PROXY_ENV
    return next(((env[name], name) for name in names if env.get(name)), None)


def bypassed(url: str, env: Mapping[str, str]) -> bool:
    """``url``'s host is in ``no_proxy`` / ``NO_PROXY`` (a suffix at a dot, or ``*``)."""
    host = (urlsplit(url).hostname or "").lower()
    no_proxy = env.get("no_proxy", env.get("NO_PROXY", ""))
    return any(entry == "*" or (entry and (host == entry or host.endswith("." + entry)))
               for entry in (item.strip().lower().lstrip(".") for item in no_proxy.split(",")))


SOCKS_SCHEMES = ("socks4", "socks4a", "socks5", "socks5h")
"""The SOCKS proxy schemes libcurl takes in a proxy string (``socks5h``: the proxy resolves
the host name; ``socks5``: the client does)."""


def proxy_url_parts(configured: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of a proxy string as libcurl reads it: ``http`` when it has
    no scheme, port 1080 when it has none (curl(1) ``--proxy``); host "" when unreadable."""
    text = configured if "://" in configured else "http://" + configured
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return "", "", 0
    return parts.scheme.lower(), parts.hostname or "", port or 1080


def proxy_for(url: str, env: Mapping[str, str], warnings: list[str]) -> Proxy | None:
    setting = proxy_setting(url, env)
    configured = setting[0] if setting else None
    if not configured or bypassed(url, env):
        return None
    if "://" not in configured:
        configured = "http://" + configured
    scheme, host, port = proxy_url_parts(configured)
    display = redact_url(configured)
    if scheme not in ("http", *SOCKS_SCHEMES) or not host:
        warnings.append(
            f"the native probes cannot use the proxy {display} (only http:// proxies with "
            "CONNECT and SOCKS): they connected directly, not through it as git did"
        )
        return None
    parts = urlsplit(configured)
    username = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password or "") if parts.username is not None else None
    authorization = None
    if username is not None and scheme == "http":
        pair = f"{username}:{password}"
        authorization = "Basic " + base64.b64encode(pair.encode()).decode()
    return Proxy(host=host, port=port, authorization=authorization, display=display,
                 scheme=scheme, username=username if scheme != "http" else None,
                 password=password if scheme != "http" else None)


def http_access(url: str, *, ca_file: str | None = None, verify: bool | None = None,
                env: Mapping[str, str] | None = None) -> HttpAccess:
    """Resolve how git would reach ``url`` (explicit ``ca_file``/``verify`` win)."""
    environ = dict(os.environ if env is None else env)
    plain = _strip_userinfo(url)
    warnings: list[str] = []
    source = "option"
    if ca_file is None:
        if environ.get("GIT_SSL_CAINFO"):
            ca_file, source = environ["GIT_SSL_CAINFO"], "GIT_SSL_CAINFO"
        else:
            ca_file = url_config("sslCAInfo", plain, environ)
            source = "http.sslCAInfo" if ca_file else "system"
    if verify is None:
        if environ.get("GIT_SSL_NO_VERIFY"):
            verify = False
        else:
            verify = url_config("sslVerify", plain, environ, as_bool=True) != "false"
    headers = tuple(
        header for line in extra_headers(plain, environ)
        if (header := _split_header(line)) is not None
    )
    return HttpAccess(
        url=url, ca_file=os.path.expanduser(ca_file) if ca_file else None, ca_source=source,
        verify=verify, proxy=proxy_for(plain, environ, warnings), headers=headers,
        env=environ, warnings=warnings,
    )


def auth_failed(access: HttpAccess, status: int, what: str) -> NetworkError:
    """The one error line for a 401/403, naming what to fix and never the secret."""
    url = access.display_url
    tried = access.auth_source
    if status == 401 and tried == "none":
        message = (f"{url} wants authentication ({what} answered HTTP 401) and git has no "
                   "credential for it")
    else:
        message = f"{url} refused the credential from {tried} ({what} answered HTTP {status})"
    return NetworkError(
        message,
        hint=f"check the credential helper / token for {url} (git credential fill), "
        "or http.extraHeader",
        reference="auth-failed",
    )
