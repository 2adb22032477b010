"""HTTP/2 ledgers from tshark output.

``data/h2_small_window_push.tsv`` is tshark's output (``gitnetdiag.tools.tshark.tshark_argv``) for
``data/h2_small_window_push.pcapng``: the native probe pushing 100 kB to a
loopback h2 server with a 65535-byte window that grants credit 10 ms late,
followed by the probe's branch deletion on a second connection. The pcapng
carries its TLS secrets (``editcap --inject-secrets``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitnetdiag.analysis.h2ledger import (
    FRAME_PREFACE,
    TSHARK_FIELDS,
    h2_ledgers_from_rows,
    parse_tshark_fields,
)
from gitnetdiag.errors import CaptureFormatError

DATA = Path(__file__).parent / "data"


def _line(*columns: str) -> str:
    assert len(columns) == len(TSHARK_FIELDS)
    return "\t".join(columns)


def test_several_frames_in_one_packet_are_paired() -> None:
    """Server SETTINGS + SETTINGS ACK + HEADERS + DATA + DATA in one TCP frame."""
    text = _line(
        "13", "1700000000.500000001", "0", "10.0.0.2", "", "443", "",
        "4,4,1,0,0", "0,0,1,1,1", "30,0,34,216,0", "0x00,0x01,0x04,0x00,0x01",
        "1,2,4,5,8", "65535", "16384", "",
    )  # fmt: skip
    rows = parse_tshark_fields(text)
    assert [row.frame_type for row in rows] == [4, 4, 1, 0, 0]
    assert rows[0].settings == ((1, None), (2, None), (4, 65_535), (5, 16_384), (8, None))
    assert rows[1].settings == ()  # the ACK carries none
    assert [row.length_bytes for row in rows] == [30, 0, 34, 216, 0]
    assert rows[0].ts_ns == 1_700_000_000_500_000_001
    assert rows[0].src == "10.0.0.2:443"


def test_window_updates_and_settings_values_go_to_their_own_frames() -> None:
    """Two SETTINGS frames, only the second sets the window; two WINDOW_UPDATEs."""
    text = _line(
        "7", "1.0", "2", "", "2001:db8::1", "443", "",
        "4,8,4,8", "0,0,0,5", "6,4,12,4", "0x00,0x00,0x00,0x00",
        "3,3,4", "1048576", "", "1000,2000",
    )  # fmt: skip
    rows = parse_tshark_fields(text)
    assert rows[0].settings == ((3, None),)
    assert rows[2].settings == ((3, None), (4, 1_048_576))
    assert [row.increment_bytes for row in rows] == [None, 1000, None, 2000]
    assert rows[3].stream_id == 5
    assert rows[0].src == "[2001:db8::1]:443"


def test_settings_change_mid_upload_shifts_stream_credit() -> None:
    client, server = ("10.0.0.1", "50000"), ("10.0.0.2", "443")

    def frame(n: int, t: str, who: tuple[str, str], magic: str, *rest: str) -> str:
        return _line(str(n), t, "0", who[0], "", who[1], magic, *rest)

    text = "\n".join(
        [
            frame(1, "100.000", client, "PRI", "4,1", "0,1", "0,20", "0x00,0x04", "", "", "", ""),
            frame(2, "100.001", client, "", "0", "1", "65535", "0x00", "", "", "", ""),
            frame(3, "100.050", server, "", "4", "0", "6", "0x00", "4", "131071", "", ""),
            frame(4, "100.051", client, "", "0", "1", "65536", "0x00", "", "", "", ""),
            frame(5, "100.100", server, "", "8", "0", "4", "0x00", "", "", "", "200000"),
            frame(6, "100.101", client, "", "0", "1", "10", "0x01", "", "", "", ""),
        ]
    )
    (ledger,) = h2_ledgers_from_rows(parse_tshark_fields(text))
    assert ledger.client == "10.0.0.1:50000"
    assert ledger.server_initial_window_bytes == 131_071
    (upload,) = ledger.uploads
    assert upload.finished
    # 65535 - 65535 = 0, +65536 (SETTINGS delta), -65536 = 0, then -10.
    assert upload.ledger.credit_bytes.tolist() == [65_535, 0, 65_536, 0, -10]
    # The connection window (65535) was overrun by the crafted peer until the update at .100.
    assert ledger.connection.stall_count >= 1
    assert ledger.data_bytes_to_server == 65_535 + 65_536 + 10


def test_recorded_small_window_push() -> None:
    rows = parse_tshark_fields((DATA / "h2_small_window_push.tsv").read_text())
    push, delete = h2_ledgers_from_rows(rows)
    assert push.server_initial_window_bytes == 65_535
    assert push.client_settings["INITIAL_WINDOW_SIZE"] == 65_535
    assert push.server_settings["MAX_FRAME_SIZE"] == 16_384
    (upload,) = push.uploads
    assert upload.stream_id == 3
    assert upload.ledger.bytes_sent == push.data_bytes_to_server == 100_503
    assert upload.ledger.peak_credit_bytes == 65_535
    # 100 kB through a 64 KiB window refilled in halves: two waits of about 10 ms.
    assert upload.ledger.stall_count == 2
    assert 0.015 < upload.ledger.stalled_s < 0.05
    assert push.connection.stall_count == 2
    assert push.window_updates_from_server == 6
    assert push.connection_window_updates_from_server == 3
    assert push.bound.which == "both"
    assert delete.uploads[0].ledger.bytes_sent == 148
    assert delete.stall_count == 0
    json.dumps(push.to_dict())


def test_bad_tshark_output_is_a_capture_format_error() -> None:
    with pytest.raises(CaptureFormatError):
        parse_tshark_fields("1\t2\t3\n")
    bad = _line("1", "1.0", "0", "1.1.1.1", "", "1", "", "0,1", "1", "5", "0x00", "", "", "", "")
    with pytest.raises(CaptureFormatError):
        parse_tshark_fields(bad)


def test_preface_alone_in_a_frame_names_the_client() -> None:
    """h2c: the preface goes out alone, the client never opens a stream with HEADERS
    (the upgraded request is stream 1) and the server's port is the higher one."""
    client, server = ("10.0.0.1", "40000"), ("10.0.0.2", "50080")

    def frame(n: int, t: str, who: tuple[str, str], magic: str, *rest: str) -> str:
        return _line(str(n), t, "0", who[0], "", who[1], magic, *rest)

    text = "\n".join(
        [
            frame(1, "100.000", client, "PRI * HTTP/2.0", "", "", "", "", "", "", "", ""),
            frame(2, "100.001", server, "", "4", "0", "6", "0x00", "4", "65535", "", ""),
            frame(3, "100.002", client, "", "4", "0", "0", "0x00", "", "", "", ""),
            frame(4, "100.003", client, "", "0", "1", "1000", "0x01", "", "", "", ""),
        ]
    )
    rows = parse_tshark_fields(text)
    assert rows[0].is_preface and rows[0].frame_type == FRAME_PREFACE
    (ledger,) = h2_ledgers_from_rows(rows)
    assert ledger.client == "10.0.0.1:40000"
    assert ledger.server == "10.0.0.2:50080"
    assert ledger.data_bytes_to_server == 1000
