"""Ranking by cost x score, the threshold, and the verdict."""

from __future__ import annotations

from gitnetdiag.diagnosis import Culprit, Evidence, Finding, diagnose, rank
from gitnetdiag.diagnosis.culprits import Hit
from gitnetdiag.diagnosis.engine import MIN_IMPACT_S, summarize_protocol
from gitnetdiag.diagnosis.observations import Observations, ProtocolObservation, PushObservation
from tests.diagnosis import examples


def finding(id_: str, cost_s: float, score: float) -> Finding:
    return Finding(
        id=id_,
        title=id_,
        score=score,
        cost_s=cost_s,
        summary="s",
        evidence=(Evidence(what="w", value=1, unit="count"),),
        fix="f",
    )


def fixed(id_: str, cost_s: float, score: float) -> Culprit:
    def detect(_: Observations) -> Hit:
        return Hit(score=score, cost_s=cost_s, summary="s", evidence=(), fix="f")

    return Culprit(id=id_, title=id_, detect=detect)


def test_rank_orders_by_cost_times_score() -> None:
    """Expected seconds lost decides, not cost alone nor confidence alone."""
    cheap_sure = finding("packet-loss", 3.0, 0.9)  # 2.7
    costly_unsure = finding("path-latency", 10.0, 0.2)  # 2.0
    tie_more_sure = finding("server-processing", 2.0, 1.0)  # 2.0, more confident
    big = finding("h2-flow-control-window", 20.0, 0.5)  # 10
    ranked = rank([costly_unsure, cheap_sure, tie_more_sure, big])
    assert [f.id for f in ranked] == [
        "h2-flow-control-window",
        "packet-loss",
        "server-processing",
        "path-latency",
    ]


def test_threshold_drops_small_or_unsure_findings() -> None:
    culprits = [
        fixed("a", 10.0, 0.9),
        fixed("tiny", 0.4, 1.0),  # impact 0.4 s < 0.5 s
        fixed("unsure", 100.0, 0.1),  # score below MIN_SCORE
    ]
    result = diagnose(Observations(), culprits=culprits)
    assert [f.id for f in result.findings] == ["a"]
    assert {f.id for f in result.dropped} == {"tiny", "unsure"}
    assert result.verdict == "degraded"
    assert result.environment.min_impact_s == MIN_IMPACT_S


def test_only_dropped_findings_mean_healthy() -> None:
    result = diagnose(Observations(), culprits=[fixed("tiny", 0.1, 1.0)])
    assert result.verdict == "healthy"
    assert result.findings == ()


def test_scores_and_costs_are_clamped() -> None:
    result = diagnose(Observations(), culprits=[fixed("x", -3.0, 1.7), fixed("y", 5.0, 1.7)])
    y = result.findings[0]
    assert y.score == 1.0
    assert [f.cost_s for f in result.dropped] == [0.0]


def test_protocol_summary_rates_in_bytes_per_second() -> None:
    p = ProtocolObservation(
        pushes=(
            PushObservation(duration_s=2.0, bytes=1_000_000),
            PushObservation(duration_s=4.0, bytes=1_000_000),
            PushObservation(duration_s=8.0, bytes=1_000_000),
            PushObservation(duration_s=60.0, bytes=1_000_000, ok=False, error_kind="hung"),
        )
    )
    s = summarize_protocol("h2", p)
    assert (s.pushes_ok, s.pushes_failed, s.failure_kinds) == (3, 1, ("hung",))
    assert s.rate_bytes_per_s == 250_000
    assert (s.rate_min_bytes_per_s, s.rate_max_bytes_per_s) == (125_000, 500_000)
    assert s.duration_s == 4.0
    assert s.label == "HTTP/2"


def test_protocol_summary_when_every_push_failed() -> None:
    p = ProtocolObservation(
        pushes=(PushObservation(duration_s=60.0, bytes=10, ok=False, error_kind="hung"),)
    )
    s = summarize_protocol("h2", p)
    assert s.rate_bytes_per_s is None
    assert s.duration_s == 60.0


def test_diagnosis_keeps_its_observations_and_environment() -> None:
    obs = examples.slow_h2_edge()
    result = diagnose(obs)
    assert result.observations is obs
    assert result.environment.protocols == ("h1", "h2", "ssh")
    assert result.environment.versions["libcurl"] == "7.88.1"
    assert result.headline.startswith("h2-flow-control-window costs an estimated")
