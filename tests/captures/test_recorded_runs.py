"""The recorded lab runs in captures/ give their expected diagnosis offline (no root)."""

from __future__ import annotations

import json
import os
import shutil
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
