"""``probe --burst 150`` against the lab's tiny-backlog git daemon: the overflow shows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gitnetdiag.analysis.capture_analysis import analyze_capture
from gitnetdiag.model.lab.state import LabState
from gitnetdiag.rundir import load_run
from tests.conftest import LabFactory

# The idle lane (tests/conftest.py): tiny-backlog: SYN retransmission waits.
pytestmark = [pytest.mark.lab, pytest.mark.lab_lane("idle")]


def _lab_refs(lab: LabState) -> dict[str, str]:
    out = subprocess.run(
        ["ip", "netns", "exec", lab.client_ns, "git", "ls-remote", lab.endpoints.git],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout
    return {line.split("\t")[1]: line.split("\t")[0] for line in out.splitlines() if "\t" in line}


def test_burst_150_on_tiny_backlog_records_syn_drops(shared_lab: LabFactory,
                                                     tmp_path: Path) -> None:
    """git daemon listens with backlog 5: 150 concurrent ls-remote overflow its accept
    queue, so the kernel drops SYNs (retransmitted by the clients) or answers with
    cookies/resets; the probe must record that, and change nothing on the remote."""
    lab = shared_lab("tiny-backlog", rtt_ms=5.0)
    before = _lab_refs(lab)
    assert "refs/heads/main" in before
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "probe", "--lab", "--lab-instance", lab.instance,
         "--protocols", "git", "--burst", "150", "--size", "1MiB", "--timeout", "60",
         "--out", str(run_dir)],
        capture_output=True, text=True, timeout=240,
    )
    assert "Traceback" not in proc.stderr + proc.stdout
    # failed burst operations are measurements, not a failed run
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _lab_refs(lab) == before

    manifest = load_run(run_dir)
    assert manifest.status == "complete"
    run = manifest.protocol("git")
    assert run is not None
    assert [(p.outcome, p.cleanup) for p in run.pushes] == [("ok", "deleted")]
    burst = run.burst
    assert burst is not None and burst.concurrency == 150
    assert len(burst.ops) == 150 and len(burst.connects) == 150
    assert burst.capture == "burst-git.pcap"

    analysis = analyze_capture(run_dir / burst.capture)
    to_daemon = [c for c in analysis.connections if c.connection.b_port == 9418]
    # every ls-remote and every raw connect opened at least one connection (SYN seen)
    assert len(to_daemon) >= 250
    syn_retransmissions = sum(c.handshake.syn_retransmissions for c in to_daemon)
    failures = sum(burst.failures_by_kind.values())
    connect_failures = sum(1 for c in burst.connects if c.error is not None)
    assert failures + connect_failures + syn_retransmissions > 0, (
        burst.failures_by_kind, syn_retransmissions)
    # every failed ls-remote is classified (refused, reset, timeout...), none is lost
    assert burst.ok_count + failures == 150
