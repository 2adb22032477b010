"""Metrics from samples, the scheduler with its retention, the HTTP side, the cycle process.

No network beyond loopback and no probe: cycles are fakes or tiny stand-in programs.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gitnetdiag.errors import NetworkError
from gitnetdiag.watch.config import Target, WatchConfig
from gitnetdiag.watch.metrics import WatchMetrics, metric_names, render_probe, sample_families
from gitnetdiag.watch.sample import (
    CycleProtocol,
    DirectionSample,
    ProbeSample,
    WindowStall,
    failed_sample,
)
from gitnetdiag.watch.scheduler import Scheduler, SubprocessCycle, run_dir_name, runs_to_prune
from gitnetdiag.watch.server import make_server


def pushes(run_dir: str = "") -> DirectionSample:
    return DirectionSample(
        direction="push", verdict="degraded", run_dir=run_dir,
        protocols=(CycleProtocol(protocol="h1", success=True, duration_s=1.0,
                                  rate_bytes_per_s=4e6),
                   CycleProtocol(protocol="h2", success=True, duration_s=8.0,
                                  rate_bytes_per_s=5e5)),
        culprit_scores={"h2-flow-control-window": 0.85, "packet-loss": 0.0},
        culprit_costs_s={"h2-flow-control-window": 7.0})


def clones(run_dir: str = "") -> DirectionSample:
    return DirectionSample(
        direction="fetch", verdict="healthy", run_dir=run_dir,
        protocols=(CycleProtocol(protocol="h1", success=True, duration_s=0.8,
                                  rate_bytes_per_s=7.5e6),
                   CycleProtocol(protocol="h2", success=False, error_kind="reset")),
        culprit_scores={"packet-loss": 0.0, "client-http2-window": 0.0})


def good(target: str = "edge", run_dir: str = "", *more: DirectionSample) -> ProbeSample:
    return ProbeSample(
        target=target, started_unix_s=100.0, duration_s=9.5,
        directions=(pushes(run_dir), *more), rtt_s=0.05,
        h2_stream_window_bytes=65535, h2_connection_window_bytes=1 << 20,
        ssh_channel_window_bytes=2 << 20,
        stalls=(WindowStall(protocol="h2", window="stream", seconds=6.5),),
    )


def series(text: bytes) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text.decode()) for s in family.samples}


def value(text: bytes, name: str, **labels: str) -> float | None:
    return series(text).get((name, frozenset(labels.items())))


def test_every_emitted_name_is_declared() -> None:
    """Dashboards and alerts are checked against metric_names(): it must be complete."""
    metrics = WatchMetrics(["edge"])
    metrics.record(good(run_dir="/r/edge/20261122T000000.000Z"))
    emitted = {name for name, _ in series(metrics.render()) if not name.startswith("process_")}
    assert emitted <= metric_names()
    assert {f.name for f in sample_families([good()])} >= {"gitnetdiag_probe_success"}


def test_gauges_follow_the_latest_cycle_without_stale_series() -> None:
    """A failure's error_kind series is gone once the target recovers; no stale scores."""
    metrics = WatchMetrics(["edge"])
    metrics.record(good())
    text = metrics.render()
    push = {"target": "edge", "direction": "push"}
    assert value(text, "gitnetdiag_probe_success", **push, protocol="h2", error_kind="") == 1.0
    assert value(text, "gitnetdiag_culprit_score", **push,
                 culprit="h2-flow-control-window") == 0.85
    assert value(text, "gitnetdiag_verdict", **push, verdict="degraded") == 1.0
    assert value(text, "gitnetdiag_verdict", **push, verdict="healthy") == 0.0
    assert value(text, "gitnetdiag_h2_window_bytes", target="edge", window="stream") == 65535
    assert value(text, "gitnetdiag_flow_control_stall_seconds", **push, protocol="h2",
                 window="stream") == 6.5

    down = failed_sample("edge", ("h1", "h2"), "refused", "down", started_unix_s=200.0,
                         duration_s=0.5)
    metrics.record(replace(down, cleanup_failures=("h2",)), cycle_failure=None)
    text = metrics.render()
    assert value(text, "gitnetdiag_probe_success", **push, protocol="h2",
                 error_kind="refused") == 0.0
    assert value(text, "gitnetdiag_probe_success", **push, protocol="h2", error_kind="") is None
    assert value(text, "gitnetdiag_culprit_score", **push,
                 culprit="h2-flow-control-window") is None
    assert value(text, "gitnetdiag_probes_total", target="edge", result="failure") == 1.0
    assert value(text, "gitnetdiag_cleanup_failures_total", target="edge", protocol="h2") == 1.0

    metrics.record(good())
    text = metrics.render()
    assert value(text, "gitnetdiag_probe_success", **push, protocol="h2",
                 error_kind="refused") is None
    assert value(text, "gitnetdiag_probes_total", target="edge", result="success") == 2.0
    assert value(text, "gitnetdiag_transfer_rate_bytes_per_second_count", **push,
                 protocol="h2") == 2.0


