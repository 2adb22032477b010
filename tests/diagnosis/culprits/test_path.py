"""Loss and path culprits: crafted runs whose top-ranked finding is the culprit."""

from __future__ import annotations

import pytest

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.observations import (
    CaptureMetrics,
    Observations,
)
from tests.diagnosis.culprits.crafted import (
    MB,
    Case,
    assert_ranks_first_with_its_fix,
    cap,
    clamped,
    proto,
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
    return Observations(run=run(path_rate_bytes_per_s=50e6), protocols=three(20.0, capture=lossy))


def case_bandwidth_limit() -> Observations:
    full = cap(network_limited_share=0.9, self_limited_share=0.05, retransmission_rate=0.001)
    return Observations(run=run(path_rate_bytes_per_s=2.5e6),
                        protocols=three(MB / 2.4e6, capture=full))


def _queued(**kw: object) -> CaptureMetrics:
    """A push that filled a 10 Mbit/s bottleneck: a queue of 250 ms stood at it and its
    buffer overflowed now and then (congestion loss, not a lossy hop)."""
    base: dict[str, object] = {
        "min_rtt_s": 0.05,
        "median_rtt_s": 0.30,
        "bytes_in_flight_median": 375_000,
        "retransmission_rate": 0.006,
        "retransmitted_bytes": 18_000,
        "fast_retransmissions": 12,
        "network_limited_share": 0.4,
        "self_limited_share": 0.55,
    }
    base.update(kw)
    return cap(**base)


def case_bandwidth_limit_queue() -> Observations:
    """No path rate measured: the standing queue in the capture shows the link is full."""
    return Observations(
        run=run(),
        protocols={"h1": proto(3_000_000 / 1.2e6, size=3_000_000, n=1, capture=_queued())},
    )


def case_path_latency() -> Observations:
    window = 6_291_456
    size = 240_000_000
    return Observations(
        run=run(rtt_s=0.3, path_rate_bytes_per_s=100e6),
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


def test_standing_queue_is_a_full_link_and_its_overflow_no_lossy_hop() -> None:
    """A queue of 250 ms stood at the bottleneck, so the link was busy all along: the push
    ran at its capacity and the 0.6% retransmissions are the full queue overflowing:
    bandwidth-limit, costed as the whole push, and no packet-loss."""
    obs = case_bandwidth_limit_queue()
    result = diagnose(obs)
    assert [f.id for f in result.findings] == ["bandwidth-limit"]
    top = result.findings[0]
    assert "not a misconfiguration" in top.summary and "250 ms" in top.summary
    delay = next(e for e in top.evidence if "queueing delay" in e.what)
    assert delay.value == pytest.approx(0.25)
    assert delay.unit == "s"
    assert top.cost_s == pytest.approx(obs.protocols["h1"].pushes[0].duration_s, rel=1e-3)


def test_loss_without_a_queue_stays_packet_loss() -> None:
    """The same push with no queue (median RTT near the minimum): random loss on the path."""
    lossy = _queued(median_rtt_s=0.055, retransmission_rate=0.02)
    obs = Observations(
        run=run(), protocols={"h1": proto(3_000_000 / 1.2e6, size=3_000_000, n=1, capture=lossy)}
    )
    ids = [f.id for f in diagnose(obs).findings]
    assert ids and ids[0] == "packet-loss" and "bandwidth-limit" not in ids


def test_a_window_limited_sender_is_no_full_link() -> None:
    """RTT grows under a receive-window limit too (a queue of its own data): no bottleneck."""
    obs = Observations(
        run=run(),
        protocols={"h1": proto(2.5, size=3_000_000, n=1,
                               capture=_queued(rwnd_limited_share=0.8))},
    )
    assert "bandwidth-limit" not in [f.id for f in diagnose(obs).findings]
