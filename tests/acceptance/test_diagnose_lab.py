"""Issue 5's acceptance: for every lab fault, `gitnetdiag diagnose --lab` ranks it first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gitnetdiag.lab.spec import FAULT_CULPRIT, FAULT_FIX_NAMES, FAULT_PROBE_ARGS
from tests.conftest import LabFactory

pytestmark = pytest.mark.lab


@pytest.mark.parametrize("fault", list(FAULT_CULPRIT))
def test_diagnose_ranks_the_injected_fault_first(fault: str, lab_factory: LabFactory,
                                                 tmp_path: Path) -> None:
    """Real pushes through the lab; the top culprit is the injected fault, its fix the setting."""
    state = lab_factory(fault)
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--lab", "--lab-instance",
         state.instance, "--size", "3MiB", "--timeout", "90", "--format", "json",
         "--out", str(out), *FAULT_PROBE_ARGS[fault]],
        capture_output=True, text=True, timeout=900,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    ids = [c["id"] for c in report["culprits"]]
    injected = FAULT_CULPRIT[fault]
    if injected is None:
        assert report["verdict"] == "healthy" and ids == [], ids
        return
    assert report["verdict"] == "degraded"
    assert ids and ids[0] == injected, f"{fault}: ranked {ids}"
    assert FAULT_FIX_NAMES[fault] in report["culprits"][0]["fix"]
    assert report["culprits"][0]["evidence"], "a culprit without evidence"
    for name in ("report.md", "report.html", "report.json", "manifest.json"):
        assert (out / name).is_file()
