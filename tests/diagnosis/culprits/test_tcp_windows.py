"""TCP windows culprits: crafted runs whose top-ranked finding is the culprit."""

from __future__ import annotations

import pytest

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.observations import (
    HostEvidence,
    Observations,
)
from tests.diagnosis.culprits.crafted import (
    MB,
    Case,
    assert_ranks_first_with_its_fix,
    clamped,
    run,
    three,
)


def case_tcp_clamp() -> Observations:
    window = 262_144
    upload = MB / (window / 0.05)
    return Observations(
        run=run(path_rate_bytes_per_s=50e6),
        protocols=three(upload, capture=clamped(window)),
        host=HostEvidence(sysctls={"net.ipv4.tcp_rmem": "4096 131072 262144"}),
    )


def case_window_scaling_off() -> Observations:
    window = 65535
    return Observations(
        run=run(path_rate_bytes_per_s=50e6),
        protocols=three(MB / (window / 0.05), capture=clamped(window, scale=None)),
    )


CASES: dict[str, Case] = {
    "tcp-receive-window-clamp": (case_tcp_clamp, ("net.ipv4.tcp_rmem", "SO_RCVBUF")),
    "tcp-window-scaling-off": (case_window_scaling_off, ("net.ipv4.tcp_window_scaling",)),
}
"""Each culprit of the family, its crafted run and the settings its fix names."""


@pytest.mark.parametrize("culprit_id", list(CASES))
def test_culprit_ranks_first_with_its_fix(culprit_id: str) -> None:
    """The crafted run's top finding is the culprit, with numbers, evidence and the setting."""
    assert_ranks_first_with_its_fix(culprit_id, CASES[culprit_id])


def test_window_scaling_off_owns_the_window_seconds() -> None:
    """A 64 KiB window without scaling cannot be told from a clamp: the specific cause
    takes the seconds, and the clamp is not reported on top of it (same seconds twice)."""
    ids = [f.id for f in diagnose(case_window_scaling_off()).findings]
    assert ids[0] == "tcp-window-scaling-off"
    assert "tcp-receive-window-clamp" not in ids


def test_clamp_without_a_next_limit_outranks_the_latency_it_multiplies() -> None:
    """A bare capture (one protocol, no path rate, no reference): a 40 KiB window at 54 ms,
    70% of window / RTT measured (the lab's tcp-rmem-clamp seen from the client). The
    clamp is priced by the cost model (the upload minus slow start alone, nothing else
    known); path latency only multiplies that window and keeps the remainder, below the
    threshold, naming the clamp (docs/culprits.md#costs)."""
    from dataclasses import replace

    from gitnetdiag.diagnosis.costs import predicted_upload_s
    from tests.diagnosis.culprits.crafted import proto

    window, rtt = 40_960, 0.054
    upload = MB / (0.7 * window / rtt)
    capture = replace(clamped(window), handshake_rtt_s=rtt, rwnd_limited_share=0.79)
    obs = Observations(run=run(rtt_s=rtt), protocols={"h2": proto(upload, capture=capture)})
    result = diagnose(obs)
    ids = [f.id for f in result.findings]
    assert ids == ["tcp-receive-window-clamp"], ids
    clamp = result.findings[0]
    fixed = predicted_upload_s(obs, "h2", {"tcp-receive-window-clamp"})
    assert fixed is not None and fixed[0] < 1.0
    assert clamp.cost_s == pytest.approx(upload - fixed[0], rel=0.01)
    latency = next(f for f in result.dropped if f.id == "path-latency")
    assert latency.shares_with == "tcp-receive-window-clamp"
    assert latency.cost_s < 0.02 * clamp.cost_s
