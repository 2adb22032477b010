"""The lab with its real servers: pushes, the slow HTTP/2 edge, the tiny backlog, teardown."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitnetdiag.lab import manager
from tests.conftest import LabFactory
from tests.labutil import in_client, make_commit, server_netstat, timed_push

pytestmark = pytest.mark.lab


def test_healthy_lab_accepts_pushes_over_every_protocol(lab_factory: LabFactory,
                                                         tmp_path: Path) -> None:
    """HTTP/1.1 and HTTP/2 (edge and direct), SSH and git:// pushes all land in the repo."""
    state = lab_factory("healthy")
    repo = tmp_path / "repo"
    pushes = [
        (state.endpoints.https_edge, "HTTP/1.1", "t/edge-h1"),
        (state.endpoints.https_edge, "HTTP/2", "t/edge-h2"),
        (state.endpoints.https_direct, "HTTP/1.1", "t/direct-h1"),
        (state.endpoints.https_direct, "HTTP/2", "t/direct-h2"),
        (state.endpoints.ssh, None, "t/ssh"),
        (state.endpoints.git, None, "t/git"),
    ]
    for url, version, branch in pushes:
        make_commit(repo, 256 * 1024)
        timed_push(state, repo, url, branch, version)
    refs = in_client(state, "git", "ls-remote", state.endpoints.git).stdout
    for _, _, branch in pushes:
        assert f"refs/heads/{branch}" in refs
    assert "refs/heads/main" in refs


def test_h2_small_window_edge_is_at_least_4x_slower_than_http1(lab_factory: LabFactory,
                                                                tmp_path: Path) -> None:
    """The field's story: the edge's 65535 HTTP/2 window caps the push at 64 KiB per RTT."""
    state = lab_factory("h2-small-window", rtt_ms=50.0)
    assert state.edge_h2_window == 65535
    repo = tmp_path / "repo"
    make_commit(repo, 6 * 1024 * 1024)
    h1 = timed_push(state, repo, state.endpoints.https_edge, "t/h1", "HTTP/1.1")
    make_commit(repo, 6 * 1024 * 1024)
    h2 = timed_push(state, repo, state.endpoints.https_edge, "t/h2", "HTTP/2",
                    timeout_s=max(30.0, 8 * h1))
    assert h2 / h1 >= 4.0, f"HTTP/2 {h2:.2f} s vs HTTP/1.1 {h1:.2f} s"


def test_tiny_backlog_overflows_under_150_concurrent_connections(lab_factory: LabFactory) -> None:
    """git daemon's listen(5) overflows: the server's ListenOverflows counter rises."""
    state = lab_factory("tiny-backlog")
    listeners = subprocess.run(["ip", "netns", "exec", state.server_ns, "ss", "-ltnH",
                                "sport", "= :9418"], capture_output=True, text=True).stdout
    assert listeners.split()[2] == "5", listeners  # Send-Q of a LISTEN socket is its backlog
    before = server_netstat(state)["TcpExt.ListenOverflows"]
    script = (
        "import subprocess, concurrent.futures as f\n"
        "def one(_):\n"
        f"    return subprocess.run(['git','ls-remote','{state.endpoints.git}'],"
        " capture_output=True, timeout=60).returncode\n"
        "with f.ThreadPoolExecutor(150) as ex: print(sum(1 for r in ex.map(one, range(150))))\n"
    )
    proc = in_client(state, "python3", "-c", script, timeout_s=120)
    assert proc.returncode == 0, proc.stderr
    after = server_netstat(state)["TcpExt.ListenOverflows"]
    assert after > before


def test_lab_down_leaves_nothing_and_is_safe_twice(tmp_path: Path) -> None:
    """No namespace, process or file of the instance survives; a second down removes nothing."""
    from gitnetdiag.lab.spec import build_spec

    spec = build_spec(instance="tdown", faults=["loss", "firewall-reset"], rtt_ms=10.0)
    state = manager.up(spec)
    pids = list(state.pids.values())
    try:
        rules = subprocess.run(["ip", "netns", "exec", state.router_ns, "iptables-legacy",
                                "-S", "FORWARD"], capture_output=True, text=True).stdout
        assert "NFQUEUE" in rules and "tcp-reset" in rules and "statistic" in rules
    finally:
        removed = manager.down("tdown")
    assert any("namespace" in item for item in removed)
    assert not (set(state.client_ns.split()) | {state.router_ns, state.server_ns}) & \
        manager.existing_namespaces()
    assert not Path(state.state_dir).exists()
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or \
            "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    assert manager.down("tdown") == []
