"""Who answered, and the setting of that server that fixes a finding (pure).

:func:`identify` names the HTTP server or edge from everything it said, in order of
trust: its own words (every ``server`` header, every ``via`` hop, the headers CDNs and
load balancers add: ``cf-ray``, ``x-amz-cf-id``, ``x-azure-ref``, ``x-cache``,
``x-served-by`` ...), then its HTTP/2 fingerprint (the SETTINGS it sent), then the
configuration files read by ``gitnetdiag host``. A fingerprint never overrides a name
the server gives itself: where they disagree the identity says both. A name the
knowledge base (:mod:`gitnetdiag.diagnosis.terminators`) has no entry for is reported as
said, and the fixes then claim nothing about who answered.

Each hop that shows itself is listed, the outermost (the one the client connected to,
which terminated HTTP/2 and whose window counts for an upload) first: a CDN's own marker
header, then the ``via`` hops from the last one added, then the ``server`` headers (an
edge that passes the backend's on sends two: the first is its own), then ``x-powered-by``.

The knobs come from the knowledge base; culprits name the answering server's setting
first and list the others as alternatives.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitnetdiag.diagnosis.observations import Observations
from gitnetdiag.diagnosis.terminators import (
    BASE,
    NOT_DOCUMENTED,
    Terminator,
    by_fingerprint,
    by_marker,
    by_name,
)

SERVERS = ("haproxy", "nginx", "apache", "go", "h2o", "envoy")
"""Self-hosted servers whose settings the fixes list as alternatives, in this order."""

NAMES = {t.id: t.name for t in BASE.values()} | {"caddy": "Caddy"}
"""Display name of each product id (and of the lab's Caddy edge)."""


@dataclass(frozen=True, kw_only=True)
class Hop:
    """One server of the chain as it showed itself."""

    said: str
    """Its words (``nginx/1.22.1``, ``1.1 varnish (Varnish/6.0)``, a ``cf-ray`` value)."""
    header: str
    """The response header it said it in."""
    product: str | None
    """Knowledge-base id, None when the base has no entry for it."""


@dataclass(frozen=True, kw_only=True)
class ServerIdentity:
    """The server or edge that terminated the HTTPS connection, as far as it shows."""

    server: str | None
    """Knowledge-base id of the server that answered, None when unknown or unrecognised."""
    product: str = ""
    """What it calls itself (``nginx/1.22.1``) or how it was recognised."""
    basis: tuple[str, ...] = ()
    """The observations the identification rests on, in words."""
    ssh_banner: str = ""
    """The SSH server's identification string, when an SSH probe ran."""
    unrecognised: str = ""
    """What it calls itself when the knowledge base has no entry for that name."""
    fingerprint: str | None = None
    """Knowledge-base id its HTTP/2 SETTINGS resemble when that differs from :attr:`server`."""
    hops: tuple[Hop, ...] = ()
    """Every hop that showed itself, the outermost first."""


def _split_via(value: str) -> list[str]:
    """The hops of one ``via`` header, the last added (nearest the client) first."""
    return [part.strip() for part in reversed(value.split(",")) if part.strip()]


def hops_of(headers: tuple[str, ...]) -> tuple[Hop, ...]:
    """Every hop the response headers (``name: value`` lines, in order) show, the outermost
    first."""
    markers: list[Hop] = []
    via: list[Hop] = []
    servers: list[Hop] = []
    inner: list[Hop] = []
    for line in headers:
        name, _, raw = line.partition(":")
        key, value = name.strip().lower(), raw.strip()
        marker = by_marker(key)
        if marker is not None:
            markers.append(Hop(said=value, header=key, product=marker.id))
        elif key == "via":
            via.extend(Hop(said=v, header=key, product=_id(by_name(v)))
                       for v in _split_via(value))
        elif key == "server":
            servers.append(Hop(said=value, header=key, product=_id(by_name(value))))
        elif key in ("x-cache", "x-served-by") and by_name(value) is not None:
            markers.append(Hop(said=value, header=key, product=_id(by_name(value))))
        elif key == "x-powered-by":
            inner.append(Hop(said=value, header=key, product=_id(by_name(value))))
    return tuple(markers + via + servers + inner)


def _id(t: Terminator | None) -> str | None:
    return t.id if t is not None else None


def _outermost(hops: tuple[Hop, ...]) -> Hop | None:
    """The hop that answered the client: the first one that names a product, or the first
    that says anything at all (a ``via`` host name alone names no product)."""
    named = [h for h in hops if h.product is not None or h.header in ("server", "via")]
    return named[0] if named else None


def identify(*, headers: tuple[str, ...] = (),
             server_headers: tuple[str, ...] = (), h2_settings: dict[str, int] | None = None,
             config_products: tuple[str, ...] = (), ssh_banner: str = "") -> ServerIdentity:
    """Name the server that terminated HTTP/2 from its words, then its SETTINGS, then the
    configuration files read on the host. ``server_headers`` alone is what runs recorded
    before every identity header was kept."""
    settings = h2_settings or {}
    if not headers:
        headers = tuple(f"server: {s}" for s in server_headers)
    hops = hops_of(headers)
    chain = (f"hops: {' -> '.join(_hop_text(h) for h in hops)}",) if len(hops) > 1 else ()
    print_ = _settings_text(settings)
    like = by_fingerprint(settings)
    answered = _outermost(hops)
    if answered is not None and answered.product is not None:
        t = BASE[answered.product]
        basis = [f"{answered.header} header '{answered.said}'"]
        disagree = like is not None and like.id != t.id
        if disagree and like is not None:
            basis.append(f"its HTTP/2 SETTINGS ({print_}) look like {like.name}'s: "
                         f"{like.name} may terminate HTTP/2 in front of it")
        return ServerIdentity(server=t.id, product=answered.said, basis=(*basis, *chain),
                              ssh_banner=ssh_banner, hops=hops,
                              fingerprint=like.id if disagree and like else None)
    if answered is not None:
        basis = [f"it calls itself '{answered.said}' ({answered.header} header), which "
                 "gitnetdiag has no entry for"]
        if like is not None:
            basis.append(f"its HTTP/2 SETTINGS ({print_}) look like {like.name}'s")
        return ServerIdentity(server=None, product=answered.said, basis=(*basis, *chain),
                              ssh_banner=ssh_banner, unrecognised=answered.said, hops=hops,
                              fingerprint=like.id if like else None)
    if like is not None:
        return ServerIdentity(server=like.id, product=like.name, ssh_banner=ssh_banner,
                              basis=(f"HTTP/2 SETTINGS {print_} (it names itself nowhere)",),
                              hops=hops)
    chosen = _from_config(config_products)
    if chosen is not None:
        name = BASE[chosen].name
        return ServerIdentity(server=chosen, product=name, ssh_banner=ssh_banner,
                              basis=(f"{name} configuration read on the host",))
    return ServerIdentity(server=None, ssh_banner=ssh_banner, hops=hops)


def _hop_text(hop: Hop) -> str:
    name = BASE[hop.product].name if hop.product else "unrecognised"
    return f"{name} ({hop.header}: {hop.said})"


def _from_config(products: tuple[str, ...]) -> str | None:
    """An edge's configuration before Apache's (Apache is often the git server behind)."""
    edges = [p for p in products if p in BASE and p != "apache"]
    if edges:
        return edges[0]
    return "apache" if "apache" in products else None


def _settings_text(settings: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(settings.items()))


def window_knob(server: str, value: int) -> str:
    """The setting of ``server`` (a base id) that sets the HTTP/2 receive window, with
    ``value``; for a product whose users cannot change it, that and the workaround."""
    t = BASE[server]
    if t.user_settable:
        return t.window_text(value)
    return f"{t.window_text(value)}; its users cannot change it: {t.workaround}"


def buffering_knob(server: str) -> str:
    """The setting of ``server`` that streams request bodies instead of buffering them."""
    t = BASE[server]
    if t.buffering_setting == NOT_DOCUMENTED:
        return f"{t.name}: no request-buffering setting is documented"
    return t.buffering_setting


def ordered(server: str | None) -> tuple[str, ...]:
    """Every server of :data:`SERVERS`, the answering one (any base id) first."""
    if server is None or server not in BASE:
        return SERVERS
    return (server, *(s for s in SERVERS if s != server))


def window_fix(identity: ServerIdentity | None, value: int) -> str:
    """Sentences naming the answering server's window setting first, then the others; an
    unrecognised server is named by what it said and no product is claimed for it."""
    server = identity.server if identity else None
    like = identity.fingerprint if identity else None
    if identity is not None and server is None and identity.unrecognised:
        lead = (f"The server calls itself '{identity.unrecognised}', which gitnetdiag has no "
                "entry for: raise its HTTP/2 receive window (per stream and per connection) "
                f"to {value} B in its own configuration, or {BASE['haproxy'].workaround}.")
        if like is not None:
            lead += (f" Its HTTP/2 SETTINGS look like {BASE[like].name}'s; if "
                     f"{BASE[like].name} terminates HTTP/2 in front of it: "
                     f"{window_knob(like, value)}.")
        rest = [s for s in SERVERS if s not in ("go", like)]
        return f"{lead} Known servers: {'; '.join(window_knob(s, value) for s in rest)}."
    first, *rest = ordered(server)
    lead = (f"On the server that answered, {window_knob(first, value)}."
            if server is not None else f"{window_knob(first, value)}.")
    if like is not None:
        lead += (f" Its HTTP/2 SETTINGS look like {BASE[like].name}'s; if {BASE[like].name} "
                 f"terminates HTTP/2 in front of it: {window_knob(like, value)}.")
    others = "; ".join(window_knob(s, value) for s in rest if s not in ("go", like))
    return f"{lead} Other servers: {others}."


FRAME_ALTERNATIVES = ("haproxy", "apache", "nginx", "envoy")
"""Servers whose frame-size settings the ``h2-frame-settings`` fix lists, in this order."""


def frame_fix(identity: ServerIdentity | None) -> str:
    """The frame-size and per-stream buffer settings, the answering server's first."""
    server = identity.server if identity else None
    first = (server if server is not None
             and BASE[server].frame_size_setting != NOT_DOCUMENTED else None)
    names = [s for s in FRAME_ALTERNATIVES if s != first]
    settings = "; ".join(BASE[s].frame_size_setting for s in names)
    if first is None:
        return f"Raise the server's advertised frame size and per-stream buffers: {settings}."
    return ("Raise the server's advertised frame size and per-stream buffers: on the server "
            f"that answered, {BASE[first].frame_size_setting}; others: {settings}.")


_CONFIG_NAMES = (("haproxy", "haproxy"), ("nginx", "nginx"), ("go", "caddy"),
                 ("h2o", "h2o"), ("envoy", "envoy"), ("trafficserver", "trafficserver"),
                 ("varnish", "varnish"), ("apache", "apache2"), ("apache", "httpd"))


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
    identity = identify(headers=run.identity_headers, server_headers=run.server_headers,
                        h2_settings=run.h2_server_settings,
                        config_products=products_of_files(files), ssh_banner=run.ssh_banner)
    if (identity.server is None and not identity.unrecognised and not identity.ssh_banner
            and not identity.hops):
        return None
    return identity
