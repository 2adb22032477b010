"""TCP connection analysis on crafted conversations, one pathology per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitnetdiag.analysis.tcp import (
    ConnectionAnalysis,
    LimitKind,
    TcpAnalyzer,
    analyze_connections,
    guess_protocol,
)
from gitnetdiag.capture import read_capture
from tests.capture.craft import Conversation

MSS = 1000
RTT = 0.05


def analyse(conv: Conversation, tmp_path: Path, **kw: object) -> list[ConnectionAnalysis]:
    r = read_capture(conv.pcap(tmp_path / "c.pcap"), **kw)  # type: ignore[arg-type]
    return analyze_connections(r.packets, r.connections)


def window_limited_transfer(
    conv: Conversation, *, rounds: int, per_round: int, win: int, scale_shift: int = 0
) -> None:
    """The client fills the server's window each round; ACKs come one RTT later."""
    for _ in range(rounds):
        for _ in range(per_round):
            conv.segment("c", "PA", dt_s=0.0002, payload=MSS)
        conv.segment("s", "A", dt_s=RTT, win=win >> scale_shift)


def test_window_flat_at_64k_without_window_scaling(tmp_path: Path) -> None:
    """No wscale in the handshake: window <= 64 KiB and the sender is rwnd-limited."""
    conv = Conversation()
    conv.handshake(c_opts=[("MSS", MSS)], s_opts=[("MSS", MSS)], s_win=65535)
    window_limited_transfer(conv, rounds=20, per_round=65, win=65535)
    (c,) = analyse(conv, tmp_path)
    assert c.handshake.window_scale_known
    assert not c.handshake.window_scaling
    assert c.b_to_a.max_window_bytes == 65535
    assert c.a_to_b.window_scale == 0
    assert c.bulk_direction == 0
    assert c.a_to_b.limits.dominant() is LimitKind.RWND
    assert c.a_to_b.limits.share(LimitKind.RWND) > 0.7
    assert c.a_to_b.max_in_flight_bytes == 65 * MSS
    assert c.a_to_b.rtt.samples > 0
    assert c.a_to_b.rtt.median_s == pytest.approx(RTT, rel=0.1)
    assert c.handshake.rtt_s == pytest.approx(RTT + 0.0001, abs=1e-6)


def test_scaled_window_uses_own_handshake(tmp_path: Path) -> None:
    """Windows are scaled by the advertiser's shift; without a handshake the scale is unknown."""
    conv = Conversation()
    conv.handshake(c_opts=[("WScale", 2)], s_opts=[("WScale", 4)], s_win=1000)
    conv.segment("s", "A", dt_s=0.01, win=1000)
    (c,) = analyse(conv, tmp_path)
    assert c.b_to_a.max_window_bytes == 16000
    assert c.b_to_a.window_scale == 4

    mid = Conversation()
    mid.segment("c", "PA", payload=10)
    mid.segment("s", "A", dt_s=0.01, win=1000)
    (m,) = analyse(mid, tmp_path)
    assert m.b_to_a.window_scale is None
    assert not m.handshake.window_scale_known
    assert m.b_to_a.max_window_bytes == 1000


def test_zero_window(tmp_path: Path) -> None:
    """The receiver closes its window for 0.3 s: one zero-window event of that length."""
    conv = Conversation()
    conv.handshake()
    for _ in range(4):
        conv.segment("c", "PA", dt_s=0.001, payload=MSS)
    conv.segment("s", "A", dt_s=RTT, win=0)
    conv.segment("s", "A", dt_s=0.3, win=512)
    for _ in range(4):
        conv.segment("c", "PA", dt_s=0.001, payload=MSS)
    conv.segment("s", "A", dt_s=RTT, win=512)
    (c,) = analyse(conv, tmp_path)
    assert c.b_to_a.zero_window_count == 1
    assert c.b_to_a.zero_window_s == pytest.approx(0.3)
    (event,) = c.b_to_a.zero_window_events
    assert event.frame == 8
    assert c.a_to_b.zero_window_count == 0
    assert c.a_to_b.limits.rwnd_s >= 0.3


def test_syn_retransmissions(tmp_path: Path) -> None:
    """The same SYN three times (1 s, 2 s backoff): one connection, two SYN retransmissions."""
    conv = Conversation()
    conv.segment("c", "S", options=[("MSS", 1460)])
    conv.segment("c", "S", dt_s=1, seq=1000, options=[("MSS", 1460)])
    conv.segment("c", "S", dt_s=2, seq=1000, options=[("MSS", 1460)])
    conv.segment("s", "SA", dt_s=RTT)
    conv.segment("c", "A", dt_s=0.0001)
    (c,) = analyse(conv, tmp_path)
    assert c.handshake.syn_count == 3
    assert c.handshake.syn_retransmissions == 2
    assert c.handshake.synack_retransmissions == 0
    assert c.handshake.syn_to_synack_s == pytest.approx(RTT)


