"""Issue 15's accuracy acceptance: the first culprit's cost predicts what its fix gains.

Per fault: ``diagnose --lab --repeat 3`` (the median of three HTTP/2 pushes),
then the same diagnosis of the fixed lab. The fix of each fault here restores
exactly the healthy lab's setting (the edge's HTTP/2 window 16 MiB, the
server's default ``tcp_rmem``, window scaling on, no drops in the router, no
hook delay, no authentication delay), so one healthy diagnosis is the "after"
of all of them. The labs are the session's shared ones (``tests/conftest.py``):
``diagnose`` pushes to throwaway branches and deletes them, and changes nothing
else; an idle lab costs no CPU (its servers and the delay program wait on their
sockets), so the labs kept up beside the one measured do not disturb the timing.

Cheap by design: HTTP/2 only (every culprit here is priced on it), an 8 MiB
pack. The transfer faults use bounded pushes (the slow labs never send the
pack whole; the projection is the whole pack at the measured rate); the
server-side faults (a slow hook, a slow authentication) cost seconds outside
the upload, so their pushes run complete, against a complete healthy run.

The fixable faults not here cost something other than push time: the
backlog (connections refused under load), the reset (a failed push becomes a
working one) and the SYN drops (a connection retried after the SYN timeout,
now and then). ``tests/acceptance/test_diagnose_lab.py`` checks their fixes
with ``compare`` on the lab that diagnosed them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gitnetdiag.lab.spec import FAULT_CULPRIT
from tests.conftest import LabFactory

pytestmark = pytest.mark.lab

FAULTS = ("h2-small-window", "tcp-rmem-clamp", "loss", "window-scaling-off", "slow-hook",
          "slow-auth")
COMPLETE = ("slow-hook", "slow-auth")
"""Faults whose cost is outside the upload: a bounded push ends before it is paid."""
SIZE = "8MiB"
TOLERANCE = 0.25
"""The issue's bound on |predicted - measured| / measured."""
TIMEOUT_S = {"h2-small-window": 30}
"""An 8 MiB push through the 64 KiB edge window takes about 6.5 s; libcurl 7.88.1 hangs
some of them for good (docs/culprits.md): 30 s ends a hung one sooner than 90."""


def diagnose_lab(shared_lab: LabFactory, fault: str, out: Path, *,
                 complete: bool = False) -> dict[str, Any]:
    """Diagnose the session's lab of ``fault``; the JSON report."""
    name = shared_lab(fault).instance
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--lab", "--lab-instance", name,
         "--size", SIZE, "--repeat", "3", "--protocols", "h2",
         "--timeout", str(TIMEOUT_S.get(fault, 90)),
         "--format", "json", "--out", str(out), *(["--complete"] if complete else [])],
        capture_output=True, text=True, timeout=600,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


@pytest.fixture(scope="module")
def fixed_report(shared_lab: LabFactory, tmp_path_factory: pytest.TempPathFactory
                 ) -> Callable[[bool], tuple[dict[str, Any], Path]]:
    """The lab with the fix applied (every fault's fixed setting is the healthy lab's), with
    bounded or complete pushes; each diagnosed once, when first asked for (its report and its
    run directory)."""
    made: dict[bool, tuple[dict[str, Any], Path]] = {}

    def get(complete: bool) -> tuple[dict[str, Any], Path]:
        if complete not in made:
            out = tmp_path_factory.mktemp("fixed-complete" if complete else "fixed") / "run"
            made[complete] = (diagnose_lab(shared_lab, "healthy", out, complete=complete), out)
        return made[complete]

    return get


def compared_gain_s(before: Path, after: Path) -> float:
    """The gain ``gitnetdiag compare`` measures between two runs: the mean time per push
    with each failed push as its wait plus a redo, as the cost counts it."""
    proc = subprocess.run([sys.executable, "-m", "gitnetdiag", "compare", str(before),
                           str(after), "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    gain: dict[str, Any] = json.loads(proc.stdout)["pairs"][0]["gain"]
    assert gain["protocol"] == "h2", gain
    return float(gain["measured_gain_s"])


@pytest.mark.parametrize("fault", FAULTS)
def test_first_culprit_predicts_the_gain_of_its_fix(
    fault: str, fixed_report: Callable[[bool], tuple[dict[str, Any], Path]],
    shared_lab: LabFactory,
    tmp_path: Path
) -> None:
    """Predicted gain (cost_s) within 25% of the measured gain; the culprit is gone after."""
    complete = fault in COMPLETE
    before = diagnose_lab(shared_lab, fault, tmp_path / "run", complete=complete)
    after, after_dir = fixed_report(complete)
    assert before["culprits"], f"{fault}: nothing ranked"
    top = before["culprits"][0]
    assert top["id"] == FAULT_CULPRIT[fault]
    assert top["cost_protocol"] == "h2"
    slow = before["protocols"]["h2"]
    fixed = after["protocols"]["h2"]
    # libcurl 7.88.1 now and then ends an HTTP/2 upload under loss with no reply (git:
    # "unexpected disconnect while reading sideband packet", seen 2026-11-27 under `loss`):
    # the median of the two measured pushes still prices the fault; the fixed lab's three
    # must all finish.
    assert slow["pushes_ok"] >= 2 and slow["pushes_ok"] + slow["pushes_failed"] == 3
    assert fixed["pushes_ok"] == 3
    measured = slow["duration_s"] - fixed["duration_s"]
    if slow["pushes_failed"]:
        # A failed push (libcurl 7.88.1 hangs one of three through the 64 KiB window now
        # and then) costs its wait plus a redo in the prediction; the median of the pushes
        # that finished leaves it out (seen 2026-11-28: predicted 13.8 s against 5.7 s, +139%;
        # compare of the same runs measured 13.2 s, +4%). Measure as compare does.
        measured = compared_gain_s(tmp_path / "run", after_dir)
    predicted = top["cost_s"]
    assert measured > 1.0, f"{fault}: the fix gained only {measured:.2f} s"
    error = (predicted - measured) / measured
    print(f"{fault}: {top['id']} predicted {predicted:.1f} s, measured {measured:.1f} s "
          f"({slow['duration_s']:.1f} -> {fixed['duration_s']:.1f} s), error {error:+.0%}")
    assert abs(error) <= TOLERANCE, (
        f"{fault}: predicted {predicted:.1f} s, measured {measured:.1f} s "
        f"({slow['duration_s']:.1f} -> {fixed['duration_s']:.1f} s), error {error:+.0%}; "
        f"{top['summary']}")
    assert top["id"] not in {c["id"] for c in after["culprits"]}
    assert after["verdict"] == "healthy"
