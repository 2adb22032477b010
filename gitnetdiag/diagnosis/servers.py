"""Who answered, and the setting of that server that fixes a finding (pure).

:func:`identify` names the HTTP server or edge from what the probes saw: the
``server`` response header(s) of the native HTTP/2 probe, the SETTINGS it
received, the SSH banner and the products of the configuration files read by
``gitnetdiag host``. An edge that passes the backend's header on (Caddy does)
sends two ``server`` headers: the first one is the edge's.

The per-server knob tables are the one place that says which setting of which
server sets the HTTP/2 receive window or the request buffering; culprits name
the answering server's setting first and list the others as alternatives.

Sources of the defaults: HAProxy's configuration manual
(``tune.h2.initial-window-size``, 2.8+ ``tune.h2.fe.initial-window-size``),
nginx's ngx_http_v2_module and ngx_http_proxy_module pages
(``http2_body_preread_size``, ``client_body_buffer_size``,
``proxy_request_buffering``), Apache mod_http2 (``H2WindowSize``), h2o's
HTTP/2 directives (``http2-input-window-size``, not in 2.2), Envoy's HTTP/2
protocol options, and Go's ``golang.org/x/net/http2`` server (1 MiB per stream
and per connection, fields ``MaxUploadBufferPerStream`` /
``MaxUploadBufferPerConnection``, which Caddy 2.6 does not expose).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitnetdiag.diagnosis.observations import Observations

SERVERS = ("haproxy", "nginx", "apache", "caddy", "h2o", "envoy")
"""HTTP servers and edges whose settings the fixes name, in the order alternatives follow."""

NAMES = {"haproxy": "HAProxy", "nginx": "nginx", "apache": "Apache httpd", "caddy": "Caddy",
         "h2o": "h2o", "envoy": "Envoy"}

_HEADER_PATTERNS = (
    ("haproxy", re.compile(r"haproxy", re.I)),
    ("nginx", re.compile(r"nginx|openresty", re.I)),
    ("apache", re.compile(r"apache", re.I)),
    ("caddy", re.compile(r"caddy", re.I)),
    ("h2o", re.compile(r"\bh2o\b", re.I)),
    ("envoy", re.compile(r"envoy", re.I)),
)


@dataclass(frozen=True, kw_only=True)
class ServerIdentity:
    """The server or edge that terminated the HTTPS connection, as far as it shows."""

    server: str | None
    """One of :data:`SERVERS`, or None when nothing identified it."""
    product: str = ""
    """What it calls itself (``nginx/1.22.1``) or how it was recognised."""
    basis: tuple[str, ...] = ()
    """The observations the identification rests on, in words."""
    ssh_banner: str = ""
    """The SSH server's identification string, when an SSH probe ran."""


def identify(*, server_headers: tuple[str, ...] = (), h2_settings: dict[str, int] | None = None,
             config_products: tuple[str, ...] = (), ssh_banner: str = "") -> ServerIdentity:
    """Name the server that terminated HTTP/2: its SETTINGS when they are distinctive (an
    edge passes the backend's ``server`` header on: HAProxy in front of Apache answers with
    Apache's), else the ``server`` header, else the configuration files read on the host."""
    settings = h2_settings or {}
    by_header = _from_headers(server_headers)
    by_settings = _from_settings(settings)
    if by_settings is not None:
        basis = [f"HTTP/2 SETTINGS {_settings_text(settings)}"]
        product = by_settings[1]
        if by_header is not None and by_header[0] != by_settings[0]:
            basis.append(f"server header '{by_header[1]}' (the server behind it)")
        elif by_header is not None:
            basis.append(f"server header '{by_header[1]}'")
            product = by_header[1]
        return ServerIdentity(server=by_settings[0], product=product, basis=tuple(basis),
                              ssh_banner=ssh_banner)
    if by_header is not None:
        basis = [f"server header '{by_header[1]}'"]
        if len(server_headers) > 1:
            basis.append("the first of several server headers (the edge's own)")
        return ServerIdentity(server=by_header[0], product=by_header[1], basis=tuple(basis),
                              ssh_banner=ssh_banner)
    edges = [p for p in config_products if p in SERVERS and p != "apache"]
    chosen = edges[0] if edges else ("apache" if "apache" in config_products else None)
    if chosen is not None:
        return ServerIdentity(server=chosen, product=NAMES[chosen],
                              basis=(f"{NAMES[chosen]} configuration read on the host",),
                              ssh_banner=ssh_banner)
    return ServerIdentity(server=None, ssh_banner=ssh_banner)


def _from_headers(headers: tuple[str, ...]) -> tuple[str, str] | None:
    for header in headers:
        for server, pattern in _HEADER_PATTERNS:
            if pattern.search(header):
                return server, header
    return None


def _settings_text(settings: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(settings.items()))


