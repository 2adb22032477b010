"""``fetch.json`` keeps a protocol's burst; a fetch.json written before bursts loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.outcomes import FailureKind
from gitnetdiag.rundir.manifest import (
    FETCH_SCHEMA,
    CloneProtocolRun,
    FetchManifest,
    load_fetch_manifest,
    write_manifest,
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
        protocols=(CloneProtocolRun(protocol="git", url="git://h/r.git", endpoint="h:9418",
                                    burst=burst),))


def test_the_burst_round_trips(tmp_path: Path) -> None:
    write_manifest(tmp_path, manifest(BURST))
    loaded = load_fetch_manifest(tmp_path)
    assert loaded is not None and loaded.protocols[0].burst == BURST
    assert loaded.protocols[0].burst.failures_by_kind == {FailureKind.TIMEOUT: 1}


def test_a_fetch_json_without_the_burst_key_loads(tmp_path: Path) -> None:
    path = write_manifest(tmp_path, manifest(None))
    data = json.loads(path.read_text())
    for run in data["protocols"]:
        del run["burst"]
    path.write_text(json.dumps(data))
    loaded = load_fetch_manifest(tmp_path)
    assert loaded is not None and loaded.protocols[0].burst is None


def test_a_burst_capture_outside_the_run_directory_is_refused(tmp_path: Path) -> None:
    write_manifest(tmp_path, manifest(BurstRecord(
        protocol="git", concurrency=0, timeout_s=1.0, ops=(), connects=(),
        capture="../../etc/passwd")))
    with pytest.raises(GitnetdiagError, match=r"burst\.capture"):
        load_fetch_manifest(tmp_path)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("endpoint", "198.18.2.2:9418x", r"endpoint '198\.18\.2\.2:9418x' is not host:port"),
    ("endpoint", "no-port", r"is not host:port"),
    ("burst-protocol", "ftp", r"unknown protocol 'ftp'"),
    ("protocol", "gopher", r"unknown protocol 'gopher'"),
])
def test_a_bad_endpoint_or_protocol_is_a_bad_run_directory(
        tmp_path: Path, field: str, value: str, message: str) -> None:
    """Read back, these reached ``int(port)`` (a traceback under ``report``) or a detector
    keyed on a protocol it does not know: one ``bad-run-dir`` line instead."""
    path = write_manifest(tmp_path, manifest(BURST))
    data = json.loads(path.read_text())
    run = data["protocols"][0]
    if field == "burst-protocol":
        run["burst"]["protocol"] = value
    else:
        run[field] = value
    path.write_text(json.dumps(data))
    with pytest.raises(GitnetdiagError, match=message):
        load_fetch_manifest(tmp_path)
