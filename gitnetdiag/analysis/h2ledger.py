"""HTTP/2 flow-control ledgers from a decrypted capture (tshark does the TLS + HTTP/2).

    capture + keys --tshark -T fields--> text --parse_tshark_fields()--> H2FrameRow
        --h2_ledgers_from_rows()--> H2WireLedger per TCP connection

Everything here is pure and tested on recorded tshark output; running tshark
is the tool adapter's job (:mod:`gitnetdiag.tools.tshark`), rendering the
table is :mod:`gitnetdiag.report.h2ledger_table`'s.

One TCP frame can carry several HTTP/2 frames: tshark then lists each field's
values comma-separated. ``http2.type``, ``http2.streamid``, ``http2.length``
and ``http2.flags`` occur once per HTTP/2 frame and line up. Settings do not:
a SETTINGS frame of length L holds L/6 parameters, so ``http2.settings.id``
is consumed L/6 at a time and each id 4 (INITIAL_WINDOW_SIZE) or 5
(MAX_FRAME_SIZE) takes the next value of its own field. Each WINDOW_UPDATE
takes the next ``window_size_increment``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

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
    attributes,
    binding_window,
    credit_ledger,
)
from gitnetdiag.errors import CaptureFormatError

TSHARK_FIELDS: tuple[str, ...] = (
    "frame.number",
    "frame.time_epoch",
    "tcp.stream",
    "ip.src",
    "ipv6.src",
    "tcp.srcport",
    "http2.magic",
    "http2.type",
    "http2.streamid",
    "http2.length",
    "http2.flags",
    "http2.settings.id",
    "http2.settings.initial_window_size",
    "http2.settings.max_frame_size",
    "http2.window_update.window_size_increment",
)
"""The tshark fields read, in column order."""

FRAME_DATA, FRAME_HEADERS, FRAME_SETTINGS, FRAME_WINDOW_UPDATE = 0, 1, 4, 8
FRAME_PREFACE = -1
"""Pseudo frame type of a row that stands for the client connection preface alone."""
FLAG_END_STREAM, FLAG_ACK = 0x1, 0x1
SETTING_INITIAL_WINDOW_SIZE, SETTING_MAX_FRAME_SIZE = 4, 5
SETTING_NAMES = {
    1: "HEADER_TABLE_SIZE",
    2: "ENABLE_PUSH",
    3: "MAX_CONCURRENT_STREAMS",
    4: "INITIAL_WINDOW_SIZE",
    5: "MAX_FRAME_SIZE",
    6: "MAX_HEADER_LIST_SIZE",
    8: "ENABLE_CONNECT_PROTOCOL",
}


@dataclass(frozen=True, kw_only=True)
class H2FrameRow:
    """One HTTP/2 frame as tshark dissected it."""

    frame_number: int
    """Capture frame (packet) number that completed this HTTP/2 frame."""
    ts_ns: int
    """Capture time, nanoseconds since the epoch."""
    tcp_stream: int
    """tshark's TCP conversation index."""
    src: str
    """Sender ``ip:port``."""
    is_preface: bool
    """The TCP frame carried the client connection preface (its sender is the client)."""
    frame_type: int
    """HTTP/2 frame type (RFC 9113), or FRAME_PREFACE for a frame holding only the preface."""
    stream_id: int
    length_bytes: int
    """Frame payload length (for DATA: the flow-controlled size, padding included)."""
    flags: int
    settings: tuple[tuple[int, int | None], ...]
    """SETTINGS parameters (id, value); value None for ids whose value is not read."""
    increment_bytes: int | None
    """WINDOW_UPDATE increment."""


def _split(value: str) -> list[str]:
    return [item for item in value.split(",")] if value else []


def _int(value: str, *, where: str) -> int:
    try:
        return int(value, 0)
    except ValueError as exc:
        raise CaptureFormatError(
            f"unexpected tshark value {value!r} in {where}",
            hint="the tshark version may format this field differently",
        ) from exc


def _epoch_ns(value: str) -> int:
    whole, _, fraction = value.partition(".")
    return int(whole) * 1_000_000_000 + int((fraction + "000000000")[:9])


