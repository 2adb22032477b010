"""The native probes' summaries, derived offline from raw events (gitnetdiag.pipeline._probe)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gitnetdiag.pipeline import (
    NativeProgress,
    h2_push_ledger,
    ssh_push_ledger,
    sweep_records,
    sweep_rows,
)
from gitnetdiag.probe.options import RawSummary
from gitnetdiag.rundir.files import sweep_variant_file
from gitnetdiag.rundir.manifest import write_json_once
from gitnetdiag.rundir.native import SettingsEvent
from tests.rundir.test_native import REF, _h2_record, _ssh_record


def test_the_push_summaries_replay_the_events() -> None:
    h2 = h2_push_ledger(_h2_record())
    assert h2.report.ok_for(REF)
    assert (h2.stream.stall_count, h2.bound.which) == (2, "stream")
    assert h2.to_dict(series=False)["stream"]["stall_count"] == 2
    ssh = ssh_push_ledger(_ssh_record())
    assert ssh.to_dict()["channel"]["bytes_sent"] == ssh.events.request_bytes


def test_sweep_rows_come_from_the_variant_files_in_order(tmp_path: Path) -> None:
    base = _h2_record()
    for n, window in ((2, 16_777_216), (10, 1_048_576), (1, 65_535)):
        sent = SettingsEvent(t_ns=0, settings={"INITIAL_WINDOW_SIZE": window,
                                               "MAX_FRAME_SIZE": 16_384})
        write_json_once(tmp_path / sweep_variant_file(n),
                        dataclasses.replace(base, settings_sent=(sent,)))
    (tmp_path / "native-h2.json").write_text("{}")  # not a variant
    rows = sweep_rows(sweep_records(tmp_path))
    assert [row.client_window_bytes for row in rows] == [65_535, 16_777_216, 1_048_576]
    assert all(row.server_initial_window_bytes == 16_384 and row.push_ok for row in rows)
    assert rows[0].stall_count == 2 and rows[0].stalled_s == pytest.approx(0.040)
    assert rows[0].upload_rate_bytes_per_s == pytest.approx(3 * 16_384 / 0.070)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert sweep_records(empty) == ()


def test_the_progress_line_with_and_without_the_replay() -> None:
    assert NativeProgress().push(_h2_record()) == "server window 16384, 2 stalls"
    assert NativeProgress().push(_ssh_record()) == "channel window 32768, 1 adjusts"
    assert NativeProgress().sweep([_h2_record()]).startswith("1 variants, 0.70-0.70 MB/s")
    assert RawSummary().push(_h2_record()) == "server window 16384, 4 window updates"
    assert RawSummary().push(_ssh_record()) == NativeProgress().push(_ssh_record())