def test_synack_retransmitted_after_ack(tmp_path: Path) -> None:
    """The server resends its SYN-ACK although the client's ACK was seen: accept queue full."""
    conv = Conversation()
    conv.handshake()
    conv.segment("s", "SA", dt_s=1, seq=900_000)
    conv.segment("c", "A", dt_s=0.0001)
    conv.segment("s", "SA", dt_s=2, seq=900_000)
    (c,) = analyse(conv, tmp_path)
    assert c.handshake.synack_count == 3
    assert c.handshake.synack_retransmissions == 2
    assert c.handshake.synack_after_ack == 2


def test_resets_and_which_side(tmp_path: Path) -> None:
    conv = Conversation()
    conv.handshake()
    conv.segment("c", "PA", dt_s=0.01, payload=100)
    conv.segment("s", "R", dt_s=0.01)
    (c,) = analyse(conv, tmp_path)
    assert c.b_to_a.resets_sent == 1
    assert c.b_to_a.first_reset_frame == 5
    assert c.a_to_b.resets_sent == 0
    assert c.b_to_a.first_reset_ts_ns == c.last_ts_ns and c.a_to_b.first_reset_ts_ns is None
    assert c.a_to_b.first_fin_ts_ns is None and c.b_to_a.first_fin_ts_ns is None


def test_each_sides_first_fin_and_largest_segment(tmp_path: Path) -> None:
    """Who closed first and when (a clone's end in a bare capture), and the largest
    segment each side sent (tiny segments only: progress and no pack)."""
    conv = Conversation()
    conv.handshake()
    conv.segment("c", "PA", dt_s=0.01, payload=100)
    conv.segment("s", "PA", dt_s=0.01, payload=1400)
    conv.segment("s", "PA", dt_s=0.001, payload=60)
    conv.segment("s", "FA", dt_s=0.5)
    fin_ns = conv.t_ns
    conv.segment("c", "FA", dt_s=0.02)
    conv.segment("s", "FA", dt_s=0.02)  # a resent FIN: the first one counts
    (c,) = analyse(conv, tmp_path)
    assert c.b_to_a.first_fin_ts_ns == fin_ns
    assert c.a_to_b.first_fin_ts_ns == fin_ns + 20_000_000
    assert (c.a_to_b.max_segment_bytes, c.b_to_a.max_segment_bytes) == (100, 1400)
    # The server's last segment above 300 B, and the small bytes after it.
    assert c.b_to_a.last_large_segment_ts_ns == fin_ns - 501_000_000
    assert c.b_to_a.small_tail_bytes == 60
    assert c.a_to_b.last_large_segment_ts_ns is None and c.a_to_b.small_tail_bytes == 100


def test_fast_retransmission_after_dupacks(tmp_path: Path) -> None:
    """Segment 3 lost, three duplicate ACKs with SACK, resent quickly: a fast retransmission."""
    conv = Conversation()
    conv.handshake()
    base = conv.nxt["c"]
    for _ in range(8):
        conv.segment("c", "PA", dt_s=0.001, payload=MSS)
    lost = base + 2 * MSS
    conv.segment("s", "A", dt_s=RTT, ack=base + MSS)
    conv.segment("s", "A", dt_s=0.001, ack=base + 2 * MSS)
    for k in range(3):
        conv.segment("s", "A", dt_s=0.001, ack=lost,
                     options=[("SAck", (lost + MSS, lost + (2 + k) * MSS))])
    conv.segment("c", "PA", dt_s=0.001, seq=lost, payload=MSS)
    conv.segment("s", "A", dt_s=RTT, ack=base + 8 * MSS)
    (c,) = analyse(conv, tmp_path)
    d = c.a_to_b
    assert d.retransmissions == 1
    assert d.fast_retransmissions == 1
    assert d.timeout_retransmissions == 0
    assert d.spurious_retransmissions == 0
    assert d.retransmitted_bytes == MSS
    assert d.loss_rate == pytest.approx(1 / 9)
    assert d.unique_bytes == 8 * MSS
    assert d.limits.loss_s > 0


def test_timeout_retransmission(tmp_path: Path) -> None:
    """No ACK at all for a second, then the first segment again: an RTO retransmission."""
    conv = Conversation()
    conv.handshake()
    base = conv.nxt["c"]
    for _ in range(3):
        conv.segment("c", "PA", dt_s=0.001, payload=MSS)
    conv.segment("c", "PA", dt_s=1.0, seq=base, payload=MSS)
    conv.segment("s", "A", dt_s=RTT, ack=base + 3 * MSS)
    (c,) = analyse(conv, tmp_path)
    assert c.a_to_b.retransmissions == 1
    assert c.a_to_b.timeout_retransmissions == 1
    assert c.a_to_b.fast_retransmissions == 0
    # The wait for the timer counts as loss, not as the sender's own choice.
    assert c.a_to_b.limits.dominant() is LimitKind.LOSS


