"""``gitnetdiag report RUN`` of a ``--direction both`` run: RUN's manifest records the run as
``both`` and RUN-fetch beside it holds the clones; one report of both directions, the joined
verdict's exit code. Offline: the recorded push run ``captures/h2-small-window`` (degraded)
and the recorded fetch run ``tests/data/fetch-healthy`` (inconclusive: no TCP evidence)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from gitnetdiag.rundir.both import fetch_half_of
from tests.commands.test_bad_input import REPO, gitnetdiag

PUSHES = REPO / "captures" / "h2-small-window"
CLONES = REPO / "tests" / "data" / "fetch-healthy"
INCONCLUSIVE_EXIT = 8


def both_run(where: Path, *, marked: bool = True) -> Path:
    """RUN (the pushes, marked ``both`` in its manifest's options unless ``marked`` is
    False) and RUN-fetch (the clones)."""
    shutil.copytree(PUSHES, where)
    shutil.copytree(CLONES, where.with_name(where.name + "-fetch"))
    if marked:
        manifest = where / "manifest.json"
        data: dict[str, Any] = json.loads(manifest.read_text())
        data["options"]["direction"] = "both"
        manifest.write_text(json.dumps(data, indent=1))
    return where


def test_report_of_a_both_run_is_one_report(tmp_path: Path) -> None:
    run = both_run(tmp_path / "run")
    assert fetch_half_of(run) == tmp_path / "run-fetch"
    proc = gitnetdiag("report", str(run), "--format", "json", cwd=tmp_path)
    assert proc.returncode == INCONCLUSIVE_EXIT, proc.stderr  # the clones' verdict stands
    data = json.loads(proc.stdout)
    assert data["schema"] == "gitnetdiag.both-report/1"
    assert data["verdict"] == "inconclusive"
    assert [(c["direction"], c["id"]) for c in data["culprits"]] == [
        ("push", "h2-flow-control-window")]
    assert data["parts"]["push"]["verdict"] == "degraded"
    assert data["parts"]["fetch"]["verdict"] == "inconclusive"
    assert "no-tcp-evidence" in proc.stderr
    text = gitnetdiag("report", str(run), cwd=tmp_path).stdout
    assert text.startswith("gitnetdiag report: both directions")
    assert "=== Download: clones (direction fetch) ===" in text


def test_reanalyzed_alike(tmp_path: Path) -> None:
    run = both_run(tmp_path / "run")
    saved = gitnetdiag("report", str(run), "--format", "md", cwd=tmp_path)
    again = gitnetdiag("report", str(run), "--format", "md", "--reanalyze", cwd=tmp_path)
    assert again.returncode == saved.returncode == INCONCLUSIVE_EXIT
    assert again.stdout == saved.stdout
    assert "| 1 | upload | h2-flow-control-window |" in saved.stdout


def test_an_unmarked_sibling_is_not_joined(tmp_path: Path) -> None:
    """A push run that was not a both run keeps its own report, whatever lies beside it;
    the fetch half alone is its own report too."""
    run = both_run(tmp_path / "run", marked=False)
    assert fetch_half_of(run) is None
    proc = gitnetdiag("report", str(run), "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["schema"] == "gitnetdiag.report/4"
    half = gitnetdiag("report", str(tmp_path / "run-fetch"), "--format", "json", cwd=tmp_path)
    assert json.loads(half.stdout)["schema"] == "gitnetdiag.fetch-report/3"


def test_a_both_run_without_its_clones_is_said_and_judged(tmp_path: Path) -> None:
    """RUN-fetch gone: never a plain push run's report and exit 0; the missing half is the
    headline's first words and the exit's message, the verdict inconclusive."""
    run = both_run(tmp_path / "run")
    shutil.rmtree(tmp_path / "run-fetch")
    proc = gitnetdiag("report", str(run), "--format", "json", cwd=tmp_path)
    assert proc.returncode == INCONCLUSIVE_EXIT, proc.stderr
    data = json.loads(proc.stdout)
    assert data["verdict"] == "inconclusive"
    assert data["headline"].startswith("Clones: not measured (its clones' run directory "), data
    assert "fetch-half-missing" in proc.stderr and "does not exist" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_both_run_with_damaged_clones_is_said_and_judged(tmp_path: Path) -> None:
    run = both_run(tmp_path / "run")
    (tmp_path / "run-fetch" / "fetch.json").write_text("{not json")
    proc = gitnetdiag("report", str(run), cwd=tmp_path)
    assert proc.returncode == INCONCLUSIVE_EXIT, proc.stderr
    assert "fetch.json cannot be read" in " ".join(proc.stdout.split()), proc.stdout
    assert "Traceback" not in proc.stderr


def test_analyze_diagnose_of_a_both_run_without_its_clones_says_so(tmp_path: Path) -> None:
    run = both_run(tmp_path / "run")
    shutil.rmtree(tmp_path / "run-fetch")
    out = tmp_path / "out"
    proc = gitnetdiag("analyze", str(run), "--diagnose", "--out", str(out), cwd=tmp_path)
    assert proc.returncode == INCONCLUSIVE_EXIT, proc.stderr
    data = json.loads((out / "report.json").read_text())
    assert data["verdict"] == "inconclusive" and data["headline"].startswith(
        "Clones: not measured"), data["headline"]