def parse_tshark_fields(text: str) -> list[H2FrameRow]:
    """Parse ``tshark -T fields`` output (tab separated, :data:`TSHARK_FIELDS`)."""
    rows: list[H2FrameRow] = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        columns = line.split("\t")
        if len(columns) != len(TSHARK_FIELDS):
            raise CaptureFormatError(
                f"tshark line {line_number} has {len(columns)} columns, "
                f"expected {len(TSHARK_FIELDS)}",
                hint="run tshark with exactly the fields in TSHARK_FIELDS",
            )
        (number, epoch, stream, ip4, ip6, port, magic, types, sids, lengths, flags,
         setting_ids, initial_windows, max_frames, increments) = columns  # fmt: skip
        where = f"frame {number}"
        type_list = [_int(v, where=where) for v in _split(types)]
        sid_list = [_int(v, where=where) for v in _split(sids)]
        length_list = [_int(v, where=where) for v in _split(lengths)]
        flag_list = [_int(v, where=where) for v in _split(flags)]
        if not (len(type_list) == len(sid_list) == len(length_list) == len(flag_list)):
            raise CaptureFormatError(
                f"{where}: http2 type/stream/length/flags lists do not line up",
                hint="the capture may be damaged at this frame",
            )
        ids = iter(_int(v, where=where) for v in _split(setting_ids))
        windows = iter(_int(v, where=where) for v in _split(initial_windows))
        frames = iter(_int(v, where=where) for v in _split(max_frames))
        incs = iter(_int(v, where=where) for v in _split(increments))
        if not (magic or type_list):
            continue
        row = partial(H2FrameRow, frame_number=int(number), ts_ns=_epoch_ns(epoch),
                      tcp_stream=_int(stream, where=where), is_preface=bool(magic),
                      src=f"{ip4}:{port}" if ip4 else f"[{ip6}]:{port}")
        if magic and not type_list:
            # A TCP frame holding only the client preface ("PRI * HTTP/2.0 ...")
            # has no HTTP/2 frame; kept as a row so that its sender is the client.
            rows.append(row(frame_type=FRAME_PREFACE, stream_id=0, length_bytes=0, flags=0,
                            settings=(), increment_bytes=None))
        for ftype, sid, length, flag in zip(
            type_list, sid_list, length_list, flag_list, strict=True
        ):
            settings: list[tuple[int, int | None]] = []
            increment: int | None = None
            if ftype == FRAME_SETTINGS and not flag & FLAG_ACK:
                for _ in range(length // 6):
                    setting = next(ids, None)
                    if setting is None:
                        break
                    value: int | None = None
                    if setting == SETTING_INITIAL_WINDOW_SIZE:
                        value = next(windows, None)
                    elif setting == SETTING_MAX_FRAME_SIZE:
                        value = next(frames, None)
                    settings.append((setting, value))
            elif ftype == FRAME_WINDOW_UPDATE:
                increment = next(incs, None)
            rows.append(row(frame_type=ftype, stream_id=sid, length_bytes=length, flags=flag,
                            settings=tuple(settings), increment_bytes=increment))
    return rows


@dataclass(frozen=True, kw_only=True)
class UploadStream:
    """Credit of one client stream that sent a request body."""

    stream_id: int
    ledger: CreditLedger
    finished: bool
    """The client ended the stream (END_STREAM seen)."""

    def to_dict(self, *, series: bool = True) -> dict[str, Any]:
        return attributes(self, "stream_id", "finished") | {
            "ledger": self.ledger.to_dict(series=series)}


@dataclass(frozen=True, kw_only=True)
class H2WireLedger:
    """HTTP/2 flow control of one TCP connection, seen from the uploading client."""

    tcp_stream: int
    """tshark's TCP conversation index."""
    client: str
    """Client ``ip:port``."""
    server: str
    """Server ``ip:port``."""
    start_epoch_ns: int
    """Capture time of the first HTTP/2 frame; ledger times are seconds after it."""
    duration_s: float
    """First to last HTTP/2 frame."""
    client_settings: dict[str, int]
    """Client SETTINGS (first value of each parameter; names as in RFC 9113)."""
    server_settings: dict[str, int]
    """Server SETTINGS (first value of each parameter)."""
    server_initial_window_bytes: int
    """Server SETTINGS_INITIAL_WINDOW_SIZE: the stream window for uploads (65535 if unset)."""
    server_max_frame_bytes: int
    """Server SETTINGS_MAX_FRAME_SIZE (16384 if unset)."""
    data_bytes_to_server: int
    """DATA payload bytes client -> server."""
    data_bytes_to_client: int
    """DATA payload bytes server -> client."""
    window_updates_from_server: int
    """WINDOW_UPDATE frames the server sent (stream and connection)."""
    connection_window_updates_from_server: int
    """Of those, on stream 0."""
    window_updates_from_client: int
    """WINDOW_UPDATE frames the client sent."""
    connection: CreditLedger
    """Client -> server connection credit."""
    uploads: tuple[UploadStream, ...]
    """Client streams that carried DATA, by stream id."""
    bound: BindingWindow
    """Which window held the largest upload back."""
    first_frame: int
    """First capture frame number of this connection's HTTP/2 traffic (evidence)."""
    last_frame: int

    @property
    def stalled_s(self) -> float:
        """Seconds the upload waited for credit (on the binding window)."""
        return self.bound.stalled_s

    @property
    def stall_count(self) -> int:
        return max([self.connection.stall_count, *(u.ledger.stall_count for u in self.uploads)])

    def to_dict(self, *, series: bool = True) -> dict[str, Any]:
        return attributes(
            self, "tcp_stream", "client", "server", "start_epoch_ns", "duration_s",
            "client_settings", "server_settings", "server_initial_window_bytes",
            "server_max_frame_bytes", "data_bytes_to_server", "data_bytes_to_client",
            "window_updates_from_server", "connection_window_updates_from_server",
            "window_updates_from_client", "stalled_s", "stall_count") | {
            "bound": self.bound.to_dict(), "connection": self.connection.to_dict(series=series),
            "uploads": [upload.to_dict(series=series) for upload in self.uploads],
            "first_frame": self.first_frame, "last_frame": self.last_frame}


def _announced_client(rows: Sequence[H2FrameRow]) -> str | None:
    """The client by what it sent: the preface, else the first odd stream it opened."""
    for row in rows:
        if row.is_preface:
            return row.src
    for row in rows:
        if row.frame_type == FRAME_HEADERS and row.stream_id % 2 == 1:
            return row.src
    return None


def _client_of(rows: Sequence[H2FrameRow]) -> str:
    """The client: who sent the preface; else who opened an odd stream; else the higher port."""
    announced = _announced_client(rows)
    if announced is not None:
        return announced
    sources = sorted({row.src for row in rows}, key=lambda s: int(s.rsplit(":", 1)[1]))
    return sources[-1]


def _settings_dict(rows: Iterable[H2FrameRow]) -> dict[str, int]:
    merged: dict[str, int] = {}
    for row in rows:
        for setting, value in row.settings:
            name = SETTING_NAMES.get(setting, f"0x{setting:x}")
            merged.setdefault(name, value if value is not None else -1)
    return {name: value for name, value in merged.items() if value >= 0}


class _CreditEvents:
    """The credit events of one connection's uploads, read frame by frame."""

    def __init__(self, client: str, t0_ns: int) -> None:
        self.client = client
        self.t0_ns = t0_ns
        self.streams: dict[int, list[CreditEvent]] = defaultdict(list)
        """Events per client stream."""
        self.connection: list[CreditEvent] = [
            WindowOpened(t_s=0.0, window_bytes=HTTP2_DEFAULT_WINDOW_BYTES)]
        """Events of the connection window (stream 0)."""
        self.opened: set[int] = set()
        self.finished: set[int] = set()
        """Streams the client ended (END_STREAM)."""
        self.server_initial = HTTP2_DEFAULT_WINDOW_BYTES
        """The server's SETTINGS_INITIAL_WINDOW_SIZE so far."""

    def add(self, row: H2FrameRow) -> None:
        t = (row.ts_ns - self.t0_ns) / 1e9
        if row.src == self.client:
            self._from_client(row, t)
        elif row.frame_type == FRAME_SETTINGS:
            self._server_settings(row, t)
        elif row.frame_type == FRAME_WINDOW_UPDATE and row.increment_bytes is not None:
            update = WindowIncreased(t_s=t, increment_bytes=row.increment_bytes)
            if row.stream_id == 0:
                self.connection.append(update)
            elif row.stream_id in self.opened:
                self.streams[row.stream_id].append(update)

    def _from_client(self, row: H2FrameRow, t: float) -> None:
        if row.frame_type == FRAME_HEADERS and row.stream_id not in self.opened:
            self.opened.add(row.stream_id)
            self.streams[row.stream_id].append(
                WindowOpened(t_s=t, window_bytes=self.server_initial))
        if row.frame_type == FRAME_DATA:
            self.streams[row.stream_id].append(DataSent(t_s=t, size_bytes=row.length_bytes))
            self.connection.append(DataSent(t_s=t, size_bytes=row.length_bytes))
        if row.frame_type in (FRAME_DATA, FRAME_HEADERS) and row.flags & FLAG_END_STREAM:
            self.finished.add(row.stream_id)

    def _server_settings(self, row: H2FrameRow, t: float) -> None:
        """A new initial window changes every stream still open (RFC 9113, 6.9.2)."""
        for setting, value in row.settings:
            if setting == SETTING_INITIAL_WINDOW_SIZE and value is not None:
                for sid in self.opened - self.finished:
                    self.streams[sid].append(InitialWindowChanged(
                        t_s=t, old_initial_bytes=self.server_initial, new_initial_bytes=value))
                self.server_initial = value

    def uploads(self, end_s: float) -> list[UploadStream]:
        """The streams that carried DATA, by stream id, each replayed."""
        uploads: list[UploadStream] = []
        for sid in sorted(self.streams):
            events = self.streams[sid]
            if not any(isinstance(event, DataSent) for event in events):
                continue
            done = sid in self.finished
            uploads.append(UploadStream(
                stream_id=sid, finished=done,
                ledger=credit_ledger(events, scope=LedgerScope.H2_STREAM, label=f"stream {sid}",
                                     open_until_s=None if done else end_s)))
        return uploads


def _count(rows: Iterable[H2FrameRow], frame_type: int, *, stream_id: int | None = None) -> int:
    return sum(1 for r in rows if r.frame_type == frame_type
               and (stream_id is None or r.stream_id == stream_id))


def _data_bytes(rows: Iterable[H2FrameRow]) -> int:
    return sum(r.length_bytes for r in rows if r.frame_type == FRAME_DATA)


def _ledger_for_connection(tcp_stream: int, rows: Sequence[H2FrameRow]) -> H2WireLedger:
    client = _client_of(rows)
    server = next((src for src in {row.src for row in rows} if src != client), "unknown")
    t0 = rows[0].ts_ns
    end_s = (rows[-1].ts_ns - t0) / 1e9
    from_client = [row for row in rows if row.src == client]
    from_server = [row for row in rows if row.src != client]
    events = _CreditEvents(client, t0)
    for row in rows:
        events.add(row)
    uploads = events.uploads(end_s)
    connection = credit_ledger(
        events.connection, scope=LedgerScope.H2_CONNECTION, label="connection",
        open_until_s=None if all(upload.finished for upload in uploads) else end_s)
    if uploads:
        largest = max(uploads, key=lambda upload: upload.ledger.bytes_sent)
        bound = binding_window(largest.ledger, connection)
    else:
        bound = BindingWindow(
            which="none", window_bytes=connection.peak_credit_bytes, stalled_s=0.0
        )
    server_settings = _settings_dict(from_server)
    return H2WireLedger(
        tcp_stream=tcp_stream, client=client, server=server, start_epoch_ns=t0,
        duration_s=end_s,
        client_settings=_settings_dict(from_client),
        server_settings=server_settings,
        server_initial_window_bytes=server_settings.get(
            "INITIAL_WINDOW_SIZE", HTTP2_DEFAULT_WINDOW_BYTES
        ),
        server_max_frame_bytes=server_settings.get("MAX_FRAME_SIZE", 16_384),
        data_bytes_to_server=_data_bytes(from_client),
        data_bytes_to_client=_data_bytes(from_server),
        window_updates_from_server=_count(from_server, FRAME_WINDOW_UPDATE),
        connection_window_updates_from_server=_count(from_server, FRAME_WINDOW_UPDATE,
                                                     stream_id=0),
        window_updates_from_client=_count(from_client, FRAME_WINDOW_UPDATE),
        connection=connection, uploads=tuple(uploads), bound=bound,
        first_frame=rows[0].frame_number, last_frame=rows[-1].frame_number,
    )


def _connections(rows: Iterable[H2FrameRow]) -> list[tuple[int, list[H2FrameRow]]]:
    """The frames of each TCP connection in time order, in connection order."""
    by_connection: dict[int, list[H2FrameRow]] = defaultdict(list)
    for row in rows:
        by_connection[row.tcp_stream].append(row)
    return [(stream, sorted(frames, key=lambda r: (r.ts_ns, r.frame_number)))
            for stream, frames in sorted(by_connection.items())]


def h2_ledgers_from_rows(rows: Sequence[H2FrameRow]) -> list[H2WireLedger]:
    """One ledger per TCP connection that carried HTTP/2, in connection order."""
    return [_ledger_for_connection(stream, frames) for stream, frames in _connections(rows)]


@dataclass(frozen=True, kw_only=True)
class GitH2Window:
    """The windows git advertised as the receiving client (a clone), from its decrypted
    frames: each stream may receive the client's ``SETTINGS_INITIAL_WINDOW_SIZE`` (65,535 B
    when the client sends none, RFC 9113 section 6.5.2) before a ``WINDOW_UPDATE`` on it,
    and the connection 65,535 B plus whatever the client's ``WINDOW_UPDATE`` frames on
    stream 0 add."""

    stream_window_bytes: int
    """git's ``SETTINGS_INITIAL_WINDOW_SIZE`` (65,535 B when it sent none)."""
    connection_window_bytes: int
    """The connection window git granted before the first DATA frame: 65,535 B plus its
    ``WINDOW_UPDATE`` increments on stream 0 until then."""
    window_updates: int
    """``WINDOW_UPDATE`` frames git sent on the connection (stream and connection)."""
    data_bytes: int
    """DATA bytes the server sent on it."""
    first_frame: int
    """First capture frame number of the connection (evidence)."""


def _granted_window(rows: list[H2FrameRow]) -> GitH2Window | None:
    """What the announced client granted on one connection before the server's first DATA
    frame; None without a client or DATA to it."""
    client = _announced_client(rows)
    to_client = [r for r in rows if r.src != client and r.frame_type == FRAME_DATA]
    if not client or not to_client:
        return None
    first_data = to_client[0].frame_number
    from_client = [r for r in rows if r.src == client]
    initial = next((value for row in from_client for setting, value in row.settings
                    if setting == SETTING_INITIAL_WINDOW_SIZE and value is not None),
                   HTTP2_DEFAULT_WINDOW_BYTES)
    raised = sum(r.increment_bytes or 0 for r in from_client
                 if r.frame_type == FRAME_WINDOW_UPDATE and r.stream_id == 0
                 and r.frame_number <= first_data)
    return GitH2Window(
        stream_window_bytes=initial, connection_window_bytes=HTTP2_DEFAULT_WINDOW_BYTES + raised,
        window_updates=sum(1 for r in from_client if r.frame_type == FRAME_WINDOW_UPDATE),
        data_bytes=sum(r.length_bytes for r in to_client), first_frame=rows[0].frame_number)


def git_h2_window(text: str) -> GitH2Window | None:
    """The windows git granted on the connection that carried most DATA to it, from
    ``<stem>.http2.tsv`` (``--full``); None when the text holds no HTTP/2 connection that
    carried DATA to the client (or is not tshark's fields)."""
    try:
        frames = parse_tshark_fields(text)
    except CaptureFormatError:
        return None
    best: GitH2Window | None = None
    for _, rows in _connections(frames):
        window = _granted_window(rows)
        if window is not None and (best is None or window.data_bytes > best.data_bytes):
            best = window
    return best


@dataclass(frozen=True, kw_only=True)
class ClientStop:
    """An upload the client left unfinished while it still had credit to send."""

    stream_id: int
    sent_bytes: int
    """DATA bytes the client sent on the stream."""
    stream_credit_left_bytes: int
    """The stream's send credit after the client's last event."""
    connection_credit_left_bytes: int
    """The connection's send credit at the end."""
    last_data_s: float | None
    """Time of the client's last DATA frame, seconds after the ledger's start."""


def client_stopped_with_credit(ledger: H2WireLedger) -> ClientStop | None:
    """The largest upload of ``ledger`` when the client never ended it (no END_STREAM)
    although both its stream and the connection still had send credit: the client, not
    the server's windows, stopped the upload. ``None`` otherwise."""
    if not ledger.uploads:
        return None
    upload = max(ledger.uploads, key=lambda u: u.ledger.bytes_sent)
    if upload.finished or not len(upload.ledger.credit_bytes):
        return None
    stream_left = int(upload.ledger.credit_bytes[-1])
    conn_left = (int(ledger.connection.credit_bytes[-1]) if len(ledger.connection.credit_bytes)
                 else 0)
    if stream_left <= 0 or conn_left <= 0:
        return None
    return ClientStop(stream_id=upload.stream_id, sent_bytes=upload.ledger.bytes_sent,
                      stream_credit_left_bytes=stream_left,
                      connection_credit_left_bytes=conn_left,
                      last_data_s=upload.ledger.last_data_s)
