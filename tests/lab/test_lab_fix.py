"""``gitnetdiag lab fix`` on a running lab: every fault's fix applied in place."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gitnetdiag.lab.clonefaults import CLONE_FAULT_FIXED_SETTINGS
from gitnetdiag.lab.fetchlab import FETCH_FAULT_FIXED_SETTINGS
from gitnetdiag.lab.pmtufix import PMTU_FIXED_SETTINGS
from gitnetdiag.lab.spec import FAULT_FIXED_SETTINGS, FIXED_RMEM_MAX_BYTES, LARGE_WINDOW
from gitnetdiag.model.lab.state import PORT_GIT, load_state
from tests.conftest import LabFactory
from tests.labutil import in_client

pytestmark = pytest.mark.lab

# The clone faults are download faults too (their 3 s edge timeout would cut slow-auth's
# ref advertisement): tests/lab/test_clonefaults.py checks their fix.
# The black holes stall the TLS handshakes a lab's readiness check makes, and MaxStartups
# refuses its parallel connections: tests/lab/test_lab_fix_fetch.py checks their fixes.
PUSH_FIXABLE = tuple(f for f in FAULT_FIXED_SETTINGS if f not in FETCH_FAULT_FIXED_SETTINGS
                     and f not in CLONE_FAULT_FIXED_SETTINGS and f not in PMTU_FIXED_SETTINGS
                     and f != "ssh-maxstartups")
"""The faults one HAProxy lab can hold (the fetch faults' fixes: tests/lab/test_hostfix.py)."""


def _ns(ns: str, *argv: str) -> str:
    return subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True, text=True,
                          check=True, timeout=30).stdout


def _git_backlog(server_ns: str) -> int:
    for line in _ns(server_ns, "ss", "-ltnH").splitlines():
        fields = line.split()
        if fields[3].endswith(f":{PORT_GIT}"):
            return int(fields[2])
    raise AssertionError("git:// is not listening")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitnetdiag", *args], capture_output=True,
                          text=True, timeout=180)


@pytest.mark.lab_lane("idle")  # lab up, fix, ls-remote: no rate (tests/conftest.py)
def test_lab_fix_applies_every_fix_in_place(lab_factory: LabFactory) -> None:
    """One lab with every fixable push fault; after ``lab fix`` each knob has its fixed value,
    the endpoints are the same and every way in answers (SSH no longer reset)."""
    state = lab_factory(*PUSH_FIXABLE)
    assert "REJECT" in _ns(state.router_ns, "iptables-legacy", "-S", "FORWARD")
    assert _git_backlog(state.server_ns) == 5
    hook = Path(state.repo_path) / "hooks" / "pre-receive"
    assert hook.is_file()

    proc = _cli("lab", "fix", "--name", state.instance)
    assert proc.returncode == 0, proc.stderr
    for fault_word in ("tcp_rmem", "loss", "reset rule", "hook", "initial-window-size",
                       "backlog", "key lookup", "LimitRequestBody", "timeout server", "411"):
        assert fault_word in proc.stdout, proc.stdout

    rules = _ns(state.router_ns, "iptables-legacy", "-S", "FORWARD")
    assert "REJECT" not in rules and "statistic" not in rules and "NFQUEUE" in rules
    rmem = _ns(state.server_ns, "sysctl", "-n", "net.ipv4.tcp_rmem").split()
    assert int(rmem[2]) == FIXED_RMEM_MAX_BYTES
    assert _git_backlog(state.server_ns) > 128
    assert not hook.exists()
    root = Path(state.state_dir)
    assert f"tune.h2.initial-window-size {LARGE_WINDOW}" in (root / "haproxy.cfg").read_text()
    assert "AuthorizedKeysCommand" not in (root / "sshd_config").read_text()
    haproxy = (root / "haproxy.cfg").read_text()
    assert "timeout server 60s" in haproxy and "status 411" not in haproxy
    assert "<Location" not in (root / "apache2.conf").read_text()  # body limit gone

    fixed = load_state(state.instance)
    assert fixed.faults == ["healthy"] and sorted(fixed.fixed) == sorted(PUSH_FIXABLE)
    assert fixed.endpoints == state.endpoints and fixed.loss == 0.0 and fixed.reset_port is None
    for url in (fixed.endpoints.ssh, fixed.endpoints.https_edge, fixed.endpoints.git):
        answer = in_client(fixed, "git", "ls-remote", url, timeout_s=60)
        assert answer.returncode == 0 and "refs/heads/main" in answer.stdout, answer.stderr

    again = _cli("lab", "fix", "--name", state.instance)
    assert again.returncode == 2
    assert again.stderr.strip() == ("error [nothing-to-fix]: the lab has no fault with a fix "
                                    "(hint: its faults: healthy)")
