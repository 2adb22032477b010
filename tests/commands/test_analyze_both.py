"""``gitnetdiag analyze RUN --diagnose`` of a ``--direction both`` run: the one report of
both directions, as ``report RUN`` renders it (the recorded halves of
tests/commands/test_report_both.py), after the pushes' captures; nothing written into RUN
or RUN-fetch."""

from __future__ import annotations

import json
from pathlib import Path

from tests.commands.test_bad_input import gitnetdiag
from tests.commands.test_report_both import INCONCLUSIVE_EXIT, both_run


def _listing(*dirs: Path) -> list[str]:
    return sorted(str(p.relative_to(d.parent)) for d in dirs for p in d.rglob("*"))


def test_analyze_diagnose_of_a_both_run_is_the_joined_report(tmp_path: Path) -> None:
    run = both_run(tmp_path / "run")
    before = _listing(run, tmp_path / "run-fetch")
    out = tmp_path / "out"
    proc = gitnetdiag("analyze", str(run), "--diagnose", "--out", str(out), cwd=tmp_path)
    assert proc.returncode == INCONCLUSIVE_EXIT, proc.stderr  # the joined verdict's exit
    report = gitnetdiag("report", str(run), cwd=tmp_path)
    assert report.stdout.startswith("gitnetdiag report: both directions")
    assert proc.stdout.endswith(report.stdout)  # the captures, then the one report
    assert "h2-1.pcap" in proc.stdout.removesuffix(report.stdout)
    data = json.loads((out / "report.json").read_text())
    assert data["schema"] == "gitnetdiag.both-report/1"
    assert [(c["direction"], c["id"]) for c in data["culprits"]] == [
        ("push", "h2-flow-control-window")]
    assert _listing(run, tmp_path / "run-fetch") == before


def test_analyze_diagnose_of_an_unmarked_run_is_the_push_report(tmp_path: Path) -> None:
    run = both_run(tmp_path / "run", marked=False)
    out = tmp_path / "out"
    proc = gitnetdiag("analyze", str(run), "--diagnose", "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "both directions" not in proc.stdout
    assert json.loads((out / "report.json").read_text())["schema"] == "gitnetdiag.report/4"
