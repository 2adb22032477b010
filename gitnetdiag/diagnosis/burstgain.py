"""Connection bursts of two runs side by side, and what a burst culprit's fix gained.

Pure, for :mod:`gitnetdiag.diagnosis.comparison`. A burst culprit
(``listen-backlog-overflow``, ``syn-drop``, ``ssh-maxstartups``) costs the seconds a
connection of a burst loses (failures, SYN timeouts, the connect-time tail); its
gain is that loss in the baseline minus in the other run, each side counted the
way the culprit counts its cost.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitnetdiag.diagnosis.culprits._common import SYN_RTO_S, burst_cost_s
from gitnetdiag.diagnosis.measures import rtt_s
from gitnetdiag.diagnosis.model import Diagnosis
from gitnetdiag.diagnosis.observations import PROTOCOL_LABELS, PROTOCOL_ORDER, BurstResult

SYN_UNCOUNTED = frozenset({"ssh-maxstartups"})
"""Burst culprits whose cost leaves SYN retransmissions out (sshd refuses, SYNs are not
its doing)."""


@dataclass(frozen=True, kw_only=True)
class BurstSide:
    """One run's burst against one protocol."""

    concurrency: int
    """Connections opened at once."""
    failed: int
    """Failed operations."""
    syn_retransmissions: int | None
    """SYN and SYN-ACK retransmissions seen on the burst's connections; None when no
    capture of the burst was analysed (not counted)."""
    connect_p50_s: float | None
    """Median TCP connect time."""
    connect_p99_s: float | None
    """99th percentile TCP connect time."""
    lost_s: float
    """Seconds a connection lost, as the burst culprits count them
    (:func:`~gitnetdiag.diagnosis.culprits._common.burst_cost_s`)."""


@dataclass(frozen=True, kw_only=True)
class BurstComparison:
    """A protocol's connection burst in both runs of a pair."""

    protocol: str
    """``h1``, ``h2``, ``ssh`` or ``git``."""
    label: str
    """Human name."""
    before: BurstSide
    """The baseline's burst."""
    after: BurstSide
    """The other run's burst."""


def burst_side(burst: BurstResult, rtt: float | None, *, syn: bool = True) -> BurstSide:
    """One run's burst, with the seconds a connection lost in it."""
    return BurstSide(
        concurrency=burst.concurrency, failed=burst.failed,
        syn_retransmissions=burst.syn_retransmissions + burst.synack_retransmissions
        if burst.handshakes_counted else None,
        connect_p50_s=burst.connect_p50_s, connect_p99_s=burst.connect_p99_s,
        lost_s=burst_cost_s(burst, rtt, syn=syn))


def _first_bursts(d: Diagnosis) -> dict[str, BurstResult]:
    """Each protocol's first burst in run ``d``."""
    return {burst.protocol: burst for burst in reversed(d.observations.bursts)}


def compare_bursts(before: Diagnosis, after: Diagnosis) -> list[BurstComparison]:
    """Bursts run against the same protocol in both runs (the first of each side)."""
    b, a = _first_bursts(before), _first_bursts(after)
    rtt_b, rtt_a = rtt_s(before.observations), rtt_s(after.observations)
    return [BurstComparison(protocol=name, label=PROTOCOL_LABELS.get(name, name),
                            before=burst_side(b[name], rtt_b), after=burst_side(a[name], rtt_a))
            for name in PROTOCOL_ORDER if name in b and name in a]


def _push_syn_retransmissions(d: Diagnosis) -> int:
    captures = [p.capture for p in d.observations.protocols.values() if p.capture is not None]
    return sum((c.syn_retransmissions or 0) + (c.synack_retransmissions or 0) for c in captures)


def burst_loss_s(d: Diagnosis, culprit_id: str, protocol: str) -> float | None:
    """Seconds a connection of ``protocol``'s burst lost in run ``d``, counted as the burst
    culprit ``culprit_id`` counts its cost (``syn-drop`` adds one SYN timeout per SYN
    retransmitted on the pushes); ``None`` when the run has no such burst."""
    burst = _first_bursts(d).get(protocol)
    if burst is None:
        return None
    loss = burst_cost_s(burst, rtt_s(d.observations), syn=culprit_id not in SYN_UNCOUNTED)
    if culprit_id == "syn-drop":
        loss += _push_syn_retransmissions(d) * SYN_RTO_S
    return loss
