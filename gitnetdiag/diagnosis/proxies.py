"""Forward proxies as hops: who each protocol's first hop is, and the TCP-level findings
measured on a proxied leg told in the proxy's terms (``data/forward_proxies.toml``).

Behind ``https_proxy`` git's HTTPS connections are CONNECT tunnels: the TCP connection the
probe measures (its window, loss, resets, idle cuts, SYNs) is client <-> proxy, and the
receiver of a push on it is the proxy, not the git server. A proxy names itself in its
answer to a plain request (tinyproxy 1.11.1 answers ``400`` with
``Server: tinyproxy/1.11.1``; Squid ``Server: squid/5.7`` and ``Via: 1.1 host (squid/5.7)``).
Pure: the probe recorded the hops (:class:`gitnetdiag.hops.FirstHop`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from gitnetdiag.data import KnowledgeBaseError, load_table, require_source, require_text
from gitnetdiag.diagnosis.model import Evidence, Finding
from gitnetdiag.diagnosis.observations import PROTOCOL_LABELS, Observations
from gitnetdiag.hops import FirstHop, PathHop, ProxyAnswer

DATA_FILE = "forward_proxies.toml"
KNOBS = ("receive_buffer", "send_buffer", "connect_timeout", "idle_timeout", "connect_ports")


@dataclass(frozen=True, kw_only=True)
class ForwardProxy:
    """One proxy product: how it names itself and the settings of each knob, with sources."""

    id: str
    """Knowledge-base id (``squid``)."""
    name: str
    """Display name."""
    names: tuple[str, ...]
    """Regular expressions matched against ``Server`` and each ``Via`` hop."""
    knobs: dict[str, str]
    """Each of :data:`KNOBS` -> the setting that holds it, in words."""
    sources: dict[str, str]
    """Each of :data:`KNOBS` -> the documentation page of that fact."""


def _entry(raw: dict[str, Any], where: str) -> ForwardProxy:
    require_text(raw, ("id", "name", *KNOBS), where)
    names = raw.get("names")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise KnowledgeBaseError(f"{where}: names must be a list of regular expressions")
    sources = raw.get("sources")
    if not isinstance(sources, dict):
        raise KnowledgeBaseError(f"{where}: missing [proxy.sources]")
    return ForwardProxy(
        id=raw["id"], name=raw["name"], names=tuple(names),
        knobs={knob: raw[knob] for knob in KNOBS},
        sources={knob: require_source(sources.get(knob), where, f"sources.{knob}")
                 for knob in KNOBS})


def load(text: str | None = None) -> dict[str, ForwardProxy]:
    """The table shipped with gitnetdiag (or the one in ``text``), keyed by id."""
    return load_table(DATA_FILE, "proxy", _entry, text=text)


PROXIES: dict[str, ForwardProxy] = load()
"""Every proxy product of the table, in file order."""


def identify(answer: ProxyAnswer | None) -> ForwardProxy | None:
    """The product whose names match the proxy's ``Server`` header or a ``Via`` hop."""
    if answer is None:
        return None
    said = [answer.server, *answer.via.split(",")]
    return next((product for product in PROXIES.values()
                 if any(re.search(name, text, re.IGNORECASE)
                        for name in product.names for text in said if text.strip())), None)


def _said(answer: ProxyAnswer | None) -> str:
    if answer is None:
        return ""
    if answer.error:
        return answer.error
    named = [f"Server: {answer.server}"] if answer.server else []
    named += [f"Via: {answer.via}"] if answer.via else []
    return "; ".join(named) or f"answered {answer.status_line!r} without naming itself"


