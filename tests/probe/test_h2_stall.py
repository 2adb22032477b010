"""The hung HTTP/2 push, reproduced on purpose: reported as ``stalled`` within 30 s.

LAB-NOTES: about half of the HTTP/2 pushes through the HAProxy edge hung
(git 2.39, libcurl 7.88): ``GIT_TRACE_CURL`` ends at "Using Stream ID: 5"
for the large ``git-receive-pack`` POST, right after the small probe request,
and no DATA is ever sent. That hang is intermittent; this test makes it
certain with the loopback HTTP/2 server in its ``stall_uploads`` mode (the
probe POST gets its 4 bytes of credit, the pack POST none), and pushes over
git:// beside it, as the lab's other transports push fine beside the edge.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from gitnetdiag.diagnosis.engine import diagnose
from gitnetdiag.pipeline import diagnose_run
from gitnetdiag.probe.runner import ProbeOptions, run_probe
from gitnetdiag.rundir import load_run
from gitnetdiag.vocabulary import TransportKind
from tests.probe.h2server import start_h2_git_server

RefsOf = Callable[[str], dict[str, str]]


def test_a_hung_http2_push_is_reported_stalled_within_30_s(
        git_daemon: str, tmp_path: Path, remote_refs: RefsOf) -> None:
    (tmp_path / "h2").mkdir()
    server = start_h2_git_server(tmp_path / "h2", window_bytes=65_535, update_delay_s=0.0,
                                 stall_uploads=True)
    try:
        h2_before, git_before = server.refs(), remote_refs(git_daemon)
        run_dir = tmp_path / "run"
        started = time.monotonic()
        outcome = run_probe(ProbeOptions(
            urls={TransportKind.H2: server.url, TransportKind.GIT: git_daemon},
            protocols=(TransportKind.H2, TransportKind.GIT), size_bytes=4 * 1024 * 1024, seed=13,
            repo=None, repeat=1, ca_file=server.ca_file, insecure=False, ssh_command=None,
            out_dir=run_dir, full=False, burst=0, timeout_s=120.0, capture=False,
        ))
        elapsed = time.monotonic() - started
        assert server.refs() == h2_before and remote_refs(git_daemon) == git_before
    finally:
        server.stop()
    # Only clients hanging up (the path probe's bare connects, the killed git): no server bug.
    assert all(e.startswith("SSLEOFError") for e in server.errors), server.errors
    # The probe request was credited, the pack's POST (stream 5) was not.
    assert server.stalled_streams[-2:] == [-3, 5], server.stalled_streams

    manifest = load_run(run_dir)
    h2 = manifest.protocol("h2")
    assert h2 is not None
    [push] = h2.pushes
    assert push.outcome == "stalled" and push.stopped == "stall", push
    assert push.failure_kind == "hung"
    assert 15 <= push.wall_s < 30, push.wall_s  # the stall timeout, not the 120 s git timeout
    assert push.cleanup == "never-created", push
    curl = (run_dir / push.artifacts["curl_trace"]).read_text()
    assert "Using Stream ID: 5" in curl
    git = manifest.protocol("git")
    assert git is not None and [p.outcome for p in git.pushes] == ["ok"]
    assert elapsed < 60, elapsed

    assert manifest.status == "stalled" and outcome.error is not None
    [error] = [e for e in manifest.errors if e.reference == "push-stalled"]
    assert error.protocol == "h2" and error.kind == "hung"
    assert "made no progress for 15 s" in error.message
    assert "bytes moved" in error.message and "last: " in error.message
    assert "git 2." in error.message and "libcurl" in error.message

    # The stalled outcome reaches the diagnosis: HTTP/2 alone hangs while git:// pushes
    # fine, the HTTP/2 edge story (there is no ledger to blame a window: no native probe).
    diagnosis, _ = diagnose_run(run_dir)
    first = diagnosis.findings[0]
    assert first.id in ("h2-flow-control-window", "client-http-stack"), diagnosis.findings
    stall = [e for e in first.evidence if "stalled" in e.what]
    assert stall, first.evidence

    # With a libcurl of a known HTTP/2 upload bug the same stalled push is its symptom.
    buggy = replace(diagnosis.observations,
                    run=replace(diagnosis.observations.run, libcurl_version="8.1.2"))
    client = next(f for f in diagnose(buggy).findings if f.id == "client-http-stack")
    assert any(e.what == "HTTP/2 pushes failed or stalled" for e in client.evidence), client
