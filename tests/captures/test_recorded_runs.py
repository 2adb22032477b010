"""The recorded lab runs in captures/ give their expected diagnosis offline (no root)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gitnetdiag.lab.spec import FAULT_CULPRIT
from gitnetdiag.pipeline import diagnose_run
from gitnetdiag.report import render_json

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
CASES = sorted(p.name for p in CAPTURES.iterdir() if (p / "expected.json").is_file())


def test_every_lab_fault_has_a_recorded_case() -> None:
    assert set(CASES) == set(FAULT_CULPRIT)


@pytest.mark.parametrize("case", CASES)
def test_recorded_case_reproduces_its_expected_diagnosis(case: str, tmp_path: Path) -> None:
    """Re-parsing the captures gives the recorded ranking; the injected fault ranks first."""
    run_dir = tmp_path / case
    shutil.copytree(CAPTURES / case, run_dir)
    (run_dir / "observations.json").unlink(missing_ok=True)
    expected = json.loads((CAPTURES / case / "expected.json").read_text())
    diagnosis, _ = diagnose_run(run_dir)
    report = json.loads(render_json(diagnosis))
    ids = [c["id"] for c in report["culprits"]]
    assert report["verdict"] == expected["verdict"]
    assert ids == expected["culprits"]
    injected = FAULT_CULPRIT[case]
    if injected is None:
        assert ids == []
    else:
        assert ids[0] == injected


GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize(("renderer", "suffix"), [("md", "md"), ("terminal", "txt")])
def test_recorded_h2_case_report_matches_golden(renderer: str, suffix: str,
                                                tmp_path: Path) -> None:
    """The Markdown and terminal reports of a recorded run, line for line.

    Regenerate after an intended change with UPDATE_GOLDEN=1 and review the diff.
    """
    from gitnetdiag.report import RENDERERS

    run_dir = tmp_path / "case"
    shutil.copytree(CAPTURES / "h2-small-window", run_dir)
    diagnosis, _ = diagnose_run(run_dir)
    text = RENDERERS[renderer](diagnosis)
    golden = GOLDEN / f"h2-small-window.{suffix}"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text()


def test_host_report_flag_turns_syn_drops_into_the_backlog_culprit(tmp_path: Path) -> None:
    """Without server evidence the burst only shows SYN drops; `--host-report` names the backlog."""
    run_dir = tmp_path / "run"
    shutil.copytree(CAPTURES / "tiny-backlog", run_dir)
    host_report = tmp_path / "host.json"
    (run_dir / "host.json").rename(host_report)
    (run_dir / "observations.json").unlink()

    def top(*extra: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "gitnetdiag", "analyze", str(run_dir), "--diagnose",
             "--out", str(tmp_path / "out"), *extra],
            capture_output=True, text=True, timeout=120, check=True,
        )
        report = json.loads((tmp_path / "out" / "report.json").read_text())
        assert "culprits, ranked" in proc.stdout
        return str(report["culprits"][0]["id"])

    assert top() != "listen-backlog-overflow"
    assert top("--host-report", str(host_report)) == "listen-backlog-overflow"


def test_bare_capture_of_the_black_hole_names_it_not_loss() -> None:
    """The pmtu-blackhole push's capture alone (no manifest: the stall is no failed push
    there): the resends into the black hole are path-mtu-blackhole, costed as the whole
    stuck transfer, and not counted as random loss."""
    from gitnetdiag.pipeline import diagnose_capture

    diagnosis, _ = diagnose_capture(CAPTURES / "pmtu-blackhole" / "h1-1.pcap")
    ids = [f.id for f in diagnosis.findings]
    assert ids[0] == "path-mtu-blackhole", ids
    assert "packet-loss" not in ids + [f.id for f in diagnosis.dropped]
    assert diagnosis.findings[0].cost_s > 5.0
