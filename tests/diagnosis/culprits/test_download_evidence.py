"""The evidence builders the download culprits share (``_common``): the client's window open
and no queue on the path, the same block in ``edge-response-buffering`` and
``server-send-buffer``."""

from __future__ import annotations

import pytest

from gitnetdiag.analysis.tcpinfo import ReceiverTcpSummary
from gitnetdiag.diagnosis.culprits._common import flight_in_window, no_queue


def _tcp(median_rtt_s: float | None, min_rtt_s: float | None) -> ReceiverTcpSummary:
    return ReceiverTcpSummary(
        source="ss -tin", samples=10, span_s=10.0, received_bytes=2_000_000,
        advertised_window_max_bytes=1_000_000, receive_buffer_max_bytes=2_000_000,
        rcv_space_max_bytes=100_000, min_rtt_s=min_rtt_s, median_rtt_s=median_rtt_s)


def test_flight_in_window_says_half_or_the_share() -> None:
    half = flight_in_window("flight", 100_000.0, 1_000_000.0, 0.5, "ss -tin")
    assert (half.threshold, half.comparison) == (500_000.0, "<=")
    assert half.basis == "half of the client's advertised window {}"
    assert [q.value for q in half.basis_terms] == [1_000_000.0]
    quarter = flight_in_window("flight", 100_000.0, 1_000_000.0, 0.25, "ss -tin")
    assert quarter.threshold == 250_000.0
    assert [(q.value, q.unit) for q in quarter.basis_terms] == [(0.25, "ratio"),
                                                                (1_000_000.0, "B")]


def test_no_queue_only_when_the_median_rtt_stays_near_the_minimum() -> None:
    evidence = no_queue(_tcp(0.06, 0.05), 1.5)
    assert evidence is not None
    assert evidence.value == 0.06 and evidence.threshold == pytest.approx(0.075)
    assert evidence.basis == "1.5 x the minimum RTT {}"
    assert evidence.source == "ss -tin rcv_rtt, minrtt"
    assert no_queue(_tcp(0.08, 0.05), 1.5) is None
    assert no_queue(_tcp(None, 0.05), 1.5) is None
    assert no_queue(_tcp(0.06, None), 1.5) is None
