"""Native HTTP/2 push probe: git's smart-HTTP receive-pack spoken with ``h2``.

git and libcurl hide HTTP/2 flow control. This probe speaks the same push
itself, so it can timestamp what curl cannot show: the server's SETTINGS, each
WINDOW_UPDATE (stream and connection) and each DATA frame sent, and therefore
how long the upload sat waiting for credit.

    GET  /info/refs?service=git-receive-pack   ref advertisement, capabilities
    POST /git-receive-pack                     "<zero> <new> <probe ref>\\0 report-status"
                                               + flush + pack  -> "unpack ok", "ok <probe ref>"
    POST /git-receive-pack (always, finally)   "<new> <zero> <probe ref>" -> branch deleted

(<probe ref> is refs/heads/gitnetdiag/probe-<id>.)

The probe only ever names its own ``gitnetdiag/probe-<id>`` branch, refuses to
run when that branch already exists, and deletes it with a compare-and-swap
command (old id = the pushed commit), so it cannot remove anything else.

The receive-pack protocol helpers (pkt-lines, advertisement, report-status)
are pure and shared with :mod:`gitnetdiag.probe.sshnative`.
"""

from __future__ import annotations

import argparse
import json
import select
import socket
import ssl
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    RemoteSettingsChanged,
    ResponseReceived,
    StreamEnded,
    StreamReset,
    WindowUpdated,
)
from h2.exceptions import H2Error
from h2.settings import SettingCodes, Settings

from gitnetdiag.analysis.flowcontrol import (
    HTTP2_DEFAULT_WINDOW_BYTES,
    BindingWindow,
    CreditEvent,
    CreditLedger,
    DataSent,
    InitialWindowChanged,
    LedgerScope,
    WindowIncreased,
    WindowOpened,
    binding_window,
    credit_ledger,
)
from gitnetdiag.errors import GitnetdiagError, NetworkError, UsageError
from gitnetdiag.probe.receivepack import (
    ZERO_OID,
    RefAdvertisement,
    ReportStatus,
    parse_advertisement,
    parse_report_status,
    pkt_line,
    ref_update_request,
    split_pkt_lines,
)
from gitnetdiag.probe.repo import check_safe_ref, probe_branch_name

__all__ = [
    "ZERO_OID", "check_safe_ref", "h2_push_probe", "h2_sweep", "parse_advertisement",
    "parse_report_status", "pkt_line", "ref_update_request", "render_sweep", "split_pkt_lines",
]

RECEIVE_PACK_REQUEST = "application/x-git-receive-pack-request"
RECEIVE_PACK_RESULT = "application/x-git-receive-pack-result"
USER_AGENT = "git/2.39-gitnetdiag-h2native"


# --------------------------------------------------------------------------
# HTTP/2 client with a flow-control recorder (I/O)
# --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Target:
    """Where the smart-HTTP repository is."""

    host: str
    port: int
    path: str
    """Repository path on the server, e.g. ``/git/lab.git`` (no trailing slash)."""

    @classmethod
    def from_url(cls, url: str) -> Target:
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise UsageError(f"not an https:// URL: {url}", hint="give the repository's https URL")
        return cls(host=parts.hostname, port=parts.port or 443, path=parts.path.rstrip("/"))

    @property
    def authority(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, kw_only=True)
class Response:
    """A complete HTTP/2 response."""

    stream_id: int
    status: int
    body: bytes


@dataclass
class _Recorder:
    """Timestamped (monotonic ns since the connection started) flow-control facts."""

    t0_ns: int
    server_settings: list[tuple[int, dict[str, int]]] = field(default_factory=list)
    window_updates: list[tuple[int, int, int]] = field(default_factory=list)
    """(t_ns, stream id, increment)."""
    data_sent: list[tuple[int, int, int]] = field(default_factory=list)
    """(t_ns, stream id, flow-controlled bytes)."""
    stream_opened: dict[int, int] = field(default_factory=dict)
    """stream id -> t_ns."""

    def now_ns(self) -> int:
        return time.monotonic_ns() - self.t0_ns


