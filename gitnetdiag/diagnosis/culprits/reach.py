"""``path-unreachable``: a protocol's port that never answered, has no route, or never
completed TLS, so nothing could be measured over it.

Before any transfer the probe connects to each port, bounded by a few seconds
(:mod:`gitnetdiag.probe.pathinfo`); a port that answers no SYN, or whose TLS never
completes, gets no git run (git would wait out its SYN retries, about 2 min per
connection) and its protocol's one transfer is recorded failed, not started; a port with
no route is transferred (git fails on it within a round trip) and named the same. Those
checks reach the diagnosis as
:attr:`~gitnetdiag.diagnosis.observations.Observations.dead_paths`: SYNs sent and never
answered, the seconds waited, the error of a missing route, a TLS handshake that never
completed. A refused port is not this culprit's (the check's refusals are in ``dead_paths``
too, for it): git's own refusal takes milliseconds and ``firewall-reset`` judges it
(:mod:`~gitnetdiag.diagnosis.culprits.refused`).
"""

from __future__ import annotations

from collections.abc import Sequence

from gitnetdiag.diagnosis.culprits._common import SYN_RTO_S, Hit, Tally, failure_cost_s, label
from gitnetdiag.diagnosis.culprits.weights import weight
from gitnetdiag.diagnosis.model import Evidence
from gitnetdiag.diagnosis.observations import DeadPath, Observations
from gitnetdiag.outcomes import FailureKind

GIT_SYN_WAIT_S = 127.0
"""What one of git's connects to a port that answers no SYN waits before it fails: Linux's
``tcp_syn_retries`` default of 6 is about 127 s (tcp(7), :data:`SYN_RETRIES_SOURCE`). Every
transfer over a dead port would lose at least that: the culprit's cost."""
SYN_RETRIES_SOURCE = "https://man7.org/linux/man-pages/man7/tcp.7.html"
SOURCE = "path check (one bounded connect before the transfers)"
_SIGNALS = {"filtered": "no-answer", "no-route": "no-route", "tls-stalled": "tls-stalled"}


def _by_port(dead: Sequence[DeadPath]) -> list[tuple[str, DeadPath]]:
    """Each dead endpoint once, with the protocols that use it (``HTTP/1.1 and HTTP/2``)."""
    names: dict[str, list[str]] = {}
    first: dict[str, DeadPath] = {}
    for d in dead:
        names.setdefault(d.endpoint, []).append(label(d.protocol))
        first.setdefault(d.endpoint, d)
    return [(f"{' and '.join(names[e])} ({e})", first[e]) for e in first]


def _evidence(who: str, dead: DeadPath) -> list[Evidence]:
    waited = dead.waited_s
    if dead.reach == "filtered":
        on = f" on {dead.connects} connects" if dead.connects and dead.connects > 1 else ""
        items = [Evidence(what=f"{who}: SYNs sent{on}, none answered (no SYN-ACK, RST or ICMP)",
                          value=dead.syns_sent, unit="count", text="" if dead.syns_sent
                          else "not read (TCP_INFO)", source=SOURCE)]
        if waited is not None:
            items.append(Evidence(what=f"{who}: waited for any answer", value=waited, unit="s",
                                  source=SOURCE))
        return items
    if dead.reach == "no-route":
        return [Evidence(what=f"{who}: no route to the host", text=dead.error or "unreachable",
                         value=waited, unit="s" if waited is not None else None,
                         source=SOURCE)]
    return [Evidence(what=f"{who}: TCP connected, the TLS handshake never completed",
                     value=waited, unit="s" if waited is not None else None,
                     text=dead.error, source=SOURCE)]


def _seen(dead: DeadPath) -> str:
    waited = f" over {dead.waited_s:.1f} s" if dead.waited_s is not None else ""
    if dead.reach == "filtered":
        syns = f"{dead.syns_sent} SYNs" if dead.syns_sent else "its SYNs"
        if dead.connects and dead.connects > 1:
            syns += f" on {dead.connects} connects"
        return f"no answer to {syns}{waited} (filtered)"
    if dead.reach == "no-route":
        return f"no route ({dead.error or 'unreachable'})"
    return f"TCP connected, TLS handshake not completed{waited}"


def _fix(dead: Sequence[DeadPath]) -> str:
    lines = []
    for path in {d.endpoint: d for d in dead}.values():
        host, _, port = path.endpoint.rpartition(":")
        if path.reach == "filtered":
            lines.append(
                f"Open TCP port {port} to {host} on the path: a filter drops its SYNs without "
                "an answer (a DROP rule: `iptables -S`, `nft list ruleset`; a cloud security "
                "group or network ACL; a corporate firewall). Check that the server listens "
                f"on {port} (`ss -ltn` there) and that the URL names the right port.")
        elif path.reach == "no-route":
            lines.append(
                f"Fix the route to {host} (`ip route get {host}`: a gateway or VPN that is "
                "down), or the filter that answers with ICMP host/admin prohibited "
                "(`REJECT --reject-with icmp-admin-prohibited`), or use the host's right "
                "address.")
        else:
            lines.append(
                f"Whatever accepts TCP on {path.endpoint} never completes TLS: a TLS "
                "terminator with no certificate or backend, a proxy that expects plain HTTP "
                "or CONNECT, a middlebox that drops the ClientHello, or a path-MTU black "
                "hole that swallows the server's certificate flight; `openssl s_client "
                f"-connect {path.endpoint}` shows where it stops.")
    return " ".join(lines)


def path_unreachable(obs: Observations) -> Hit | None:
    dead = [d for d in obs.dead_paths if d.reach != "refused"]  # firewall-reset's
    if not dead:
        return None
    tally = Tally("path-unreachable")
    ports = _by_port(dead)
    tally.add(max((_SIGNALS[d.reach] for d in dead if d.reach in _SIGNALS),
                  key=lambda signal: weight("path-unreachable", signal), default="tls-stalled"),
              *[item for who, d in ports for item in _evidence(who, d)])
    requested = set(obs.run.requested_protocols or obs.protocols)
    if requested and requested <= {d.protocol for d in dead}:
        tally.add("every-protocol")
    seen = "; ".join(f"{who}: {_seen(d)}" for who, d in ports)
    skipped = [d for d in dead if d.reach != "no-route"]
    tail = (f", and git would wait out its SYN retries (about {GIT_SYN_WAIT_S:.0f} s per "
            "connection) or a TLS handshake for the same answer; no transfer was tried there"
            if skipped else ": git's connects failed within a round trip")
    # A port no transfer crossed costs what git waits on it; one with no route, the
    # failed transfers (each at least one SYN timeout, then redone).
    cost = GIT_SYN_WAIT_S if skipped else max(
        (failure_cost_s(obs, d.protocol, {FailureKind.UNREACHABLE})[0] for d in dead
         if d.protocol in obs.protocols), default=SYN_RTO_S)
    return tally.hit(
        cost_s=cost, cost_protocol=(skipped or dead)[0].protocol,
        summary=f"{seen}: nothing could be measured over "
        + ("it" if len(ports) == 1 else "them") + tail + ".",
        fix=_fix(dead))
