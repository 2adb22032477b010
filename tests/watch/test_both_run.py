"""A ``direction: both`` watch cycle lays its runs out as ``diagnose --direction both``
does: the pushes in RUN, marked ``both`` among its manifest's options, the clones in
RUN-fetch beside it, so that ``gitnetdiag report RUN`` renders the one report of both
directions. A real cycle (generated repository, git push, git clone) to a port nobody
listens on: both halves are refused, and still joined."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gitnetdiag.rundir import load_run
from gitnetdiag.rundir.both import BOTH_OPTION, fetch_half_of
from gitnetdiag.watch.config import Target
from gitnetdiag.watch.cycle import probe_options
from tests.commands.test_report_both import PUSHES
from tests.watch.test_command import closed_port, gitnetdiag


def test_both_cycle_marks_its_pushes_and_report_joins_the_clones(tmp_path: Path) -> None:
    config = tmp_path / "watch.yaml"
    config.write_text(
        f"runs_dir: {tmp_path / 'runs'}\ntargets:\n  - name: twoway\n"
        f"    urls: {{h1: 'https://127.0.0.1:{closed_port()}/r.git'}}\n"
        "    direction: both\n    size: 64KiB\n    timeout: 20s\n    capture: false\n"
        "    native: false\n")
    proc = gitnetdiag("watch", "--config", str(config), "--once")
    assert proc.returncode == 1, proc.stderr  # refused both ways
    (run,) = [p for p in (tmp_path / "runs" / "twoway").iterdir()
              if p.is_dir() and not p.name.endswith("-fetch")]
    assert load_run(run).options["direction"] == BOTH_OPTION["direction"]
    assert fetch_half_of(run) == run.with_name(run.name + "-fetch")
    report = subprocess.run([sys.executable, "-m", "gitnetdiag", "report", str(run),
                             "--format", "json"], capture_output=True, text=True, timeout=120)
    data = json.loads(report.stdout)
    assert data["schema"] == "gitnetdiag.both-report/1", report.stderr
    assert set(data["parts"]) == {"push", "fetch"}
    assert "Traceback" not in report.stderr


def test_only_a_both_target_marks_its_pushes(tmp_path: Path) -> None:
    """A push target's pushes carry no direction mark: a ``-fetch`` directory beside one
    is not joined to it."""
    for direction, marked in (("push", False), ("both", True)):
        target = Target(name="t", urls={"h1": "https://127.0.0.1:1/r.git"}, protocols=("h1",),
                        direction=direction)
        options = probe_options(target, tmp_path / "run", seed=1).manifest_options()
        assert ("direction" in options) is marked, direction
        assert options["watch_target"] == "t"


def test_both_cycle_saves_the_joined_report_in_its_run(tmp_path: Path) -> None:
    """The saved ``report.*`` of a both cycle's RUN are the one report of both directions
    (as ``diagnose --direction both`` writes them), not the pushes' alone."""
    config = tmp_path / "watch.yaml"
    config.write_text(
        f"runs_dir: {tmp_path / 'runs'}\ntargets:\n  - name: twoway\n"
        f"    urls: {{h1: 'https://127.0.0.1:{closed_port()}/r.git'}}\n"
        "    direction: both\n    size: 64KiB\n    timeout: 20s\n    capture: false\n"
        "    native: false\n")
    proc = gitnetdiag("watch", "--config", str(config), "--once")
    assert proc.returncode == 1, proc.stderr
    (run,) = [p for p in (tmp_path / "runs" / "twoway").iterdir()
              if p.is_dir() and not p.name.endswith("-fetch")]
    saved = json.loads((run / "report.json").read_text())
    assert saved["schema"] == "gitnetdiag.both-report/1", saved.get("schema")
    assert set(saved["parts"]) == {"push", "fetch"}
    assert "both directions" in (run / "report.md").read_text()
    half = json.loads((run.with_name(run.name + "-fetch") / "report.json").read_text())
    assert half["schema"] == "gitnetdiag.fetch-report/3"  # the clones' own report stays


def test_a_fake_both_cycle_whose_clones_failed_saves_the_pushes_said_and_judged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake cycle (the recorded push run ``captures/h2-small-window`` as its pushes'
    diagnosis, clones that failed): RUN's saved reports say the clones are missing and
    judge the run inconclusive, never the degraded push run's report alone; a push
    target's cycle keeps the pushes' own report."""
    from gitnetdiag.pipeline import diagnosis_from_saved
    from gitnetdiag.watch import cycle
    from gitnetdiag.watch.sample import failed_sample

    pushes = diagnosis_from_saved(PUSHES)

    def fake_push(target: Target, options: Any, started: float) -> Any:
        options.out_dir.mkdir(parents=True)
        cycle.write_reports(pushes, options.out_dir)  # what the real one saves first
        return failed_sample(target.name, target.protocols, "x", "", started_unix_s=started,
                             duration_s=0.0), pushes

    def fake_fetch(target: Target, options: Any, started: float) -> Any:
        return failed_sample(target.name, target.protocols, "refused", "connection refused",
                             started_unix_s=started, duration_s=0.0), None

    monkeypatch.setattr(cycle, "_push_sample", fake_push)
    monkeypatch.setattr(cycle, "_fetch_sample", fake_fetch)
    for direction, schema in (("both", "gitnetdiag.report/4"), ("push", "gitnetdiag.report/4")):
        target = Target(name="t", urls={"h1": "https://127.0.0.1:1/r.git"},
                        protocols=("h1",), direction=direction)
        run = tmp_path / direction
        cycle.run_cycle(target, run, 1000.0)
        saved = json.loads((run / "report.json").read_text())
        assert saved["schema"] == schema
        if direction == "both":
            assert saved["verdict"] == "inconclusive"
            assert saved["headline"].startswith(
                "Clones: not measured (the clones failed: connection refused)"), saved
        else:
            assert saved["verdict"] == "degraded"
            assert saved["headline"] == pushes.headline
