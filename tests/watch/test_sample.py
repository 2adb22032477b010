"""A diagnosis -> the numbers of one cycle (pure, crafted inputs)."""

from __future__ import annotations

import json
from pathlib import Path

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.culprits import CULPRITS
from gitnetdiag.diagnosis.model import Finding
from gitnetdiag.rundir import (
    CloneProtocolRun,
    CloneRecord,
    ProtocolRun,
    PushRecord,
    RunError,
)
from gitnetdiag.watch.cycle import catalogue, merge_samples
from gitnetdiag.watch.sample import (
    NOT_MEASURED,
    DirectionSample,
    ProbeSample,
    cleanup_failures_of,
    error_kind_label,
    failed_sample,
    sample_from_diagnosis,
    sample_from_fetch,
    transfer_errors_of,
)
from tests.diagnosis import examples

CATALOGUE = [c.id for c in CULPRITS if "upload" in c.directions]


def _sample(observations: object, errors: dict[str, str] | None = None,
            protocols: tuple[str, ...] = ("h1", "h2", "ssh")) -> ProbeSample:
    return sample_from_diagnosis(
        diagnose(observations),  # type: ignore[arg-type]
        target="edge", protocols=protocols, push_errors=errors or {}, catalogue=CATALOGUE,
        started_unix_s=1000.0, duration_s=42.0, run_dir="/runs/edge/20261122T000000.000Z")


def test_slow_h2_edge_gives_windows_scores_and_a_failed_h2() -> None:
    """The HAProxy edge example: h2 failed (one push hung), its window culprit scored."""
    sample = _sample(examples.slow_h2_edge(), {"h2": "hung"})
    (push,) = sample.directions
    by = {p.protocol: p for p in push.protocols}
    assert by["h1"].success and by["h1"].error_kind == ""
    assert by["h1"].rate_bytes_per_s is not None and by["h1"].rate_bytes_per_s > 3e6
    assert not by["h2"].success and by["h2"].error_kind == "hung"
    assert sample.verdict == push.verdict == "degraded" and push.direction == "push"
    assert push.culprit_scores["h2-flow-control-window"] > 0.5
    assert set(push.culprit_scores) == set(CATALOGUE)
    assert push.culprit_costs_s["h2-flow-control-window"] > 0
    assert sample.h2_stream_window_bytes == 65535
    assert any(s.protocol == "h2" and s.window == "stream" and s.seconds > 0
               for s in sample.stalls)
    assert sample.rtt_s == 0.05


def test_healthy_example_scores_every_culprit_zero_or_low() -> None:
    sample = _sample(examples.healthy())
    assert sample.verdict == "healthy" and sample.success
    assert max(sample.directions[0].culprit_scores.values()) < 0.5


def test_protocol_never_pushed_takes_the_run_error() -> None:
    """A protocol absent from the diagnosis gets its own error, the run's, or not-measured."""
    sample = _sample(examples.healthy(), {"*": "lab-not-up"}, protocols=("h1", "git"))
    assert [(p.protocol, p.success, p.error_kind) for p in sample.directions[0].protocols] == [
        ("h1", True, ""), ("git", False, "lab-not-up")]
    only_git = _sample(examples.healthy(), protocols=("git",))
    assert only_git.directions[0].protocols[0].error_kind == NOT_MEASURED


def _clone(protocol: str, outcome: str = "ok", rate: float | None = 7e6, wall_s: float = 1.0,
           kind: str | None = None) -> CloneRecord:
    return CloneRecord(
        protocol=protocol, repeat=1, started_at="", outcome=outcome,  # type: ignore[arg-type]
        failure_kind=kind, last_line="", wall_s=wall_s,  # type: ignore[arg-type]
        rate_bytes_per_s=rate, started_epoch_s=0.0, moved_bytes=6 << 20, measured_s=wall_s,
        last_progress="", tcpinfo_samples=3, clone_removed=True)


def _clones() -> DirectionSample:
    runs = [CloneProtocolRun(protocol="h1", url="u", endpoint="h:443",
                               fetches=(_clone("h1", wall_s=0.8, rate=7.5e6),)),
            CloneProtocolRun(protocol="h2", url="u", endpoint="h:443",
                               fetches=(_clone("h2", "failed", None, 0.1, "reset"),)),
            CloneProtocolRun(protocol="ssh", url="u", endpoint="h:22",
                               fetches=(_clone("ssh", "bounded", 5e6, 10.0),))]
    window = Finding(id="client-http2-window", title="t", score=0.9, cost_s=4.0, summary="s",
                     evidence=(), fix="f")
    return sample_from_fetch(
        verdict="degraded", findings=[window], runs=runs, protocols=("h1", "h2", "ssh", "git"),
        fetch_errors=transfer_errors_of(runs, []), catalogue=catalogue("download"),
        run_dir="/runs/edge/20261122T000000.000Z-fetch")