def _setting_name(code: int) -> str:
    try:
        return SettingCodes(code).name
    except ValueError:
        return f"0x{code:x}"


def _text(value: str | bytes) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


class H2Client:
    """A blocking HTTP/2 client over TLS that records every flow-control event."""

    def __init__(
        self,
        target: Target,
        *,
        ca_file: str,
        keylog_file: str | None = None,
        client_settings: dict[SettingCodes, int] | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        self.target = target
        self.timeout_s = timeout_s
        self.recorder = _Recorder(t0_ns=time.monotonic_ns())
        context = ssl.create_default_context(cafile=ca_file)
        context.set_alpn_protocols(["h2"])
        if keylog_file:
            context.keylog_filename = keylog_file
        try:
            raw = socket.create_connection((target.host, target.port), timeout=timeout_s)
        except OSError as exc:
            raise NetworkError(
                f"cannot connect to {target.authority}: {exc.strerror or exc}",
                hint="check the host and port, and that the server is up",
                reference="connect-failed",
            ) from exc
        # Like curl: small HEADERS then DATA must not wait for a delayed ACK (Nagle).
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.sock = context.wrap_socket(raw, server_hostname=target.host)
        except (ssl.SSLError, OSError) as exc:
            raw.close()
            raise NetworkError(
                f"TLS handshake with {target.authority} failed: {exc}",
                hint="check --ca-file and that the certificate names this host",
                reference="tls-failed",
            ) from exc
        self.alpn = self.sock.selected_alpn_protocol() or "none"
        if self.alpn != "h2":
            self.sock.close()
            raise NetworkError(
                f"{target.authority} did not negotiate HTTP/2 (ALPN: {self.alpn})",
                hint="the server or edge must offer ALPN h2 for this probe",
                reference="no-h2",
            )
        self.conn = H2Connection(config=H2Configuration(client_side=True, header_encoding="utf-8"))
        if client_settings:
            self.conn.local_settings = Settings(client=True, initial_values=client_settings)
        self.client_settings = {
            _setting_name(code): int(value) for code, value in self.conn.local_settings.items()
        }
        self.conn.initiate_connection()
        self._flush()
        self.server_initial_window_bytes = HTTP2_DEFAULT_WINDOW_BYTES
        self._responses: dict[int, dict[str, Any]] = {}

    def close(self) -> None:
        try:
            self.conn.close_connection()
            self._flush()
        except (OSError, H2Error):
            pass
        self.sock.close()

    def _flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            try:
                self.sock.sendall(data)
            except OSError as exc:
                raise NetworkError(
                    f"sending to {self.target.authority} failed: {exc}", reference="send-failed"
                ) from exc

    def _pump(self, timeout_s: float) -> bool:
        """Read and process what has arrived within ``timeout_s``; False if nothing did."""
        if not self.sock.pending():
            readable, _, _ = select.select([self.sock], [], [], timeout_s)
            if not readable:
                return False
        try:
            data = self.sock.recv(65_536)
        except ssl.SSLWantReadError:
            return False
        except OSError as exc:
            raise NetworkError(
                f"reading from {self.target.authority} failed: {exc}", reference="recv-failed"
            ) from exc
        if not data:
            raise NetworkError(
                f"{self.target.authority} closed the connection", reference="connection-closed"
            )
        t_ns = self.recorder.now_ns()
        try:
            events = self.conn.receive_data(data)
        except H2Error as exc:
            raise NetworkError(f"HTTP/2 protocol error: {exc}", reference="h2-protocol") from exc
        for event in events:
            self._handle(event, t_ns)
        self._flush()
        return True

    def _handle(self, event: object, t_ns: int) -> None:
        if isinstance(event, RemoteSettingsChanged):
            changed = {
                _setting_name(code): int(item.new_value)
                for code, item in event.changed_settings.items()
            }
            self.recorder.server_settings.append((t_ns, changed))
            if "INITIAL_WINDOW_SIZE" in changed:
                self.server_initial_window_bytes = changed["INITIAL_WINDOW_SIZE"]
        elif isinstance(event, WindowUpdated):
            self.recorder.window_updates.append((t_ns, event.stream_id, int(event.delta)))
        elif isinstance(event, ResponseReceived):
            status = next(
                (_text(value) for name, value in event.headers if _text(name) == ":status"), "0"
            )
            self._responses.setdefault(event.stream_id, {"body": bytearray()})["status"] = int(
                status
            )
        elif isinstance(event, DataReceived):
            entry = self._responses.setdefault(event.stream_id, {"body": bytearray()})
            entry["body"] += event.data
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, StreamEnded):
            self._responses.setdefault(event.stream_id, {"body": bytearray()})["ended"] = True
        elif isinstance(event, StreamReset):
            raise NetworkError(
                f"the server reset stream {event.stream_id} (error {event.error_code})",
                reference="h2-stream-reset",
            )
        elif isinstance(event, ConnectionTerminated):
            raise NetworkError(
                f"the server closed the HTTP/2 connection (GOAWAY, error {event.error_code})",
                reference="h2-goaway",
            )

    def request(
        self,
        method: str,
        path: str,
        headers: Sequence[tuple[str, str]] = (),
        body: bytes = b"",
    ) -> Response:
        """Send one request (body honouring flow control exactly) and read the whole answer."""
        deadline = time.monotonic() + self.timeout_s
        stream_id = self.conn.get_next_available_stream_id()
        all_headers = [
            (":method", method),
            (":scheme", "https"),
            (":authority", self.target.authority),
            (":path", path),
            ("user-agent", USER_AGENT),
            *headers,
        ]
        if body:
            all_headers.append(("content-length", str(len(body))))
        self.conn.send_headers(stream_id, all_headers, end_stream=not body)
        self.recorder.stream_opened[stream_id] = self.recorder.now_ns()
        self._flush()
        offset = 0
        view = memoryview(body)
        while offset < len(body):
            # Take in whatever arrived (WINDOW_UPDATEs) without waiting.
            while self._pump(0.0):
                pass
            credit = self.conn.local_flow_control_window(stream_id)
            size = min(credit, self.conn.max_outbound_frame_size, len(body) - offset)
            if size <= 0:
                self._wait(deadline, "flow-control credit (WINDOW_UPDATE)")
                continue
            self.conn.send_data(stream_id, bytes(view[offset : offset + size]))
            self.recorder.data_sent.append((self.recorder.now_ns(), stream_id, size))
            self._flush()
            offset += size
        if body:
            self.conn.end_stream(stream_id)
            self._flush()
        while not self._responses.get(stream_id, {}).get("ended"):
            self._wait(deadline, "the response")
        entry = self._responses.pop(stream_id)
        return Response(
            stream_id=stream_id, status=int(entry.get("status", 0)), body=bytes(entry["body"])
        )

    def _wait(self, deadline: float, what: str) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise NetworkError(
                f"timed out waiting for {what} from {self.target.authority}",
                hint="the server stopped granting credit or answering; see the ledger so far",
                reference="h2-timeout",
            )
        self._pump(min(remaining, 1.0))


