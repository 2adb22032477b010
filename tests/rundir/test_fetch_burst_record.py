"""``fetch.json`` keeps a protocol's burst; a fetch.json written before bursts loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.outcomes import FailureKind
from gitnetdiag.rundir.fetchrecords import (
    FETCH_SCHEMA,
    FetchManifest,
    FetchProtocolRun,
    load_fetch_manifest,
    write_fetch_manifest,
)
from gitnetdiag.rundir.records import BurstOp, BurstRecord, ConnectOp

BURST = BurstRecord(
    protocol="git", concurrency=2, timeout_s=60.0,
    ops=(BurstOp(index=0, wall_s=0.02, ok=True, failure_kind=None, last_line=""),
         BurstOp(index=1, wall_s=60.0, ok=False, failure_kind=FailureKind.TIMEOUT,
                 last_line="fatal: unable to connect")),
    connects=(ConnectOp(index=0, connect_s=0.0001, error=None),
              ConnectOp(index=1, connect_s=None, error="timeout")),
    capture="burst-git.pcap")


def manifest(burst: BurstRecord | None) -> FetchManifest:
    return FetchManifest(
        schema=FETCH_SCHEMA, direction="fetch", tool_version="0", run_id="r",
        started_at="2026-11-26T22:00:00Z", finished_at=None, status="complete", options={},
        environment=None, paths=(), errors=(), warnings=(),
        protocols=(FetchProtocolRun(protocol="git", url="git://h/r.git", endpoint="h:9418",
                                    burst=burst),))


def test_the_burst_round_trips(tmp_path: Path) -> None:
    write_fetch_manifest(tmp_path, manifest(BURST))
    loaded = load_fetch_manifest(tmp_path)
    assert loaded is not None and loaded.protocols[0].burst == BURST
    assert loaded.protocols[0].burst.failures_by_kind == {FailureKind.TIMEOUT: 1}


def test_a_fetch_json_without_the_burst_key_loads(tmp_path: Path) -> None:
    path = write_fetch_manifest(tmp_path, manifest(None))
    data = json.loads(path.read_text())
    for run in data["protocols"]:
        del run["burst"]
    path.write_text(json.dumps(data))
    loaded = load_fetch_manifest(tmp_path)
    assert loaded is not None and loaded.protocols[0].burst is None


def test_a_burst_capture_outside_the_run_directory_is_refused(tmp_path: Path) -> None:
    write_fetch_manifest(tmp_path, manifest(BurstRecord(
        protocol="git", concurrency=0, timeout_s=1.0, ops=(), connects=(),
        capture="../../etc/passwd")))
    with pytest.raises(GitnetdiagError, match=r"burst\.capture"):
        load_fetch_manifest(tmp_path)
