"""The native probes' own summaries, derived from the raw events they recorded.

    H2NativeRecord              --h2_push_ledger()-->   H2PushLedger   lab CLI JSON, progress
    SshNativeRecord             --ssh_push_ledger()-->  SshPushLedger
    native-h2-sweep-<n>.json    --sweep_rows()-->       SweepRow each  native-h2-sweep.json

The probes only record (docs/architecture.md): the credit ledgers behind a
summary are replayed here with :mod:`gitnetdiag.analysis.nativeledger`, the
same replay the diagnosis runs on ``native-*.json`` (:mod:`gitnetdiag.pipeline._native`).
:class:`NativeProgress` is what the probe command hands the runner for its live
progress line, so the line shows the stalls without the probe computing them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitnetdiag.analysis.flowcontrol import HTTP2_DEFAULT_WINDOW_BYTES, BindingWindow, CreditLedger
from gitnetdiag.analysis.nativeledger import (
    HTTP2_DEFAULT_MAX_FRAME_BYTES,
    H2UploadLedgers,
    h2_ledgers,
    ssh_channel_ledger,
)
from gitnetdiag.rundir import read_json_object
from gitnetdiag.rundir.files import SWEEP_VARIANT_PATTERN
from gitnetdiag.rundir.native import (
    H2NativeRecord,
    NativeRecord,
    ReportStatus,
    SshNativeRecord,
    WindowUpdateReceived,
    h2_record,
)
from gitnetdiag.rundir.records import SweepRow
from gitnetdiag.serial import to_jsonable


@dataclass(frozen=True, kw_only=True)
class H2PushLedger:
    """One native HTTP/2 push: its raw events and the credit ledgers replayed from them."""

    events: H2NativeRecord
    """What the probe saw, as written to ``native-h2.json``."""
    ledgers: H2UploadLedgers
    """Stream and connection credit, replayed from ``events``."""
    report: ReportStatus
    """receive-pack's answer."""

    @property
    def alpn(self) -> str:
        return self.events.alpn

    @property
    def server_initial_window_bytes(self) -> int:
        """Server SETTINGS_INITIAL_WINDOW_SIZE: the stream window for our upload."""
        return self.events.server_settings().get("INITIAL_WINDOW_SIZE",
                                                 HTTP2_DEFAULT_WINDOW_BYTES)

    @property
    def request_bytes(self) -> int:
        return self.events.request_bytes

    @property
    def window_updates(self) -> tuple[WindowUpdateReceived, ...]:
        return self.events.window_updates

    @property
    def stream(self) -> CreditLedger:
        return self.ledgers.stream

    @property
    def connection(self) -> CreditLedger:
        return self.ledgers.connection

    @property
    def bound(self) -> BindingWindow:
        return self.ledgers.bound

    @property
    def ref_deleted(self) -> bool:
        return self.events.ref_deleted

    @property
    def upload_rate_bytes_per_s(self) -> float | None:
        upload_s = self.ledgers.upload_s
        return self.request_bytes / upload_s if upload_s > 0 else None

    def to_dict(self, *, series: bool = True) -> dict[str, Any]:
        """The summary the lab CLI prints (not the run file; the legacy ``native-h2.json``
        written before schema 2 had this shape)."""
        events = self.events
        return {
            "target": events.target,
            "alpn": events.alpn,
            "client_settings": events.settings_sent[0].settings if events.settings_sent else {},
            "server_settings": events.server_settings(),
            "server_initial_window_bytes": self.server_initial_window_bytes,
            "server_max_frame_bytes": events.server_settings().get(
                "MAX_FRAME_SIZE", HTTP2_DEFAULT_MAX_FRAME_BYTES),
            "request_bytes": events.request_bytes,
            "upload_s": self.ledgers.upload_s,
            "upload_rate_bytes_per_s": self.upload_rate_bytes_per_s,
            "data_frames": sum(1 for data in events.data_sent
                               if data.stream_id == events.upload_stream_id),
            "window_updates": to_jsonable(events.window_updates),
            "stream": self.stream.to_dict(series=series),
            "connection": self.connection.to_dict(series=series),
            "bound": self.bound.to_dict(),
            "report": self.report.to_dict(),
            "ref": events.ref,
            "ref_deleted": events.ref_deleted,
            "auth": events.auth,
            "tls_ca": events.tls_ca,
            "proxy": events.proxy,
            "warnings": list(events.warnings),
        }


def h2_push_ledger(record: H2NativeRecord) -> H2PushLedger:
    """The summary of one native HTTP/2 push, replayed from its events."""
    return H2PushLedger(events=record, ledgers=h2_ledgers(record),
                        report=ReportStatus.from_dict(record.report))


