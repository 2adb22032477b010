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

Each fact belongs to a hop. SETTINGS frames, windows and connection closes come from the
TLS terminator (the HTTP/2 endpoint the client talks to); a ``server`` header may come from
behind it (HAProxy passes the backend's on). So a name is kept, but the fix leads with
another product when the evidence shows that one terminates HTTP/2 (:attr:`ServerIdentity.
terminator`): the named product's own first frames contradict the ones seen (it would have
sent a setting that is missing, or raised the connection window that stayed at 65535 B),
or the host's listener on the probed port is another product whose configured window is
the one measured. Both products stay named.

The knobs come from the knowledge base; culprits name the answering server's setting
first and list the others as alternatives.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from gitnetdiag.diagnosis.observations import ConfigFinding, Listener, Observations
from gitnetdiag.diagnosis.terminators import (
    BASE,
    NOT_DOCUMENTED,
    by_fingerprint,
    by_marker,
    by_name,
    by_process,
    by_window_directive,
)
from gitnetdiag.errors import UsageError
from gitnetdiag.vocabulary import parse_size

SERVERS = ("haproxy", "nginx", "apache", "go", "h2o", "envoy")
"""Self-hosted servers whose settings the fixes list as alternatives, in this order."""

NAMES = {t.id: t.name for t in BASE.values()} | {"caddy": "Caddy"}
"""Display name of each product id (and of the lab's Caddy edge)."""

MAY_FRONT = "may terminate HTTP/2 in front of it"
"""How the identity's basis says a fingerprint that differs from the name; it gives way to
what the evidence shows once a hop in front is established (:func:`terminating_hop`)."""


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
    terminator: str | None = None
    """Knowledge-base id of the product that terminates HTTP/2 in front of the server that
    named itself, when the evidence shows it is another one (see :func:`terminating_hop`);
    the SETTINGS and windows are this hop's, and the fixes lead with its setting."""
    terminator_basis: tuple[str, ...] = ()
    """Why the server that named itself does not terminate HTTP/2 here, in words; not empty
    also when the SETTINGS contradict the name but fit no product of the base."""


@dataclass(frozen=True, kw_only=True)
class ListenerWindow:
    """The host's listener on the probed port, of a product whose configured receive window
    is the window the probe measured."""

    product: str
    """Knowledge-base id of the listening product."""
    port: int
    """The probed port it listens on."""
    process: str
    """Its process as ``ss -ltnp`` names it."""
    setting: str
    """The window directive, as ``gitnetdiag host`` reports it."""
    value: str
    """Its value as written (``65535 (default)``)."""
    window_bytes: int
    """The window it configures, equal to the one measured, bytes."""


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
            via.extend(_hop(v, key) for v in _split_via(value))
        elif key == "server":
            servers.append(_hop(value, key))
        elif key in ("x-cache", "x-served-by") and by_name(value) is not None:
            markers.append(_hop(value, key))
        elif key == "x-powered-by":
            inner.append(_hop(value, key))
    return tuple(markers + via + servers + inner)


def _hop(said: str, header: str) -> Hop:
    """A hop that said ``said`` in ``header``, its product looked up by that name."""
    named = by_name(said)
    return Hop(said=said, header=header, product=named.id if named is not None else None)


def _outermost(hops: tuple[Hop, ...]) -> Hop | None:
    """The hop that answered the client: the first one that names a product, or the first
    that says anything at all (a ``via`` host name alone names no product)."""
    named = [h for h in hops if h.product is not None or h.header in ("server", "via")]
    return named[0] if named else None


