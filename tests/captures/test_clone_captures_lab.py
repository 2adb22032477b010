"""Issue 36 item 3's acceptance, live: two clones through the lab's clamped client receive
buffer (``client-rmem-clamp``, 6 MiB of random history), each captured with plain
``tcpdump`` (headers only, ``-s 128``) as someone else would take it: one on the client
(git://, its request line readable) and one on the server (HTTPS through the edge, the
direction from the bytes each way). ``analyze FILE --diagnose`` ranks the fault's culprit
first for each, as a download, and says what a capture cannot show.

Issue 43 item 3's, live: the same captures on the server of clones from the lab's clamped
send buffer (``server-sndbuf-clamp``, its ``tcp_wmem`` maximum 64 KiB) over SSH, HTTPS
(HTTP/1.1 through the edge) and git://: the sender's flight flat below the client's window
ranks ``server-send-buffer`` first; and the same clones from a healthy lab serving the same
history stay healthy."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitnetdiag.lab.spec import FETCH_FAULT_CULPRIT
from gitnetdiag.model.lab.state import LabState
from gitnetdiag.pipeline import diagnose_capture
from tests.captures.twosides import _stop, _tcpdump, _wait_capturing, push_url
from tests.conftest import LabFactory
from tests.labutil import in_client

pytestmark = pytest.mark.lab

FAULT = "client-rmem-clamp"
SNDBUF_FAULT = "server-sndbuf-clamp"


def _captured_clone(state: LabState, at: str, protocol: str, out: Path) -> Path:
    """One clone over ``protocol`` while tcpdump runs in the ``at`` side's namespace only."""
    ns, peer = ((state.client_ns, state.server_ip) if at == "client"
                else (state.server_ns, state.client_ip))
    pcap, dest = out / f"{at}-{protocol}.pcap", out / f"clone-{at}"
    dump = _tcpdump(ns, peer, pcap)
    try:
        _wait_capturing(dump, pcap)
        url, options = ((state.endpoints.git, []) if protocol == "git"
                        else push_url(state, protocol))
        git = in_client(state, "git", *options, "clone", "-q", "--bare", url, str(dest),
                        timeout_s=180)
        assert git.returncode == 0, git.stderr
        time.sleep(1.0)  # the last ACKs and FINs reach the file
    finally:
        _stop(dump)
        shutil.rmtree(dest, ignore_errors=True)
    return pcap


