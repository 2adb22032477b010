"""Loss and path culprits: crafted runs whose top-ranked finding is the culprit."""

from __future__ import annotations

import pytest

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.observations import (
    Observations,
)
from tests.diagnosis.culprits.crafted import (
    MB,
    Case,
    assert_ranks_first_with_its_fix,
    cap,
    clamped,
    run,
    three,
)


def case_packet_loss() -> Observations:
    lossy = cap(
        retransmission_rate=0.02,
        retransmitted_bytes=480_000,
        timeout_retransmissions=12,
        fast_retransmissions=300,
        network_limited_share=0.8,
        self_limited_share=0.1,
        bytes_in_flight_median=60_000,
    )
    return Observations(run=run(path_rate_bps=400e6), protocols=three(20.0, capture=lossy))


def case_bandwidth_limit() -> Observations:
    full = cap(network_limited_share=0.9, self_limited_share=0.05, retransmission_rate=0.001)
    return Observations(run=run(path_rate_bps=20e6), protocols=three(MB / 2.4e6, capture=full))


def case_path_latency() -> Observations:
    window = 6_291_456
    size = 240_000_000
    return Observations(
        run=run(rtt_s=0.3, path_rate_bps=800e6),
        protocols=three(size / (window / 0.3), size=size, capture=clamped(window, scale=7)),
    )


CASES: dict[str, Case] = {
    "packet-loss": (case_packet_loss, ("mtr", "net.ipv4.tcp_congestion_control")),
    "bandwidth-limit": (case_bandwidth_limit, ("Not a misconfiguration",)),
    "path-latency": (case_path_latency, ("closer endpoint",)),
}
"""Each culprit of the family, its crafted run and the settings its fix names."""


@pytest.mark.parametrize("culprit_id", list(CASES))
def test_culprit_ranks_first_with_its_fix(culprit_id: str) -> None:
    """The crafted run's top finding is the culprit, with numbers, evidence and the setting."""
    assert_ranks_first_with_its_fix(culprit_id, CASES[culprit_id])


def test_bandwidth_limit_says_not_a_misconfiguration() -> None:
    top = diagnose(case_bandwidth_limit()).findings[0]
    assert "not a misconfiguration" in top.summary