def test_a_both_cycle_gives_each_direction_its_series() -> None:
    """Push and fetch of one cycle: every transfer series carries its direction; a failed
    clone counts no histogram observation and no cycle success."""
    metrics = WatchMetrics(["edge"])
    metrics.record(good("edge", "/r/edge/20261122T000000.000Z",
                        clones("/r/edge/20261122T000000.000Z-fetch")))
    text = metrics.render()
    push = {"target": "edge", "direction": "push"}
    fetch = {"target": "edge", "direction": "fetch"}
    rate = "gitnetdiag_last_transfer_rate_bytes_per_second"
    assert value(text, rate, **push, protocol="h1") == 4e6
    assert value(text, rate, **fetch, protocol="h1") == 7.5e6
    assert value(text, rate, **fetch, protocol="h2") is None
    assert value(text, "gitnetdiag_last_transfer_duration_seconds", **fetch,
                 protocol="h1") == 0.8
    assert value(text, "gitnetdiag_probe_success", **fetch, protocol="h2",
                 error_kind="reset") == 0.0
    assert value(text, "gitnetdiag_verdict", **fetch, verdict="healthy") == 1.0
    assert value(text, "gitnetdiag_verdict", **push, verdict="degraded") == 1.0
    assert value(text, "gitnetdiag_culprit_score", **fetch, culprit="client-http2-window") == 0.0
    assert value(text, "gitnetdiag_culprit_score", **fetch,
                 culprit="h2-flow-control-window") is None
    assert value(text, "gitnetdiag_run_info", **fetch, run="20261122T000000.000Z-fetch") == 1.0
    assert value(text, "gitnetdiag_run_info", **push, run="20261122T000000.000Z") == 1.0
    histogram = "gitnetdiag_transfer_duration_seconds_count"
    assert value(text, histogram, **fetch, protocol="h1") == 1.0
    assert value(text, histogram, **fetch, protocol="h2") is None
    assert value(text, "gitnetdiag_probes_total", target="edge", result="failure") == 1.0
    # Every series that describes a transfer names its direction.
    transfer_names = ("gitnetdiag_probe_success", "gitnetdiag_last_transfer_",
                      "gitnetdiag_transfer_", "gitnetdiag_verdict", "gitnetdiag_culprit_",
                      "gitnetdiag_run_info", "gitnetdiag_flow_control_stall_seconds")
    for name, labels in series(text):
        if name.startswith(transfer_names):
            assert dict(labels)["direction"] in ("push", "fetch"), (name, labels)


def test_probe_answer_has_only_that_cycle() -> None:
    text = render_probe(good())
    names = {name for name, _ in series(text)}
    assert "gitnetdiag_probe_success" in names
    assert not any(n.startswith(("process_", "gitnetdiag_exporter_", "gitnetdiag_probes_total"))
                   for n in names)


def test_run_dir_names_sort_and_retention_keeps_the_newest() -> None:
    assert run_dir_name(0.0) == "19700101T000000.000Z"
    names = [run_dir_name(t) for t in (100.0, 300.5, 200.25)]
    files = [*names, f"{names[0]}.log", f"{names[0]}-fetch", f"{names[1]}-fetch", "notes.txt",
             "20261122T000000Z", f"{names[0]}-push"]
    # A both cycle's clones (RUN-fetch) go with their run; nothing else is touched.
    assert runs_to_prune(files, keep=2) == sorted([names[0], f"{names[0]}.log",
                                                   f"{names[0]}-fetch"])
    assert runs_to_prune(files, keep=5) == []


def _config(tmp_path: Path, **target: object) -> WatchConfig:
    fields: dict[str, object] = {"name": "edge", "urls": {"h1": "https://h/r"},
                                 "protocols": ("h1",), "keep_runs": 2, **target}
    return WatchConfig(listen_host="127.0.0.1", listen_port=0, runs_dir=tmp_path / "runs",
                       targets=(Target(**fields),))  # type: ignore[arg-type]


