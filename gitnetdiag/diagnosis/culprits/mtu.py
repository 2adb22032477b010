"""The path MTU: a black hole that swallows full-size segments while small ones pass.

A link narrower than the endpoints' MTU drops the large segments, and the ICMP
"fragmentation needed" that should make the sender shrink them (RFC 1191) is
filtered on the way back. The handshake (small), the TLS or SSH greeting and the
ref advertisement (server to client) get through; the first full-size upload
segment is resent with backoff forever and the push hangs after its handshake.

Towards the receiver (a clone's download) the same hole is seen from the other end:
the swallowed segments never reach it, so no capture there shows them resent. What
the receiver sees is a transfer that stalled with only small segments received, the
largest well below the MSS it advertised (:func:`starved`), which any user reads from
TCP_INFO (``rcv_mss`` against ``advmss``).

A path that forgets idle connections leaves the same picture at the receiver: a clone
whose server prepared its pack in silence received only the small segments that came
before the silence (the ref advertisement, the ``packfile`` line), and the pack that
followed was dropped for coming late, not for its size. The idle probe tells them apart
(:func:`forgotten_in_silence`): a black hole passes every small packet after any silence,
so keepalives and the application keepalives on the tool's own connections stay answered,
where a forgetful path leaves them unanswered after N s while a new connection works. A
protocol whose transfers waited longer than that N is no black hole's evidence.
"""

from __future__ import annotations

from gitnetdiag.diagnosis.assembly import as_push_result
from gitnetdiag.diagnosis.culprits._common import (
    MIN_RTO_S,
    Hit,
    Tally,
    captured,
    failure_cost_s,
    label,
)
from gitnetdiag.diagnosis.culprits.idlepath import path_bracket
from gitnetdiag.diagnosis.measures import push_duration_s
from gitnetdiag.diagnosis.model import Evidence
from gitnetdiag.diagnosis.observations import CaptureMetrics, Observations
from gitnetdiag.diagnosis.transfers import PREPARING

MIN_UNACKED_RETRANSMISSIONS = 2
"""Resent at least this often and never acknowledged: the segment does not get through."""
MSS_HEADROOM_BYTES = 40
"""A lost segment counts as full-size when the MSS is at most this much above its payload
(TCP options, at most 40 bytes of a header, take room from each segment's payload)."""
MAX_PATH_MSS_BYTES = 9216 - 40
"""The largest MSS a path through routers carries: Ethernet jumbo frames of up to 9216 B
less the IPv4 and TCP headers. Above it (loopback's 65,483 B) the receiver's segments are
sized by what the sender wrote, not by a link: no black hole to read from their size."""
TCP_MSS_DEFAULT_BYTES = 536
"""The receiver's first estimate of the largest segment (Linux ``TCP_MSS_DEFAULT``, RFC 879):
``rcv_mss`` stays there until a larger segment arrives, so at 536 B it says nothing was
larger, not that the path carries 536 B and no more."""
STALL_KINDS = frozenset({"hung", "timeout"})
"""Push failures a black hole causes: the upload stops moving, nothing resets it."""


def swallowed(c: CaptureMetrics) -> bool:
    """Only segments above the largest acknowledged one were resent and never acknowledged."""
    return (
        (c.unacked_retransmissions or 0) >= MIN_UNACKED_RETRANSMISSIONS
        and c.min_unacked_retransmitted_bytes is not None
        and c.max_acked_segment_bytes is not None
        and c.min_unacked_retransmitted_bytes > c.max_acked_segment_bytes
    )


