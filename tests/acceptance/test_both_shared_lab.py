"""Issue 47 in the lab: a ``diagnose --direction both`` run measures the path once and takes
the lab server's counters once before its transfers; the pushes reuse the clones' paths and
their ``host.json``, the pushes' repository is made beside git's clones, and every
step is recorded (``GITNETDIAG_STEPS``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitnetdiag.steps import STEPS_ENV
from tests.conftest import LabFactory

# The fail lane (tests/conftest.py), with test_fetch_seed_lab's healthy lab: it moves 1 MiB
# each way and reads the steps' order, nothing that a busy CPU bends (off the busy lane, the
# longest, 2026-12-03).
pytestmark = [pytest.mark.lab, pytest.mark.lab_lane("fail")]


def test_both_directions_share_one_path_check_and_one_snapshot(shared_lab: LabFactory,
                                                               tmp_path: Path) -> None:
    state = shared_lab()
    steps_file = tmp_path / "steps.jsonl"
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--lab", "--lab-instance",
         state.instance, "--direction", "both", "--fetch-seed", "1MiB", "--size", "1MiB",
         "--protocols", "h1,ssh", "--format", "json", "--out", str(tmp_path / "run"),
         "--timeout", "60"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "TMPDIR": str(tmp_path), STEPS_ENV: str(steps_file)})
    print(f"diagnose --direction both: {time.monotonic() - started:.1f} s wall, "
          f"exit {proc.returncode}")
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["parts"]["push"]["direction"] == "push"
    steps = [json.loads(line) for line in steps_file.read_text().splitlines()]
    names = [s["step"] for s in steps]
    print("\n".join(f"{s['start'] - steps[0]['start']:6.2f} {s['end'] - s['start']:5.2f} "
                    f"{s['step']}" for s in sorted(steps, key=lambda s: s["start"])))
    # one path check (the clones'), one snapshot (the clones'), one repository made ahead
    assert names.count("paths") == 1 and "paths (beside the repository)" not in names
    assert names.count("host snapshot") == 1
    assert names.count("host evidence since the snapshot") == 2
    assert names.count("pushes' repository (beside the paths)") == 1
    made = next(s for s in steps if s["step"].startswith("pushes' repository"))
    paths = next(s for s in steps if s["step"] == "paths")
    seed = next(s for s in steps if s["step"] == "seed branch")
    # beside the paths (started before they ended), and done before anything moves on the
    # path: the seed branch and the clones after it
    assert made["start"] <= paths["end"]
    assert made["end"] <= seed["start"]
    # the pushes' run directory holds the clones' paths, measured once
    fetch_paths = json.loads((tmp_path / "run-fetch" / "fetch.json").read_text())["paths"]
    push_paths = json.loads((tmp_path / "run" / "manifest.json").read_text())["paths"]
    assert push_paths == fetch_paths and push_paths
    # the pushes' counters are deltas since the clones' host.json: both were read
    for run in ("run", "run-fetch"):
        assert json.loads((tmp_path / run / "host.json").read_text())["counter_totals"]
