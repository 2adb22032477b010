"""Rules the run-directory, fetch and bare-capture pipelines apply to analysed connections,
each written once: the handshake tallies of a burst, a probe's burst record as the engine's
burst, and which push of a protocol is the one to analyse."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar, cast

import numpy as np

from gitnetdiag.analysis.tcp import ConnectionAnalysis
from gitnetdiag.diagnosis.observations import BurstResult, ProtocolName
from gitnetdiag.outcomes import MEASURED_OUTCOMES, FailureKind
from gitnetdiag.rundir import BurstRecord, PushRecord

R = TypeVar("R", bound=PushRecord)
K = TypeVar("K")


@dataclass(frozen=True, kw_only=True)
class HandshakeTally:
    """Connection set-up trouble summed over the connections of a burst."""

    syn_retransmissions: int = 0
    """The clients' SYNs sent again (a SYN dropped, or its SYN-ACK)."""
    synack_retransmissions: int = 0
    """The servers' SYN-ACKs sent again, or seen after the client's ACK (a full queue)."""
    resets: int = 0
    """RSTs sent either way."""


def handshake_tally(connections: Iterable[ConnectionAnalysis]) -> HandshakeTally:
    """The :class:`HandshakeTally` of ``connections``."""
    syn = synack = resets = 0
    for conn in connections:
        syn += conn.handshake.syn_retransmissions
        synack += max(conn.handshake.synack_retransmissions, conn.handshake.synack_after_ack)
        resets += conn.a_to_b.resets_sent + conn.b_to_a.resets_sent
    return HandshakeTally(syn_retransmissions=syn, synack_retransmissions=synack,
                          resets=resets)


def count_by_kind(kinds: Iterable[K]) -> dict[K, int]:
    """How many failures of each kind, in the order the kinds first came up."""
    return dict(Counter(kinds))


def analysis_order(records: Iterable[R]) -> list[R]:
    """The pushes in the order to analyse them: measured ones first, slowest first (what
    the user complains about), then the failed ones, longest first."""
    return sorted(records, key=lambda r: (r.outcome not in MEASURED_OUTCOMES, -r.wall_s))


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile of ``values`` (linear), None when there are none."""
    return float(np.percentile(np.asarray(values), q)) if values else None


def burst_result(burst: BurstRecord, endpoint: str,
                 connections: Iterable[ConnectionAnalysis] | None) -> BurstResult:
    """A probe's burst (a push's or a fetch's) as the engine's :class:`BurstResult`: its
    failures by kind, connect and ls-remote times, and the handshake trouble of its
    capture's ``connections`` (``None``: no capture analysed, the counts unknown)."""
    failed = count_by_kind(op.failure_kind or FailureKind.OTHER
                           for op in burst.ops if not op.ok)
    connects = [c.connect_s for c in burst.connects if c.connect_s is not None]
    tally = handshake_tally(connections or ())
    walls = [op.wall_s for op in burst.ops if op.ok]
    port = int(endpoint.rsplit(":", 1)[1]) if ":" in endpoint else None
    return BurstResult(
        # The probe writes one of the four ids (the manifest's protocol names).
        protocol=cast(ProtocolName, burst.protocol), concurrency=burst.concurrency,
        ok=sum(1 for op in burst.ops if op.ok), port=port, failed_by_kind=failed,
        connect_p50_s=percentile(connects, 50), connect_p99_s=percentile(connects, 99),
        connect_max_s=max(connects) if connects else None,
        duration_p50_s=statistics.median(walls) if walls else None,
        syn_retransmissions=tally.syn_retransmissions,
        synack_retransmissions=tally.synack_retransmissions, resets=tally.resets,
        handshakes_counted=connections is not None,
    )
