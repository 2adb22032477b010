"""The path-MTU black hole: crafted runs whose top-ranked finding is the culprit."""

from __future__ import annotations

import pytest

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.observations import Observations, ProtocolObservation, PushObservation
from tests.diagnosis.culprits.crafted import Case, assert_ranks_first_with_its_fix, cap, run


def _blackholed(**kw: object) -> ProtocolObservation:
    """A push that hung after the handshake: the 1448 B segments were resent five times
    and never acknowledged, while the 377 B ClientHello went through."""
    capture: dict[str, object] = {
        "mss_bytes": 1460,
        "max_acked_segment_bytes": 377,
        "unacked_retransmissions": 5,
        "min_unacked_retransmitted_bytes": 1448,
        "retransmission_rate": 0.28,
        "retransmitted_bytes": 7240,
        "timeout_retransmissions": 5,
    }
    capture.update(kw)
    return ProtocolObservation(
        pushes=(PushObservation(duration_s=15.8, bytes=3_146_449, ok=False, error_kind="hung",
                           error_message="Writing objects:  66% (4/6)"),),
        capture=cap(**capture),
    )


def case_path_mtu_blackhole() -> Observations:
    return Observations(run=run(), protocols={"h1": _blackholed()})


CASES: dict[str, Case] = {
    "path-mtu-blackhole": (case_path_mtu_blackhole, ("--clamp-mss-to-pmtu", "type 3 code 4")),
}
"""Each culprit of the family, its crafted run and the settings its fix names."""


@pytest.mark.parametrize("culprit_id", list(CASES))
def test_culprit_ranks_first_with_its_fix(culprit_id: str) -> None:
    """The crafted run's top finding is the culprit, with numbers, evidence and the setting."""
    assert_ranks_first_with_its_fix(culprit_id, CASES[culprit_id])


def test_the_stall_is_explained_so_the_run_fails_with_it_as_the_cause() -> None:
    """The hung push is the culprit's evidence: costed as its wait, the numbers cited; the
    one protocol's pushes all hung, so the run failed (it was degraded), the black hole
    named as the cause."""
    result = diagnose(case_path_mtu_blackhole())
    assert result.verdict == "failed"
    assert result.headline.startswith("HTTP/1.1 pushes fail (path-mtu-blackhole): ")
    assert [f.explained_by for f in result.measurement_failures] == ["path-mtu-blackhole"]
    top = result.findings[0]
    assert top.cost_s == pytest.approx(15.8)
    assert top.score >= 0.8
    assert "1448 B" in top.summary and "377 B" in top.summary and "1460 B" in top.summary
    values = {e.what: e.value for e in top.evidence}
    assert values["HTTP/1.1: largest upload segment acknowledged (payload)"] == 377


@pytest.mark.parametrize(
    "override",
    [
        {"min_unacked_retransmitted_bytes": 300},  # a small segment was lost too: plain loss
        {"unacked_retransmissions": 1},  # resent once, maybe just late
        {"unacked_retransmissions": None, "min_unacked_retransmitted_bytes": None},
    ],
)
def test_no_black_hole_without_its_signature(override: dict[str, object]) -> None:
    obs = Observations(run=run(), protocols={"h1": _blackholed(**override)})
    assert "path-mtu-blackhole" not in [f.id for f in diagnose(obs).findings]