@dataclass(frozen=True, kw_only=True)
class SshPushLedger:
    """One native SSH push: its raw events and the channel ledger replayed from them."""

    events: SshNativeRecord
    """What the probe saw, as written to ``native-ssh.json``."""
    channel: CreditLedger
    """Channel credit over time, replayed from ``events``."""
    report: ReportStatus
    """receive-pack's answer."""

    @property
    def upload_s(self) -> float:
        return (self.events.ended_t_ns - self.events.first_data_t_ns) / 1e9

    def to_dict(self, *, series: bool = True) -> dict[str, Any]:
        """The summary the lab CLI prints (the legacy ``native-ssh.json`` shape)."""
        events = self.events
        return {
            "target": events.target,
            "server_banner": events.server_banner,
            "connect_s": events.connect_s,
            "kex_s": events.kex_s,
            "auth_s": events.auth_s,
            "server_window_bytes": events.window_bytes,
            "server_max_packet_bytes": events.max_packet_bytes,
            "advertisement": events.advertisement,
            "request_bytes": events.request_bytes,
            "upload_s": self.upload_s,
            "upload_rate_bytes_per_s": events.request_bytes / self.upload_s
            if self.upload_s > 0 else None,
            "window_adjusts": len(events.window_adjusts),
            "channel": self.channel.to_dict(series=series),
            "report": self.report.to_dict(),
            "ref": events.ref,
            "ref_deleted": events.ref_deleted,
        }


def ssh_push_ledger(record: SshNativeRecord) -> SshPushLedger:
    """The summary of one native SSH push, replayed from its events."""
    return SshPushLedger(events=record, channel=ssh_channel_ledger(record),
                         report=ReportStatus.from_dict(record.report))


# --- the --h2-sweep rows ------------------------------------------------------------------


def sweep_row(record: H2NativeRecord) -> SweepRow:
    """One variant of the sweep: the client SETTINGS it advertised, what the upload got."""
    ledger = h2_push_ledger(record)
    client = record.settings_sent[0].settings if record.settings_sent else {}
    return SweepRow(
        client_window_bytes=client.get("INITIAL_WINDOW_SIZE", HTTP2_DEFAULT_WINDOW_BYTES),
        client_max_frame_bytes=client.get("MAX_FRAME_SIZE", HTTP2_DEFAULT_MAX_FRAME_BYTES),
        server_initial_window_bytes=ledger.server_initial_window_bytes,
        upload_rate_bytes_per_s=ledger.upload_rate_bytes_per_s,
        stall_count=ledger.ledgers.stall_count,
        stalled_s=ledger.ledgers.stalled_s,
        push_ok=ledger.report.ok_for(record.ref),
    )


def sweep_records(run_dir: Path) -> tuple[H2NativeRecord, ...]:
    """The sweep's per-variant event files of ``run_dir``, in the order they were pushed."""
    pattern = re.compile(SWEEP_VARIANT_PATTERN.replace("{n}", r"(\d+)").replace(".", r"\."))
    found = sorted((int(m.group(1)), path) for path in run_dir.iterdir()
                   if (m := pattern.fullmatch(path.name)))
    return tuple(h2_record(data, path.name) for _, path in found
                 if (data := read_json_object(path)) is not None)


def sweep_rows(records: Sequence[H2NativeRecord]) -> tuple[SweepRow, ...]:
    """The ``--h2-sweep`` rows (``native-h2-sweep.json``), one per variant's raw events."""
    return tuple(sweep_row(record) for record in records)


# --- the probe's live progress line -----------------------------------------------------


class NativeProgress:
    """The progress line of the native pushes and the sweep, from their raw events
    (``gitnetdiag.probe.options.NativeSummary``, which the runner calls)."""

    def push(self, record: NativeRecord) -> str:
        if isinstance(record, SshNativeRecord):
            return f"channel window {record.window_bytes}, {len(record.window_adjusts)} adjusts"
        ledger = h2_push_ledger(record)
        return (f"server window {ledger.server_initial_window_bytes}, "
                f"{ledger.stream.stall_count} stalls")

    def sweep(self, records: Sequence[H2NativeRecord]) -> str:
        rates = [row.upload_rate_bytes_per_s or 0.0 for row in sweep_rows(records)]
        if not rates:
            return "0 variants"
        return f"{len(rates)} variants, {min(rates) / 1e6:.2f}-{max(rates) / 1e6:.2f} MB/s"
