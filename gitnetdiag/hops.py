"""The first hop of each protocol's path: direct, or a forward proxy, and what the proxy said.

git reaches an HTTPS remote through ``http[.<url>].proxy`` / ``https_proxy`` (a CONNECT
tunnel: the TCP connection the pushes' captures see ends at the proxy), and an SSH remote
through the ``ProxyCommand`` / ``ProxyJump`` of ``ssh -G`` (``core.sshCommand`` may add
``-J``/``-o ProxyCommand``). The probe records the hop per protocol; the diagnosis names the
proxy as the hop holding the knob of a TCP-level culprit measured on that leg. Pure: the
records and the parsers of ``ssh -G`` output and of the proxy's answer to a plain request.

    client --(captured leg)--> proxy host:port --(CONNECT tunnel)--> server    http-proxy
    client --ssh ProxyJump/ProxyCommand-------> jump host ---------> sshd      ssh-proxy
    client ------------------------------------------------------> server    direct
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

HopKind = Literal["direct", "http-proxy", "ssh-proxy"]
"""How a protocol's connections leave the client."""

BODY_EXCERPT_CHARS = 200
"""Characters of the proxy's error page kept (tags stripped): its own words, one line."""


@dataclass(frozen=True, kw_only=True)
class ProxyAnswer:
    """The proxy's answer to a plain ``GET http://<proxy>/`` (not a CONNECT): how it names
    itself. Squid answers 400 with ``Server: squid/5.7``, tinyproxy 400 with
    ``Server: tinyproxy/1.11.1``; either may add ``Via``."""

    status: int | None = None
    """HTTP status code, None when no status line came back."""
    status_line: str = ""
    """The status line as received (``HTTP/1.1 400 Bad Request``)."""
    server: str = ""
    """Its ``Server`` header, "" when none."""
    via: str = ""
    """Its ``Via`` header, "" when none."""
    body: str = ""
    """The first characters of its error page, tags stripped, whitespace collapsed."""
    error: str = ""
    """Why no answer was read (refused, timed out), "" when one was."""


@dataclass(frozen=True, kw_only=True)
class FirstHop:
    """Where one protocol's connections go first, as git resolves it."""

    protocol: str
    """``h1``, ``h2``, ``ssh`` or ``git``."""
    kind: HopKind = "direct"
    """See :data:`HopKind`."""
    proxy: str = ""
    """The proxy as ``host:port`` (``http-proxy``), the jump host or command (``ssh-proxy``);
    "" when direct."""
    source: str = ""
    """The setting it came from (``http.proxy``, ``https_proxy``, ``ssh -G proxyjump``,
    ``core.sshCommand``), "" when direct."""
    answer: ProxyAnswer | None = None
    """What an HTTP proxy said of itself; None when it was not asked (SSH, direct)."""
    leg_endpoint: str = ""
    """The ``host:port`` the path check timed for this leg (:func:`leg_endpoint`); "" when
    direct or not measured."""
    leg_rtt_s: float | None = None
    """The smallest TCP connect time to it (the leg client -> proxy); None when direct or not
    measured. Both are filled from the run's path checks when the run is read
    (``PathMeasurement.first_hop_of``), not recorded with the hop."""

    @property
    def proxied(self) -> bool:
        return self.kind != "direct"


def ssh_proxy_of(ssh_g_output: str) -> tuple[str, str] | None:
    """``(proxy, setting)`` from ``ssh -G host`` output: its ``proxyjump`` or
    ``proxycommand`` line (``none`` means none), else None."""
    settings: dict[str, str] = {}
    for line in ssh_g_output.splitlines():
        key, _, value = line.strip().partition(" ")
        settings.setdefault(key.lower(), value.strip())
    for key in ("proxyjump", "proxycommand"):
        value = settings.get(key, "")
        if value and value.lower() != "none":
            return value, key
    return None


def _header(lines: list[str], name: str) -> str:
    return ", ".join(value.strip() for line in lines
                     for key, sep, value in [line.partition(":")]
                     if sep and key.strip().lower() == name)