CLAMP_FIX = (
    "Clamp the TCP MSS to the path MTU where the narrow link or tunnel starts (router, "
    "VPN or load-balancer edge): `iptables -t mangle -A FORWARD -p tcp --tcp-flags "
    "SYN,RST SYN -j TCPMSS --clamp-mss-to-pmtu` (nftables: `tcp flags syn tcp option "
    "maxseg size set rt mtu`), and let ICMP type 3 code 4 ('fragmentation needed') "
    "through every firewall on the way back."
)
FIX = (
    CLAMP_FIX + " Meanwhile on the client `net.ipv4.tcp_mtu_probing = 1` finds a size that "
    "passes, and `ip route change ... mtu 1400` (or `advmss`) on the affected route works "
    "around it."
)
RECEIVER_FIX = (
    CLAMP_FIX + " Meanwhile the receiver can ask for smaller segments: `ip route change ... "
    "advmss 1360` on its route to the sender (the MSS its handshakes advertise); "
    "`net.ipv4.tcp_mtu_probing` acts only on the sending side."
)
"""The receiver's own lever: the sender's segments are what vanish."""


def starved(c: CaptureMetrics) -> bool:
    """The receiver's view: segments above the kernel's first estimate arrived (the path
    carries mid-size packets), yet every one was well below the full size the two ends
    agreed (no full-size segment ever got through)."""
    return (c.max_received_segment_bytes is not None and c.mss_bytes is not None
            and c.max_received_segment_bytes > TCP_MSS_DEFAULT_BYTES
            and c.max_received_segment_bytes + MSS_HEADROOM_BYTES < c.mss_bytes
            <= MAX_PATH_MSS_BYTES)


def _stalled_while_sending(obs: Observations, name: str) -> bool:
    """Some stalled transfer of ``name`` had its pack ready to flow (the server done
    counting, or no progress seen at all): not a clone stopped while the server was still
    preparing its pack (its words reached the client: ``server-pack-generation``'s)."""
    stalls = (obs.protocols[name].pushes if obs.run.transfer != "download" else
              [as_push_result(t) for t in obs.transfers
               if t.protocol == name and not t.cut_while_preparing])
    return any((push.error_kind or "other") in STALL_KINDS
               and not PREPARING.search(push.error_message or "")
               for push in stalls if not push.ok)


def forgotten_in_silence(obs: Observations, name: str) -> bool:
    """The idle probe of ``name``'s port saw the path forget silent connections after N s
    (keepalives or application keepalives unanswered, a new connection working) and the
    stalled transfer waited at least that long: its missing segments were dropped for
    coming after the silence, not for their size."""
    probe = obs.protocols[name].idle_path
    bracket = path_bracket(probe)
    return probe is not None and bracket is not None and probe.silence_s >= bracket[0]


def _swallowed_evidence(name: str, c: CaptureMetrics) -> tuple[Evidence, ...]:
    """The segments that never got through against the largest one that did."""
    return (
        Evidence(
            what=f"{label(name)}: upload segments resent and never acknowledged",
            value=c.unacked_retransmissions,
            unit="count",
            threshold=MIN_UNACKED_RETRANSMISSIONS,
            comparison=">=",
            source=c.source,
        ),
        Evidence(
            what=f"{label(name)}: smallest of them (payload)",
            value=c.min_unacked_retransmitted_bytes,
            unit="B",
            threshold=c.max_acked_segment_bytes,
            comparison=">",
            basis="the largest segment that was acknowledged",
            source=c.source,
        ),
        Evidence(
            what=f"{label(name)}: largest upload segment acknowledged (payload)",
            value=c.max_acked_segment_bytes,
            unit="B",
            threshold=c.mss_bytes,
            comparison="<" if c.mss_bytes else None,
            basis="the MSS agreed in the handshake" if c.mss_bytes else "",
            source=c.source,
        ),
    )


