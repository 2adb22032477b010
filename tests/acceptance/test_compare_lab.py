"""Issue 15's acceptance for ``compare`` and ``lab fix`` (3 MiB, HTTP/2 only, 3 repeats; one
push at the far site, whose pair's noise test is not asserted).

1. The slow HTTP/2 edge: diagnose, ``lab fix``, diagnose again; ``compare``
   shows the culprit gone and a positive gain, beyond the noise when three
   pushes a side completed (the slow edge stalls some pushes: then it says so).
2. Two vantage points (the fixed lab at 50 ms, a second lab at 200 ms):
   ``compare`` names the slower one and why (the RTT).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LabFactory

pytestmark = pytest.mark.lab


def _gitnetdiag(*args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "gitnetdiag", *args], capture_output=True,
                          text=True, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _diagnose(instance: str, out: Path, *extra: str, repeat: int = 3) -> dict[str, Any]:
    proc = _gitnetdiag("diagnose", "--lab", "--lab-instance", instance, "--protocols", "h2",
                       "--size", "3MiB", "--repeat", str(repeat), "--timeout", "30",
                       "--format", "json",
                       # The edge's small window sometimes hangs a push for good (LAB-NOTES):
                       # a 3 MiB push takes about 4 s, so 30 s ends a hung one (reported hung).
                       "--stall-timeout", "8", "--cleanup-wait", "5", "--out", str(out), *extra)
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def _compare(*runs: Path) -> dict[str, Any]:
    proc = _gitnetdiag("compare", *map(str, runs), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def test_fix_removes_the_culprit_and_gains_time_and_rtt_explains_a_slower_site(
        lab_factory: LabFactory, tmp_path: Path) -> None:
    slow = lab_factory("h2-small-window")
    before = _diagnose(slow.instance, tmp_path / "before")
    assert [c["id"] for c in before["culprits"]][:1] == ["h2-flow-control-window"]

    fixed = _gitnetdiag("lab", "fix", "--name", slow.instance)
    assert fixed.returncode == 0, fixed.stderr
    after = _diagnose(slow.instance, tmp_path / "after")
    assert "h2-flow-control-window" not in [c["id"] for c in after["culprits"]]

    pair = _compare(tmp_path / "before", tmp_path / "after")["pairs"][0]
    gain = pair["gain"]
    assert gain["culprit_id"] == "h2-flow-control-window" and gain["culprit_gone"] is True
    assert gain["protocol"] == "h2" and gain["predicted_gain_s"] > 0
    assert gain["measured_gain_s"] > 0
    h2 = next(row for row in pair["protocols"] if row["protocol"] == "h2")
    completed = min(len(h2["before"]["durations_s"]), len(h2["after"]["durations_s"]))
    if completed >= 3:
        assert h2["noise_test"] == "welch-t" and gain["beyond_noise"] is True, h2
    else:  # a stalled push left fewer than three: said plainly, not tested
        assert h2["noise_test"] == "too-few-repeats" and gain["beyond_noise"] is None, h2
        assert "not tested against the noise" in pair["summary"]
    statuses = {c["id"]: c["status"] for c in pair["culprits"]}
    assert statuses["h2-flow-control-window"] == "gone"
    assert pair["slower"] == "A"

    far = lab_factory("healthy", rtt_ms=200.0)
    # One push: the git push tells the RTT, and the slower side is the larger median (one
    # push's time); the noise test is asked of the fix's pair above, not of this one.
    _diagnose(far.instance, tmp_path / "far", "--no-native", repeat=1)
    pair = _compare(tmp_path / "after", tmp_path / "far")["pairs"][0]
    assert pair["slower"] == "B" and pair["deciding_protocol"] == "h2"
    rtt = next(d for d in pair["differences"] if d["what"] == "RTT")
    assert rtt["before"] < 0.07 < 0.18 < rtt["after"]
    assert pair["summary"].startswith("B is slower than A on HTTP/2")
    assert "RTT" in pair["summary"]
