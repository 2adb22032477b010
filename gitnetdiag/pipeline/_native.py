"""The native probes' files -> the engine's H2Ledger / SshLedger / BodyLimitProbe.

    native-*.json, schema .../2 (raw events)  --analysis.nativeledger-->  ledgers  --> obs
    native-*.json without schema (summaries written before version 2)   --legacy-->  obs
    native-body.json (the body probe's answers)                  --body_limit-->       obs
    native-idle-<n>.json (the idle probe's keepalives)           --idle_path-->        obs

Both paths give the same observations for the same push: the legacy path
reads back the numbers the old probe derived with the same
:mod:`gitnetdiag.analysis.flowcontrol` replay the new path runs here.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from gitnetdiag.analysis.flowcontrol import HTTP2_DEFAULT_WINDOW_BYTES
from gitnetdiag.analysis.nativeledger import (
    HTTP2_DEFAULT_MAX_FRAME_BYTES,
    h2_ledgers,
    ssh_channel_ledger,
)
from gitnetdiag.diagnosis import observations as obs
from gitnetdiag.pipeline._noted import Noted
from gitnetdiag.rundir import NATIVE_H2_FILE, NATIVE_SSH_FILE, bad_run_dir, read_json_object
from gitnetdiag.rundir.bodyprobe import HttpVersion, body_probe_record
from gitnetdiag.rundir.files import NATIVE_BODY_FILE, NATIVE_FILES, NATIVE_IDLE_GLOB
from gitnetdiag.rundir.idleprobe import idle_probe_record
from gitnetdiag.rundir.native import (
    H2NativeRecord,
    SshNativeRecord,
    first_response_identity,
    h2_record,
    native_schema,
    ssh_record,
)


def downsample(n: int, limit: int = obs.MAX_SERIES_POINTS) -> np.ndarray[Any, Any]:
    """Indices of at most ``limit`` evenly spread points out of ``n``."""
    return np.unique(np.linspace(0, n - 1, min(n, limit)).astype(np.int64))


def native_ledgers(run_dir: Path,
                   protocol: str) -> tuple[obs.H2Ledger | None, obs.SshLedger | None]:
    """The ledger of ``protocol`` from its native file, when the probe wrote one (the
    summary of a file written before schema version 2, else replayed from its events)."""
    name = NATIVE_FILES.get(protocol)
    data = read_json_object(run_dir / name) if name else None
    if name is None or data is None:
        return None, None
    legacy = native_schema(data) is None
    if protocol == "h2":
        return (h2_ledger_from_native(data) if legacy
                else h2_observation(h2_record(data, name))), None
    return None, (ssh_ledger_from_native(data) if legacy
                  else ssh_observation(ssh_record(data, name)))


def _credit_series(t_s: Any, credit: Any) -> obs.TimeSeries | None:
    if len(t_s) == 0:
        return None
    keep = downsample(len(t_s))
    return obs.TimeSeries(t_s=tuple(float(t_s[i]) for i in keep),
                          values=tuple(float(credit[i]) for i in keep))


def h2_observation(record: H2NativeRecord) -> obs.H2Ledger:
    """The engine's HTTP/2 ledger, replayed from the raw events."""
    ledgers = h2_ledgers(record)
    settings = record.server_settings()
    return obs.H2Ledger(
        source=f"native HTTP/2 probe of {record.target or '?'}",
        server_initial_window_bytes=settings.get("INITIAL_WINDOW_SIZE",
                                                 HTTP2_DEFAULT_WINDOW_BYTES),
        connection_window_bytes=ledgers.connection.peak_credit_bytes,
        max_frame_size_bytes=settings.get("MAX_FRAME_SIZE", HTTP2_DEFAULT_MAX_FRAME_BYTES),
        stream_zero_credit_s=ledgers.stream.stalled_s,
        connection_zero_credit_s=ledgers.connection.stalled_s,
        window_updates=len(record.window_updates) or ledgers.stream.updates_received,
        credit=_credit_series(ledgers.stream.t_s, ledgers.stream.credit_bytes),
        request_bytes=record.request_bytes,
        server_wait_s=_h2_server_wait_s(record),
    )


