"""TCP_INFO samples -> the limit shares a capture would give."""

from __future__ import annotations

from typing import Any

import pytest

from gitnetdiag.analysis.tcpinfo import CLIENT, summarize_sender


def _sample(t_s: float, local: str, **counters: float) -> dict[str, Any]:
    return {"t_s": t_s, "local": local, "peer": "10.0.0.2:443", "source": "ss -tin",
            "counters": counters}


def test_the_upload_socket_gives_shares_of_its_busy_time() -> None:
    samples = [
        _sample(0.0, "a:1", bytes_acked=100, bytes_sent=100, bytes_retrans=0,
                busy_time_us=10_000, rwnd_limited_us=0, sndbuf_limited_us=0, total_retrans=0),
        _sample(0.0, "a:2", bytes_acked=50, bytes_sent=50),
        _sample(2.0, "a:2", bytes_acked=60, bytes_sent=60),
        _sample(1.0, "a:1", bytes_acked=500_000, bytes_sent=520_000, bytes_retrans=10_000,
                busy_time_us=1_010_000, rwnd_limited_us=800_000, sndbuf_limited_us=100_000,
                total_retrans=7, rtt_us=50_000, min_rtt_us=49_000, snd_wnd_bytes=131_072,
                unacked=40, snd_mss=1448, delivery_rate_bytes_per_s=1_300_000),
        _sample(2.0, "a:1", bytes_acked=1_000_100, bytes_sent=1_040_100, bytes_retrans=20_000,
                busy_time_us=2_010_000, rwnd_limited_us=1_600_000, sndbuf_limited_us=200_000,
                total_retrans=14, rtt_us=52_000, min_rtt_us=49_000, snd_wnd_bytes=131_072,
                unacked=44, snd_mss=1448, delivery_rate_bytes_per_s=1_300_000),
    ]
    s = summarize_sender(samples, CLIENT)
    assert s is not None and s.samples == 3 and s.acked_bytes == 1_000_000
    assert s.rwnd_limited_share == pytest.approx(0.8)
    assert s.sndbuf_limited_share == pytest.approx(0.1)
    assert s.retransmission_rate == pytest.approx(20_000 / 1_040_000)
    assert s.retransmitted_segments == 14
    assert s.min_rtt_s == pytest.approx(0.049) and s.median_rtt_s == pytest.approx(0.051)
    assert s.peer_window_max_bytes == 131_072
    assert s.in_flight_median_bytes == 42 * 1448


def test_a_push_held_by_its_send_buffer_counts_it_although_the_kernel_does_not() -> None:
    """The kernel counts ``sndbuf_limited`` only while the write queue is empty (see
    ``analysis/tcpinfo.py``): a pushing client refilling a 64 KiB buffer shows 0 there, and
    full buffers in ``ss -tinm``'s levels. Its shares follow the clone's sender's rule, the
    larger of the two; a flight at the peer's window counts as window-bound the same way."""
    def level(t_s: float, sent: float, **caps: float) -> dict[str, Any]:
        return _sample(t_s, "a:1", bytes_acked=sent, bytes_sent=sent, busy_time_us=t_s * 1e6,
                       rwnd_limited_us=0, sndbuf_limited_us=0, unacked=40, snd_mss=1448,
                       snd_cwnd=2000, **caps)

    buffer = summarize_sender([level(0.1, 1000, snd_wnd_bytes=8e6),
                               *(level(float(t), 1e6 * t, snd_wnd_bytes=8e6,
                                       snd_buf_bytes=65_536, wmem_queued_bytes=64_000)
                                 for t in range(1, 5))], CLIENT)
    assert buffer is not None
    assert buffer.sndbuf_limited_share == pytest.approx(1.0, abs=1e-3)
    assert buffer.rwnd_limited_share == 0.0
    window = summarize_sender([level(float(t), 1e6 * t, snd_wnd_bytes=65_536)
                               for t in range(1, 5)], CLIENT)
    assert window is not None
    assert window.rwnd_limited_share == 1.0 and window.sndbuf_limited_share == 0.0


def test_no_bytes_moved_is_no_summary() -> None:
    assert summarize_sender([], CLIENT) is None
    assert summarize_sender([_sample(0.0, "a:1", bytes_acked=5),
                             _sample(1.0, "a:1", bytes_acked=5)], CLIENT) is None


def test_a_kernel_without_busy_time_gives_unknown_shares_not_zero() -> None:
    s = summarize_sender([_sample(0.0, "a:1", bytes_acked=0),
                          _sample(1.0, "a:1", bytes_acked=1000)], CLIENT)
    assert s is not None and s.rwnd_limited_share is None and s.retransmission_rate is None


def test_a_run_recorded_before_the_rename_gives_its_delivery_rate() -> None:
    """``delivery_rate_bps`` held bytes per second under a bits name; old runs still read."""
    old = [_sample(float(t), "a:1", bytes_acked=1_000 * t, bytes_sent=1_000 * t,
                   busy_time_us=1_000 * t, delivery_rate_bps=1_300_000) for t in range(3)]
    new = [_sample(float(t), "a:1", bytes_acked=1_000 * t, bytes_sent=1_000 * t,
                   busy_time_us=1_000 * t, delivery_rate_bytes_per_s=1_300_000)
           for t in range(3)]
    for samples in (old, new):
        s = summarize_sender(samples, CLIENT)
        assert s is not None and s.delivery_rate_median_bytes_per_s == 1_300_000


def test_a_socket_sampled_before_its_first_byte_counts_its_counters_from_zero() -> None:
    """``ss`` leaves out counters that are still zero: the HTTP/2 push of a non-root lab run
    under 2% loss was first sampled during its TLS handshake (no ``bytes_sent``,
    ``bytes_retrans`` or ``busy``), and its 47,784 B retransmitted of 2,043,753 B sent were
    lost, so ``packet-loss`` took its 197 kB/s for a loss-free reference and priced itself
    at 0 s. A counter the last sample lacks stays unknown."""
    samples = [
        _sample(0.25, "a:1", snd_mss=524, unacked=1, rcv_ssthresh=64_240),
        _sample(11.3, "a:1", bytes_acked=1_984_386, bytes_sent=2_043_753, bytes_retrans=47_784,
                busy_time_us=10_164_000, rwnd_limited_us=0, sndbuf_limited_us=0,
                total_retrans=34, rtt_us=51_689, min_rtt_us=50_000),
    ]
    s = summarize_sender(samples, CLIENT)
    assert s is not None
    assert s.retransmitted_bytes == 47_784
    assert s.retransmission_rate == pytest.approx(47_784 / 2_043_753)
    assert s.retransmitted_segments == 34
    assert s.busy_s == pytest.approx(10.164) and s.rwnd_limited_share == 0.0
    assert s.delivery_rate_median_bytes_per_s is None
