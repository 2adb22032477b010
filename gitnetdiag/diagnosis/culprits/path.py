"""The path: loss, a full link, and latency that multiplies every window limit."""

from __future__ import annotations

from dataclasses import dataclass

from gitnetdiag.diagnosis.culprits._common import (
    AUTOTUNE_MAX_WINDOW_BYTES,
    LOSS_RATE,
    MATCHES_CAP_RATIO,
    MIN_RTO_S,
    OUT_OF_ORDER_SHARE,
    REFERENCE_RTT_S,
    RWND_LIMITED_SHARE,
    SELF_LIMITED_SHARE,
    Hit,
    Tally,
    captured,
    label,
    observed,
    rwnd_limited,
    term,
)
from gitnetdiag.diagnosis.culprits.mtu import swallowed
from gitnetdiag.diagnosis.culprits.weights import weight
from gitnetdiag.diagnosis.measures import (
    path_rate_bytes_per_s,
    protocol_rates,
    push_bytes,
    push_duration_s,
    rtt_s,
    saved_time_s,
    upload_rate_bytes_per_s,
    upload_s,
)
from gitnetdiag.diagnosis.model import Evidence
from gitnetdiag.diagnosis.observations import CaptureMetrics, Observations, ProtocolObservation
from gitnetdiag.diagnosis.units import fmt_bytes, fmt_rate, fmt_s


def _mathis_rate(mss: float, rtt: float, loss: float) -> float:
    """The loss-limited TCP rate (Mathis et al. 1997): MSS / RTT x 1.22 / sqrt(p)."""
    return float(mss / rtt * 1.22 / loss**0.5)


WINDOW_EXPLAINS_RATIO = 0.7
"""A rate at least this share of the smallest window / RTT is the window's, not the loss's."""
HEAVY_LOSS_RATE = 0.02
"""Retransmission rate from which loss counts as heavy (2%)."""
NETWORK_LIMITED_SHARE = 0.5
"""The lossy sender was network-limited (cwnd) at least this share of the time."""
QUEUE_RTT_RATIO = 2.0
"""Median RTT at least this multiple of the minimum: a queue stands at a full bottleneck."""
QUEUE_MIN_DELAY_S = 0.02
"""...and at least this much queueing delay (jitter on a short path is not a queue)."""


def standing_queue(c: CaptureMetrics) -> bool:
    """A queue stood in front of the narrowest link during the upload: the link was full.

    A bottleneck with a queue is never idle, so the push ran at the link's capacity; the
    RTT grows well above the path's own (the minimum) by the queueing delay. When the
    queue overflows, that loss is the full link's, not a lossy hop's. A sender held by
    the receive window builds no queue of the path's; random loss on an uncongested path
    builds none either.
    """
    if not c.min_rtt_s or not c.median_rtt_s:
        return False
    return (
        c.median_rtt_s >= QUEUE_RTT_RATIO * c.min_rtt_s
        and c.median_rtt_s - c.min_rtt_s >= QUEUE_MIN_DELAY_S
        and (c.rwnd_limited_share or 0) < RWND_LIMITED_SHARE
    )


@dataclass(frozen=True, kw_only=True)
class _Loss:
    """One protocol whose loss, and no window, explains its rate."""

    name: str
    cap: CaptureMetrics
    rate: float
    window_rate: float | None
    """The smallest known window / RTT, ``None`` when no window is known."""
    cost: float
    fallback: bool
    """The cost is the fallback (no window or path rate to compare with)."""


def out_of_order_only(c: CaptureMetrics) -> bool:
    """Only the receiver's out-of-order arrivals are known, not the sender's retransmissions
    (a clone without a capture)."""
    return c.retransmission_rate is None and c.out_of_order_share is not None


