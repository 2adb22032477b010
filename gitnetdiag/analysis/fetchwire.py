"""git's own HTTP/2 frames of a clone (``--full``, decrypted) -> the window it advertised (pure).

In a download the client's windows cap the server: each stream may receive
the client's ``SETTINGS_INITIAL_WINDOW_SIZE`` (65,535 B when the client sends
none, RFC 9113 section 6.5.2) before a ``WINDOW_UPDATE`` on it, and the
connection 65,535 B plus whatever the client's ``WINDOW_UPDATE`` frames on
stream 0 add. The connection read is the one that carried most DATA to the
client; the connection window is counted up to the first DATA frame the server
sent (what the client granted before the download began).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from gitnetdiag.analysis.flowcontrol import HTTP2_DEFAULT_WINDOW_BYTES
from gitnetdiag.analysis.h2ledger import (
    FRAME_DATA,
    FRAME_HEADERS,
    FRAME_WINDOW_UPDATE,
    SETTING_INITIAL_WINDOW_SIZE,
    H2FrameRow,
    parse_tshark_fields,
)
from gitnetdiag.errors import CaptureFormatError


@dataclass(frozen=True, kw_only=True)
class GitH2Window:
    """The windows git advertised on its download connection, from its decrypted frames."""

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


def _client(rows: list[H2FrameRow]) -> str:
    preface = [row.src for row in rows if row.is_preface]
    if preface:
        return preface[0]
    opened = [row.src for row in rows if row.frame_type == FRAME_HEADERS and row.stream_id % 2]
    return opened[0] if opened else ""


def git_h2_window(text: str) -> GitH2Window | None:
    """The download connection's windows from ``<stem>.http2.tsv``; None when the text holds
    no HTTP/2 connection that carried DATA to the client (or is not tshark's fields)."""
    try:
        frames = parse_tshark_fields(text)
    except CaptureFormatError:
        return None
    by_connection: dict[int, list[H2FrameRow]] = defaultdict(list)
    for row in frames:
        by_connection[row.tcp_stream].append(row)
    best: GitH2Window | None = None
    for rows in by_connection.values():
        rows.sort(key=lambda row: (row.ts_ns, row.frame_number))
        client = _client(rows)
        to_client = [r for r in rows if r.src != client and r.frame_type == FRAME_DATA]
        if not client or not to_client:
            continue
        first_data = to_client[0].frame_number
        from_client = [r for r in rows if r.src == client]
        initial = next((value for row in from_client for setting, value in row.settings
                        if setting == SETTING_INITIAL_WINDOW_SIZE and value is not None),
                       HTTP2_DEFAULT_WINDOW_BYTES)
        raised = sum(r.increment_bytes or 0 for r in from_client
                     if r.frame_type == FRAME_WINDOW_UPDATE and r.stream_id == 0
                     and r.frame_number <= first_data)
        window = GitH2Window(
            stream_window_bytes=initial,
            connection_window_bytes=HTTP2_DEFAULT_WINDOW_BYTES + raised,
            window_updates=sum(1 for r in from_client if r.frame_type == FRAME_WINDOW_UPDATE),
            data_bytes=sum(r.length_bytes for r in to_client), first_frame=rows[0].frame_number)
        if best is None or window.data_bytes > best.data_bytes:
            best = window
    return best
