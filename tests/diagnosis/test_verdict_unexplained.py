"""Failed operations that nothing ranked explains keep a probe/diagnose run from ``healthy``:
burst connections that failed, and pushes that failed beside pushes that measured (the rule
``load`` follows, :mod:`gitnetdiag.pipeline._load`)."""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.observations import BurstResult, PushObservation, RunProblem
from gitnetdiag.diagnosis.verdict import verdict_error
from gitnetdiag.errors import ExitCode
from gitnetdiag.outcomes import FailureKind
from tests.diagnosis import examples


def _burst(**failed: int) -> BurstResult:
    kinds = {FailureKind(kind.replace("_", "-")): count for kind, count in failed.items()}
    return BurstResult(protocol="git", concurrency=40, ok=40 - sum(kinds.values()), port=9418,
                       failed_by_kind=kinds, connect_p50_s=0.05, connect_p99_s=0.06,
                       connect_max_s=0.06, duration_p50_s=0.3,
                       resets=kinds.get(FailureKind.RESET, 0))


def test_a_burst_whose_connections_failed_unexplained_is_inconclusive() -> None:
    """Three of forty git:// connections failed 'other', nothing ranks: not healthy."""
    result = diagnose(replace(examples.healthy(), bursts=(_burst(other=3),)))
    assert result.findings == ()
    assert result.verdict == "inconclusive"
    (failure,) = result.measurement_failures
    assert (failure.stage, failure.reference, failure.protocol) == (
        "burst", "burst-failures-unexplained", "git")
    assert "3 of 40 concurrent git:// connections failed (other 3)" in failure.message
    assert result.headline.startswith("Operations failed and no culprit explains them")
    error = verdict_error(result.verdict, result.measurement_failures)
    assert error is not None and error.exit_code == ExitCode.INCONCLUSIVE


def test_a_clean_burst_stays_healthy() -> None:
    result = diagnose(replace(examples.healthy(), bursts=(_burst(),)))
    assert result.verdict == "healthy"


def test_a_burst_reset_explained_by_a_ranked_culprit_stays_degraded() -> None:
    """Resets on a burst rank firewall-reset: the failure is evidence, not a gap."""
    result = diagnose(replace(examples.healthy(), bursts=(_burst(reset=30),)))
    assert [f.id for f in result.findings][:1] == ["firewall-reset"]
    assert result.verdict == "degraded"


def test_a_failed_push_beside_measured_ones_is_inconclusive() -> None:
    """One of SSH's pushes was refused by auth, the other two measured; nothing ranks."""
    base = examples.healthy()
    ssh = base.protocols["ssh"]
    refused = PushObservation(duration_s=0.3, bytes=ssh.pushes[0].bytes, ok=False,
                         error_kind=FailureKind.AUTH, error_message="Permission denied")
    obs = replace(base, protocols={**base.protocols,
                                   "ssh": replace(ssh, pushes=(*ssh.pushes[:2], refused))})
    result = diagnose(obs)
    assert result.findings == ()
    assert result.verdict == "inconclusive"
    (failure,) = result.measurement_failures
    assert failure.reference == "push-failures-unexplained"
    assert failure.message.startswith("SSH: 1 of 3 push(es) failed (Permission denied)")


def test_a_push_that_sent_no_data_is_no_failure() -> None:
    """The server had the objects: no rate, no failure (the run error says so)."""
    base = examples.healthy()
    ssh = base.protocols["ssh"]
    no_data = PushObservation(duration_s=0.3, bytes=ssh.pushes[0].bytes, ok=False,
                         error_kind=FailureKind.OTHER, error_message="sent nothing")
    obs = replace(base, protocols={**base.protocols,
                                   "ssh": replace(ssh, pushes=(*ssh.pushes[:2], no_data))},
                  problems=(RunProblem(stage="push", protocol="ssh",
                                       reference="push-sent-no-data", message="no rate"),))
    assert diagnose(obs).verdict == "healthy"