def _suspect(c: CaptureMetrics) -> bool:
    """The sender's retransmissions at :data:`LOSS_RATE` or more; without them, the
    receiver's out-of-order arrivals at :data:`OUT_OF_ORDER_SHARE` or more."""
    if c.retransmission_rate is not None:
        return c.retransmission_rate >= LOSS_RATE
    return (c.out_of_order_share or 0.0) >= OUT_OF_ORDER_SHARE


def _lossy(obs: Observations, name: str, p: ProtocolObservation, c: CaptureMetrics
           ) -> _Loss | None:
    """The protocol's loss when it is the suspect (:func:`_suspect`), and neither a
    window, a full link's queue nor an MTU black hole explains it."""
    if not _suspect(c):
        return None
    rtt, size, up, rate = rtt_s(obs, p), push_bytes(p), upload_s(p), upload_rate_bytes_per_s(p)
    if rtt is None or size is None or up is None or rate is None:
        return None
    limits = [w for w in (c.advertised_window_max_bytes,
                          p.h2_ledger.server_initial_window_bytes if p.h2_ledger else None,
                          p.ssh_ledger.initial_window_bytes if p.ssh_ledger else None) if w]
    window_rate = min(limits) / rtt if limits else None
    if window_rate is not None and rate >= WINDOW_EXPLAINS_RATIO * window_rate:
        return None  # a window explains the rate, not the loss
    if standing_queue(c):
        return None  # a full link's queue overflowing: bandwidth-limit, not a lossy hop
    if swallowed(c):
        return None  # the same large segment resent into a black hole: path-mtu-blackhole
    ceiling = [r for r in (window_rate, path_rate_bytes_per_s(obs)) if r is not None]
    if ceiling:
        return _Loss(name=name, cap=c, rate=rate, window_rate=window_rate,
                     cost=saved_time_s(size, up, min(ceiling)) or 0.0, fallback=False)
    cost = (c.timeout_retransmissions or 0) * MIN_RTO_S
    if c.mss_bytes:
        # No window known (a capture without its handshake): the time lost to the
        # loss above the threshold, by the Mathis bound MSS / RTT x 1.22 / sqrt(p).
        cost = max(cost, saved_time_s(size, up, _mathis_rate(c.mss_bytes, rtt,
                                                             LOSS_RATE)) or 0.0)
    return _Loss(name=name, cap=c, rate=rate, window_rate=window_rate, cost=cost, fallback=True)


def _loss_evidence(hits: list[_Loss], worst: _Loss) -> list[Evidence]:
    """Each lossy protocol's retransmissions; the worst one's kinds and its rate."""
    evidence: list[Evidence] = []
    for hit in hits:
        n, c = hit.name, hit.cap
        if out_of_order_only(c):
            evidence.append(Evidence(
                what=f"{label(n)}: data segments received out of order (loss or reordering)",
                value=c.out_of_order_share, unit="ratio", threshold=OUT_OF_ORDER_SHARE,
                comparison=">=", source=c.source))
            continue
        evidence += [
            Evidence(what=f"{label(n)}: retransmission rate", value=c.retransmission_rate,
                     unit="ratio", threshold=LOSS_RATE, comparison=">=", source=c.source),
            Evidence(what=f"{label(n)}: retransmitted bytes", value=c.retransmitted_bytes,
                     unit="B", source=c.source),
        ]
    cap, window_rate = worst.cap, worst.window_rate
    evidence += [
        Evidence(what=f"{label(worst.name)}: {kind} retransmissions", value=count or 0,
                 unit="count", source=cap.source)
        for kind, count in (("timeout", cap.timeout_retransmissions),
                            ("fast", cap.fast_retransmissions))
        if not out_of_order_only(cap)
    ]
    evidence.append(Evidence(
        what=f"{label(worst.name)}: upload rate vs what the windows allow",
        value=worst.rate,
        unit="B/s",
        threshold=WINDOW_EXPLAINS_RATIO * window_rate if window_rate else None,
        comparison="<" if window_rate else None,
        basis="{} of {}" if window_rate else "window unknown",
        basis_terms=(term(WINDOW_EXPLAINS_RATIO, "ratio"), term(window_rate, "B/s"))
        if window_rate else (),
        source=cap.source,
    ))
    return evidence


