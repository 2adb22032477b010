"""A window that allows far more than the run asked of it did not bind.

Every window culprit (the HTTP/2 window, the SSH channel window, the TCP receive
window) rests on one rule: a window of W bytes lets a transfer move at most
W / RTT. The same rule speaks against the culprit when that rate is far above
anything the run reached or needed: on a 0 ms path a 65536 B HTTP/2 window allows
gigabytes per second, and a push that hung for 15 s with 8 MB to send needed half a
megabyte per second. A window never stops a transfer (a receiver that stops
granting credit does, whatever its size), and a window that allows four times the
fastest rate seen limited none of them: the stall or the slowness has another cause.

    allows = window / RTT
    reached = the fastest upload rate of any protocol's completed pushes
    needed  = a stalled push's pack / its duration (what would have finished it in time)
    path    = the measured path rate

    allows >= HEADROOM_RATIO x max(reached, needed)  or  allows > path  -> did not bind
"""

from __future__ import annotations

from dataclasses import dataclass

from gitnetdiag.diagnosis.culprits._common import label, observed
from gitnetdiag.diagnosis.culprits.mtu import STALL_KINDS
from gitnetdiag.diagnosis.measures import path_rate_bytes_per_s, upload_rate_bytes_per_s
from gitnetdiag.diagnosis.observations import Observations

HEADROOM_RATIO = 4.0
"""A window whose rate (window / RTT) is at least this multiple of the fastest rate a
transfer of the run reached or needed did not bind. A window that binds holds its rate
near window / RTT (within 1.5x: ``MATCHES_CAP_RATIO``); a short push at a long RTT
spends part of its time in slow start and may reach a third of it (the SSH rule): four
times is beyond both."""


@dataclass(frozen=True, kw_only=True)
class Headroom:
    """Why a window did not bind: the rate it allows against what the run asked."""

    allows_bytes_per_s: float
    """window / RTT."""
    reference_bytes_per_s: float
    """The rate it is compared with."""
    reference: str
    """What that rate is, in words (``HTTP/1.1 push``, ``path rate``, ...)."""
    ratio: float
    """The multiple of the reference the window's rate reaches at least."""


def asked_rates(obs: Observations) -> list[tuple[str, float]]:
    """Every rate the run reached or needed, canonical protocol order: each protocol's
    completed upload rate, and for its stalled pushes the rate that would have moved
    the whole pack within the time the push ran."""
    rates: list[tuple[str, float]] = []
    for name, p in observed(obs):
        rate = upload_rate_bytes_per_s(p)
        if rate is not None and rate > 0:
            rates.append((f"{label(name)} push", rate))
        needed = [push.bytes / push.duration_s for push in p.pushes
                  if not push.ok and push.error_kind in STALL_KINDS
                  and push.bytes > 0 and push.duration_s > 0]
        if needed:
            rates.append((f"rate a stalled {label(name)} push needed to finish in the "
                          "time it ran (pack / duration)", max(needed)))
    return rates


def window_headroom(obs: Observations, window: float | None,
                    rtt: float | None) -> Headroom | None:
    """The evidence that a window of ``window`` bytes over ``rtt`` did not bind the run's
    transfers; None when it may have (or nothing tells)."""
    if not window or not rtt or window <= 0 or rtt <= 0:
        return None
    allows = window / rtt
    path = path_rate_bytes_per_s(obs)
    if path is not None and allows > path:
        return Headroom(allows_bytes_per_s=allows, reference_bytes_per_s=path,
                        reference="path rate", ratio=1.0)
    rates = asked_rates(obs)
    if not rates:
        return None
    what, fastest = max(rates, key=lambda item: item[1])
    if allows < HEADROOM_RATIO * fastest:
        return None
    return Headroom(allows_bytes_per_s=allows, reference_bytes_per_s=fastest, reference=what,
                    ratio=HEADROOM_RATIO)