def test_spurious_retransmission_and_dsack(tmp_path: Path) -> None:
    """Data resent after the ACK covering it: spurious; the peer's D-SACK is counted."""
    conv = Conversation()
    conv.handshake()
    base = conv.nxt["c"]
    conv.segment("c", "PA", dt_s=0.001, payload=MSS)
    conv.segment("s", "A", dt_s=RTT)
    conv.segment("c", "PA", dt_s=0.3, seq=base, payload=MSS)
    conv.segment("s", "A", dt_s=RTT, options=[("SAck", (base, base + MSS))])
    (c,) = analyse(conv, tmp_path)
    assert c.a_to_b.spurious_retransmissions == 1
    assert c.a_to_b.dsack_blocks == 1


def test_self_limited_sender(tmp_path: Path) -> None:
    """Bursts well inside an open window, everything ACKed, then silence: the sender itself
    (HTTP/2 or SSH flow control above TCP) is the limit."""
    conv = Conversation()
    conv.handshake(s_win=65535)
    for _ in range(15):
        for _ in range(10):
            conv.segment("c", "PA", dt_s=0.0002, payload=MSS)
        conv.segment("s", "A", dt_s=RTT, win=20000)  # 20000 << 7: plenty of room
        conv.segment("c", "PA", dt_s=0.2, payload=MSS)
        conv.segment("s", "A", dt_s=RTT, win=20000)
    (c,) = analyse(conv, tmp_path)
    assert c.a_to_b.limits.dominant() is LimitKind.SELF
    assert c.a_to_b.limits.share(LimitKind.SELF) > 0.6
    assert c.a_to_b.limits.rwnd_s == 0


def test_rtt_samples_exclude_retransmitted_segments(tmp_path: Path) -> None:
    """Karn: the ACK that covers a retransmitted segment gives no RTT sample."""
    conv = Conversation()
    conv.handshake()
    base = conv.nxt["c"]
    conv.segment("c", "PA", dt_s=0.001, payload=MSS)
    conv.segment("s", "A", dt_s=0.04)
    conv.segment("c", "PA", dt_s=0.001, payload=MSS)
    conv.segment("c", "PA", dt_s=0.5, seq=base + MSS, payload=MSS)
    conv.segment("s", "A", dt_s=0.01)
    (c,) = analyse(conv, tmp_path)
    assert c.a_to_b.rtt.samples == 1
    assert c.a_to_b.rtt.min_s == pytest.approx(0.04)


def test_sequence_wraparound(tmp_path: Path) -> None:
    """Sequence numbers wrapping past 2**32 are neither retransmissions nor lost bytes."""
    conv = Conversation(isn={"c": 2**32 - 2500, "s": 5})
    conv.handshake()
    for _ in range(6):
        conv.segment("c", "PA", dt_s=0.001, payload=MSS)
        conv.segment("s", "A", dt_s=0.01)
    (c,) = analyse(conv, tmp_path)
    assert c.a_to_b.retransmissions == 0
    assert c.a_to_b.unique_bytes == 6 * MSS
    assert c.a_to_b.rtt.samples == 6


def _flat(value: object, path: str = "") -> dict[str, object]:
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for key, item in value.items():
            out.update(_flat(item, f"{path}.{key}"))
        return out
    return {path: value}


def test_streaming_equals_one_shot(tmp_path: Path) -> None:
    """Feeding the table in small chunks gives the same results as one chunk; only the
    limit shares may differ by the one interval per chunk boundary (docs/analysis.md)."""
    conv = Conversation()
    conv.handshake()
    window_limited_transfer(conv, rounds=6, per_round=30, win=30000, scale_shift=7)
    base = conv.nxt["c"]
    conv.segment("c", "PA", dt_s=0.7, seq=base - MSS, payload=MSS)
    conv.segment("s", "A", dt_s=RTT, win=0)
    conv.segment("s", "A", dt_s=0.2, win=100)
    r = read_capture(conv.pcap(tmp_path / "s.pcap"))
    whole = _flat(analyze_connections(r.packets, r.connections)[0].to_dict())
    for step in (7, 50):
        analyzer = TcpAnalyzer()
        for start in range(0, len(r.packets), step):
            analyzer.feed(r.packets[start : start + step])
        part = _flat(analyzer.results(r.connections)[0].to_dict())
        assert part.keys() == whole.keys()
        for key, value in whole.items():
            if isinstance(value, float):
                assert part[key] == pytest.approx(value, abs=0.002), (step, key)
            else:
                assert part[key] == value, (step, key)


def test_to_dict_and_protocol_guess(tmp_path: Path) -> None:
    conv = Conversation(server=("10.0.0.2", 9418))
    conv.handshake()
    (c,) = analyse(conv, tmp_path)
    d = c.to_dict()
    assert d["protocol"] == "git"
    assert d["a_to_b"]["limits"]["rwnd_s"] == 0.0
    assert d["handshake"]["syn_count"] == 1
    assert guess_protocol(50000, 22) == "ssh"
    assert guess_protocol(8443, 50000) == "https"
    assert guess_protocol(1, 2) == "tcp"
