"""Issue 26's acceptance without root: ``diagnose --direction fetch`` run as ``nobody`` in the
lab's client namespace (no capture possible) finds the client's receive-window clamp from
the kernel's TCP_INFO of git's own sockets (``ss -tin``, any user) and ranks it first; and
the router's random loss from the data segments the client received out of order
(``rcv_ooopack``): the client is the receiver, so its own retransmission counters say
nothing of the server's losses.

As :mod:`tests.acceptance.test_nonroot_lab` does for pushes: entering the namespace needs
root, ``setpriv`` then drops uid, gid and groups; Debian's python3 reads the project's
installed packages; ``HOME`` and the run directory belong to ``nobody``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from gitnetdiag.lab.spec import FETCH_FAULT_CULPRIT, FETCH_SHARED_FAULT_CULPRIT
from tests.acceptance.test_nonroot_lab import REPO, _own, nobody_home
from tests.conftest import LabFactory

pytestmark = pytest.mark.lab
__all__ = ["nobody_home"]
CULPRIT = {**FETCH_FAULT_CULPRIT, **FETCH_SHARED_FAULT_CULPRIT}
PROTOCOLS = {"client-rmem-clamp": "h1,ssh", "loss": "h1"}
"""What each fault's clones use. ``loss`` with HTTP/1.1 alone (measured 2026-11-26, 4 runs, 4
passed: 7.2-14.7 s per test, 16.6-24.6% of the data segments out of order); with SSH too it
took 36 s."""


@pytest.mark.parametrize("fault", list(PROTOCOLS))
def test_fetch_as_nobody_finds_the_fault_from_tcp_info(
        fault: str, shared_lab: LabFactory, nobody_home: Path) -> None:
    if not Path("/usr/bin/python3").is_file() or sys.version_info[:2] != (3, 11):
        pytest.skip("needs Debian's python3 of this venv's version")
    # Clones are read-only: the shared lab stays as it was (the shared fetch test's for loss).
    state = (shared_lab(fault) if fault in FETCH_FAULT_CULPRIT
             else shared_lab(fault, fetch_history="random"))
    key = _own(state.ssh_key, nobody_home, "id")
    known = _own(state.ssh_known_hosts, nobody_home, "known_hosts")
    ca = _own(state.ca_file, nobody_home, "ca.pem")
    run = nobody_home / "run"
    site = sysconfig.get_paths()["purelib"]
    started = time.monotonic()
    proc = subprocess.run(
        ["ip", "netns", "exec", state.client_ns, "setpriv", "--reuid=nobody",
         "--regid=nogroup", "--clear-groups", "--", "env", f"HOME={nobody_home}",
         f"TMPDIR={nobody_home}", f"PYTHONPATH={REPO}:{site}", "/usr/bin/python3", "-m",
         "gitnetdiag", "diagnose", "--direction", "fetch",
         "--http", state.endpoints.https_edge, "--ssh", state.endpoints.ssh,
         "--ca-file", str(ca), "--ssh-key", str(key), "--ssh-known-hosts", str(known),
         "--protocols", PROTOCOLS[fault], "--timeout", "60", "--format", "json", "--out", str(run)],
        capture_output=True, text=True, timeout=300, cwd=nobody_home,
        env={k: v for k, v in os.environ.items() if k != "SSLKEYLOGFILE"},
    )
    print(f"diagnose --direction fetch as nobody: {time.monotonic() - started:.1f} s wall")
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["direction"] == "fetch"
    ids = [c["id"] for c in report["culprits"]]
    top = report["culprits"][0] if report["culprits"] else {}
    print(top.get("summary"))
    for fetch in report["fetches"]:
        tcp = fetch["tcp"]
        print(f"{fetch['protocol']}: {fetch['rate_bytes_per_s']} B/s, window "
              f"{tcp['advertised_window_max_bytes']} B, rcv buffer "
              f"{tcp['receive_buffer_max_bytes']} B, min rtt {tcp['min_rtt_s']} s, "
              f"{tcp['out_of_order_segments']} of {tcp['data_segments_in']} data segments "
              "out of order")
    assert ids and ids[0] == CULPRIT[fault], f"ranked {ids}\n{proc.stderr}"
    sources = [e["source"] for e in top["evidence"]]
    assert any("ss -tin" in s for s in sources), sources
    for fetch in report["fetches"]:
        tcp = fetch["tcp"]
        assert tcp["samples"] > 0 and tcp["advertised_window_max_bytes"]
    assert not list(run.glob("*.pcap*"))  # no capture: the evidence is TCP_INFO alone
    assert list(nobody_home.glob("gitnetdiag-clone-*")) == []
