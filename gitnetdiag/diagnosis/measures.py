"""Derived quantities every culprit needs: rates, upload times, RTT, next limits.

All rates here are bytes per second (``_bytes_per_s``), as everywhere in gitnetdiag.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable

from gitnetdiag.diagnosis.observations import (
    PROTOCOL_ORDER,
    Observations,
    ProtocolObservation,
    PushObservation,
)

INITIAL_WINDOW_SEGMENTS = 10
"""Linux's initial congestion window (RFC 6928), in segments."""
DEFAULT_MSS_BYTES = 1460
"""Segment size assumed when no capture gives it (Ethernet, IPv4)."""


def ramp_time_s(size: float, rate: float | None, rtt: float, mss: float) -> float:
    """Seconds to send ``size`` bytes: slow start from the initial window, doubling
    each round trip, until a round trip carries ``rate x RTT``; then at ``rate``.
    ``rate`` ``None``: nothing known caps the rate, slow start alone."""
    target = math.inf if rate is None else rate * rtt
    per_rtt = INITIAL_WINDOW_SEGMENTS * mss
    sent = elapsed = 0.0
    while per_rtt < target and sent + per_rtt < size:
        sent += per_rtt
        elapsed += rtt
        per_rtt *= 2
    per_rtt = min(per_rtt, target)
    return elapsed + (size - sent) / per_rtt * rtt


def median(values: Iterable[float]) -> float | None:
    """Median, or ``None`` for no values."""
    items = list(values)
    return statistics.median(items) if items else None


def fetched_clones(obs: Observations, protocol: str) -> tuple[PushObservation, ...] | None:
    """A fetch's complete clones of ``protocol`` timed whole, as a complete push is (its
    wall time), less the checkout: connect, the refs, the server's work before the first
    pack byte, the pack and index-pack are the fetch; writing the working tree is not (a
    fetch or a bare clone has none). None when a clone was bounded or failed: then the
    push-shaped records (a bounded clone's pack at its rate)."""
    clones = [t for t in obs.transfers if t.protocol == protocol]
    if not clones or any(t.outcome != "ok" or t.stopped is not None for t in clones):
        return None
    return tuple(PushObservation(duration_s=t.wall_s - (t.phases.checkout_s or 0.0),
                            bytes=t.moved_bytes, moved_bytes=t.moved_bytes) for t in clones)


def ok_pushes(p: ProtocolObservation) -> list[PushObservation]:
    """Completed pushes with a positive duration."""
    return [push for push in p.pushes if push.ok and push.duration_s > 0]


def failed_pushes(p: ProtocolObservation) -> list[PushObservation]:
    """Failed or hung pushes."""
    return [push for push in p.pushes if not push.ok]


def push_bytes(p: ProtocolObservation) -> float | None:
    """Bytes of a typical push (median)."""
    return median(push.bytes for push in p.pushes if push.bytes > 0)


def push_duration_s(p: ProtocolObservation) -> float | None:
    """Median duration of the completed pushes."""
    return median(push.duration_s for push in ok_pushes(p))


def upload_s(p: ProtocolObservation) -> float | None:
    """Upload phase of a typical completed push: trace2 when known, else the whole push."""
    if not ok_pushes(p):
        return None
    if p.trace2 is not None and p.trace2.upload_s is not None and p.trace2.upload_s > 0:
        return p.trace2.upload_s
    return push_duration_s(p)


def upload_rate_bytes_per_s(p: ProtocolObservation) -> float | None:
    """Rate of the upload phase of a typical completed push."""
    size, seconds = push_bytes(p), upload_s(p)
    if size is None or seconds is None or seconds <= 0:
        return None
    return size / seconds


def capture_rtt_s(p: ProtocolObservation) -> float | None:
    """RTT seen on a protocol's capture: handshake, else min, else median sample."""
    c = p.capture
    values = (c.handshake_rtt_s, c.min_rtt_s, c.median_rtt_s) if c is not None else ()
    return next((value for value in values if value is not None and value > 0), None)


def rtt_s(obs: Observations, p: ProtocolObservation | None = None) -> float | None:
    """The path RTT: the run's when measured, else this protocol's capture, else any capture."""
    if obs.run.rtt_s is not None and obs.run.rtt_s > 0:
        return obs.run.rtt_s
    candidates = [p] if p is not None else []
    candidates += [other for other in obs.protocols.values() if other is not p]
    found = (capture_rtt_s(candidate) for candidate in candidates)
    return next((rtt for rtt in found if rtt is not None), None)


def path_rate_bytes_per_s(obs: Observations) -> float | None:
    """Measured path capacity in bytes per second."""
    rate = obs.run.path_rate_bytes_per_s
    return rate if rate is not None and rate > 0 else None


def protocol_rates(obs: Observations) -> dict[str, float]:
    """Upload rate of each protocol that completed a push, canonical order."""
    rates = {name: upload_rate_bytes_per_s(obs.protocols[name])
             for name in PROTOCOL_ORDER if name in obs.protocols}
    return {name: rate for name, rate in rates.items() if rate is not None}


def best_other_rate(obs: Observations, exclude: str) -> tuple[str, float] | None:
    """The fastest other protocol's measured upload rate."""
    rates = [(name, rate) for name, rate in protocol_rates(obs).items() if name != exclude]
    return max(rates, key=lambda item: item[1], default=None)


def tcp_window_rate(obs: Observations, p: ProtocolObservation) -> float | None:
    """What the TCP receive window alone would allow: largest advertised window / RTT."""
    rtt = rtt_s(obs, p)
    if p.capture is None or rtt is None:
        return None
    window = p.capture.advertised_window_max_bytes or p.capture.advertised_window_median_bytes
    return window / rtt if window else None


def saved_time_s(size: float, upload: float, faster_bytes_per_s: float | None) -> float | None:
    """Seconds saved if the upload ran at ``faster_bytes_per_s`` instead (never negative)."""
    if faster_bytes_per_s is None or faster_bytes_per_s <= 0:
        return None
    return max(0.0, upload - size / faster_bytes_per_s)