def _starved_hit(obs: Observations) -> Hit | None:
    """The receiver's view (a clone): transfers that stalled having received nothing but
    segments well below the advertised MSS."""
    hits = [
        (name, c, costs)
        for name, _, c in captured(obs)
        if starved(c)
        and _stalled_while_sending(obs, name)
        and not forgotten_in_silence(obs, name)
        and (costs := failure_cost_s(obs, name, set(STALL_KINDS)))[1]
    ]
    if not hits:
        return None
    name, cap, (cost, stalled, transfers) = max(hits, key=lambda hit: hit[2][0])
    assert cap.max_received_segment_bytes is not None and cap.mss_bytes is not None
    tally = Tally("path-mtu-blackhole")
    tally.add("starved")
    tally.add("stalled")
    if len(hits) >= 2:
        tally.add("several-protocols")
    for n, c, (_, count, total) in hits:
        tally.note(
            Evidence(what=f"{label(n)}: largest segment received (payload)",
                     value=c.max_received_segment_bytes, unit="B",
                     threshold=(c.mss_bytes or 0) - MSS_HEADROOM_BYTES, comparison="<",
                     basis="the MSS the receiver advertised, less the room of TCP options",
                     source=c.source),
            Evidence(what=f"{label(n)}: MSS the receiver advertised", value=c.mss_bytes,
                     unit="B", source=c.source),
            Evidence(what=f"{label(n)}: pushes (of {total}) that stopped moving with no "
                     "full-size segment received", value=count, unit="count",
                     source="pushes"))
    return tally.hit(
        cost_s=cost,
        summary=(
            f"Full-size segments never arrive while small ones do: {stalled} of {transfers} "
            f"{label(name)} pushes stalled having received no segment larger than "
            f"{cap.max_received_segment_bytes} B, though the receiver advertised an MSS of "
            f"{cap.mss_bytes} B. A link with a smaller MTU towards the receiver drops the "
            "sender's full-size segments and its ICMP 'fragmentation needed' never reaches "
            "the sender: a path-MTU black hole."
        ),
        fix=RECEIVER_FIX,
    )


def path_mtu_blackhole(obs: Observations) -> Hit | None:
    hits = [(name, c) for name, _, c in captured(obs) if swallowed(c)]
    if not hits:
        return _starved_hit(obs)
    costs = {name: failure_cost_s(obs, name, set(STALL_KINDS)) for name, _ in hits}
    name, cap = max(hits, key=lambda hit: costs[hit[0]][0])
    cost, stalled, pushes = costs[name]
    assert cap.max_acked_segment_bytes is not None
    assert cap.min_unacked_retransmitted_bytes is not None
    largest_ok, smallest_lost = cap.max_acked_segment_bytes, cap.min_unacked_retransmitted_bytes
    tally = Tally("path-mtu-blackhole")
    tally.add("swallowed")
    if stalled:
        tally.add("stalled")
    if cap.mss_bytes and largest_ok < cap.mss_bytes <= smallest_lost + MSS_HEADROOM_BYTES:
        tally.add("full-size-lost")  # full-size for the MSS the handshake agreed
    if len(hits) >= 2:
        tally.add("several-protocols")
    if not stalled:
        # A bare capture sees no failed push: the transfer just never got its data through,
        # so its whole duration was spent on the black hole.
        took = push_duration_s(obs.protocols[name]) or 0.0
        cost = max((cap.unacked_retransmissions or 0) * MIN_RTO_S, took)
    for n, c in hits:
        tally.note(*_swallowed_evidence(n, c))
    if stalled:
        tally.note(
            Evidence(
                what=f"{label(name)}: pushes (of {pushes}) that stopped moving after the handshake",
                value=stalled,
                unit="count",
                source="pushes",
            )
        )
    mss = f" (the handshake agreed an MSS of {cap.mss_bytes} B)" if cap.mss_bytes else ""
    return tally.hit(
        cost_s=cost,
        summary=(
            f"Full-size segments vanish on the path while small ones pass: {label(name)} "
            f"segments of {smallest_lost} B and more were resent "
            f"{cap.unacked_retransmissions} times and never acknowledged, the largest that got "
            f"through had {largest_ok} B{mss}"
            + (f"; {stalled} of {pushes} pushes hung after the handshake" if stalled else "")
            + ". A link with a smaller MTU drops them and its ICMP 'fragmentation needed' "
            "never reaches the sender: a path-MTU black hole."
        ),
        fix=FIX,
    )

