"""One record of a transfer and one loader for both manifests (issue 35 step 2): a recorded
push run (``captures/healthy``) and a recorded fetch run (``tests/data/fetch-healthy``) read
through :func:`read_manifest` as :class:`TransferRecord`\\ s with their ``direction``; the
checks are the same code for both, flow-control credit alone allowed below zero."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from gitnetdiag.errors import InputError
from gitnetdiag.rundir.ledgers import H2CreditLedger
from gitnetdiag.rundir.manifest import (
    FetchManifest,
    RunManifest,
    load_fetch_manifest,
    load_run,
    read_manifest,
    write_manifest,
)
from gitnetdiag.rundir.records import CloneRecord, PushRecord

REPO = Path(__file__).resolve().parents[2]
PUSH_RUN = REPO / "captures" / "healthy"
FETCH_RUN = REPO / "tests" / "data" / "fetch-healthy"


@pytest.mark.parametrize(("run", "cls", "kind", "direction"), [
    (PUSH_RUN, RunManifest, PushRecord, "push"),
    (FETCH_RUN, FetchManifest, CloneRecord, "fetch"),
])
def test_both_recorded_runs_read_as_transfers_with_their_direction(
        run: Path, cls: type[RunManifest] | type[FetchManifest], kind: type, direction: str
) -> None:
    manifest = read_manifest(run, cls)
    assert manifest is not None and manifest.direction == direction
    transfers = [t for p in manifest.protocols for t in p.transfers]
    assert transfers and all(type(t) is kind and t.direction == direction for t in transfers)
    assert [t.protocol for t in transfers] == [p.protocol for p in manifest.protocols
                                               for _ in p.transfers]


def test_a_manifest_without_direction_reads_as_push_and_is_written_with_it(
        tmp_path: Path) -> None:
    shutil.copy(PUSH_RUN / "manifest.json", tmp_path / "manifest.json")
    data = json.loads((tmp_path / "manifest.json").read_text())
    assert "direction" not in data  # recorded before the field
    manifest = load_run(tmp_path)
    write_manifest(tmp_path, manifest)
    written = json.loads((tmp_path / "manifest.json").read_text())
    assert written["direction"] == "push"
    assert {push["direction"] for p in written["protocols"] for push in p["pushes"]} == {"push"}
    assert load_run(tmp_path) == manifest


def _fetch_copy(tmp_path: Path, ledger: H2CreditLedger) -> Path:
    run = Path(shutil.copytree(FETCH_RUN, tmp_path / "run"))
    manifest = load_fetch_manifest(run)
    assert manifest is not None
    write_manifest(run, replace(manifest, h2_downloads=(ledger,)))
    return run


LEDGER = H2CreditLedger(label="HTTP/2 default", window_bytes=65_535, outcome="ok",
                        data_t_s=(0.1, 0.2), data_bytes=(16_384, 16_384),
                        credit_left_bytes=(-1, 0), received_bytes=32_768)


def test_credit_alone_may_be_negative(tmp_path: Path) -> None:
    run = _fetch_copy(tmp_path, LEDGER)
    manifest = load_fetch_manifest(run)
    assert manifest is not None and manifest.h2_downloads == (LEDGER,)
    run = _fetch_copy(tmp_path / "b", replace(LEDGER, data_bytes=(16_384, -5)))
    with pytest.raises(InputError, match=r"fetch\.h2_downloads\[0\]\.data_bytes\[1\] must be "
                       r"a finite number >= 0, got -5") as caught:
        load_fetch_manifest(run)
    assert caught.value.reference == "bad-run-dir"


def test_a_measured_push_needs_a_pack_and_a_clone_only_time(tmp_path: Path) -> None:
    push_dir = Path(shutil.copytree(PUSH_RUN, tmp_path / "push"))
    data = json.loads((push_dir / "manifest.json").read_text())
    data["protocols"][0]["pushes"][0]["pack_bytes"] = 0
    (push_dir / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"pushes\[0\]\.pack_bytes must be above 0 for a push"):
        load_run(push_dir)
    fetch_dir = Path(shutil.copytree(FETCH_RUN, tmp_path / "fetch"))
    data = json.loads((fetch_dir / "fetch.json").read_text())
    data["protocols"][0]["fetches"][0]["moved_bytes"] = 0
    (fetch_dir / "fetch.json").write_text(json.dumps(data))
    assert load_fetch_manifest(fetch_dir) is not None  # a clone of an empty repository moves nothing
    assert load_fetch_manifest(tmp_path) is None  # no fetch.json: the run cloned nothing
