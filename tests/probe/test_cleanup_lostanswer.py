"""Issue 42 item 5 for real: behind a stateful firewall that forgot the silent connection,
the delete went through and only its answer was lost. Before, the branch was reported
"still on the server: the clean-up's 61 s ran out" while the server no longer had it;
now ls-remote on a new connection decides (``tests/probe/lostanswer.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitnetdiag.probe.cleanup import STEP_MIN_S
from tests.probe.lostanswer import UNTIL_S

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.lab
@pytest.mark.lab_lane("fail")  # it waits for a sleeping hook, twice; its answers are lost
def test_a_delete_whose_answer_a_stateful_firewall_lost_is_deleted_not_left(
        tmp_path: Path) -> None:
    proc = subprocess.run(
        ["unshare", "-n", sys.executable, "-m", "tests.probe.lostanswer", str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.splitlines()[-1])
    print(seen)
    assert seen["push_timed_out"] and seen["aftermath"] == "may-land", seen
    assert "delete: timed out" in seen["steps"], seen["steps"]  # the answer never came
    assert seen["steps"][-1] == "ls-remote: exit 0", seen["steps"]
    assert seen["status"] == "deleted" and "answer was lost" in seen["detail"], seen
    assert seen["remove_command"] is None
    assert seen["took_s"] <= UNTIL_S + STEP_MIN_S, seen
    assert not [ref for ref in seen["refs"] if ref.startswith("refs/heads/gitnetdiag/")], seen
