"""``gitnetdiag compare RUN RUN-fetch`` (issue 44 item 4): a ``--direction both`` run given
with its own other half is one run, not a before and an after; refused in one line with a
hint, either order, before anything is compared. Offline: the recorded push run
``captures/healthy`` as RUN and the recorded fetch run ``tests/data/fetch-healthy`` as
RUN-fetch."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gitnetdiag.commands.compare import refuse_own_halves
from gitnetdiag.errors import ExitCode, UsageError
from tests.commands.test_bad_input import REPO, gitnetdiag

PUSHES = REPO / "captures" / "healthy"
CLONES = REPO / "tests" / "data" / "fetch-healthy"


def both_run(where: Path) -> Path:
    shutil.copytree(PUSHES, where)
    shutil.copytree(CLONES, where.with_name(where.name + "-fetch"))
    return where


@pytest.mark.parametrize("fetch_first", [False, True])
def test_a_both_run_with_its_own_half_is_refused(fetch_first: bool, tmp_path: Path) -> None:
    run = both_run(tmp_path / "run")
    pair = [str(tmp_path / "run-fetch"), str(run)] if fetch_first else [
        str(run), str(tmp_path / "run-fetch")]
    proc = gitnetdiag("compare", *pair, cwd=tmp_path)
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert "two halves of one --direction both run" in lines[0], proc.stderr
    assert any("hint:" in line and "gitnetdiag report" in line for line in lines), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_halves_of_two_runs_are_not_refused(tmp_path: Path) -> None:
    """RUN-fetch of one run beside RUN of another: a before and an after."""
    first = both_run(tmp_path / "a")
    both_run(tmp_path / "b")
    refuse_own_halves([tmp_path / "b-fetch", first])  # no error
    with pytest.raises(UsageError, match="two halves"):
        refuse_own_halves([first, tmp_path / "a-fetch", tmp_path / "b"])


def test_fetch_runs_show_their_start_time(tmp_path: Path) -> None:
    """The runs table's ``started`` of a fetch run is its ``fetch.json``'s ``started_at``."""
    other = shutil.copytree(CLONES, tmp_path / "b")
    proc = gitnetdiag("compare", str(CLONES), str(other), "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    started = json.loads((CLONES / "fetch.json").read_text())["started_at"]
    assert [run["started"] for run in json.loads(proc.stdout)["runs"]] == [started, started]
    table = gitnetdiag("compare", str(CLONES), str(other), cwd=tmp_path).stdout
    assert table.count(started) == 2, table