# --------------------------------------------------------------------------
# The push probe
# --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class WindowUpdateRecord:
    """One WINDOW_UPDATE the server sent."""

    t_s: float
    """Seconds since the connection started."""
    stream_id: int
    """0 for the connection window."""
    increment_bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "t_s": self.t_s,
            "stream_id": self.stream_id,
            "increment_bytes": self.increment_bytes,
        }


@dataclass(frozen=True, kw_only=True)
class H2PushLedger:
    """One native HTTP/2 push: what flow control did to the upload."""

    target: str
    """``host:port`` of the server (no credentials, no path)."""
    alpn: str
    """Negotiated ALPN (``h2``)."""
    client_settings: dict[str, int]
    """SETTINGS this probe advertised."""
    server_settings: dict[str, int]
    """The server's SETTINGS as last known (names as in RFC 9113)."""
    server_initial_window_bytes: int
    """Server SETTINGS_INITIAL_WINDOW_SIZE: the stream window for our upload."""
    server_max_frame_bytes: int
    """Server SETTINGS_MAX_FRAME_SIZE: largest DATA frame we may send."""
    request_bytes: int
    """Bytes of the POST body (command + flush + pack)."""
    upload_s: float
    """From the first DATA frame to the end of the response."""
    data_frames: int
    """DATA frames sent on the upload stream."""
    window_updates: tuple[WindowUpdateRecord, ...]
    """Every WINDOW_UPDATE received, stream and connection, in order."""
    stream: CreditLedger
    """Credit of the upload stream."""
    connection: CreditLedger
    """Credit of the connection."""
    bound: BindingWindow
    """Which window held the upload back."""
    report: ReportStatus
    """receive-pack's answer."""
    ref: str
    """The throwaway branch pushed."""
    ref_deleted: bool
    """The branch was deleted afterwards."""

    @property
    def upload_rate_bytes_per_s(self) -> float | None:
        return self.request_bytes / self.upload_s if self.upload_s > 0 else None

    def to_dict(self, *, series: bool = True) -> dict[str, Any]:
        return {
            "target": self.target,
            "alpn": self.alpn,
            "client_settings": self.client_settings,
            "server_settings": self.server_settings,
            "server_initial_window_bytes": self.server_initial_window_bytes,
            "server_max_frame_bytes": self.server_max_frame_bytes,
            "request_bytes": self.request_bytes,
            "upload_s": self.upload_s,
            "upload_rate_bytes_per_s": self.upload_rate_bytes_per_s,
            "data_frames": self.data_frames,
            "window_updates": [update.to_dict() for update in self.window_updates],
            "stream": self.stream.to_dict(series=series),
            "connection": self.connection.to_dict(series=series),
            "bound": self.bound.to_dict(),
            "report": self.report.to_dict(),
            "ref": self.ref,
            "ref_deleted": self.ref_deleted,
        }


