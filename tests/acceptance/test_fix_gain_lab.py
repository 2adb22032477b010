"""Issue 15's accuracy acceptance: the first culprit's cost predicts what its fix gains.

Per fault: ``diagnose --lab --repeat 3`` (the median of three HTTP/2 pushes,
bounded: the whole pack projected at its measured rate), then the same
diagnosis of the fixed lab. The fix of each fault here restores exactly the
healthy lab's setting (the edge's HTTP/2 window 16 MiB, the server's default
``tcp_rmem``, no drops in the router), so one healthy diagnosis is the
"after" of all three: four diagnoses instead of six, one lab up at a time
(a second live lab would share the two cores and disturb the timing).

Cheap by design: HTTP/2 only (every culprit here is priced on it: its own
window, and the clamp and the loss hit it like the other transports), an
8 MiB pack that the slow labs never send whole (bounded pushes stop once the
rate is stable) and the healthy lab sends in about a second.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from gitnetdiag.lab import manager
from gitnetdiag.lab.spec import FAULT_CULPRIT, build_spec

pytestmark = pytest.mark.lab

FAULTS = ("h2-small-window", "tcp-rmem-clamp", "loss")
SIZE = "8MiB"
TOLERANCE = 0.25
"""The issue's bound on |predicted - measured| / measured."""


def diagnose_lab(fault: str, out: Path) -> dict[str, Any]:
    """Bring a private lab up with ``fault``, diagnose it, take it down; the JSON report."""
    name = "g" + uuid.uuid4().hex[:6]
    manager.up(build_spec(instance=name, faults=[fault]))
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "gitnetdiag", "diagnose", "--lab", "--lab-instance", name,
             "--size", SIZE, "--repeat", "3", "--protocols", "h2", "--timeout", "90",
             "--format", "json", "--out", str(out)],
            capture_output=True, text=True, timeout=600,
        )
    finally:
        manager.down(name)
    assert "Traceback" not in proc.stderr, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


@pytest.fixture(scope="module")
def fixed_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The lab with the fix applied: every fault's fixed setting is the healthy lab's."""
    return diagnose_lab("healthy", tmp_path_factory.mktemp("fixed") / "run")


@pytest.mark.parametrize("fault", FAULTS)
def test_first_culprit_predicts_the_gain_of_its_fix(fault: str, fixed_report: dict[str, Any],
                                                    tmp_path: Path) -> None:
    """Predicted gain (cost_s) within 25% of the measured gain; the culprit is gone after."""
    before = diagnose_lab(fault, tmp_path / "run")
    assert before["culprits"], f"{fault}: nothing ranked"
    top = before["culprits"][0]
    assert top["id"] == FAULT_CULPRIT[fault]
    assert top["cost_protocol"] == "h2"
    slow = before["protocols"]["h2"]
    fixed = fixed_report["protocols"]["h2"]
    assert slow["pushes_ok"] == 3 and fixed["pushes_ok"] == 3
    measured = slow["duration_s"] - fixed["duration_s"]
    predicted = top["cost_s"]
    assert measured > 1.0, f"{fault}: the fix gained only {measured:.2f} s"
    error = (predicted - measured) / measured
    print(f"{fault}: {top['id']} predicted {predicted:.1f} s, measured {measured:.1f} s "
          f"({slow['duration_s']:.1f} -> {fixed['duration_s']:.1f} s), error {error:+.0%}")
    assert abs(error) <= TOLERANCE, (
        f"{fault}: predicted {predicted:.1f} s, measured {measured:.1f} s "
        f"({slow['duration_s']:.1f} -> {fixed['duration_s']:.1f} s), error {error:+.0%}")
    assert top["id"] not in {c["id"] for c in fixed_report["culprits"]}
    assert fixed_report["verdict"] == "healthy"
