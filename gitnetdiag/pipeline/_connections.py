"""Rules the run-directory and bare-capture pipelines both apply to analysed connections,
each written once: the receiver's window carried over bins without an advertisement, the
handshake tallies of a burst, and which push of a protocol is the one to analyse."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from gitnetdiag.analysis.tcp import ConnectionAnalysis
from gitnetdiag.outcomes import MEASURED_OUTCOMES
from gitnetdiag.rundir import PushRecord

R = TypeVar("R", bound=PushRecord)
K = TypeVar("K")


def forward_filled(window: npt.NDArray[np.float64]) -> npt.NDArray[np.float64] | None:
    """Per-bin advertised window (-1 where a bin had no advertisement) with every gap
    carrying the last window seen forward, and the bins before the first advertisement
    the first one; None when no bin has one."""
    known = window >= 0
    if not known.any():
        return None
    idx = np.where(known, np.arange(window.size), 0)
    np.maximum.accumulate(idx, out=idx)
    return np.where(known[idx], window[idx], window[int(np.argmax(known))])


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
    counts: dict[K, int] = {}
    for kind in kinds:
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def analysis_order(records: Iterable[R]) -> list[R]:
    """The pushes in the order to analyse them: measured ones first, slowest first (what
    the user complains about), then the failed ones, longest first."""
    return sorted(records, key=lambda r: (r.outcome not in MEASURED_OUTCOMES, -r.wall_s))