def _seconds(t_ns: int) -> float:
    return t_ns / 1e9


def build_ledgers(
    recorder: _Recorder, stream_id: int, *, open_until_s: float | None = None
) -> tuple[CreditLedger, CreditLedger]:
    """Stream and connection credit ledgers of one upload stream from recorded events."""
    opened_s = _seconds(recorder.stream_opened[stream_id])
    initial = HTTP2_DEFAULT_WINDOW_BYTES
    stream_events: list[CreditEvent] = []
    for t_ns, changed in recorder.server_settings:
        new = changed.get("INITIAL_WINDOW_SIZE")
        if new is None:
            continue
        if _seconds(t_ns) <= opened_s:
            initial = new
        else:
            stream_events.append(
                InitialWindowChanged(
                    t_s=_seconds(t_ns), old_initial_bytes=initial, new_initial_bytes=new
                )
            )
            initial = new
    stream_events.insert(
        0, WindowOpened(t_s=opened_s, window_bytes=_opening_window(recorder, opened_s))
    )
    connection_events: list[CreditEvent] = [
        WindowOpened(t_s=0.0, window_bytes=HTTP2_DEFAULT_WINDOW_BYTES)
    ]
    for t_ns, sid, size in recorder.data_sent:
        connection_events.append(DataSent(t_s=_seconds(t_ns), size_bytes=size))
        if sid == stream_id:
            stream_events.append(DataSent(t_s=_seconds(t_ns), size_bytes=size))
    for t_ns, sid, increment in recorder.window_updates:
        update = WindowIncreased(t_s=_seconds(t_ns), increment_bytes=increment)
        if sid == 0:
            connection_events.append(update)
        elif sid == stream_id:
            stream_events.append(update)
    stream = credit_ledger(
        stream_events,
        scope=LedgerScope.H2_STREAM,
        label=f"stream {stream_id}",
        open_until_s=open_until_s,
    )
    connection = credit_ledger(
        connection_events,
        scope=LedgerScope.H2_CONNECTION,
        label="connection",
        open_until_s=open_until_s,
    )
    return stream, connection


