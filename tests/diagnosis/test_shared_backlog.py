"""``listen-backlog-overflow`` on a fetch: the fetch's burst (``--burst N``, ls-remotes at
once after the clones) with the server's host evidence ranks the push's culprit, in fetch
words; without a burst (clones one after another) or without host evidence it does not."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from gitnetdiag.commands.fetch import render_fetch
from gitnetdiag.diagnosis.observations import BurstResult, HostEvidence, Listener
from gitnetdiag.outcomes import FailureKind
from gitnetdiag.pipeline import diagnose_clones
from gitnetdiag.rundir import HOST_REPORT_FILE
from gitnetdiag.rundir.files import HOST_REPORT_SCHEMA
from gitnetdiag.rundir.manifest import (
    FETCH_SCHEMA,
    CloneProtocolRun,
    FetchManifest,
    write_manifest,
)
from gitnetdiag.rundir.records import BurstOp, BurstRecord, ConnectOp
from tests.diagnosis.test_transfer_culprits import HEALTHY
from tests.diagnosis.transfer_cases import judged, ranked

CLONE = replace(HEALTHY, protocol="git")
"""One git:// clone that measured well: one connection never fills a backlog."""
OVERFLOWED = BurstResult(protocol="git", concurrency=150, ok=20, port=9418,
                         failed_by_kind={FailureKind.TIMEOUT: 130},
                         connect_p50_s=0.0002, connect_p99_s=1.1, connect_max_s=3.0)
"""As measured in the lab under tiny-backlog: 130 of 150 ls-remotes failed."""
CLEAN = BurstResult(protocol="git", concurrency=150, ok=150, port=9418,
                    connect_p50_s=0.0002, connect_p99_s=0.001, connect_max_s=0.002)
HOST = HostEvidence(listeners=(Listener(port=9418, backlog=5, process="git-daemon"),),
                    counter_deltas={"ListenOverflows": 570, "ListenDrops": 570},
                    sysctls={"net.core.somaxconn": "4096"})


def test_an_overflowed_fetch_burst_ranks_the_backlog_first() -> None:
    findings = ranked([CLONE], bursts=[OVERFLOWED], host=HOST)
    top = findings[0]
    assert top.id == "listen-backlog-overflow"
    assert "git daemon" in top.fix and "net.core.somaxconn" in top.fix
    assert "570 accept-queue overflows" in top.summary and "130 failed" in top.summary
    assert " push" not in top.summary and top.cost_s > 0
    # The burst's failures are no clone's: the clone measured, the culprit ranks: degraded.
    verdict, failures = judged([CLONE], findings)
    assert (verdict, failures) == ("degraded", ())


def test_no_burst_or_no_host_evidence_ranks_no_backlog() -> None:
    """Clones alone (one connection at a time) cost nothing in the queue: nothing ranks,
    whatever the host shows; a burst that failed with no host evidence is no backlog's."""
    assert "listen-backlog-overflow" not in [f.id for f in ranked([CLONE], host=HOST)]
    assert "listen-backlog-overflow" not in [
        f.id for f in ranked([CLONE], bursts=[OVERFLOWED])]
    quiet = HostEvidence(listeners=(Listener(port=9418, backlog=4096, process="git-daemon"),),
                         counter_deltas={"ListenOverflows": 0})
    assert ranked([CLONE], bursts=[CLEAN], host=quiet) == ()