def _loss_words(name: str, cap: CaptureMetrics) -> str:
    if out_of_order_only(cap):
        return (f"{label(name)} received {(cap.out_of_order_share or 0.0) * 100:.1f}% of its "
                "data segments out of order (the sender's losses, or reordering on the path)")
    return f"{label(name)} retransmitted {(cap.retransmission_rate or 0.0) * 100:.2f}% of its bytes"


def packet_loss(obs: Observations) -> Hit | None:
    hits = [hit for name, p, c in captured(obs) if (hit := _lossy(obs, name, p, c)) is not None]
    if not hits:
        return None
    worst = max(hits, key=lambda hit: hit.cost)
    cap, rate, window_rate = worst.cap, worst.rate, worst.window_rate
    tally = Tally("packet-loss")
    tally.add("loss")
    if (cap.retransmission_rate or 0.0) >= HEAVY_LOSS_RATE:
        tally.add("heavy-loss")
    if cap.timeout_retransmissions:
        tally.add("timeouts")
    if (cap.network_limited_share or 0) >= NETWORK_LIMITED_SHARE:
        tally.add("network-limited")
    if worst.fallback:
        tally.scale("no-window-known")
    tally.note(*_loss_evidence(hits, worst))
    return tally.hit(
        cost_s=worst.cost,
        summary=(
            _loss_words(worst.name, cap) + f" and uploaded at {fmt_rate(rate)}"
            + (f", below the {fmt_rate(window_rate)} its windows allow" if window_rate else "")
            + ": loss on the path makes congestion control back off."
        ),
        fix=(
            "Find the lossy hop: `mtr -rwc 200 HOST`, interface drops and errors "
            "(`ip -s link`, `ethtool -S`), policers and shapers on the path. On the sending "
            "side `net.ipv4.tcp_congestion_control = bbr` suffers far less from random loss than "
            "cubic."
        ),
    )


def bandwidth_limit(obs: Observations) -> Hit | None:
    rates = protocol_rates(obs)
    if not rates:
        return None
    best = max(rates, key=lambda key: rates[key])
    p = obs.protocols[best]
    up = upload_s(p)
    if up is None:
        return None
    path = path_rate_bytes_per_s(obs)
    evidence: list[Evidence] = []
    queued = None
    if path is not None:
        if rates[best] < 0.8 * path:
            return None
        score = weight("bandwidth-limit", "at-path-rate")
        evidence.append(
            Evidence(
                what=f"{label(best)} upload rate vs path capacity",
                value=rates[best],
                unit="B/s",
                threshold=0.8 * path,
                comparison=">=",
                basis="{} of the path capacity {}",
                basis_terms=(term(0.8, "ratio"), term(path, "B/s")),
                source="pushes; path rate from run",
            )
        )
    elif (queued := _queued_protocol(obs)) is not None:
        best, up, cap = queued
        score = weight("bandwidth-limit", "standing-queue")
        evidence.extend(_queue_evidence(best, rates[best], cap,
                                        obs.run.transfer == "download"))
    else:
        alike = _all_alike_evidence(obs, rates)
        if alike is None:
            return None
        score = weight("bandwidth-limit", "all-alike")
        evidence.extend(alike)
    return Hit(
        score=score,
        cost_s=up,
        summary=(
            f"The path is full: {label(best)} uploaded at {fmt_rate(rates[best])}"
            + (
                f" of a {fmt_rate(path)} path"
                if path
                else f" while a queue of {fmt_s(queued[2].median_rtt_s - queued[2].min_rtt_s)}"
                " stood in front of the narrowest link"
                if queued and queued[2].median_rtt_s and queued[2].min_rtt_s
                else ", and every protocol ran alike"
            )
            + ". This is not a misconfiguration: the push takes as long as its bytes need."
        ),
        evidence=tuple(evidence),
        fix=(
            "Not a misconfiguration: more bandwidth on the narrowest link, or fewer bytes "
            "(smaller pushes, Git LFS for large binaries, `pack.compression`), or a QoS class for "
            "git traffic on a shared link."
        ),
    )


