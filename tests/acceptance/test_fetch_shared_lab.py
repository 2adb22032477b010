"""Issue 26 item 5 in the lab: the push faults that slow or break a clone too rank their
push culprit first under ``diagnose --lab --direction fetch``: the same id and fix, from the
clones' own evidence (the push detectors reused, one catalogue entry each, on the download's
observations: :mod:`gitnetdiag.diagnosis.assembly`).

Each fault's lab serves 6 MiB of random data on ``main`` (``fetch_history="random"``), so a
clone has a pack to measure; a fetch writes nothing, so the lab is the shared one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gitnetdiag.lab.spec import FAULT_FIX_NAMES, FETCH_SHARED_FAULT_CULPRIT
from tests.conftest import LabFactory

pytestmark = pytest.mark.lab

PROTOCOLS: dict[str, str] = {
    "loss": "h1,git",
    "bandwidth-limit": "h1,git",
    # The router resets the SSH port: SSH's clone fails, HTTP/1.1's measures.
    "firewall-reset": "h1,ssh",
    "slow-auth": "h1,ssh",
    # The clones' own connects meet the 30% SYN drop by chance (all ten of five clones per
    # transport missed it in a fresh-clone run: p = 0.7^10 = 2.8%); the fetch burst's 40
    # connects and 40 ls-remotes over git:// after one clone, as the push's, miss it with
    # p = 0.7^80.
    "syn-drop": "git",
    # Every transport stalls in the black hole (SSH before its key exchange): one is enough.
    "pmtu-blackhole-client": "h1",
    # git daemon's backlog of 5 (the GitHub Enterprise 2.0 account): git:// only, as the push.
    "tiny-backlog": "git",
    # sshd's MaxStartups: the SSH burst after one SSH clone, as the push's.
    "ssh-maxstartups": "ssh",
}
"""Two transports each keep a fault under about 30 s."""

EXTRA_ARGS: dict[str, tuple[str, ...]] = {
    # The clone stalls once the small packets are through: 6 s without a byte says so (as
    # the push's pmtu-blackhole, spec.FAULT_PROBE_ARGS), rather than the default 15 s.
    "pmtu-blackhole-client": ("--stall-timeout", "6"),
    # One clone never fills a backlog of 5: the burst after it does (the push's size,
    # spec.FAULT_PROBE_ARGS).
    "tiny-backlog": ("--burst", "150"),
    "syn-drop": ("--burst", "40"),
    "ssh-maxstartups": ("--burst", "20"),
}
"""Further ``diagnose`` arguments of a fault."""


def _diagnose_fetch(instance: str, out: Path, tmp: Path, protocols: str,
                    extra: tuple[str, ...] = ()) -> tuple[int, dict[str, Any]]:
    tmp.mkdir(exist_ok=True)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--lab", "--lab-instance", instance,
         "--direction", "fetch", "--format", "json", "--out", str(out), "--timeout", "60",
         "--protocols", protocols, *extra],
        capture_output=True, text=True, timeout=600, env={**os.environ, "TMPDIR": str(tmp)})
    print(f"diagnose --direction fetch: {time.monotonic() - started:.1f} s wall")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


# pmtu-blackhole-client's clone waits on its stall timeout, but the idle lane was the longer
# one when it came (15:53 in a fresh-clone run: idle 945 s, busy 871 s). slow-auth's clones
# sleep: back in the idle lane by the rule once the busy lane was the longer (fresh-clone
# run of 2026-11-27: busy 941 s, idle 859 s), and to the busy lane again once the idle lane
# was the longer by 70-111 s in three fresh-clone runs (2026-11-28: busy 1027/925/951 s, idle
# 1093/1026/1062 s; slow-auth 46 s).
# With the fail lane the busy lane is the longer again (about 1140 s against 930 s,
# 2026-12-02): both wait in the idle lane, by the rule (pmtu-blackhole-client is idle by
# its stall: marked so, as the fault is not in IDLE_FAULTS).
_LANES = {"pmtu-blackhole-client": "idle"}


@pytest.mark.parametrize("fault", [
    pytest.param(fault, marks=pytest.mark.lab_lane(_LANES[fault])) if fault in _LANES
    else fault for fault in FETCH_SHARED_FAULT_CULPRIT])
def test_fetch_ranks_the_push_fault_culprit_first(
        fault: str, shared_lab: LabFactory, tmp_path: Path) -> None:
    state = shared_lab(fault, fetch_history="random")
    code, report = _diagnose_fetch(state.instance, tmp_path / "run", tmp_path / "tmp",
                                   PROTOCOLS[fault], EXTRA_ARGS.get(fault, ()))
    for fetch in report["fetches"]:
        print(f"{fault} {fetch['protocol']}: {fetch['outcome']}, {fetch['moved_bytes']} B, "
              f"{fetch['rate_bytes_per_s']} B/s, tcp {fetch['tcp']}")
    for burst in report["bursts"]:
        print(f"burst {burst['protocol']} x{burst['concurrency']}: {burst['ok']} ok, "
              f"failed {burst['failed_by_kind']}, SYN {burst['syn_retransmissions']}, "
              f"SYN-ACK {burst['synack_retransmissions']}, connect max {burst['connect_max_s']}")
    for culprit in report["culprits"]:
        print(f"  {culprit['id']} score {culprit['score']} cost {culprit['cost_s']} s: "
              f"{culprit['summary']}")
    ids = [c["id"] for c in report["culprits"]]
    assert ids and ids[0] == FETCH_SHARED_FAULT_CULPRIT[fault], f"{fault}: ranked {ids}"
    top = report["culprits"][0]
    assert FAULT_FIX_NAMES[fault] in top["fix"]
    assert top["evidence"]
    assert " push" not in top["summary"], top["summary"]
    # A requested transport whose clones all fail fails the run, explained or not (issue
    # 42's rule, both directions): the SSH clones the router resets; every clone stalled in
    # the black hole. Otherwise degraded, exit 0.
    if fault == "firewall-reset":
        assert report["verdict"] == "failed" and code == 9, report["measurement_failures"]
        assert report["headline"].startswith("SSH clones fail (firewall-reset)"), report
    elif fault == "pmtu-blackhole-client":
        assert report["verdict"] == "failed" and code == 9, report["measurement_failures"]
        assert " clones fail (path-mtu-blackhole): " in report["headline"], report["headline"]
    else:
        assert report["verdict"] == "degraded", report["measurement_failures"]
        assert code == 0
    assert list((tmp_path / "tmp").glob("gitnetdiag-clone-*")) == []
    if fault == "pmtu-blackhole-client":
        _assert_bounded_black_hole(report)
    if fault == "tiny-backlog":
        _assert_the_burst_overflowed(report, tmp_path / "run")


def _assert_the_burst_overflowed(report: dict[str, Any], run_dir: Path) -> None:
    """The clone itself measured; the burst after it met the full queue, and the server's
    counters over this run (``host.json``, deltas since the snapshot) say so."""
    assert all(fetch["outcome"] in ("ok", "bounded") for fetch in report["fetches"])
    (burst,) = report["bursts"]
    assert burst["ok"] < burst["concurrency"], burst
    counters = json.loads((run_dir / "host.json").read_text())["counters"]
    print(f"server counters over the run: ListenOverflows {counters.get('ListenOverflows')}, "
          f"ListenDrops {counters.get('ListenDrops')}, SyncookiesSent "
          f"{counters.get('SyncookiesSent')}, SyncookiesFailed "
          f"{counters.get('SyncookiesFailed')}; burst captured: "
          f"{(run_dir / 'burst-git.pcap').exists()}")
    assert counters.get("ListenOverflows", 0) > 0
    assert report["status"] == "complete"


def _assert_bounded_black_hole(report: dict[str, Any]) -> None:
    """Every clone stalled with only small segments received and ended at its stall timeout
    (6 s), not the 60 s overall timeout."""
    for fetch in report["fetches"]:
        assert fetch["outcome"] == "stalled", fetch
        assert fetch["wall_s"] < 6 + 4, fetch["wall_s"]
        seen, mss = fetch["capture"]["max_received_segment_bytes"], fetch["tcp"]["advmss_bytes"]
        print(f"largest segment received {seen} B, rcv_mss {fetch['tcp']['rcv_mss_max_bytes']}"
              f" B, advmss {mss} B, stalled after {fetch['wall_s']:.1f} s")
        assert seen is not None and mss is not None and seen < mss
