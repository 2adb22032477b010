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

from gitnetdiag.rundir import load_run
from gitnetdiag.rundir.both import BOTH_OPTION, fetch_half_of
from gitnetdiag.watch.config import Target
from gitnetdiag.watch.cycle import probe_options
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