def _all_alike_evidence(obs: Observations, rates: dict[str, float]) -> list[Evidence] | None:
    """Without a path rate or a queue: every captured protocol network-limited without
    loss, and their rates within 30% of each other. ``None`` when not so."""
    caps = [(n, o.capture) for n, o in obs.protocols.items() if o.capture is not None]
    if len(caps) < 2 or len(rates) < 2:
        return None
    if any(
        (c.network_limited_share or 0) < 0.6 or (c.retransmission_rate or 0) >= LOSS_RATE
        for _, c in caps
    ):
        return None
    if min(rates.values()) < 0.7 * max(rates.values()):
        return None
    evidence = [
        Evidence(
            what=f"{label(n)}: network-limited (cwnd, window open, no loss)",
            value=c.network_limited_share,
            unit="ratio",
            threshold=0.6,
            comparison=">=",
            source=c.source,
        )
        for n, c in caps
    ]
    evidence.extend(
        Evidence(
            what=f"{label(n)} upload rate",
            value=r,
            unit="B/s",
            basis="all protocols within {} of each other",
            basis_terms=(term(0.3, "ratio"),),
            source="pushes",
        )
        for n, r in rates.items()
    )
    return evidence


def _queued_protocol(obs: Observations) -> tuple[str, float, CaptureMetrics] | None:
    """The protocol whose completed push ran through a standing queue (the fastest such
    push), with its whole duration: every byte of it waited for the full link, including
    what still drained from the queue after git handed over the last byte."""
    found = [(name, took, c) for name, p, c in captured(obs) if (took := push_duration_s(p))
             and standing_queue(c) and not _idle_sender(obs, c)]
    return min(found, key=lambda hit: hit[1]) if found else None


def _idle_sender(obs: Observations, cap: CaptureMetrics) -> bool:
    """A clone's sender that had nothing to send most of the time (application-limited).

    A full link is never idle. On a clone the queue is read from the receiver's RTT
    (TCP_INFO ``rcv_rtt``), which a sender idle between bursts inflates: the first full
    segment after a gap can echo the timestamp of the client's last ACK, from before the gap,
    so the sample then measures the gap, not a queue. The lab's CPU-starved upload-pack
    (``slow-pack-generation``, issue 26): HTTP/1.1 clones whose download socket sat idle
    91% and 93% of 20.6 and 22.8 s, their median ``rcv_rtt`` 2.1x and 9.9x the minimum; the
    ``bandwidth-limit`` clones: idle at most 11%. A push's queue is read from the sender's
    own ACK round trips in its capture, which no gap of the sender's inflates: pushes keep
    the queue alone.
    """
    return obs.run.transfer == "download" and \
        (cap.self_limited_share or 0.0) >= SELF_LIMITED_SHARE