def test_a_fetch_run_directory_feeds_its_burst_and_host_report(tmp_path: Path) -> None:
    """``fetch.json``'s burst and ``host.json`` reach the detector (offline, as ``report``)."""
    ops = tuple(BurstOp(index=i, wall_s=0.05 if i < 20 else 60.0, ok=i < 20,
                        failure_kind=None if i < 20 else FailureKind.TIMEOUT,
                        last_line="" if i < 20 else "fatal: the remote end hung up")
                for i in range(150))
    connects = tuple(ConnectOp(index=i, connect_s=0.0002 if i < 140 else None,
                               error=None if i < 140 else "timeout") for i in range(150))
    burst = BurstRecord(protocol="git", concurrency=150, timeout_s=60.0, ops=ops,
                        connects=connects, capture=None)
    write_manifest(tmp_path, FetchManifest(
        schema=FETCH_SCHEMA, direction="fetch", tool_version="0", run_id="r",
        started_at="2026-11-26T22:00:00Z", finished_at=None, status="complete", options={},
        environment=None, paths=(), errors=(), warnings=(),
        protocols=(CloneProtocolRun(protocol="git", url="git://198.18.2.2/lab.git",
                                    endpoint="198.18.2.2:9418", burst=burst),)))
    (tmp_path / HOST_REPORT_FILE).write_text(json.dumps({
        "schema": HOST_REPORT_SCHEMA, "counters": {"ListenOverflows": 570},
        "listeners": [{"port": 9418, "backlog": 5, "process": "git-daemon"}],
        "sysctls": {}, "kernel_log": [], "config_findings": []}))
    diagnosis = diagnose_clones(tmp_path)
    assert diagnosis is not None
    assert [f.id for f in diagnosis.findings][:1] == ["listen-backlog-overflow"]
    assert "under 150 concurrent git:// connections 130 failed" in diagnosis.findings[0].summary
    report = json.loads(render_fetch(diagnosis, "json"))
    assert [(b["protocol"], b["ok"], b["failed_by_kind"]) for b in report["bursts"]] == [
        ("git", 20, {"timeout": 130})]
    # No capture (``capture=None``): the handshakes were not counted, which is not 0.
    assert [(b["syn_retransmissions"], b["handshakes_counted"]) for b in report["bursts"]] \
        == [(None, False)]
    assert ("burst git:// x150: 20 ok, 130 failed (timeout 130); SYN and SYN-ACK "
            "retransmissions not counted (no capture analysed)") \
        in render_fetch(diagnosis, "terminal")
    page = render_fetch(diagnosis, "html")
    assert "<h2>Bursts</h2>" in page
    assert "burst git:// x150: 20 ok, 130 failed (timeout 130)" in page
    (tmp_path / HOST_REPORT_FILE).unlink()
    diagnosis = diagnose_clones(tmp_path)
    assert diagnosis is not None and diagnosis.findings == ()


SSH_CLONE = replace(HEALTHY, protocol="ssh")
"""One SSH clone that measured: a single connection never meets MaxStartups."""
SSH_REFUSED = BurstResult(protocol="ssh", concurrency=20, ok=2, port=22,
                          failed_by_kind={FailureKind.RESET: 18},
                          connect_p50_s=0.0002, connect_p99_s=0.001, connect_max_s=0.002)
"""The lab's ``ssh-maxstartups`` (``MaxStartups 2:100:2``) under the push's burst of 20."""


def test_a_fetch_burst_refused_by_sshd_ranks_maxstartups() -> None:
    """sshd's MaxStartups counts connections waiting to authenticate at once: the fetch's
    SSH burst meets it, as the push's does; the same id and fix, in fetch words."""
    findings = ranked([SSH_CLONE], bursts=[SSH_REFUSED])
    top = findings[0]
    assert top.id == "ssh-maxstartups"
    assert "MaxStartups" in top.fix
    assert "dropped 18 of 20 concurrent SSH connections" in top.summary
    assert " push" not in top.summary and top.cost_s > 0
    # Not a backlog's: the SSH burst's refusals are sshd's.
    assert "listen-backlog-overflow" not in [f.id for f in findings]
    assert judged([SSH_CLONE], findings) == ("degraded", ())
    clean = replace(SSH_REFUSED, ok=20, failed_by_kind={})
    assert "ssh-maxstartups" not in [f.id for f in ranked([SSH_CLONE], bursts=[clean])]
