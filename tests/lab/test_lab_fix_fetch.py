"""``gitnetdiag lab fix`` of the fetch faults, in a running lab (issue 44 item 3): what the
report's fix names, applied in place; no test undoes a fault by hand.

- ``client-rmem-clamp``: the client namespace's ``net.ipv4.tcp_rmem`` back to Linux's
  default ``4096 131072 6291456``.
- ``edge-sndbuf-clamp``: HAProxy restarted without ``tune.sndbuf.client``; an HTTP/1.1 clone
  through the edge runs at least twice as fast after.
- ``pmtu-blackhole-client`` with ``ssh-maxstartups``: a git:// clone of the 6 MiB history
  stalls before (nothing moves once the full-size segments start); after the router's MSS
  clamp it completes, the black hole's rule still in place; sshd restarts with
  ``MaxStartups 100:30:300`` and SSH answers.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitnetdiag.lab.edgefaults import EDGE_SNDBUF_CLIENT_BYTES
from gitnetdiag.lab.fetchlab import LINUX_TCP_RMEM
from gitnetdiag.lab.pmtufix import MSS_CLAMP_BYTES
from gitnetdiag.lab.spec import FIXED_MAX_STARTUPS
from gitnetdiag.model.lab.state import LabState, load_state
from tests.conftest import LabFactory
from tests.labutil import in_client

pytestmark = [pytest.mark.lab, pytest.mark.lab_lane("idle")]

STALLED_CLONE_S = 20
"""How long the clone through the black hole is given: it stalls for good, and at 50 ms a
healthy clone of the 6 MiB history takes about 1 s."""


def _cli(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "gitnetdiag", *args], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return " ".join(proc.stdout.split())  # the console wraps long lines


def _ns(ns: str, *argv: str) -> str:
    return subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True, text=True,
                          check=True, timeout=30).stdout


def test_lab_fix_sets_the_client_receive_buffer_back(lab_factory: LabFactory) -> None:
    state = lab_factory("client-rmem-clamp")
    assert _ns(state.client_ns, "sysctl", "-n", "net.ipv4.tcp_rmem").split() == [
        "4096", "32768", "65536"]
    said = _cli("lab", "fix", "--name", state.instance)
    assert "client net.ipv4.tcp_rmem 4096 32768 65536 -> 4096 131072 6291456" in said, said
    assert "faults left: healthy" in said, said
    rmem = _ns(state.client_ns, "sysctl", "-n", "net.ipv4.tcp_rmem")
    assert tuple(map(int, rmem.split())) == LINUX_TCP_RMEM
    assert load_state(state.instance).fixed == ["client-rmem-clamp"]


def _edge_clone_s(state: LabState, where: Path) -> float:
    """Seconds of one HTTP/1.1 clone of the 6 MiB history through the HAProxy edge."""
    started = time.monotonic()
    git = in_client(state, "git", "-c", "http.version=HTTP/1.1", "clone", "-q", "--bare",
                    state.endpoints.https_edge, str(where), timeout_s=120)
    assert git.returncode == 0, git.stderr
    return time.monotonic() - started


@pytest.mark.lab_lane("busy")  # the clones' times are the assertion
def test_lab_fix_takes_the_edge_s_fixed_send_buffer_out(lab_factory: LabFactory,
                                                        tmp_path: Path) -> None:
    state = lab_factory("edge-sndbuf-clamp")
    config = Path(state.state_dir) / "haproxy.cfg"
    line = f"tune.sndbuf.client {EDGE_SNDBUF_CLIENT_BYTES}"
    assert line in config.read_text()
    before_s = _edge_clone_s(state, tmp_path / "before")
    said = _cli("lab", "fix", "--name", state.instance)
    assert f"HAProxy edge restarted without {line}" in said, said
    assert "faults left: healthy" in said, said
    assert "tune.sndbuf" not in config.read_text()
    after_s = _edge_clone_s(state, tmp_path / "after")
    print(f"HTTP/1.1 clone through the edge: {before_s:.2f} s before, {after_s:.2f} s after")
    assert after_s * 2 < before_s, (before_s, after_s)
    assert load_state(state.instance).fixed == ["edge-sndbuf-clamp"]


def _clone(state: LabState, where: Path, timeout_s: float
           ) -> subprocess.CompletedProcess[str] | None:
    """A git:// clone from the client namespace; None when it was still going at
    ``timeout_s``."""
    try:
        return in_client(state, "git", "clone", "-q", "--bare", state.endpoints.git,
                         str(where), timeout_s=timeout_s)
    except subprocess.TimeoutExpired:
        return None


def test_lab_fix_clamps_the_mss_below_a_black_hole(lab_factory: LabFactory,
                                                   tmp_path: Path) -> None:
    state = lab_factory("pmtu-blackhole-client", "ssh-maxstartups")
    before = _clone(state, tmp_path / "before", STALLED_CLONE_S)
    assert before is None or before.returncode != 0, before  # stalled, or cut
    said = _cli("lab", "fix", "--name", state.instance)
    assert f"every SYN's MSS clamped to {MSS_CLAMP_BYTES} B" in said, said
    assert f"sshd MaxStartups 2:100:2 -> {FIXED_MAX_STARTUPS}" in said, said
    mangle = _ns(state.router_ns, "iptables-legacy", "-t", "mangle", "-S", "FORWARD")
    assert f"--set-mss {MSS_CLAMP_BYTES}" in mangle, mangle
    forward = _ns(state.router_ns, "iptables-legacy", "-S", "FORWARD")
    assert "--length 1200:65535" in forward, forward  # the narrow link stays
    after = _clone(state, tmp_path / "after", 120)
    assert after is not None and after.returncode == 0, after
    sshd = (Path(state.state_dir) / "sshd_config").read_text()
    assert f"MaxStartups {FIXED_MAX_STARTUPS}" in sshd
    answer = in_client(state, "git", "ls-remote", state.endpoints.ssh, timeout_s=60)
    assert answer.returncode == 0 and "refs/heads/main" in answer.stdout, answer.stderr
