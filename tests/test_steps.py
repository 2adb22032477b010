"""``gitnetdiag.steps``: a line per step in the file ``GITNETDIAG_STEPS`` names, none without."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitnetdiag.steps import STEPS_ENV, record_step, started, step


def test_steps_are_appended_as_json_lines(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "steps.jsonl"
    monkeypatch.setenv(STEPS_ENV, str(out))
    with step("outer"):
        record_step("inner", 100.0, 101.5)
    started()
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["step"] for r in rows] == ["inner", "outer",
                                         "start-up (interpreter, imports, options)"]
    assert rows[0]["end"] - rows[0]["start"] == 1.5
    assert rows[1]["end"] >= rows[1]["start"] and rows[1]["pid"] == os.getpid()
    assert rows[2]["start"] < rows[1]["start"]  # the interpreter started before


def test_nothing_is_written_without_the_variable(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(STEPS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    with step("outer"):
        started()
    assert list(tmp_path.iterdir()) == []


def test_the_quick_exit_keeps_output_and_status(tmp_path: Path) -> None:
    """``python -m gitnetdiag`` ends without tearing modules down: its whole output is
    flushed (a JSON report parses) and its exit status is the command's."""
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    ok = subprocess.run([sys.executable, "-m", "gitnetdiag", "report",
                         str(root / "captures" / "h2-small-window"), "--format", "json"],
                        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["culprits"][0]["id"] == "h2-flow-control-window"
    bad = subprocess.run([sys.executable, "-m", "gitnetdiag", "no-such-command"],
                         capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert bad.returncode == 2 and "No such command" in bad.stderr


def test_the_quick_exit_does_not_wait_on_an_executor_left_open(tmp_path: Path) -> None:
    """A thread pool whose executor was never shut down: its idle worker is told to stop
    (the interpreter's own shutdown order) rather than joined forever."""
    root = Path(__file__).resolve().parent.parent
    script = tmp_path / "left_open.py"
    script.write_text(
        "import concurrent.futures, runpy, sys\n"
        "pool = concurrent.futures.ThreadPoolExecutor(2)\n"
        "assert pool.submit(lambda: 1).result() == 1\n"
        "sys.argv = ['gitnetdiag', '--version']\n"
        "runpy.run_module('gitnetdiag', run_name='__main__')\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=30, env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode == 0 and "gitnetdiag" in proc.stdout, proc.stderr
