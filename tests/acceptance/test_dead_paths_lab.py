"""Issue 42 item 4's acceptance: a router that drops every SYN to the server's HTTPS and SSH
ports (``filtered-port``) is named within 30 s, in both directions, with no minutes of git's
SYN retries.

One ``diagnose --lab --direction both`` run: the clones, then the pushes, each protocol's
port checked once with a bounded connect, none transferred. Each direction's verdict is
``failed``, the exit is non-zero, ``path-unreachable`` ranks first in each and names every
protocol with the SYNs it sent unanswered, every failure is explained by it, and the whole
command (the lab's host evidence and the reports included) ends within 30 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitnetdiag.lab.pathfaults import (
    PATH_FAULT_CULPRIT,
    PATH_FAULT_FIX_NAMES,
    PATH_FAULT_PROBE_ARGS,
)
from tests.conftest import LabFactory

pytestmark = pytest.mark.lab

WITHIN_S = 30.0
"""Issue 42's bound: every port dead, named within 30 s of the start, clean-up included."""
EXIT_FAILED = 9
FAULT = "filtered-port"


@pytest.mark.lab_lane("fail")
def test_every_port_filtered_is_named_per_protocol_within_30_s(lab_factory: LabFactory,
                                                                tmp_path: Path) -> None:
    state = lab_factory(FAULT)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--lab", "--lab-instance", state.instance,
         "--direction", "both", "--format", "json", "--out", str(tmp_path / "run"),
         *PATH_FAULT_PROBE_ARGS[FAULT]],
        capture_output=True, text=True, timeout=300)
    wall_s = time.monotonic() - started
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    print(f"{FAULT} --direction both: exit {proc.returncode}, {wall_s:.1f} s, "
          f"verdict {report['verdict']}")
    assert proc.returncode == EXIT_FAILED, proc.stderr[-2000:]
    assert report["verdict"] == "failed"
    for direction, part in report["parts"].items():
        ids = [c["id"] for c in part["culprits"]]
        top = part["culprits"][0]
        print(f"  {direction}: verdict {part['verdict']}, ranked {ids}\n    {top['summary']}")
        assert part["verdict"] == "failed", direction
        assert ids[0] == PATH_FAULT_CULPRIT[FAULT], (direction, ids)
        assert PATH_FAULT_FIX_NAMES[FAULT] in top["fix"]
        for port in ("8443", "22"):
            assert f"port {port}" in top["fix"], (port, top["fix"])
        for name in ("HTTP/1.1", "HTTP/2", "SSH"):
            assert name in top["summary"], (name, top["summary"])
        syns = [e for e in top["evidence"] if e["unit"] == "count"]
        waits = [e["value"] for e in top["evidence"] if e["unit"] == "s"]
        print(f"    SYNs unanswered per port {[e['value'] for e in syns]}, waited {waits} s")
        assert len(syns) == 2 and all(e["value"] >= 3 for e in syns), syns
        assert waits and all(3.0 <= w < 5.0 for w in waits), waits
        failures = part["measurement_failures"]
        assert {f["protocol"] for f in failures} >= {"h1", "h2", "ssh"}
        assert all(f["explained_by"] == "path-unreachable" for f in failures
                   if f["protocol"]), failures
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    for run in manifest["protocols"]:  # each protocol's one push: not started, no branch
        (push,) = run["pushes"]
        assert push["outcome"] == "failed" and push["failure_kind"] == "unreachable", push
        assert push["last_line"].startswith("not started: ") and not push["artifacts"]
    assert {p["reach"] for p in manifest["paths"]} == {"filtered"}
    assert wall_s < WITHIN_S, f"{wall_s:.1f} s"


REFUSED = "refused-port"


@pytest.mark.lab_lane("fail")
def test_every_port_refused_is_a_filter_named_per_port(lab_factory: LabFactory,
                                                       tmp_path: Path) -> None:
    """The router answers every SYN to the server's HTTPS and SSH ports with a TCP reset
    while haproxy (8443) and sshd (22) listen: ``firewall-reset`` ranks first in both
    directions, names each port with its protocols, and says a filter rejects them (the
    listeners in the server's ``ss -ltn`` tell it from a closed port); ``path-unreachable``
    (no answer at all) does not fire, and every failure is explained."""
    state = lab_factory(REFUSED)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--lab", "--lab-instance", state.instance,
         "--direction", "both", "--format", "json", "--out", str(tmp_path / "run"),
         *PATH_FAULT_PROBE_ARGS[REFUSED]],
        capture_output=True, text=True, timeout=300)
    wall_s = time.monotonic() - started
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    print(f"{REFUSED} --direction both: exit {proc.returncode}, {wall_s:.1f} s, "
          f"verdict {report['verdict']}")
    assert proc.returncode == EXIT_FAILED, proc.stderr[-2000:]
    assert report["verdict"] == "failed"
    for direction, part in report["parts"].items():
        ids = [c["id"] for c in part["culprits"]]
        top = part["culprits"][0]
        print(f"  {direction}: verdict {part['verdict']}, ranked {ids}\n    {top['summary']}"
              f"\n    fix: {top['fix']}")
        assert part["verdict"] == "failed", direction
        assert ids[0] == PATH_FAULT_CULPRIT[REFUSED] and "path-unreachable" not in ids, ids
        assert PATH_FAULT_FIX_NAMES[REFUSED] in top["fix"]
        for port in ("8443", "22"):
            assert f"TCP port {port}" in top["fix"], (port, top["fix"])
        assert "HTTP/1.1 and HTTP/2 (198.18.2.2:8443): every connection refused" \
            in top["summary"], top["summary"]
        assert "SSH (198.18.2.2:22): every connection refused" in top["summary"]
        assert top["summary"].count("a filter rejects them") == 2, top["summary"]
        assert "nothing listens" not in top["summary"]
        checks = [e["value"] for e in top["evidence"] if e["source"].startswith("path check")]
        assert checks == [2, 2], top["evidence"]
        failures = part["measurement_failures"]
        assert {f["protocol"] for f in failures} >= {"h1", "h2", "ssh"}
        assert all(f["explained_by"] == "firewall-reset" for f in failures
                   if f["protocol"]), failures
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert {p["reach"] for p in manifest["paths"]} == {"refused"}
    assert wall_s < WITHIN_S, f"{wall_s:.1f} s"
