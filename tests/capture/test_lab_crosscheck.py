"""Cross-check against tshark on a real TCP transfer captured in a throwaway namespace."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import pytest

from gitnetdiag.analysis.capture_analysis import analyze_capture
from gitnetdiag.proc import run
from tests.capture.labcapture import lab_tools_missing, make_lab_capture

# The idle lane (tests/conftest.py): two readers of one capture file compared, no rate.
pytestmark = [pytest.mark.lab, pytest.mark.lab_lane("idle")]


def _tshark_fields(path: Path, *fields: str, display_filter: str = "") -> list[list[str]]:
    argv = ["tshark", "-r", str(path), "-T", "fields", "-E", "separator=|"]
    for f in fields:
        argv += ["-e", f]
    if display_filter:
        argv += ["-Y", display_filter]
    out = run(argv, timeout_s=120).stdout
    return [line.split("|") for line in out.splitlines() if line]


def test_agrees_with_tshark_on_a_real_transfer(tmp_path: Path) -> None:
    """Packet counts, bytes, retransmissions, windows and handshake RTT per direction agree
    with Wireshark's own TCP analysis.

    Tolerances: counts, bytes and windows exact; resent segments (Wireshark's
    retransmission + out-of-order + spurious flags) within max(2, 10 %); initial RTT within 2 us
    (microsecond timestamps)."""
    assert os.geteuid() == 0, "needs root (unshare -n, tcpdump)"
    missing = lab_tools_missing()
    assert missing is None, f"{missing} is not installed"
    capture = tmp_path / "real.pcap"
    received = make_lab_capture(capture, total_bytes=3_000_000, drop_probability=0.01)
    assert received == 3_000_000

    result = analyze_capture(capture)
    (conn,) = result.connections
    client_port = conn.connection.a_port

    rows = _tshark_fields(capture, "tcp.srcport", "tcp.len", "tcp.window_size",
                          "tcp.flags.syn", "tcp.analysis.retransmission",
                          "tcp.analysis.out_of_order", "tcp.analysis.spurious_retransmission")
    frames: dict[int, int] = defaultdict(int)
    payload: dict[int, int] = defaultdict(int)
    max_window: dict[int, int] = defaultdict(int)
    retrans: dict[int, int] = defaultdict(int)
    for sport, length, window, syn, rtx, ooo, spurious in rows:
        d = 0 if int(sport) == client_port else 1
        frames[d] += 1
        payload[d] += int(length)
        if syn == "0" or syn == "False":
            max_window[d] = max(max_window[d], int(window))
        # Wireshark files a resent segment that follows soon after as "out of order".
        retrans[d] += 1 if (rtx or ooo or spurious) else 0
    ours = (conn.a_to_b, conn.b_to_a)
    for d in (0, 1):
        assert ours[d].packets == frames[d]
        assert ours[d].payload_bytes == payload[d]
        assert ours[d].max_window_bytes == max_window[d]
    assert retrans[0] > 0, "the drop rule produced no retransmission"
    assert abs(conn.a_to_b.retransmissions - retrans[0]) <= max(2, retrans[0] // 10)
    assert conn.b_to_a.retransmissions == retrans[1]

    (irtt,) = {r[0] for r in _tshark_fields(capture, "tcp.analysis.initial_rtt",
                                             display_filter="tcp.analysis.initial_rtt")}
    assert conn.handshake.rtt_s is not None
    assert conn.handshake.rtt_s == pytest.approx(float(irtt), abs=2e-6)
    assert conn.a_to_b.rtt.samples > 100
    assert conn.b_to_a.zero_window_count + conn.a_to_b.limits.rwnd_s > 0