def _from_settings(settings: dict[str, int]) -> tuple[str, str] | None:
    """Signatures measured in the lab: HAProxy 2.6 sends ENABLE_CONNECT_PROTOCOL 1 and no
    MAX_FRAME_SIZE (Apache 2.4 sends neither unless ``H2WebSockets on``); nginx advertises
    the largest legal frame size (2^24-1); Go's HTTP/2 server (Caddy and other Go programs)
    sends its 1 MiB window with a MAX_HEADER_LIST_SIZE of 1 MiB + 320 B. Apache and h2o
    send only MAX_CONCURRENT_STREAMS and the window: their header tells them apart."""
    if settings.get("ENABLE_CONNECT_PROTOCOL") == 1 and "MAX_FRAME_SIZE" not in settings:
        return "haproxy", "HAProxy (it announces RFC 8441 extended CONNECT with no frame size)"
    if settings.get("MAX_FRAME_SIZE") == NGINX_MAX_FRAME_BYTES:
        return "nginx", "nginx (its HTTP/2 module advertises the largest frame size, 2^24-1)"
    if (settings.get("INITIAL_WINDOW_SIZE") == GO_WINDOW_BYTES
            and settings.get("MAX_HEADER_LIST_SIZE") == GO_WINDOW_BYTES + 320):
        return "caddy", "a Go net/http HTTP/2 server (Caddy or another Go program)"
    return None


GO_WINDOW_BYTES = 1 << 20
NGINX_MAX_FRAME_BYTES = (1 << 24) - 1
"""Go's HTTP/2 server: the receive window per stream and per connection."""


def window_knob(server: str, value: int) -> str:
    """The setting of ``server`` that sets the HTTP/2 receive window for uploads, with ``value``."""
    v = value
    return {
        "haproxy": f"HAProxy: `tune.h2.initial-window-size` {v} in `global` "
                   f"(2.8+: `tune.h2.fe.initial-window-size` {v})",
        "nginx": f"nginx: `http2_body_preread_size` {v} and `client_body_buffer_size` {v} "
                 "(with `proxy_request_buffering off` the window is the larger of the two)",
        "apache": f"Apache mod_http2: `H2WindowSize` {v}",
        "h2o": f"h2o: `http2-input-window-size` {v} (h2o 2.3+; 2.2 has a built-in window "
               "and no such setting)",
        "envoy": f"Envoy: `http2_protocol_options` `initial_stream_window_size` {v} and "
                 f"`initial_connection_window_size` {v}",
        "caddy": "Caddy 2.6: there is no such setting: Go's HTTP/2 server keeps 1 MiB per "
                 "stream and connection (`MaxUploadBufferPerStream` / "
                 "`MaxUploadBufferPerConnection` are not exposed); put an edge with a "
                 "settable window in front, or let git use HTTP/1.1 to it",
    }[server]


def buffering_knob(server: str) -> str:
    """The setting of ``server`` that streams request bodies instead of buffering them."""
    return {
        "nginx": "nginx: `proxy_request_buffering off;` in the `location` that proxies git "
                 "(`fastcgi_request_buffering off;` / `uwsgi_request_buffering off;` for those)",
        "haproxy": "HAProxy: remove `option http-buffer-request` from the frontend/backend",
        "apache": "Apache mod_proxy_http: do not set `proxy-sendcl` (it spools the whole body "
                  "to send a Content-Length)",
        "caddy": "Caddy: remove `request_buffers` from `reverse_proxy` (it streams by default)",
        "envoy": "Envoy: remove the `envoy.filters.http.buffer` filter from the git route",
        "h2o": "h2o: no request-buffering setting is known to gitnetdiag for this version",
    }[server]


def ordered(server: str | None) -> tuple[str, ...]:
    """Every server of :data:`SERVERS`, the answering one first."""
    if server is None or server not in SERVERS:
        return SERVERS
    return (server, *(s for s in SERVERS if s != server))


def window_fix(server: str | None, value: int) -> str:
    """Sentences naming the answering server's window setting first, then the others."""
    first, *rest = ordered(server)
    lead = (f"On the server that answered, {window_knob(first, value)}."
            if server is not None else f"{window_knob(first, value)}.")
    others = "; ".join(window_knob(s, value) for s in rest if s != "caddy")
    return f"{lead} Other servers: {others}."


_CONFIG_NAMES = (("haproxy", "haproxy"), ("nginx", "nginx"), ("caddy", "caddy"),
                 ("h2o", "h2o"), ("envoy", "envoy"), ("apache", "apache2"), ("apache", "httpd"))


def products_of_files(files: tuple[str, ...]) -> tuple[str, ...]:
    """Servers whose configuration files these are, recognised by their paths."""
    found: list[str] = []
    for path in files:
        lowered = path.lower()
        for server, marker in _CONFIG_NAMES:
            if marker in lowered and server not in found:
                found.append(server)
    return tuple(found)


def answering_server(obs: Observations) -> ServerIdentity | None:
    """The identity of the HTTPS server of this run, None when nothing was seen at all."""
    run = obs.run
    files = tuple(f.file for f in obs.host.config_findings) if obs.host else ()
    identity = identify(server_headers=run.server_headers, h2_settings=run.h2_server_settings,
                        config_products=products_of_files(files), ssh_banner=run.ssh_banner)
    if identity.server is None and not identity.ssh_banner:
        return None
    return identity