def test_scheduler_records_each_cycle_and_prunes(tmp_path: Path) -> None:
    config = _config(tmp_path)
    metrics = WatchMetrics(["edge"])
    clock = iter(float(t) for t in range(1000, 2000, 10))

    def cycle(target: Target, run_dir: Path, started: float) -> tuple[ProbeSample, str | None]:
        run_dir.mkdir()
        (run_dir / "manifest.json").write_text("{}")
        run_dir.with_name(run_dir.name + ".log").write_text("")
        return good(target.name, str(run_dir)), None

    scheduler = Scheduler(config, metrics, cycle, clock=lambda: next(clock))
    for _ in range(4):
        scheduler.probe(config.targets[0])
    kept = sorted(p.name for p in (tmp_path / "runs" / "edge").iterdir())
    assert kept == [run_dir_name(1020.0), run_dir_name(1020.0) + ".log",
                    run_dir_name(1030.0), run_dir_name(1030.0) + ".log"]
    text = metrics.render()
    assert value(text, "gitnetdiag_exporter_retained_runs", target="edge") == 2.0
    assert value(text, "gitnetdiag_run_info", target="edge", direction="push",
                 run=run_dir_name(1030.0)) == 1.0


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, WatchMetrics]]:
    config = _config(tmp_path)
    metrics = WatchMetrics(["edge"])

    def cycle(target: Target, run_dir: Path, started: float) -> tuple[ProbeSample, str | None]:
        return good(target.name), None

    server = make_server(config, Scheduler(config, metrics, cycle), metrics, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", metrics
    server.shutdown()
    server.server_close()


def test_http_metrics_probe_and_errors(served: tuple[str, WatchMetrics]) -> None:
    base = served[0]
    with urllib.request.urlopen(f"{base}/probe?target=edge", timeout=10) as answer:
        assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert value(answer.read(), "gitnetdiag_last_transfer_rate_bytes_per_second",
                     target="edge", direction="push", protocol="h1") == 4e6
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as answer:
        assert value(answer.read(), "gitnetdiag_probes_total", target="edge",
                     result="success") == 1.0
    with urllib.request.urlopen(f"{base}/", timeout=10) as answer:
        assert b"edge: h1 (push)" in answer.read()
    for path, status in (("/probe?target=nope", 400), ("/favicon.ico", 404)):
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(base + path, timeout=10)
        assert info.value.code == status


def test_busy_port_is_one_clear_error(served: tuple[str, WatchMetrics], tmp_path: Path) -> None:
    port = int(served[0].rsplit(":", 1)[1])
    config = _config(tmp_path)
    metrics = WatchMetrics(["edge"])
    with pytest.raises(NetworkError) as info:
        make_server(config, Scheduler(config, metrics, lambda *a: (good(), None)), metrics,
                    port=port)
    assert info.value.reference == "listen-failed"


def _program(tmp_path: Path, body: str) -> str:
    path = tmp_path / "fake-python"
    path.write_text(f"#!{sys.executable}\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_cycle_process_output_is_the_sample(tmp_path: Path) -> None:
    """The job arrives on stdin (never argv: URLs may hold tokens); stdout is the sample."""
    program = _program(tmp_path, (
        "import json, sys\n"
        "job = json.load(sys.stdin)\n"
        "assert 's3cret' not in ' '.join(sys.argv)\n"
        "print(json.dumps({'target': job['target']['name'], 'started_unix_s': 1.0,"
        " 'duration_s': 2.0, 'directions': [{'direction': 'push', 'verdict': 'healthy',"
        " 'protocols': [{'protocol': 'h1', 'success': True}]}]}))"))
    config = _config(tmp_path, urls={"h1": "https://ci:s3cret@h/r"})
    (tmp_path / "runs").mkdir()
    sample, failure = SubprocessCycle(python=program)(config.targets[0],
                                                      tmp_path / "runs" / "r", 1.0)
    assert failure is None and sample.verdict == "healthy" and sample.success


def test_cycle_process_crash_and_deadline(tmp_path: Path) -> None:
    """A crash is worker-crash; past the deadline it gets SIGTERM (its clean-up path)."""
    (tmp_path / "runs").mkdir()
    crash = _program(tmp_path, "import sys\nprint('boom', file=sys.stderr)\nsys.exit(3)")
    target = _config(tmp_path).targets[0]
    sample, failure = SubprocessCycle(python=crash)(target, tmp_path / "runs" / "a", 1.0)
    assert failure == "worker-crash" and "boom" in sample.error
    assert sample.directions[0].protocols[0].error_kind == "worker-crash"

    marker = tmp_path / "terminated"
    slow = _program(tmp_path, (
        "import signal, sys, time\n"
        f"signal.signal(signal.SIGTERM, lambda *a: (open({str(marker)!r}, 'w').close(),"
        " sys.exit(130)))\n"
        "time.sleep(30)"))
    target = _config(tmp_path, deadline_s=0.5).targets[0]
    sample, failure = SubprocessCycle(python=slow, grace_s=10)(target, tmp_path / "runs" / "b",
                                                                1.0)
    assert failure == "deadline"
    assert sample.directions[0].protocols[0].error_kind == "deadline"
    assert marker.exists(), "the cycle was not given SIGTERM"


def test_lab_target_without_a_lab_is_lab_not_up(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gitnetdiag.model.lab.state.STATE_ROOT", tmp_path / "labs")
    target = _config(tmp_path, urls={}, lab="nosuchlab").targets[0]
    sample, failure = SubprocessCycle()(target, tmp_path / "r", 1.0)
    assert failure == "lab-not-up"
    assert sample.directions[0].protocols[0].error_kind == "lab-not-up"
    both = replace(target, direction="both")
    sample, failure = SubprocessCycle()(both, tmp_path / "r", 1.0)
    assert [(d.direction, d.protocols[0].error_kind) for d in sample.directions] == [
        ("push", "lab-not-up"), ("fetch", "lab-not-up")]
    assert os.environ.get("GITNETDIAG_IN_LAB_NS") is None
