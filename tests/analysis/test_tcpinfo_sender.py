"""The server's samples of a clone -> what held its bytes in flight (pure).

``data/server_sndbuf_clamp.server-tcpinfo.jsonl`` is a lab recording: a git:// clone under
``server-sndbuf-clamp`` (the server namespace's tcp_wmem at 64 KiB, 50 ms RTT), sampled
every 0.25 s in the server's namespace. The kernel's ``sndbuf_limited`` stays 0 there (it
counts only while the write queue is empty); the sampled levels show the buffer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitnetdiag.analysis.tcpinfo import SERVER, summarize_sender

RECORDED = [json.loads(line) for line in (
    Path(__file__).parent / "data" / "server_sndbuf_clamp.server-tcpinfo.jsonl"
).read_text().splitlines()]


def _row(t_s: float, peer: str = "198.18.1.2:1", **counters: float) -> dict[str, object]:
    return {"t_s": t_s, "peer": peer, "source": "ss -tin, server (this host)",
            "counters": counters}


def test_the_clamped_send_buffer_holds_most_of_the_bytes_sent() -> None:
    sender = summarize_sender(RECORDED, SERVER)
    assert sender is not None
    assert sender.sndbuf_limited_s == 0  # the chronograph misses it ...
    assert sender.buffer_full_share > 0.85  # ... the levels do not
    assert sender.sndbuf_limited_share == sender.buffer_full_share
    assert sender.rwnd_limited_share < 0.1 and sender.cwnd_full_share == 0
    assert sender.send_buffer_max_bytes == 65536 and sender.sent_bytes == 5_326_120
    assert sender.peer_window_median_bytes is not None
    assert sender.peer_window_median_bytes > 20 * sender.send_buffer_max_bytes
    assert sender.samples == 7 and sender.source.startswith("ss -tin, server (netns ")
    # whose socket it is (a forward proxy's when its leg ends there): git daemon's port
    assert sender.local == "198.18.2.2:9418" and sender.peer.startswith("198.18.1.2:")


def test_a_sender_at_the_clients_window_is_window_bound() -> None:
    rows = [_row(0.25 * i, bytes_sent=1e6 * i, unacked=44, snd_mss=1448, snd_wnd_bytes=65536,
                 snd_cwnd=400, snd_buf_bytes=4e6, wmem_queued_bytes=3.9e6,
                 busy_time_us=250_000 * i, rwnd_limited_us=240_000 * i,
                 sndbuf_limited_us=0) for i in range(1, 9)]
    sender = summarize_sender(rows, SERVER)
    assert sender is not None
    assert sender.window_full_share == 1.0 and sender.buffer_full_share == 0
    assert sender.rwnd_limited_share == 1.0 and sender.sndbuf_limited_share == 0
    assert sender.rwnd_limited_s == pytest.approx(1.92)


def test_slow_start_is_the_congestion_windows_and_a_starved_server_the_applications() -> None:
    slow_start = _row(0.25, bytes_sent=100_000, unacked=20, snd_mss=1448, snd_cwnd=20,
                      snd_wnd_bytes=4e6, snd_buf_bytes=65536, wmem_queued_bytes=65536)
    starved = _row(0.5, bytes_sent=400_000, unacked=3, snd_mss=1448, snd_cwnd=500,
                   snd_wnd_bytes=4e6, snd_buf_bytes=4e6, wmem_queued_bytes=5000)
    sender = summarize_sender([slow_start, starved], SERVER)
    assert sender is not None
    assert sender.cwnd_full_share == pytest.approx(0.25)
    assert sender.app_share == pytest.approx(0.75)


def test_the_socket_that_sent_most_is_the_clones_and_nothing_sent_is_none() -> None:
    small = _row(1.0, peer="198.18.1.2:2", bytes_sent=500)
    big = _row(1.0, bytes_sent=9e6, unacked=10, snd_mss=1448, snd_cwnd=100)
    sender = summarize_sender([small, big], SERVER)
    assert sender is not None and sender.sent_bytes == 9_000_000
    assert summarize_sender([], SERVER) is None
    assert summarize_sender([_row(1.0, bytes_sent=0)], SERVER) is None
