"""A failed run leads with its failure (issue 42 item 1): the culprit that explains the
failing protocol ranks first and is the headline's cause; a culprit measured only on a
protocol that passed never leads, and with nothing to explain the failure the headline says
"cause not identified" (that culprit is still ranked below). Pushes, clones and a
``--direction both`` run alike."""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.assembly import download_observations
from gitnetdiag.diagnosis.combined import combine
from gitnetdiag.diagnosis.engine import rank_findings
from gitnetdiag.diagnosis.model import Diagnosis
from gitnetdiag.diagnosis.observations import CaptureMetrics, ProtocolObservation, PushObservation
from gitnetdiag.diagnosis.transfers import TransferObservation
from gitnetdiag.outcomes import FailureKind
from tests.diagnosis import examples
from tests.diagnosis.test_transfer_culprits import HEALTHY, PHASES

RPC_504 = "error: RPC failed; HTTP 504 curl 22 The requested URL returned error: 504"


def _ssh(kind: str, message: str, capture: CaptureMetrics | None = None) -> ProtocolObservation:
    return ProtocolObservation(pushes=(PushObservation(duration_s=0.02, bytes=1_000_000, ok=False,
                                                  error_kind=kind,  # type: ignore[arg-type]
                                                  error_message=message),),
                               capture=capture)


def _pushes(ssh: ProtocolObservation) -> Diagnosis:
    """HTTP/2 passes behind a small window (a culprit of 36 s x score); SSH as given."""
    base = examples.slow_h2_edge()
    return diagnose(replace(base, protocols={**base.protocols, "ssh": ssh}))


def _refused_by_a_filter() -> Diagnosis:
    return _pushes(_ssh("refused", "Connection refused",
                        CaptureMetrics(source="capture ssh", resets_from_server=1)))


def test_the_culprit_that_explains_the_failure_ranks_first() -> None:
    """firewall-reset (about 3.9 s) explains SSH's refusals; the HTTP/2 window (about 36 s,
    on HTTP/2, which passed) ranked above it by cost alone."""
    base = examples.slow_h2_edge()
    by_cost = rank_findings(replace(base, protocols={
        **base.protocols, "ssh": _refused_by_a_filter().observations.protocols["ssh"]}))[0]
    assert [f.id for f in by_cost] == ["h2-flow-control-window", "firewall-reset"]
    result = _refused_by_a_filter()
    assert result.verdict == "failed"
    assert [f.id for f in result.findings] == ["firewall-reset", "h2-flow-control-window"]
    assert result.headline.startswith("SSH pushes fail (firewall-reset): 1 of 1 SSH pushes "
                                      "were refused")
    assert "h2-flow-control-window" not in result.headline
    assert "costs an estimated" not in result.headline


def test_a_culprit_of_a_passing_protocol_does_not_lead_an_unexplained_failure() -> None:
    """SSH's pushes all fail in words nothing ranked explains (an HTML page where git's
    protocol was expected): the HTTP/2 window stays ranked first (nothing explains the
    failure to rank above it) but the headline names no culprit."""
    result = _pushes(_ssh("other", "fatal: protocol error: bad line length character: <htm"))
    assert result.verdict == "failed"
    assert [f.id for f in result.findings] == ["h2-flow-control-window"]
    assert result.headline.startswith("SSH pushes fail (")
    assert result.headline.endswith("): cause not identified.")
    assert "h2-flow-control-window" not in result.headline


def _clones() -> list[TransferObservation]:
    """The issue's clone: HTTPS answered 504 to the pack request; the SSH clone passed
    after 6 s of pack preparation (server-pack-generation)."""
    slow_ssh = replace(HEALTHY, protocol="ssh",
                       phases=replace(PHASES, first_pack_byte_s=6.15, total_s=8.0), wall_s=8.0)
    cut = replace(HEALTHY, outcome="failed", moved_bytes=0, measured_s=0.0, wall_s=5.1,
                  rate_bytes_per_s=None, tcp=None, failure_kind=FailureKind.HTTP_STATUS,
                  last_line=RPC_504)
    return [cut, slow_ssh]


def test_a_clone_failure_is_not_headed_by_the_passing_clones_culprit() -> None:
    """It was inconclusive, "no culprit explains it", its only culprit the SSH clone's pack
    generation: now failed, the failure said as seen, the culprit ranked below."""
    result = diagnose(download_observations(_clones()))
    assert result.verdict == "failed"
    assert [f.id for f in result.findings] == ["server-pack-generation"]
    # the clone's failure is described by the catalogue (issue 42 item 3): git's words as
    # the catalogue says them, its note on http.postBuffer left to the failure's own line
    assert result.headline == (f"HTTP/1.1 clones fail (git said: {RPC_504}): "
                               "cause not identified.")
    assert result.measured_protocols == ("ssh",)


def test_a_both_run_leads_with_the_failed_halfs_explanation() -> None:
    """The pushes fail (SSH refused by a filter, firewall-reset) while the clones rank a
    larger culprit of their own: the one ranking puts the explanation first, and the
    headline is the failed half's alone (no seconds of the other direction)."""
    push = replace(_refused_by_a_filter(), direction="push")
    fetch = replace(diagnose(download_observations(_clones()[1:])), direction="fetch")
    assert fetch.verdict == "degraded" and fetch.findings[0].id == "server-pack-generation"
    both = combine(push, fetch)
    assert both.verdict == "failed"
    assert [(f.direction, f.id) for f in both.findings][:1] == [("push", "firewall-reset")]
    assert both.headline == f"Upload: {push.headline}"
    assert "server-pack-generation" not in both.headline


def test_a_degraded_both_run_keeps_the_cost_order() -> None:
    """Nothing failed: the ranking is cost x score, whichever direction (unchanged)."""
    fetch = replace(diagnose(download_observations(_clones()[1:])), direction="fetch")
    push = replace(diagnose(examples.slow_h2_edge()), direction="push")
    both = combine(push, fetch)
    assert both.verdict == "degraded"
    impacts = [f.impact_s for f in both.findings]
    assert impacts == sorted(impacts, reverse=True)
    assert both.headline.startswith(f"{both.findings[0].id} (")
