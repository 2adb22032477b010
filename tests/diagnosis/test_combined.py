"""A ``both`` run's one diagnosis: the worse verdict, one ranking across the directions by
the engine's order, each finding tagged with its direction, the halves kept."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitnetdiag.diagnosis import Evidence, Finding, diagnose, rank
from gitnetdiag.diagnosis.combined import combine
from gitnetdiag.diagnosis.model import Diagnosis, MeasurementFailure, Verdict
from gitnetdiag.diagnosis.observations import Observations, RunInfo
from gitnetdiag.diagnosis.verdict import VERDICT_ORDER, verdict_error, worst_verdict
from gitnetdiag.errors import NothingMeasured, VerdictError


def finding(id_: str, cost_s: float, score: float) -> Finding:
    return Finding(id=id_, title=id_, score=score, cost_s=cost_s, summary="s",
                   evidence=(Evidence(what="w", value=1, unit="count"),), fix="f")


def half(direction: str, verdict: Verdict = "healthy", findings: tuple[Finding, ...] = (),
         failures: tuple[MeasurementFailure, ...] = (), headline: str = "") -> Diagnosis:
    """A diagnosis of one direction, its verdict and findings as given."""
    transfer = "download" if direction == "fetch" else "upload"
    base = diagnose(Observations(run=RunInfo(transfer=transfer)), culprits=[])
    return replace(base, direction=direction, verdict=verdict, findings=findings,  # type: ignore[arg-type]
                   measurement_failures=failures, headline=headline or base.headline)


def failure(reference: str) -> MeasurementFailure:
    return MeasurementFailure(protocol="git", stage="fetch", reference=reference, kind=None,
                              message=f"{reference} happened", hint=f"fix {reference}")


@pytest.mark.parametrize(("push", "fetch", "want"), [
    ("healthy", "healthy", "healthy"),
    ("degraded", "healthy", "degraded"),
    ("healthy", "degraded", "degraded"),
    ("degraded", "inconclusive", "inconclusive"),
    ("inconclusive", "degraded", "inconclusive"),
    ("failed", "degraded", "failed"),
    ("healthy", "failed", "failed"),
    ("inconclusive", "failed", "failed"),
])
def test_the_worse_verdict_stands(push: Verdict, fetch: Verdict, want: Verdict) -> None:
    assert combine(half("push", push), half("fetch", fetch)).verdict == want


def test_the_verdict_order_is_the_modules() -> None:
    assert VERDICT_ORDER == ("healthy", "degraded", "inconclusive", "failed")
    assert worst_verdict(["degraded", "healthy"]) == "degraded"
    assert worst_verdict([]) == "healthy"


def test_one_ranking_across_directions_by_the_engines_order() -> None:
    """The push's and the clones' findings interleave by cost x score, as engine.rank
    orders them, each tagged with the direction it was found on."""
    push = (finding("h2-flow-control-window", 10.0, 0.9), finding("path-latency", 1.0, 0.8))
    fetch = (finding("client-tcp-receive-window-clamp", 5.0, 0.9),)
    both = combine(half("push", "degraded", push), half("fetch", "degraded", fetch))
    assert [(f.direction, f.id) for f in both.findings] == [
        ("push", "h2-flow-control-window"),
        ("fetch", "client-tcp-receive-window-clamp"),
        ("push", "path-latency"),
    ]
    untagged = [replace(f, direction=None) for f in both.findings]
    assert untagged == rank([*push, *fetch])
    assert both.direction == "both"
    assert both.headline.startswith("h2-flow-control-window (upload) costs an estimated")
    assert "2 more culprits below" in both.headline


def test_a_culprit_of_both_directions_stays_two_findings() -> None:
    push = (finding("path-latency", 2.0, 0.8),)
    fetch = (finding("path-latency", 3.0, 0.8),)
    both = combine(half("push", "degraded", push), half("fetch", "degraded", fetch))
    assert [(f.direction, f.id, f.cost_s) for f in both.findings] == [
        ("fetch", "path-latency", 3.0), ("push", "path-latency", 2.0)]
    assert both.headline.startswith("path-latency (download)")


def test_the_halves_are_kept_untagged() -> None:
    """Each half renders as it does alone: its findings carry no tag."""
    push = half("push", "degraded", (finding("path-latency", 2.0, 0.8),))
    fetch = half("fetch")
    both = combine(push, fetch)
    assert both.parts == (push, fetch)
    assert all(f.direction is None for p in both.parts for f in p.findings)


def test_a_failed_half_is_not_hidden() -> None:
    """A fetch half that measured nothing makes the whole run failed, its headline leads
    (alone: a failed run's headline says what fails, not the other direction's seconds,
    issue 42), and the exit code is the failed half's error, naming its failure first."""
    push = half("push", "degraded", (finding("path-latency", 2.0, 0.8),),
                failures=(failure("capture-failed"),))
    fetch = half("fetch", "failed", failures=(failure("fetch-failed"),),
                 headline="Nothing was measured: fetch-failed: fetch-failed happened.")
    both = combine(push, fetch)
    assert both.verdict == "failed"
    assert both.headline == "Download: Nothing was measured: fetch-failed: fetch-failed happened."
    assert [f.id for f in both.findings] == ["path-latency"]
    assert [f.reference for f in both.measurement_failures] == ["fetch-failed",
                                                                "capture-failed"]
    error = verdict_error(both.verdict, both.measurement_failures)
    assert isinstance(error, NothingMeasured) and "fetch-failed" in error.message


def test_an_inconclusive_push_half_is_not_hidden() -> None:
    push = half("push", "inconclusive", failures=(failure("push-stalled"),),
                headline="A push stalled (push-stalled: push-stalled happened).")
    both = combine(push, half("fetch"))
    assert both.verdict == "inconclusive"
    assert both.headline.startswith("Upload: A push stalled")
    assert both.headline.endswith("No culprit costs the pushes or the clones noticeable time.")
    error = verdict_error(both.verdict, both.measurement_failures)
    assert isinstance(error, VerdictError) and "push-stalled" in error.message


def test_halves_of_the_wrong_directions_are_refused() -> None:
    with pytest.raises(ValueError, match="push and a fetch"):
        combine(half("fetch"), half("push"))
