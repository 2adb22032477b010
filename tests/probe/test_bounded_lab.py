"""Bounded and stall-watched pushes against the slow HTTP/2 edge of a private lab.

The HAProxy edge with its default 64 KiB HTTP/2 window uploads at about
1.3 MB/s at 50 ms RTT, and about half of the HTTP/2 pushes through it hang
(libcurl 7.88, LAB-NOTES). A bounded push stops mid-pack once its rate is
stable; a hung one ends as ``stalled`` within 30 s; neither creates a ref.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitnetdiag.model.lab.state import LabState, load_state
from gitnetdiag.rundir import load_run

# The idle lane (tests/conftest.py): pushes ended by their stall timeout.
pytestmark = [pytest.mark.lab, pytest.mark.lab_lane("fail")]


@pytest.fixture(scope="module")
def slow_h2_lab() -> Iterator[LabState]:
    if os.geteuid() != 0:
        pytest.fail("lab tests need root")
    name = f"bd{secrets.token_hex(2)}"
    cli = [sys.executable, "-m", "gitnetdiag", "lab"]
    up = subprocess.run([*cli, "up", "--name", name, "--fault", "h2-small-window",
                         "--rtt", "50ms"], capture_output=True, text=True, timeout=300)
    try:
        assert up.returncode == 0, up.stderr[-2000:]
        yield load_state(name)
    finally:
        subprocess.run([*cli, "down", "--name", name], capture_output=True, timeout=300)


def _refs(lab: LabState) -> dict[str, str]:
    out = subprocess.run(["ip", "netns", "exec", lab.client_ns, "git", "ls-remote",
                          lab.endpoints.git], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    return {line.split("\t")[1]: line.split("\t")[0] for line in out.splitlines() if "\t" in line}


def test_h2_pushes_are_bounded_or_stalled_and_create_nothing(
        slow_h2_lab: LabState, tmp_path: Path) -> None:
    """Four HTTP/2 pushes of a 16 MiB pack (12 s each if complete): each ends bounded at
    its stable rate (about 1.3 MB/s, the window per RTT) or stalled within 30 s."""
    before = _refs(slow_h2_lab)
    run = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "probe", "--lab", "--lab-instance",
         slow_h2_lab.instance, "--protocols", "h2", "--repeat", "4", "--size", "16MiB",
         "--no-native", "--no-capture", "--timeout", "120", "--out", str(run)],
        capture_output=True, text=True, timeout=400)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert _refs(slow_h2_lab) == before
    manifest = load_run(run)
    assert manifest.options["budget_s"] == 10.0 and manifest.options["stall_timeout_s"] == 15.0
    pushes = manifest.protocols[0].pushes
    assert len(pushes) == 4
    for push in pushes:
        assert push.outcome in ("bounded", "stalled"), push
        assert push.cleanup == "never-created", push
        assert push.pack_objects is None  # cut mid-pack: receive-pack never applies it
        assert push.wall_s < 30, push
    bounded = [p for p in pushes if p.outcome == "bounded"]
    stalled = [p for p in pushes if p.outcome == "stalled"]
    for push in bounded:
        assert push.stopped in ("stable", "budget")
        assert push.rate_bytes_per_s is not None
        assert 0.8e6 < push.rate_bytes_per_s < 2.0e6, push.rate_bytes_per_s
        assert push.moved_bytes is not None and push.moved_bytes < push.pack_bytes
        assert (run / push.artifacts["tcpinfo"]).stat().st_size > 0
    for push in stalled:
        assert push.stopped == "stall" and push.failure_kind == "hung"
        assert push.last_progress and "Writing objects" in push.last_progress
    if stalled:
        assert manifest.status == "stalled" and proc.returncode != 0
        assert any(e.reference == "push-stalled" for e in manifest.errors)
    else:
        assert manifest.status == "complete" and proc.returncode == 0


def test_a_push_into_a_path_mtu_black_hole_is_stalled_within_30_s(
        slow_h2_lab: LabState, tmp_path: Path) -> None:
    """Full-size segments dropped in the router (LAB-NOTES' black hole): the handshake and
    the ref advertisement pass, the pack never arrives. Without the monitor this push
    would hang until --timeout (120 s here)."""
    rule = ["-d", slow_h2_lab.server_ip, "-p", "tcp", "-m", "length", "--length",
            "1200:65535", "-j", "DROP"]
    router = ["ip", "netns", "exec", slow_h2_lab.router_ns, "iptables-legacy"]
    before = _refs(slow_h2_lab)
    subprocess.run([*router, "-I", "FORWARD", *rule], check=True, timeout=30)
    try:
        run = tmp_path / "run"
        proc = subprocess.run(
            [sys.executable, "-m", "gitnetdiag", "probe", "--lab", "--lab-instance",
             slow_h2_lab.instance, "--protocols", "h1", "--size", "4MiB", "--no-native",
             "--no-capture", "--timeout", "120", "--out", str(run)],
            capture_output=True, text=True, timeout=300)
    finally:
        subprocess.run([*router, "-D", "FORWARD", *rule], check=True, timeout=30)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode != 0
    manifest = load_run(run)
    [push] = manifest.protocols[0].pushes
    assert push.outcome == "stalled" and push.stopped == "stall", push
    assert 15 <= push.wall_s < 30, push.wall_s
    assert push.last_progress and push.last_progress.startswith("Writing objects")
    assert push.cleanup == "never-created"
    assert manifest.status == "stalled"
    [error] = [e for e in manifest.errors if e.reference == "push-stalled"]
    assert "bytes moved" in error.message and "last: 'Writing objects" in error.message
    assert "git 2." in error.message and "libcurl" in error.message
    assert _refs(slow_h2_lab) == before