def _queue_evidence(name: str, rate: float, cap: CaptureMetrics,
                    download: bool) -> list[Evidence]:
    assert cap.min_rtt_s is not None and cap.median_rtt_s is not None
    busy = [] if cap.self_limited_share is None or not download else [Evidence(
        what=f"{label(name)}: sender application-limited (nothing to send)",
        value=cap.self_limited_share, unit="ratio", threshold=SELF_LIMITED_SHARE,
        comparison="<", basis="a full link is never idle", source=cap.source)]
    return [*busy,
        Evidence(
            what=f"{label(name)}: median RTT during the upload (a queue at the bottleneck)",
            value=cap.median_rtt_s,
            unit="s",
            threshold=QUEUE_RTT_RATIO * cap.min_rtt_s,
            comparison=">=",
            basis="{} x the minimum RTT {}",
            basis_terms=(term(QUEUE_RTT_RATIO, "ratio"), term(cap.min_rtt_s, "s")),
            source=cap.source,
        ),
        Evidence(
            what=f"{label(name)}: queueing delay (median - minimum RTT)",
            value=cap.median_rtt_s - cap.min_rtt_s,
            unit="s",
            threshold=QUEUE_MIN_DELAY_S,
            comparison=">=",
            source=cap.source,
        ),
        Evidence(
            what=f"{label(name)}: sender receive-window-limited",
            value=cap.rwnd_limited_share,
            unit="ratio",
            threshold=RWND_LIMITED_SHARE,
            comparison="<",
            basis="the window does not hold the sender back",
            source=cap.source,
        )
        if cap.rwnd_limited_share is not None
        else Evidence(
            what=f"{label(name)}: sender receive-window-limited",
            text="not measured (no capture with its handshake, no sender's socket)",
            source=cap.source,
        ),
        Evidence(
            what=f"{label(name)}: upload rate (the full link's capacity)",
            value=rate,
            unit="B/s",
            source="pushes",
        ),
    ]


def path_latency(obs: Observations) -> Hit | None:
    rtt = rtt_s(obs)
    if rtt is None or rtt < 2 * REFERENCE_RTT_S:
        return None
    best: tuple[float, str, int, float] | None = None
    held: dict[str, Evidence] = {}
    for name, p in observed(obs):
        size, up, rate = push_bytes(p), upload_s(p), upload_rate_bytes_per_s(p)
        if size is None or up is None or rate is None:
            continue
        windows = []
        if p.capture and (p.capture.rwnd_limited_share or 0) >= RWND_LIMITED_SHARE:
            windows.append(p.capture.largest_window_bytes)
            held[name] = rwnd_limited(name, p.capture)
        if p.h2_ledger and p.h2_ledger.server_initial_window_bytes:
            windows.append(p.h2_ledger.server_initial_window_bytes)
        if p.ssh_ledger and p.ssh_ledger.initial_window_bytes:
            windows.append(p.ssh_ledger.initial_window_bytes)
        known = [w for w in windows if w]
        if not known:
            continue
        window = min(known)
        if not window / rtt / MATCHES_CAP_RATIO <= rate <= MATCHES_CAP_RATIO * window / rtt:
            continue  # the rate is not window / RTT: not window-limited
        near = window / REFERENCE_RTT_S
        ceiling = path_rate_bytes_per_s(obs)
        cost = saved_time_s(size, up, min(near, ceiling) if ceiling else near) or 0.0
        if best is None or cost > best[0]:
            best = (cost, name, window, rate)
    if best is None:
        return None
    cost, worst, window, rate = best
    score = weight("path-latency",
                   "autotune-maximum" if window >= AUTOTUNE_MAX_WINDOW_BYTES else "small-window")
    return Hit(
        score=score,
        cost_s=cost,
        summary=(
            f"At {fmt_s(rtt)} RTT a {fmt_bytes(window)} window carries only "
            f"{fmt_rate(window / rtt)} ({label(worst)} measured {fmt_rate(rate)}); at "
            f"{fmt_s(REFERENCE_RTT_S)} the same window would carry "
            f"{fmt_rate(window / REFERENCE_RTT_S)}."
        ),
        evidence=(
            Evidence(
                what="path RTT",
                value=rtt,
                unit="s",
                threshold=2 * REFERENCE_RTT_S,
                comparison=">=",
                source="run",
            ),
            Evidence(
                what=f"{label(worst)}: limiting window",
                value=window,
                unit="B",
                basis="rate within {}x of window / RTT",
                basis_terms=(term(MATCHES_CAP_RATIO, "count"),),
                source="capture / ledger",
            ),
            *((held[worst],) if worst in held else ()),
        ),
        fix=(
            "Push to a closer endpoint (a regional git mirror or edge that accepts pushes, CI "
            "runners near the server); every window-limited rate scales as window / RTT, so the "
            "window fixes above also shrink this cost."
        ),
    )
