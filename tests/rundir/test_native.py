"""native-*.json version 2: raw events in, the same ledgers out as the legacy summaries."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from gitnetdiag.analysis.nativeledger import h2_ledgers, ssh_channel_ledger
from gitnetdiag.errors import InputError
from gitnetdiag.pipeline import H2PushLedger, SshPushLedger
from gitnetdiag.pipeline._native import (
    h2_ledger_from_native,
    h2_observation,
    native_ledgers,
    ssh_ledger_from_native,
    ssh_observation,
)
from gitnetdiag.probe.receivepack import ReportStatus
from gitnetdiag.rundir import NATIVE_H2_FILE, NATIVE_SSH_FILE
from gitnetdiag.rundir.manifest import write_json_once
from gitnetdiag.rundir.native import (
    H2_SCHEMA,
    H2DataSent,
    H2NativeRecord,
    SettingsEvent,
    SshAdjustReceived,
    SshDataSent,
    SshNativeRecord,
    StreamOpened,
    WindowUpdateReceived,
)

MS = 1_000_000
REF = "refs/heads/gitnetdiag/probe-t"
REPORT = ReportStatus(unpack_ok=True, unpack_message="ok", refs={REF: "ok"})


def _h2_record() -> H2NativeRecord:
    """16 KiB stream window, 3 x 16 KiB to send: two stalls of 20 ms on the stream."""
    data = [H2DataSent(t_ns=(10 + 30 * i) * MS, stream_id=1, size_bytes=16_384)
            for i in range(3)]
    updates = [WindowUpdateReceived(t_ns=(30 + 30 * i) * MS, stream_id=sid,
                                    increment_bytes=16_384)
               for i in range(2) for sid in (0, 1)]
    return H2NativeRecord(
        target="h:443", alpn="h2", upload_stream_id=1, request_bytes=3 * 16_384,
        ended_t_ns=80 * MS,
        settings_sent=(SettingsEvent(t_ns=0, settings={"INITIAL_WINDOW_SIZE": 65_535}),),
        settings_received=(SettingsEvent(t_ns=1 * MS, settings={"INITIAL_WINDOW_SIZE": 16_384,
                                                                "MAX_FRAME_SIZE": 16_384}),),
        streams_opened=(StreamOpened(t_ns=5 * MS, stream_id=1),),
        window_updates=tuple(sorted(updates, key=lambda u: u.t_ns)),
        data_sent=tuple(data), report=REPORT.to_dict(), ref=REF, ref_deleted=True,
        auth="none", tls_ca="option", proxy=None, warnings=(),
    )


def _ssh_record() -> SshNativeRecord:
    return SshNativeRecord(
        target="h:22", server_banner="SSH-2.0-x", connect_s=0.01, kex_s=0.1, auth_s=0.1,
        window_bytes=32_768, max_packet_bytes=32_768, request_bytes=65_536,
        first_data_t_ns=10 * MS, ended_t_ns=100 * MS,
        window_adjusts=(SshAdjustReceived(t_ns=50 * MS, increment_bytes=32_768),),
        data_sent=(SshDataSent(t_ns=10 * MS, size_bytes=32_768),
                   SshDataSent(t_ns=50 * MS, size_bytes=32_768)),
        advertisement={"refs": {}, "capabilities": []}, report=REPORT.to_dict(), ref=REF,
        ref_deleted=True,
    )


def test_h2_stalls_are_replayed_from_the_raw_events() -> None:
    ledgers = h2_ledgers(_h2_record())
    assert ledgers.stream.peak_credit_bytes == 16_384
    assert ledgers.stream.stall_count == 2
    assert ledgers.stream.stalled_s == pytest.approx(0.040)
    assert ledgers.bound.which == "stream"


def test_h2_events_and_the_legacy_summary_give_the_same_ledger(tmp_path: Path) -> None:
    """A run recorded before version 2 held the summary the old probe derived from the same
    events; both paths must give the engine the same numbers."""
    record = _h2_record()
    legacy = H2PushLedger(events=record, ledgers=h2_ledgers(record), report=REPORT).to_dict()
    write_json_once(tmp_path / NATIVE_H2_FILE, record)
    from_events, _ = native_ledgers(tmp_path, "h2")
    assert json.loads((tmp_path / NATIVE_H2_FILE).read_text())["schema"] == H2_SCHEMA
    assert from_events == h2_observation(record)
    assert from_events is not None and from_events.stream_zero_credit_s == pytest.approx(0.040)
    # The legacy summary never held the POST size or the wait after it: only the events do.
    assert from_events.request_bytes == record.request_bytes
    assert replace(from_events, request_bytes=None,
                   server_wait_s=None) == h2_ledger_from_native(legacy)


def test_ssh_events_and_the_legacy_summary_give_the_same_ledger(tmp_path: Path) -> None:
    record = _ssh_record()
    legacy = SshPushLedger(events=record, channel=ssh_channel_ledger(record),
                           report=REPORT).to_dict()
    write_json_once(tmp_path / NATIVE_SSH_FILE, record)
    _, from_events = native_ledgers(tmp_path, "ssh")
    assert from_events == ssh_observation(record) == ssh_ledger_from_native(legacy)
    assert from_events is not None and from_events.zero_window_s == pytest.approx(0.040)


def test_a_wrong_type_in_a_version_2_file_names_the_field(tmp_path: Path) -> None:
    write_json_once(tmp_path / NATIVE_H2_FILE, _h2_record())
    data = json.loads((tmp_path / NATIVE_H2_FILE).read_text())
    data["data_sent"][1]["size_bytes"] = "16k"
    (tmp_path / NATIVE_H2_FILE).write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        native_ledgers(tmp_path, "h2")
    assert info.value.reference == "bad-run-dir"
    assert info.value.message == ("native-h2.json.data_sent[1].size_bytes must be an integer, "
                                  "got '16k'")


def test_an_unknown_schema_is_refused(tmp_path: Path) -> None:
    (tmp_path / NATIVE_SSH_FILE).write_text(json.dumps({"schema": "gitnetdiag.native-ssh/9"}))
    with pytest.raises(InputError, match=re.escape("expected 'gitnetdiag.native-ssh/2'")):
        native_ledgers(tmp_path, "ssh")


def test_the_connection_window_before_data_counts_only_the_first_frames() -> None:
    """What tells Apache's first frames from HAProxy's: Apache raises the connection window
    before any DATA (a WINDOW_UPDATE of 2147418112 after its SETTINGS), HAProxy only once
    DATA arrives; stream updates and later ones do not count."""
    record = _h2_record()  # its connection updates come after the first DATA (10 ms)
    assert record.connection_window_before_data() == 65_535
    first = (WindowUpdateReceived(t_ns=2 * MS, stream_id=0, increment_bytes=2_147_418_112),
             WindowUpdateReceived(t_ns=3 * MS, stream_id=1, increment_bytes=1_000))
    apache = replace(record, window_updates=(*first, *record.window_updates))
    assert apache.connection_window_before_data() == 2**31 - 1
    assert replace(record, data_sent=()).connection_window_before_data() is None