def _opening_window(recorder: _Recorder, opened_s: float) -> int:
    window = HTTP2_DEFAULT_WINDOW_BYTES
    for t_ns, changed in recorder.server_settings:
        if _seconds(t_ns) <= opened_s and "INITIAL_WINDOW_SIZE" in changed:
            window = changed["INITIAL_WINDOW_SIZE"]
    return window


def _advertise(client: H2Client) -> RefAdvertisement:
    response = client.request("GET", f"{client.target.path}/info/refs?service=git-receive-pack")
    if response.status != 200:
        raise NetworkError(
            f"GET info/refs answered HTTP {response.status}",
            hint="check the repository URL and that the server allows pushes (http.receivepack)",
            reference="http-status",
        )
    lines, _ = split_pkt_lines(response.body)
    return parse_advertisement(lines)


def _receive_pack(client: H2Client, body: bytes) -> tuple[ReportStatus, int]:
    response = client.request(
        "POST",
        f"{client.target.path}/git-receive-pack",
        headers=[("content-type", RECEIVE_PACK_REQUEST), ("accept", RECEIVE_PACK_RESULT)],
        body=body,
    )
    if response.status != 200:
        raise NetworkError(
            f"POST git-receive-pack answered HTTP {response.status}",
            hint="the server refused the push; check its error log",
            reference="http-status",
        )
    lines, _ = split_pkt_lines(response.body)
    return parse_report_status(lines), response.stream_id


def delete_probe_branch_h2(
    target: Target,
    *,
    ca_file: str,
    ref: str,
    pushed_oid: str,
    keylog_file: str | None = None,
    timeout_s: float = 60.0,
) -> bool:
    """Delete ``ref`` if (and only if) it still points at ``pushed_oid``; True when gone."""
    check_safe_ref(ref)
    client = H2Client(target, ca_file=ca_file, keylog_file=keylog_file, timeout_s=timeout_s)
    try:
        advertised = _advertise(client)
        current = advertised.refs.get(ref)
        if current is None:
            return True
        if current != pushed_oid:
            return False
        caps = [cap for cap in ("report-status", "delete-refs") if cap in advertised.capabilities]
        report, _ = _receive_pack(client, ref_update_request(pushed_oid, ZERO_OID, ref, caps))
        return report.ok_for(ref)
    finally:
        client.close()


def _delete_quietly(
    target: Target, ca_file: str, ref: str, oid: str, keylog_file: str | None, timeout_s: float
) -> bool:
    """Delete the probe branch; a failure here must not hide the push's own error."""
    try:
        return delete_probe_branch_h2(
            target,
            ca_file=ca_file,
            ref=ref,
            pushed_oid=oid,
            keylog_file=keylog_file,
            timeout_s=timeout_s,
        )
    except GitnetdiagError as exc:
        print(f"warning: could not delete {ref}: {exc.one_line()}", file=sys.stderr)
        return False