def parse_proxy_answer(raw: bytes) -> ProxyAnswer:
    """The status, ``Server``, ``Via`` and page excerpt of an HTTP answer (possibly cut)."""
    text = raw.decode("latin-1")
    head, sep, body = text.partition("\r\n\r\n")
    if not sep:
        head, _, body = text.partition("\n\n")
    lines = head.splitlines()
    status_line = lines[0].strip() if lines else ""
    match = re.match(r"HTTP/\d(?:\.\d)?\s+(\d{3})", status_line)
    if match is None:
        return ProxyAnswer(status_line=status_line[:120],
                           error="the proxy's answer is not HTTP" if text else "no answer")
    words = " ".join(re.sub(r"<[^>]*>", " ", body).split())
    return ProxyAnswer(status=int(match.group(1)), status_line=status_line,
                       server=_header(lines[1:], "server"), via=_header(lines[1:], "via"),
                       body=words[:BODY_EXCERPT_CHARS])


@dataclass(frozen=True, kw_only=True)
class PathHop:
    """One protocol's path as the report shows it."""

    protocol: str
    """``h1``, ``h2``, ``ssh`` or ``git``."""
    kind: str
    """``direct``, ``http-proxy`` or ``ssh-proxy``."""
    proxy: str = ""
    """The proxy's ``host:port`` (or SSH jump host / command); "" when direct."""
    source: str = ""
    """The setting that sends it there (``https_proxy``, ``http.proxy``, ``ssh -G proxyjump``)."""
    product: str = ""
    """Knowledge-base id of the proxy product, "" when unknown or not asked."""
    said: str = ""
    """What the proxy said of itself (``Server: tinyproxy/1.11.1``), or why it said nothing."""
    leg_endpoint: str = ""
    """The ``host:port`` the path check timed for this leg, "" when it timed none."""
    leg_rtt_s: float | None = None
    """Its smallest TCP connect time (the leg client -> proxy's RTT), None when not measured."""

    @property
    def proxied(self) -> bool:
        return self.kind != "direct"

    @property
    def proxy_text(self) -> str:
        """``proxy 10.0.0.1:8888 (tinyproxy/1.11.1)``, or the unknown proxy said as such."""
        if self.kind == "ssh-proxy":
            return f"SSH proxy {self.proxy}"
        who = self.said if self.product else "unknown product" + (
            f": {self.said}" if self.said else "")
        return f"proxy {self.proxy} ({who})"

    @property
    def text(self) -> str:
        """``client -> proxy 10.0.0.1:8888 (...) -> server``, or ``direct``."""
        return f"client -> {self.proxy_text} -> server" if self.proxied else "direct"


def _jump_endpoint(proxyjump: str) -> tuple[str, int] | None:
    """``(host, port)`` of the first hop of a ``ProxyJump`` value (``[user@]host[:port]``,
    comma-separated hops, an ``ssh://`` URL), None when it does not read as one."""
    first = proxyjump.split(",", 1)[0].strip().removeprefix("ssh://")
    host_port = first.rsplit("@", 1)[-1]
    match = re.fullmatch(r"\[([^\]]+)\](?::(\d+))?|([^:\[\]\s/]+)(?::(\d+))?", host_port)
    if match is None:
        return None
    host = match.group(1) or match.group(3)
    port = match.group(2) or match.group(4)
    return host, int(port) if port else 22


def leg_endpoint(hop: FirstHop | None, endpoint: tuple[str, int]) -> tuple[str, int]:
    """Where the protocol's TCP connection goes (what a client-side capture must watch): the
    HTTP proxy's ``host:port``, the first ``ProxyJump`` host's, else ``endpoint`` (the
    server's; a ``ProxyCommand`` is a program, not an address)."""
    if hop is None or not hop.proxied:
        return endpoint
    if hop.kind == "http-proxy":
        host, sep, port = hop.proxy.rpartition(":")
        return (host.strip("[]"), int(port)) if sep and port.isdigit() else endpoint
    if hop.source.endswith("proxyjump") or hop.source == "core.sshCommand":
        return _jump_endpoint(hop.proxy) or endpoint
    return endpoint
