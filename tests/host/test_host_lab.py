"""`gitnetdiag host` inside the lab's server namespace, against the three server-side faults."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from gitnetdiag.diagnosis.engine import diagnose
from gitnetdiag.diagnosis.observations import Observations
from gitnetdiag.lab.spec import RMEM_CLAMP_BYTES
from gitnetdiag.model.lab.state import PORT_GIT, LabState
from gitnetdiag.pipeline import host_observation_from_report
from tests.conftest import LabFactory
from tests.diagnosis.examples import git_daemon_backlog
from tests.labutil import in_client

# The idle lane (tests/conftest.py): tiny-backlog: SYN waits, the global dmesg.
pytestmark = [pytest.mark.lab, pytest.mark.lab_lane("idle")]


def host_argv(state: LabState, *args: str) -> list[str]:
    return [
        "ip",
        "netns",
        "exec",
        state.server_ns,
        sys.executable,
        "-m",
        "gitnetdiag",
        "host",
        "--no-standard-configs",
        "--json",
        "-",
        *args,
    ]


def run_host(state: LabState, *args: str) -> dict[str, Any]:
    proc = subprocess.run(host_argv(state, *args), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def test_tiny_backlog_under_a_burst(lab_factory: LabFactory) -> None:
    """150 concurrent ls-remote while `host --during 10` runs on the server."""
    state = lab_factory("tiny-backlog")
    script = (
        "import subprocess, concurrent.futures as f\n"
        "def one(_):\n"
        f"    return subprocess.run(['git','ls-remote','{state.endpoints.git}'],"
        " capture_output=True, timeout=60).returncode\n"
        "with f.ThreadPoolExecutor(150) as ex: print(sum(1 for r in ex.map(one, range(150))))\n"
    )
    burst: list[subprocess.CompletedProcess[str]] = []

    def fire() -> None:
        time.sleep(1.5)  # after the collector's first snapshot
        burst.append(in_client(state, "python3", "-c", script, timeout_s=120))

    thread = threading.Thread(target=fire)
    thread.start()
    report = run_host(
        state, "--during", "10", "--config", str(Path(state.state_dir) / "haproxy.cfg")
    )
    thread.join()
    assert burst and burst[0].returncode == 0, burst[0].stderr if burst else "no burst"
    git = [item for item in report["listeners"] if item["port"] == PORT_GIT]
    assert len(git) == 1
    assert (git[0]["backlog"], git[0]["process"], git[0]["small_backlog"]) == (
        5,
        "git-daemon",
        True,
    )
    assert Path(f"/proc/{git[0]['pid']}/comm").read_text().strip() == "git-daemon"
    assert report["counters"]["ListenOverflows"] > 0
    assert report["counters"]["TCPReqQFullDoCookies"] + report["counters"]["SyncookiesSent"] > 0
    assert any("SYN flooding" in line and f":{PORT_GIT}" in line for line in report["kernel_log"])
    assert report["unreadable"] == []
    obs = Observations(
        bursts=git_daemon_backlog().bursts, host=host_observation_from_report(report)
    )
    assert diagnose(obs).findings[0].id == "listen-backlog-overflow"


@pytest.mark.lab_lane("idle")  # the idle lane's h2-small-window lab (tests/probe's): no second one
def test_h2_small_window_edge_config_is_flagged(shared_lab: LabFactory) -> None:
    state = shared_lab("h2-small-window")
    config = str(Path(state.state_dir) / "haproxy.cfg")
    report = run_host(state, "--config", config)
    edge = [f for f in report["config_findings"] if f["file"] == config]
    assert [(f["setting"], f["value"], f["window_bytes"]) for f in edge] == [
        ("tune.h2.initial-window-size", "65535 (default)", state.edge_h2_window)
    ]
    assert "5.2 Mbit/s at 100 ms" in edge[0]["effect"]
    assert report["haproxy_version"]


@pytest.mark.lab_lane("busy")
def test_tcp_rmem_clamp_sysctl_is_flagged(shared_lab: LabFactory) -> None:
    state = shared_lab("tcp-rmem-clamp")
    report = run_host(state)
    assert report["sysctls"]["net.ipv4.tcp_rmem"].split()[2] == str(RMEM_CLAMP_BYTES)
    rmem = [f for f in report["config_findings"] if f["setting"] == "net.ipv4.tcp_rmem"]
    assert len(rmem) == 1 and rmem[0]["window_bytes"] == RMEM_CLAMP_BYTES