def test_clones_give_the_fetch_direction() -> None:
    """Each protocol's clones from fetch.json's records: a bounded clone is measured (its
    rate), a reset one failed with its kind, a protocol never cloned not-measured; the
    download catalogue scores 0 where nothing fired."""
    part = _clones()
    assert part.direction == "fetch" and part.verdict == "degraded"
    by = {p.protocol: p for p in part.protocols}
    assert (by["h1"].success, by["h1"].rate_bytes_per_s, by["h1"].duration_s) == (
        True, 7.5e6, 0.8)
    assert (by["ssh"].success, by["ssh"].rate_bytes_per_s) == (True, 5e6)
    assert (by["h2"].success, by["h2"].error_kind, by["h2"].rate_bytes_per_s) == (
        False, "reset", None)
    assert (by["git"].success, by["git"].error_kind) == (False, NOT_MEASURED)
    assert part.culprit_scores["client-http2-window"] == 0.9
    assert part.culprit_costs_s == {"client-http2-window": 4.0}
    assert set(part.culprit_scores) == set(catalogue("download"))
    assert "client-http2-window" in catalogue("download")
    assert "h2-flow-control-window" not in part.culprit_scores  # a push culprit


def test_push_errors_from_the_manifest() -> None:
    push = PushRecord(protocol="h2", repeat=1, branch="b", started_at="", outcome="failed",
                      failure_kind="refused", last_line="", wall_s=0.1, pack_bytes=1,
                      rate_bytes_per_s=None, http_version=None, alpn=None, post_s=None,
                      curl_last_info=None, phases=None, capture=None)
    runs = [ProtocolRun(protocol="h2", url="https://h/r", endpoint="h:443", pushes=(push,)),
            ProtocolRun(protocol="h1", url="https://h/r", endpoint="h:443")]
    errors = [RunError(stage="setup", protocol=None, reference="network", kind=None,
                       message="m")]
    assert transfer_errors_of(runs, errors) == {"h2": "refused", "*": "network"}
    left = RunError(stage="cleanup", protocol="h2", reference="cleanup-failed", kind=None,
                    message="could not delete gitnetdiag/probe-1")
    assert cleanup_failures_of([*errors, left]) == ("h2",)


def test_failed_sample_and_round_trip() -> None:
    sample = failed_sample("edge", ("h1", "ssh"), "Deadline Exceeded!", "stopped",
                           started_unix_s=1.0, duration_s=2.0)
    (push,) = sample.directions
    assert [p.error_kind for p in push.protocols] == ["deadline-exceeded"] * 2
    assert sample.verdict == "failed" and not sample.success and push.culprit_scores == {}
    full = _sample(examples.slow_h2_edge(), {"h2": "hung"})
    assert ProbeSample.from_dict(full.to_dict()) == full
    both = merge_samples(full, ProbeSample(target="edge", started_unix_s=1000.0,
                                           duration_s=50.0, directions=(_clones(),)))
    assert [d.direction for d in both.directions] == ["push", "fetch"]
    assert both.duration_s == 50.0 and both.rtt_s == full.rtt_s
    assert ProbeSample.from_dict(both.to_dict()) == both
    assert ProbeSample.from_dict(json.loads(json.dumps(both.to_dict()))) == both
    assert error_kind_label("") == "other"


def test_every_leftover_or_unconfirmed_branch_counts_once() -> None:
    """A cycle whose push left its branch (``leftover``, with its own clean-up error) or
    could not confirm it gone (``unconfirmed``, only a warning) feeds
    ``gitnetdiag_cleanup_failures_total`` once per branch; a native probe's clean-up
    error counts too."""
    def push(cleanup: str) -> PushRecord:
        return PushRecord(protocol="h1", repeat=1, branch="b", started_at="",
                          outcome="hung", failure_kind="hung", last_line="", wall_s=1.0,
                          pack_bytes=1, rate_bytes_per_s=None, http_version=None, alpn=None,
                          post_s=None, curl_last_info=None, phases=None, capture=None,
                          cleanup=cleanup)
    runs = [ProtocolRun(protocol="h1", url="u", endpoint="h:1",
                        pushes=(push("leftover"), push("unconfirmed"), push("deleted")))]
    own = RunError(stage="cleanup", protocol="h1", reference="probe-ref-leftover", kind=None,
                   message="gitnetdiag/probe-1 is still on u")
    native = RunError(stage="cleanup", protocol="h2", reference="probe-ref-leftover",
                      kind=None, message="native")
    assert cleanup_failures_of([own, native], runs) == ("h1", "h1", "h2")
    assert cleanup_failures_of([], runs) == ("h1", "h1")


def test_a_cycle_stopped_at_its_deadline_still_counts_its_leftovers(tmp_path: Path) -> None:
    """The exporter reads the stopped cycle's manifest: its unconfirmed branch counts."""
    from gitnetdiag.rundir import RunManifest, write_manifest
    from gitnetdiag.watch.scheduler import left_by

    left = PushRecord(protocol="h2", repeat=1, branch="b", started_at="", outcome="interrupted",
                      failure_kind=None, last_line="", wall_s=1.0, pack_bytes=1,
                      rate_bytes_per_s=None, http_version=None, alpn=None, post_s=None,
                      curl_last_info=None, phases=None, capture=None, cleanup="unconfirmed")
    manifest = RunManifest(
        schema="gitnetdiag.run/1", tool_version="0", run_id="r", started_at="",
        finished_at="", status="interrupted", options={}, environment=None, repo=None,
        capture_enabled=False, paths=(), errors=(), warnings=(), ended_by="SIGTERM",
        protocols=(ProtocolRun(protocol="h2", url="u", endpoint="h:1", pushes=(left,)),))
    write_manifest(tmp_path, manifest)
    assert left_by(tmp_path) == ("h2",)
    assert left_by(tmp_path / "missing") == ()
