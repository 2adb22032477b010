"""A push's phases come from its trace2 file when the run is analysed, as a clone's do; a run
directory without the file (older, trimmed) keeps the phases the probe recorded from it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gitnetdiag.analysis.trace2 import push_phases
from gitnetdiag.pipeline._run import observations_from_run, phased, trace2_phases
from gitnetdiag.rundir import PushRecord
from gitnetdiag.rundir.records import Trace2Record

TRACE2 = Path(__file__).parents[1] / "probe" / "data" / "push-git.trace2.json"
HEALTHY = Path(__file__).parents[2] / "captures" / "healthy"

STALE = Trace2Record(total_s=9.0, ref_advertisement_s=2.0, pack_prepare_s=1.0, pack_write_s=3.0,
                     server_wait_s=5.0, objects_written=1, exit_code=0, events=3)
"""Phases the file does not say: recorded by some other parser."""


def _record(phases: Trace2Record | None) -> PushRecord:
    return PushRecord(protocol="git", repeat=1, branch="b", started_at="", outcome="ok",
                      failure_kind=None, last_line="", wall_s=1.02, pack_bytes=40_000,
                      rate_bytes_per_s=40_000 / 1.02, http_version=None, alpn=None,
                      post_s=None, curl_last_info=None, phases=phases, capture=None,
                      artifacts={"trace2": "git-1.trace2.json"})


def test_the_trace2_file_gives_the_phases(tmp_path: Path) -> None:
    shutil.copy(TRACE2, tmp_path / "git-1.trace2.json")
    read = phased(tmp_path, _record(STALE))
    assert read.phases == push_phases(TRACE2.read_text().splitlines())
    median = trace2_phases([read], tmp_path).value
    assert median is not None
    # pack-objects child_exit .410584 -> push_refs region_leave .570914
    assert median.server_wait_s == pytest.approx(0.570914 - 0.410584, abs=1e-6)
    assert median.upload_s == pytest.approx(0.841236)
    # A run recorded without phases gets them from its file all the same.
    assert phased(tmp_path, _record(None)).phases == read.phases


def test_without_the_file_the_recorded_phases_stand(tmp_path: Path) -> None:
    record = _record(STALE)
    assert phased(tmp_path, record) is record
    (tmp_path / "git-1.trace2.json").mkdir()  # a directory is no trace2 file
    assert phased(tmp_path, record) is record
    median = trace2_phases([record], tmp_path).value
    assert median is not None and median.server_wait_s == 5.0 and median.upload_s == 3.0


def test_a_run_directory_reads_its_files_and_an_old_one_its_manifest(tmp_path: Path) -> None:
    """captures/healthy: the phases are the file's whatever the manifest says; with the
    trace2 files gone the manifest's stand."""
    run = tmp_path / "healthy"
    shutil.copytree(HEALTHY, run)
    manifest = json.loads((run / "manifest.json").read_text())
    before, _ = observations_from_run(run)
    for protocol in manifest["protocols"]:
        for push in protocol["pushes"]:
            push["phases"] = {**push["phases"], "ref_advertisement_s": 7.0}
    (run / "manifest.json").write_text(json.dumps(manifest))
    after, _ = observations_from_run(run)
    assert {p: o.trace2 for p, o in after.protocols.items()} == \
        {p: o.trace2 for p, o in before.protocols.items()}
    for trace2 in run.glob("*.trace2.json"):
        trace2.unlink()
    old, _ = observations_from_run(run)
    assert all(o.trace2 is not None and o.trace2.ref_advertisement_s == 7.0
               for o in old.protocols.values())
