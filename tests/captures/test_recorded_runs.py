"""The recorded lab runs in captures/ give their expected diagnosis offline (no root)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gitnetdiag.pipeline import diagnose_run
from gitnetdiag.report import render_json

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
CASES = sorted(p.name for p in CAPTURES.iterdir() if (p / "expected.json").is_file())

INJECTED = {
    "h2-small-window": "h2-flow-control-window",
    "tcp-rmem-clamp": "tcp-receive-window-clamp",
    "tiny-backlog": "listen-backlog-overflow",
    "loss": "packet-loss",
    "firewall-reset": "firewall-reset",
    "slow-hook": "server-processing",
    "slow-auth": "slow-ref-advertisement",
}


def test_every_lab_fault_has_a_recorded_case() -> None:
    assert set(CASES) == {"healthy", *INJECTED}


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
    if case == "healthy":
        assert ids == []
    else:
        assert ids[0] == INJECTED[case]
