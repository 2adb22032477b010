"""A run recorded as ``nobody`` (no capture, bounded pushes) is diagnosed offline from the
kernel's TCP_INFO: the receive-window clamp ranks first, citing ``ss -tin`` samples.

Recorded from the lab with ``tcp-rmem-clamp`` at 50 ms RTT, 8 MiB, as in
``tests/acceptance/test_nonroot_lab.py``; the same lab run without TCP_INFO was
``healthy`` (issue 13).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from gitnetdiag.pipeline import diagnose_run, observations_from_run
from gitnetdiag.report import render_json
from gitnetdiag.rundir import load_run

RECORDED = Path(__file__).parent / "nonroot" / "tcp-rmem-clamp"


def test_tcp_info_samples_rank_the_clamp_first(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(RECORDED, run)
    manifest = load_run(run)
    assert not manifest.capture_enabled
    assert {p.outcome for r in manifest.protocols for p in r.pushes} == {"bounded"}
    report = json.loads(render_json(diagnose_run(run)[0]))
    assert report["verdict"] == "degraded"
    top = report["culprits"][0]
    assert top["id"] == "tcp-receive-window-clamp"
    sources = {e["source"] for e in top["evidence"]}
    assert {"TCP_INFO (ss -tin) h1 push 1", "TCP_INFO (ss -tin) ssh push 1"} <= sources
    assert "bounded" in report["environment"]["measured_by"]


def test_without_the_samples_the_same_run_is_inconclusive_not_healthy(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(RECORDED, run)
    for samples in run.glob("*.tcpinfo.jsonl"):
        samples.unlink()
    report = json.loads(render_json(diagnose_run(run)[0]))
    assert report["verdict"] == "inconclusive"
    assert any(f["reference"] == "no-tcp-evidence" for f in report["measurement_failures"])


def test_the_native_probes_own_tcp_info_stands_in_for_a_push_without_samples(
        tmp_path: Path) -> None:
    """``getsockopt(TCP_INFO)`` of the native HTTP/2 probe's socket (recorded on the same
    lab fault) is that protocol's TCP evidence when git's push has no samples."""
    run = tmp_path / "run"
    shutil.copytree(RECORDED, run)
    (run / "h2-1.tcpinfo.jsonl").unlink()
    shutil.copyfile(RECORDED.parent / "native-h2.tcpinfo.jsonl", run / "native-h2.tcpinfo.jsonl")
    observations, _ = observations_from_run(run)
    h2 = observations.protocols["h2"].capture
    assert h2 is not None and h2.source == "TCP_INFO (getsockopt TCP_INFO) native h2 probe"
    assert h2.rwnd_limited_share is not None and h2.rwnd_limited_share > 0.5
    assert h2.advertised_window_max_bytes is not None
    assert h2.advertised_window_max_bytes < 64 * 1024