def h2_push_probe(
    url: str,
    *,
    ca_file: str,
    pack: bytes,
    new_oid: str,
    probe_id: str,
    keylog_file: str | None = None,
    client_settings: dict[SettingCodes, int] | None = None,
    timeout_s: float = 120.0,
) -> H2PushLedger:
    """Push ``pack`` to a fresh probe branch over native HTTP/2, then delete the branch."""
    target = Target.from_url(url)
    ref = f"refs/heads/{probe_branch_name(probe_id)}"
    check_safe_ref(ref)
    client = H2Client(
        target,
        ca_file=ca_file,
        keylog_file=keylog_file,
        client_settings=client_settings,
        timeout_s=timeout_s,
    )
    pushed = False
    deleted = False
    try:
        advertised = _advertise(client)
        if ref in advertised.refs:
            raise UsageError(f"{ref} already exists on the server", hint="use a new probe id")
        caps = [cap for cap in ("report-status",) if cap in advertised.capabilities]
        body = ref_update_request(ZERO_OID, new_oid, ref, caps, pack)
        pushed = True  # from here on the branch may exist: always try to delete it
        report, stream_id = _receive_pack(client, body)
        ended_s = client.recorder.now_ns() / 1e9
    finally:
        client.close()
        if pushed:
            deleted = _delete_quietly(target, ca_file, ref, new_oid, keylog_file, timeout_s)
    recorder = client.recorder
    stream, connection = build_ledgers(recorder, stream_id)
    server_settings: dict[str, int] = {}
    for _, changed in recorder.server_settings:
        server_settings.update(changed)
    first_data_s = stream.first_data_s if stream.first_data_s is not None else ended_s
    return H2PushLedger(
        target=target.authority,
        alpn=client.alpn,
        client_settings=client.client_settings,
        server_settings=server_settings,
        server_initial_window_bytes=server_settings.get(
            "INITIAL_WINDOW_SIZE", HTTP2_DEFAULT_WINDOW_BYTES
        ),
        server_max_frame_bytes=server_settings.get("MAX_FRAME_SIZE", 16_384),
        request_bytes=len(body),
        upload_s=ended_s - first_data_s,
        data_frames=sum(1 for _, sid, _ in recorder.data_sent if sid == stream_id),
        window_updates=tuple(
            WindowUpdateRecord(t_s=t_ns / 1e9, stream_id=sid, increment_bytes=inc)
            for t_ns, sid, inc in recorder.window_updates
        ),
        stream=stream,
        connection=connection,
        bound=binding_window(stream, connection),
        report=report,
        ref=ref,
        ref_deleted=deleted,
    )


# --------------------------------------------------------------------------
# Sweep over client settings
# --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SweepRow:
    """One push of the sweep."""

    client_window_bytes: int
    """Client SETTINGS_INITIAL_WINDOW_SIZE advertised (server -> client direction)."""
    client_max_frame_bytes: int
    """Client SETTINGS_MAX_FRAME_SIZE advertised."""
    server_initial_window_bytes: int
    """Server's stream window: what bounds the upload."""
    upload_rate_bytes_per_s: float | None
    stall_count: int
    stalled_s: float
    push_ok: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "client_window_bytes": self.client_window_bytes,
            "client_max_frame_bytes": self.client_max_frame_bytes,
            "server_initial_window_bytes": self.server_initial_window_bytes,
            "upload_rate_bytes_per_s": self.upload_rate_bytes_per_s,
            "stall_count": self.stall_count,
            "stalled_s": self.stalled_s,
            "push_ok": self.push_ok,
        }


DEFAULT_SWEEP: tuple[tuple[int, int], ...] = (
    (65_535, 16_384),
    (1_048_576, 16_384),
    (16_777_216, 16_384),
    (16_777_216, 1_048_576),
)
"""(client initial window, client max frame size) pairs tried by :func:`h2_sweep`."""