def _h2_server_wait_s(record: H2NativeRecord) -> float | None:
    """From the last DATA frame of the upload stream until its response was complete."""
    sent = [d.t_ns for d in record.data_sent if d.stream_id == record.upload_stream_id]
    if not sent or record.ended_t_ns <= max(sent):
        return None
    return (record.ended_t_ns - max(sent)) / 1e9


def ssh_observation(record: SshNativeRecord) -> obs.SshLedger:
    """The engine's SSH ledger, replayed from the raw channel events."""
    channel = ssh_channel_ledger(record)
    return obs.SshLedger(
        source=f"native SSH probe of {record.target or '?'}",
        initial_window_bytes=record.window_bytes,
        max_packet_bytes=record.max_packet_bytes,
        zero_window_s=channel.stalled_s,
        window_adjusts=len(record.window_adjusts),
    )


def body_limit(run_dir: Path, protocol: str) -> Noted[obs.BodyLimitProbe | None]:
    """What the body probe measured for ``protocol`` (``h1``/``h2`` of its URL): the limit
    bracket (asked over HTTP/1.1, one per URL) and the sized/streamed answers over the
    protocol's HTTP version; the probe's notes come with its first protocol. None when it
    did not run."""
    data = read_json_object(run_dir / NATIVE_BODY_FILE) if protocol in ("h1", "h2") else None
    if data is None:
        return Noted(value=None)
    record = body_probe_record(data, NATIVE_BODY_FILE)
    if protocol not in record.protocols:
        return Noted(value=None)
    version: HttpVersion = "HTTP/2" if protocol == "h2" else "HTTP/1.1"
    sized, streamed = record.last("sized", version), record.last("streamed", version)
    refusal = record.refusal()
    probe = obs.BodyLimitProbe(
        source=f"native body probe of {record.target}",
        requests=len(record.exchanges),
        largest_accepted_bytes=record.largest_accepted_bytes,
        smallest_refused_bytes=record.smallest_refused_bytes,
        refused_status=refusal.status if refusal else None,
        sized_status=sized.status if sized else None,
        streamed_status=streamed.status if streamed else None,
        streamed_reset=streamed is not None and streamed.answer in ("reset", "closed"),
        server=refusal.server if refusal else None,
    )
    first = protocol == record.protocols[0]
    return Noted(value=probe,
                 notes=tuple(f"{NATIVE_BODY_FILE}: {note}" for note in record.notes if first))


def idle_path(run_dir: Path, protocol: str) -> Noted[obs.IdlePathProbe | None]:
    """What the idle probe of ``protocol``'s endpoint saw; None when it did not run there."""
    for path in sorted(run_dir.glob(NATIVE_IDLE_GLOB)):
        data = read_json_object(path)
        if data is None:
            continue
        record = idle_probe_record(data, path.name)
        if protocol not in record.protocols:
            continue
        low, high = record.bracket_s
        first = next((c for c in record.connections if c.idle_s == high), None)
        new = record.new_connection
        probe = obs.IdlePathProbe(
            source=f"idle probe of {record.target}", silence_s=record.silence_s,
            answered_up_to_s=low, unanswered_from_s=high,
            unanswered_probes=first.probes if first else 0,
            closed_by_server=len(record.idle_times("closed")),
            new_connection_ok=new.ok if new else None,
            new_connection_s=new.connect_s if new else None,
            controls=tuple(obs.ControlAnswer(kind=c.kind, silence_s=c.silence_s,
                                             answered=c.answer == "answered",
                                             round_trip_ms=c.round_trip_ms, wait_s=c.wait_s)
                           for c in record.controls if c.answer in ("answered", "unanswered")))
        first_protocol = protocol == record.protocols[0]
        return Noted(value=probe, notes=tuple(f"{path.name}: {note}" for note in record.notes
                                              if first_protocol))
    return Noted(value=None)


# --- legacy: summaries written before schema version 2 --------------------------------