def identify(*, headers: tuple[str, ...] = (),
             server_headers: tuple[str, ...] = (), h2_settings: dict[str, int] | None = None,
             connection_window_bytes: int | None = None, config_products: tuple[str, ...] = (),
             listener: ListenerWindow | None = None, ssh_banner: str = "") -> ServerIdentity:
    """Name the server that terminated HTTP/2 from its words, then its SETTINGS, then the
    configuration files read on the host; then say which hop terminates HTTP/2 when the
    SETTINGS (with the connection window granted) or the host's ``listener`` show that the
    server that named itself does not. ``server_headers`` alone is what runs recorded
    before every identity header was kept."""
    identity = _named(headers=headers, server_headers=server_headers,
                      settings=h2_settings or {}, config_products=config_products,
                      ssh_banner=ssh_banner)
    return terminating_hop(identity, h2_settings or {}, connection_window_bytes, listener)


def _named(*, headers: tuple[str, ...], server_headers: tuple[str, ...],
           settings: dict[str, int], config_products: tuple[str, ...],
           ssh_banner: str) -> ServerIdentity:
    """Who answered, by name first, the fingerprint beside it (the rules above)."""
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
                         f"{like.name} {MAY_FRONT}")
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


def terminating_hop(identity: ServerIdentity, settings: dict[str, int],
                    connection_window_bytes: int | None,
                    listener: ListenerWindow | None) -> ServerIdentity:
    """``identity`` with the hop that terminates HTTP/2 when a name was given and the
    evidence shows another product does: (a) the named product's own first frames
    contradict ``settings`` and the connection window granted (then the product the
    SETTINGS look like, if any); (b) ``listener``, another product listening on the probed
    port with the measured window configured. A fingerprint alone never does it."""
    if not identity.hops or (identity.server is None and not identity.unrecognised):
        return identity
    named = BASE[identity.server] if identity.server is not None else None
    own = named.own_settings if named is not None else None
    clashes = (own.contradictions(named.name, settings, connection_window_bytes)
               if own is not None and named is not None else ())
    basis = list(clashes)
    terminator = identity.fingerprint if clashes else None
    if listener is not None and listener.product != identity.server:
        basis.append(f"port {listener.port} listens as {BASE[listener.product].name}, whose "
                     f"`{listener.setting}` {listener.value} is the window measured")
        terminator = listener.product
    if not basis:
        return identity
    front = BASE[terminator].name if terminator is not None else "another server"
    said = f"{front} terminates HTTP/2 in front of it: {'; '.join(basis)}"
    kept = tuple(b for b in identity.basis if not b.endswith(MAY_FRONT))
    return replace(identity, terminator=terminator, terminator_basis=tuple(basis),
                   basis=(*kept, said))


def _size_bytes(text: str) -> int | None:
    """The leading size of a configured value: ``65535 (default)``, ``64k``, ``1m``."""
    words = text.split()
    try:
        return parse_size(words[0].rstrip(";")) if words else None
    except UsageError:
        return None


def probed_port(target_url: str) -> int | None:
    """The port of the first HTTP(S) URL of a run's target (``a, b`` when several)."""
    for part in target_url.split(","):
        try:
            url = urlsplit(part.strip())
            port = url.port
        except ValueError:
            continue
        if url.scheme in ("https", "http"):
            return port or (443 if url.scheme == "https" else 80)
    return None


def listener_window(listeners: tuple[Listener, ...], findings: tuple[ConfigFinding, ...],
                    port: int | None, window_bytes: int | None) -> ListenerWindow | None:
    """The product listening on ``port`` when the host's configuration gives it a receive
    window equal to ``window_bytes``, the one measured; None otherwise."""
    if port is None or window_bytes is None:
        return None
    for listening in (x for x in listeners if x.port == port):
        product = by_process(listening.process)
        if product is None:
            continue
        for finding in findings:
            owner = by_window_directive(finding.setting)
            if (owner is not None and owner.id == product.id
                    and _size_bytes(finding.value) == window_bytes):
                return ListenerWindow(product=product.id, port=port,
                                      process=listening.process, setting=finding.setting,
                                      value=finding.value, window_bytes=window_bytes)
    return None