def h2_sweep(
    url: str,
    *,
    ca_file: str,
    pack: bytes,
    new_oid: str,
    probe_id_factory: Callable[[], str],
    settings: Sequence[tuple[int, int]] = DEFAULT_SWEEP,
    timeout_s: float = 120.0,
) -> tuple[SweepRow, ...]:
    """Repeat the push with different client SETTINGS; the rate follows the *server's* window.

    The client's INITIAL_WINDOW_SIZE and MAX_FRAME_SIZE govern what the server
    may send us; the upload is governed by the server's window, so the rows
    show whether changing the client side helps (it should not).
    """
    rows: list[SweepRow] = []
    for window, frame in settings:
        ledger = h2_push_probe(
            url,
            ca_file=ca_file,
            pack=pack,
            new_oid=new_oid,
            probe_id=probe_id_factory(),
            client_settings={
                SettingCodes.INITIAL_WINDOW_SIZE: window,
                SettingCodes.MAX_FRAME_SIZE: frame,
            },
            timeout_s=timeout_s,
        )
        rows.append(
            SweepRow(
                client_window_bytes=window,
                client_max_frame_bytes=frame,
                server_initial_window_bytes=ledger.server_initial_window_bytes,
                upload_rate_bytes_per_s=ledger.upload_rate_bytes_per_s,
                stall_count=max(ledger.stream.stall_count, ledger.connection.stall_count),
                stalled_s=max(ledger.stream.stalled_s, ledger.connection.stalled_s),
                push_ok=ledger.report.ok_for(ledger.ref),
            )
        )
    return tuple(rows)


def render_sweep(rows: Sequence[SweepRow]) -> str:
    """The sweep as a small plain-text table."""
    lines = [
        f"{'client window':>14} {'client frame':>12} {'server window':>13} "
        f"{'rate MB/s':>9} {'stalls':>6} {'stalled s':>9} {'ok':>3}"
    ]
    for row in rows:
        rate = row.upload_rate_bytes_per_s
        lines.append(
            f"{row.client_window_bytes:>14} {row.client_max_frame_bytes:>12} "
            f"{row.server_initial_window_bytes:>13} "
            f"{(rate / 1e6 if rate else 0.0):>9.2f} {row.stall_count:>6} {row.stalled_s:>9.3f} "
            f"{'yes' if row.push_ok else 'no':>3}"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Entry point for running inside a lab namespace (JSON on stdout)
# --------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m gitnetdiag.probe.h2native --url URL --ca-file F --size-bytes N [--sweep]``."""
    from gitnetdiag.probe.repo import generate_repo, new_probe_id, pack_for_commit

    parser = argparse.ArgumentParser(prog="python -m gitnetdiag.probe.h2native")
    parser.add_argument("--url", required=True)
    parser.add_argument("--ca-file", required=True)
    parser.add_argument("--size-bytes", type=int, default=2_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keylog")
    parser.add_argument("--timeout-s", type=float, default=120.0)
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--no-series", action="store_true", help="omit credit time series")
    args = parser.parse_args(argv)
    try:
        with tempfile.TemporaryDirectory(prefix="gnd-h2native-") as tmp:
            repo = generate_repo(Path(tmp) / "repo", args.size_bytes, args.seed)
            pack = pack_for_commit(repo.path, repo.head_oid)
            if args.sweep:
                rows = h2_sweep(
                    args.url,
                    ca_file=args.ca_file,
                    pack=pack,
                    new_oid=repo.head_oid,
                    probe_id_factory=new_probe_id,
                    timeout_s=args.timeout_s,
                )
                print(json.dumps({"sweep": [row.to_dict() for row in rows]}))
                print(render_sweep(rows), file=sys.stderr)
            else:
                ledger = h2_push_probe(
                    args.url,
                    ca_file=args.ca_file,
                    pack=pack,
                    new_oid=repo.head_oid,
                    probe_id=new_probe_id(),
                    keylog_file=args.keylog,
                    timeout_s=args.timeout_s,
                )
                print(json.dumps(ledger.to_dict(series=not args.no_series)))
    except GitnetdiagError as exc:
        print(json.dumps({"error": exc.reference, "message": exc.message, "hint": exc.hint}))
        print(exc.one_line(), file=sys.stderr)
        return int(exc.exit_code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