class _Fields:
    """Typed access to one object of a native ledger file; a wrong type names the field."""

    def __init__(self, data: Any, where: str) -> None:
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise bad_run_dir(f"{where} must be an object, got {type(data).__name__}")
        self.data, self.where = data, where

    def _get(self, key: str, kinds: tuple[type, ...], what: str) -> Any:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise bad_run_dir(f"{self.where}.{key} must be {what}, got {value!r}")
        if isinstance(value, int | float) and (not math.isfinite(value) or value < 0):
            # sizes, times and counts of a summary
            raise bad_run_dir(f"{self.where}.{key} must be {what} >= 0, got {value!r}")
        return value

    def integer(self, key: str) -> int | None:
        value: int | None = self._get(key, (int,), "an integer")
        return value

    def number(self, key: str) -> float | None:
        value = self._get(key, (int, float), "a number")
        return None if value is None else float(value)

    def text(self, key: str) -> str | None:
        value: str | None = self._get(key, (str,), "a string")
        return value

    def items(self, key: str) -> list[Any]:
        value = self._get(key, (list,), "a list")
        return value or []

    def child(self, key: str) -> _Fields:
        return _Fields(self.data.get(key), f"{self.where}.{key}")


def _credit_points(points: list[Any], where: str) -> list[tuple[float, float]]:
    result = []
    for index, point in enumerate(points):
        if (not isinstance(point, list) or len(point) != 2
                or not all(isinstance(x, int | float) and not isinstance(x, bool)
                           and math.isfinite(x) for x in point)):
            raise bad_run_dir(f"{where}[{index}] must be a [seconds, bytes] pair, got {point!r}")
        result.append((float(point[0]), float(point[1])))
    return result


def h2_ledger_from_native(data: dict[str, Any], where: str = "native-h2.json") -> obs.H2Ledger:
    top = _Fields(data, where)
    stream, connection = top.child("stream"), top.child("connection")
    series = _credit_points(stream.items("credit_series"), f"{where}.stream.credit_series")
    credit = _credit_series([t for t, _ in series], [c for _, c in series])
    return obs.H2Ledger(
        source=f"native HTTP/2 probe of {top.text('target') or '?'}",
        server_initial_window_bytes=top.integer("server_initial_window_bytes"),
        connection_window_bytes=connection.integer("peak_credit_bytes"),
        max_frame_size_bytes=top.integer("server_max_frame_bytes"),
        stream_zero_credit_s=stream.number("stalled_s"),
        connection_zero_credit_s=connection.number("stalled_s"),
        window_updates=len(top.items("window_updates")) or stream.integer("updates_received"),
        credit=credit,
    )


def ssh_ledger_from_native(data: dict[str, Any], where: str = "native-ssh.json") -> obs.SshLedger:
    top = _Fields(data, where)
    return obs.SshLedger(
        source=f"native SSH probe of {top.text('target') or '?'}",
        initial_window_bytes=top.integer("server_window_bytes"),
        max_packet_bytes=top.integer("server_max_packet_bytes"),
        zero_window_s=top.child("channel").number("stalled_s"),
        window_adjusts=top.integer("window_adjusts"),
    )


def curl_identity_headers(run_dir: Path) -> tuple[str, ...]:
    """The headers that show who answered in the first response of git's curl traces
    (``*.curl.txt``, HTTP/2 ones first), for runs without the native HTTP/2 probe."""
    traces = sorted(run_dir.glob("*.curl.txt"), key=lambda p: (not p.name.startswith("h2"),
                                                               p.name))
    for path in traces:
        headers = first_response_identity(path.read_text(errors="replace"))
        if headers:
            return headers
    return ()


def native_fingerprint(run_dir: Path) -> dict[str, Any]:
    """What the native probes saw of the servers (``RunInfo`` fields): the HTTP/2 server's
    ``server`` headers, SETTINGS and the connection window it granted before the first DATA
    frame, the SSH banner. Empty for runs without native files."""
    found: dict[str, Any] = {}
    h2 = read_json_object(run_dir / NATIVE_H2_FILE)
    if h2 is not None and native_schema(h2) is not None:
        record = h2_record(h2, NATIVE_H2_FILE)
        found["server_headers"] = record.server_headers
        found["identity_headers"] = record.identity_headers
        found["h2_server_settings"] = record.server_settings()
        found["h2_connection_window_before_data_bytes"] = record.connection_window_before_data()
    if not (run_dir / NATIVE_H2_FILE).exists():
        traced = curl_identity_headers(run_dir)
        if traced:
            found["identity_headers"] = traced
    ssh = read_json_object(run_dir / NATIVE_SSH_FILE)
    if ssh is not None and native_schema(ssh) is not None:
        found["ssh_banner"] = ssh_record(ssh, NATIVE_SSH_FILE).server_banner
    return found