def path_hops(hops: Sequence[FirstHop]) -> tuple[PathHop, ...]:
    """The recorded first hops as the report shows them, each proxy identified."""
    found = []
    for hop in hops:
        product = identify(hop.answer)
        found.append(PathHop(protocol=hop.protocol, kind=hop.kind, proxy=hop.proxy,
                             source=hop.source, product=product.id if product else "",
                             leg_endpoint=hop.leg_endpoint, leg_rtt_s=hop.leg_rtt_s,
                             said=(hop.answer.server or hop.answer.via) if product and hop.answer
                             else _said(hop.answer), leg=hop.leg, proxy_type=hop.proxy_type,
                             program=hop.program, unplaced=hop.unplaced))
    return tuple(found)


def path_text(paths: Sequence[PathHop]) -> str:
    """``HTTP/2 client -> proxy ... -> server, SSH direct``; ``direct`` when all are."""
    if not paths:
        return ""
    if not any(p.proxied for p in paths):
        return "direct"
    return ", ".join(f"{PROTOCOL_LABELS.get(p.protocol, p.protocol)} {p.text}" for p in paths)


LEG_KNOBS: dict[str, str | None] = {
    "tcp-receive-window-clamp": "receive_buffer", "tcp-window-scaling-off": "receive_buffer",
    "server-send-buffer": "send_buffer", "path-idle-timeout": "idle_timeout",
    "edge-idle-timeout": "idle_timeout", "syn-drop": None, "listen-backlog-overflow": None,
    "packet-loss": None, "firewall-reset": None, "path-mtu-blackhole": None,
}
"""The TCP-level culprits a proxied leg's capture measures client <-> proxy, each with the
proxy's knob that holds it (None: the proxy's host and the network up to it)."""


def finding_protocols(finding: Finding, obs: Observations) -> list[str]:
    """The protocols a finding was measured on: its cost's, else those its summary names,
    else every protocol of the run."""
    if finding.cost_protocol:
        return [finding.cost_protocol]
    named = [name for name in obs.protocols
             if re.search(rf"(?<![\w/]){re.escape(PROTOCOL_LABELS.get(name, name))}(?![\w/])",
                          finding.summary)]
    return named or list(obs.protocols)


def _proxy_fix(hop: PathHop, knob: str | None) -> str:
    product = PROXIES.get(hop.product)
    where = f"On the forward proxy {hop.proxy}"
    if hop.kind in ("ssh-proxy", "git-proxy", "socks-proxy"):
        first = hop.leg or hop.proxy
        what = (hop.proxy_text if hop.kind != "ssh-proxy" or hop.program
                else f"the SSH jump host, {hop.source}")
        return (f"On the first hop {first} ({what}), which holds this leg's TCP connection: "
                "check its host's TCP settings first (`net.ipv4.tcp_rmem`/`tcp_wmem`; the git "
                "server behind it does not see this connection). ")
    if product is None:
        return (f"{where} (unknown product: {hop.said or 'it did not name itself'}), which "
                "terminates this TCP connection (git tunnels through it with CONNECT): look "
                "there first, at its socket buffers and timeouts and its host's "
                "`net.ipv4.tcp_rmem`/`tcp_wmem`; the git server never sees this connection. ")
    setting = (f"{product.knobs[knob]} ({product.sources[knob]})" if knob
               else f"its host's TCP stack and the network between the client and it "
               f"(receive buffer: {product.knobs['receive_buffer']})")
    return (f"{where} ({product.name}, {hop.said}), which terminates this TCP connection "
            f"(git tunnels through it with CONNECT), first: {setting}; the git server never "
            "sees this connection. ")


def as_sentence(text: str) -> str:
    """``text`` ending as a sentence (a detector's summary may end without a full stop)."""
    text = text.rstrip()
    return text if text.endswith((".", "!", "?")) else text + "."