def terminator_name(identity: ServerIdentity | None) -> str | None:
    """The name of the product that terminates HTTP/2, as far as the evidence shows it:
    the hop in front when one was found, else a server recognised by its SETTINGS alone."""
    if identity is None:
        return None
    if identity.terminator is not None:
        return BASE[identity.terminator].name
    if identity.server is not None and not identity.hops and identity.fingerprint is None:
        return BASE[identity.server].name
    return None


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


def knob_holder(identity: ServerIdentity | None) -> str | None:
    """The base id of the hop that holds the connection's settings: the product that
    terminates HTTP/2 in front of the server that named itself when the evidence shows one
    (:func:`terminating_hop`), else the product that answered; None when neither is known,
    or when another server terminates in front of it that fits no product of the base."""
    if identity is None or (identity.terminator_basis and identity.terminator is None):
        return None
    return identity.terminator or identity.server


Knob = Callable[[str], str | None]
"""A product's setting for one finding, from the data files (with its page), given a base
id, its text naming the product (``HAProxy: ...``); None where the data documents none."""


def answering_fix(identity: ServerIdentity | None, knob: Knob,
                  candidates: tuple[str, ...] = SERVERS) -> str:
    """The rule of every fix in a product's terms: the setting of the product that answered
    and holds it (:func:`knob_holder`) first, then the ``candidates``' as a short list in
    :func:`ordered` order; where nothing answered by name, that the product is unknown and
    the candidates' settings. A holder the data documents no setting for is said so."""
    holder = knob_holder(identity)
    others = [text for c in (*ordered(holder), *candidates)
              if c in candidates and c != holder and (text := knob(c)) is not None]
    listed = "; ".join(dict.fromkeys(others))
    if identity is not None and identity.terminator_basis and identity.terminator is None:
        return (f"another server terminates the connection in front of the one that named "
                f"itself ('{identity.product}'), a product gitnetdiag cannot name "
                f"({'; '.join(identity.terminator_basis)}); candidates: {listed}")
    if holder is None or identity is None:
        said = (f"it calls itself '{identity.unrecognised}', which gitnetdiag has no entry "
                "for" if identity is not None and identity.unrecognised
                else "it named itself nowhere")
        return f"the product that answered is unknown ({said}); candidates: {listed}"
    name = BASE[holder].name
    how = (f"{name}, which terminates the connection in front of the server that named "
           f"itself ('{identity.product}')" if identity.terminator
           else f"{name} ('{identity.product}')" if identity.product.lower() != name.lower()
           else name)
    own = knob(holder)
    if own is not None and own.startswith(f"{name}: "):
        own = own[len(name) + 2:]  # the lead names it already
    lead = (f"on the product that answered, {how}: {own}" if own is not None else
            f"the product that answered, {how}, has no such setting in gitnetdiag's data")
    return f"{lead}; others: {listed}" if listed else lead


def window_fix(identity: ServerIdentity | None, value: int) -> str:
    """Sentences naming the answering server's window setting first, then the others; an
    unrecognised server is named by what it said and no product is claimed for it. Where
    another hop terminates HTTP/2, its setting leads and the named server follows."""
    server = identity.server if identity else None
    like = identity.fingerprint if identity else None
    if identity is not None and identity.terminator_basis:
        return _terminator_fix(identity, value)
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


def _terminator_fix(identity: ServerIdentity, value: int) -> str:
    """The terminator's window setting first, the server that named itself after it."""
    front, server = identity.terminator, identity.server
    why = "; ".join(identity.terminator_basis)
    if front is not None:
        lead = (f"{BASE[front].name} terminates HTTP/2 here ({why}): "
                f"{window_knob(front, value)}.")
    else:
        lead = (f"Another server terminates HTTP/2 in front of the one that named itself "
                f"({why}): raise its HTTP/2 receive window (per stream and per connection) to "
                f"{value} B, or {BASE['haproxy'].workaround}.")
    if server is None:
        behind = (f"The server behind it calls itself '{identity.unrecognised}', which "
                  "gitnetdiag has no entry for.")
    else:
        behind = (f"The server behind it answers as {BASE[server].name} "
                  f"('{identity.product}'): {window_knob(server, value)}, for clients that "
                  "reach it over HTTP/2 directly.")
    others = "; ".join(window_knob(s, value) for s in SERVERS
                       if s not in ("go", front, server))
    return f"{lead} {behind} Other servers: {others}."