@pytest.mark.parametrize(("at", "protocol", "told"), [
    ("client", "git", "the request names git-upload-pack"),
    ("server", "h1", "bytes each way"),
])
def test_a_clone_captured_on_one_side_names_the_clamp_first(
        at: str, protocol: str, told: str, shared_lab: LabFactory, tmp_path: Path) -> None:
    state = shared_lab(FAULT)
    pcap = _captured_clone(state, at, protocol, tmp_path)
    diagnosis, warnings = diagnose_capture(pcap)
    ids = [f.id for f in diagnosis.findings]
    print(f"{pcap.name}: {pcap.stat().st_size} B, {diagnosis.verdict}, ranked "
          f"{[(f.id, round(f.score, 2), round(f.cost_s, 1)) for f in diagnosis.findings]}; "
          f"{diagnosis.environment.measured_by}")
    assert diagnosis.direction == "fetch"
    assert ids[:1] == [FETCH_FAULT_CULPRIT[FAULT]], f"{pcap.name}: ranked {ids}"
    assert told in diagnosis.environment.measured_by
    assert f"captured at the {at}" in diagnosis.environment.measured_by
    assert any("cannot show trace2 phases" in w for w in warnings)
    # The command line, in its own process, as support runs it.
    proc = subprocess.run([sys.executable, "-m", "gitnetdiag", "analyze", str(pcap), "--diagnose"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"#1 {FETCH_FAULT_CULPRIT[FAULT]}" in proc.stdout
    assert "cannot show trace2 phases" in proc.stderr


def _analyze_cli(pcap: Path) -> subprocess.CompletedProcess[str]:
    """``analyze FILE --diagnose`` in its own process, as support runs it."""
    proc = subprocess.run([sys.executable, "-m", "gitnetdiag", "analyze", str(pcap), "--diagnose"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc


# git://: under the clamp the lab's inetd relays git daemon's output (poll, then send, as
# sshd and HAProxy write; gitnetdiag/lab/inetd.py): upload-pack's own small writes to a
# socket are not held by its send buffer on this kernel, so without the relay the clamp did
# not bind git:// (its flight grew with the congestion window: 0.4-0.7 MB queued, tb 65536).
@pytest.mark.parametrize("protocol", ["ssh", "h1", "git"])
def test_a_clone_captured_at_the_server_names_its_send_buffer_first(
        protocol: str, shared_lab: LabFactory, tmp_path: Path) -> None:
    state = shared_lab(SNDBUF_FAULT)
    pcap = _captured_clone(state, "server", protocol, tmp_path)
    diagnosis, warnings = diagnose_capture(pcap)
    ids = [f.id for f in diagnosis.findings]
    print(f"{pcap.name}: {pcap.stat().st_size} B, {diagnosis.verdict}, ranked "
          f"{[(f.id, round(f.score, 2), round(f.cost_s, 1)) for f in diagnosis.findings]}; "
          f"{diagnosis.findings[0].summary if diagnosis.findings else ''}")
    assert diagnosis.direction == "fetch" and diagnosis.verdict != "healthy"
    assert ids[:1] == [FETCH_FAULT_CULPRIT[SNDBUF_FAULT]], f"{pcap.name}: ranked {ids}"
    assert "captured at the server" in diagnosis.environment.measured_by
    top = diagnosis.findings[0]
    assert any("level they held" in e.what and e.unit == "B" for e in top.evidence)
    assert "Not in a capture" in top.summary and "would look the same" in top.summary
    assert any("cannot show trace2 phases" in w for w in warnings)
    proc = _analyze_cli(pcap)
    assert f"#1 {FETCH_FAULT_CULPRIT[SNDBUF_FAULT]}" in proc.stdout
    assert "verdict: HEALTHY" not in proc.stdout


@pytest.mark.parametrize("protocol", ["ssh", "h1", "git"])
def test_a_healthy_clone_captured_at_the_server_stays_healthy(
        protocol: str, shared_lab: LabFactory, tmp_path: Path) -> None:
    state = shared_lab("healthy", fetch_history="random")  # the clamped lab's 6 MiB history
    pcap = _captured_clone(state, "server", protocol, tmp_path)
    diagnosis, _ = diagnose_capture(pcap)
    print(f"{pcap.name}: {pcap.stat().st_size} B, {diagnosis.verdict}, ranked "
          f"{[(f.id, round(f.score, 2)) for f in diagnosis.findings]}")
    assert diagnosis.direction == "fetch"
    assert "captured at the server" in diagnosis.environment.measured_by
    assert diagnosis.verdict == "healthy", [f.id for f in diagnosis.findings]
    assert "verdict: HEALTHY" in _analyze_cli(pcap).stdout


@pytest.mark.parametrize("fault", ["slow-pack-generation"])  # the idle lane (5% of a core)
def test_a_slow_pack_captured_at_the_server_is_not_its_send_buffer(
        fault: str, shared_lab: LabFactory, tmp_path: Path) -> None:
    """A CPU-starved upload-pack trickles progress for most of the clone, then sends its
    pack with a flight as flat as a buffer's (33 kB over 2.1 s of 26.3 s, one run): the
    bulk's small share of the sending time tells it from a send buffer."""
    state = shared_lab(fault)
    pcap = _captured_clone(state, "server", "ssh", tmp_path)
    diagnosis, _ = diagnose_capture(pcap)
    print(f"{pcap.name}: {pcap.stat().st_size} B, {diagnosis.verdict}, ranked "
          f"{[(f.id, round(f.score, 2)) for f in diagnosis.findings]}")
    assert diagnosis.direction == "fetch"
    assert "captured at the server" in diagnosis.environment.measured_by
    assert FETCH_FAULT_CULPRIT[SNDBUF_FAULT] not in [f.id for f in diagnosis.findings]