def _on_leg(finding: Finding, obs: Observations, paths: Sequence[PathHop]) -> Finding:
    hops = {p.protocol: p for p in paths}
    measured = finding_protocols(finding, obs)
    proxied = [hops[name] for name in measured if name in hops and hops[name].proxied]
    if not proxied:
        return finding
    hop = proxied[0]
    label = PROTOCOL_LABELS.get(hop.protocol, hop.protocol)
    direct = [PROTOCOL_LABELS.get(p.protocol, p.protocol) for p in paths
              if not p.proxied and p.protocol in obs.protocols]
    ab = (f" {', '.join(direct)} went direct, {label} through the proxy: a difference between "
          "them may be the proxy's." if direct else "")
    leg = Evidence(what=f"{label}: leg measured", text=f"client -> {hop.proxy_text}",
                   basis=f"{hop.source}: the capture's TCP connection ends at the proxy",
                   source="first hop as git resolves it")
    return replace(
        finding,
        summary=(f"{as_sentence(finding.summary)} Measured on the leg client -> "
                 f"{hop.proxy_text}.{ab}"),
        evidence=(*finding.evidence, leg),
        fix=_proxy_fix(hop, LEG_KNOBS[finding.id]) + "Else: " + finding.fix)


def on_proxied_legs(obs: Observations, findings: Sequence[Finding]) -> list[Finding]:
    """Every TCP-level finding measured on a proxied leg told in the proxy's terms: the leg
    it was measured on, the proxy as the hop that holds the knob, its setting first."""
    paths = path_hops(obs.run.first_hops)
    if not any(p.proxied for p in paths):
        return list(findings)
    return [_on_leg(f, obs, paths) if f.id in LEG_KNOBS else f for f in findings]


@dataclass(frozen=True, kw_only=True)
class SocketHolder:
    """Whose sampled socket a server-side TCP_INFO sample is (the sender of a clone)."""

    proxy: PathHop | None = None
    """The forward proxy whose leg it is, None when it is not a proxy's."""
    process: str = ""
    """The process listening on its local address per the host snapshot, "" when unknown."""
    local: str = ""
    """Its local ``address:port``."""

    @property
    def text(self) -> str:
        """``the forward proxy 10.0.0.1:8888's socket (tinyproxy/1.11.1; ...)``, or the
        server's (with its owner when the snapshot names one)."""
        where = [f"local {self.local}"] if self.local else []
        where += [f"{self.process} per the host snapshot"] if self.process else []
        if self.proxy is not None:
            said = self.proxy.said if self.proxy.product else "unknown product"
            detail = "; ".join([said, *where])
            return (f"the forward proxy {self.proxy.proxy}'s socket ({detail}), not the git "
                    "server's,")
        return (f"the server's own socket ({'; '.join(where)})" if where
                else "the server's own socket")


def _host_port(text: str) -> tuple[str, str]:
    host, _, port = text.rpartition(":")
    host = host.strip("[]")
    return host.removeprefix("::ffff:"), port


def socket_holder(obs: Observations, local: str) -> SocketHolder:
    """Whose socket the server-side sample with local address ``local`` is: a forward
    proxy's when that address is a proxy hop's ``host:port`` or the process listening on
    it is a proxy product (``data/forward_proxies.toml`` names), else the server's."""
    address, port = _host_port(local) if local else ("", "")
    owner = ""
    if obs.host is not None and port.isdigit():
        listening = [item for item in obs.host.listeners if item.port == int(port)]
        exact = [item for item in listening if _host_port(f"{item.address}:0")[0] == address]
        owner = next((item.process for item in exact or listening if item.process), "")
    hops = [hop for hop in path_hops(obs.run.first_hops) if hop.kind == "http-proxy"]
    proxy = next((hop for hop in hops if local and _host_port(hop.proxy) == (address, port)),
                 None)
    if proxy is None and owner:
        named = [product.id for product in PROXIES.values()
                 if any(re.search(name, owner, re.IGNORECASE) for name in product.names)]
        proxy = next((hop for hop in hops if hop.product in named), None) if named else None
        if proxy is None and named:
            proxy = PathHop(protocol="", kind="http-proxy", proxy=local, product=named[0],
                            said=owner)
    return SocketHolder(proxy=proxy, process=owner, local=local)