FRAME_ALTERNATIVES = ("haproxy", "apache", "nginx", "envoy")
"""Servers whose frame-size settings the ``h2-frame-settings`` fix lists, in this order."""


def frame_fix(identity: ServerIdentity | None) -> str:
    """The frame-size and per-stream buffer settings, the answering server's first, or the
    HTTP/2 terminator's where another hop than the named server terminates HTTP/2 (its
    SETTINGS carry the frame size)."""
    front = identity.terminator if identity else None
    server = front or (identity.server if identity else None)
    first = (server if server is not None
             and BASE[server].frame_size_setting != NOT_DOCUMENTED else None)
    names = [s for s in FRAME_ALTERNATIVES if s != first]
    settings = "; ".join(BASE[s].frame_size_setting for s in names)
    if first is None:
        return f"Raise the server's advertised frame size and per-stream buffers: {settings}."
    where = ("on the server that answered" if front is None
             else f"on {BASE[first].name}, which terminates HTTP/2 here")
    return ("Raise the server's advertised frame size and per-stream buffers: "
            f"{where}, {BASE[first].frame_size_setting}; others: {settings}.")


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
    h2 = obs.protocols.get("h2")
    ledger = h2.h2_ledger if h2 is not None else None
    listener = None
    if obs.host is not None and ledger is not None:
        listener = listener_window(obs.host.listeners, obs.host.config_findings,
                                   probed_port(run.target_url),
                                   ledger.server_initial_window_bytes)
    identity = identify(headers=run.identity_headers, server_headers=run.server_headers,
                        h2_settings=run.h2_server_settings,
                        connection_window_bytes=run.h2_connection_window_before_data_bytes,
                        config_products=products_of_files(files), listener=listener,
                        ssh_banner=run.ssh_banner)
    if (identity.server is None and not identity.unrecognised and not identity.ssh_banner
            and not identity.hops):
        return None
    return identity


def sending_hop(obs: Observations) -> ServerIdentity | None:
    """The answering server of a download (:func:`answering_server`), with the product
    listening on the probed HTTPS port (the host's ``ss -ltnp``, where it was read) as the
    hop in front when it is another product than the one that named itself: that process
    owns the client's TCP connection, so its socket's send buffer and its wait on the server
    behind are the clone's (an HAProxy edge passes Apache's ``server`` header on). Not when
    a hop says it is in front (a CDN's marker header, a ``via``): the host read may be one
    behind it. Without the host's listeners, or no product of the base there, the answering
    server as it is."""
    identity = answering_server(obs)
    port = probed_port(obs.run.target_url)
    listening = [(x, t) for x in (obs.host.listeners if obs.host else ())
                 if x.port == port and (t := by_process(x.process)) is not None]
    if not listening:
        return identity
    listener, product = listening[0]
    said = f"port {port} listens as {product.name} (ss -ltnp: {listener.process})"
    if identity is None or (identity.server is None and not identity.unrecognised):
        return ServerIdentity(server=product.id, product=product.name, basis=(said,),
                              ssh_banner=identity.ssh_banner if identity else "")
    if product.id in (identity.terminator, identity.server) \
            or any(h.header != "server" for h in identity.hops):
        return identity  # a hop that says it is in front (a CDN's marker, a via) stays so
    return replace(identity, terminator=product.id,
                   terminator_basis=(*identity.terminator_basis, said),
                   basis=(*identity.basis, f"{product.name} holds the connection in front of "
                          f"it: {said}"))
