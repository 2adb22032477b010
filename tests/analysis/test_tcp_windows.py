"""Zero-window probes and window scaling, checked against tshark's rules (issue 16)."""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.analysis.tcp import ConnectionAnalysis, analyze_connections
from gitnetdiag.capture import read_capture
from tests.capture.craft import Conversation

MSS = 1000


def analyse(conv: Conversation, tmp_path: Path) -> ConnectionAnalysis:
    r = read_capture(conv.pcap(tmp_path / "c.pcap"))
    (c,) = analyze_connections(r.packets, r.connections)
    return c


def _closed_window_then_probes(conv: Conversation, *, probes: int) -> int:
    """The server closes its window; the client probes with one byte at its next sequence
    number (the Windows/BSD style, tshark's tcp.analysis.zero_window_probe) until it opens.
    Returns the probed sequence number."""
    conv.handshake()
    for _ in range(4):
        conv.segment("c", "PA", dt_s=0.001, payload=MSS)
    conv.segment("s", "A", dt_s=0.05, win=0)
    probe_seq = conv.nxt["c"]
    for k in range(probes):
        conv.segment("c", "A", dt_s=0.2 * 2**k, seq=probe_seq, payload=1)
        conv.segment("s", "A", dt_s=0.05, win=0, ack=probe_seq)
    return probe_seq


def test_zero_window_probes_are_not_retransmissions(tmp_path: Path) -> None:
    """Five probes of the same byte, then the data from that byte on: no retransmission."""
    conv = Conversation()
    probe_seq = _closed_window_then_probes(conv, probes=5)
    conv.segment("s", "A", dt_s=1.0, win=512, ack=probe_seq)
    for k in range(4):
        conv.segment("c", "PA", dt_s=0.001, seq=probe_seq + k * MSS, payload=MSS)
    conv.segment("s", "A", dt_s=0.05, win=512)
    c = analyse(conv, tmp_path)
    assert c.a_to_b.zero_window_probes == 5
    assert c.a_to_b.retransmissions == 0
    assert c.a_to_b.fast_retransmissions == 0
    assert c.a_to_b.loss_rate == 0.0
    assert c.a_to_b.unique_bytes == 8 * MSS
    assert c.a_to_b.max_in_flight_bytes == 4 * MSS
    assert c.b_to_a.zero_window_count == 1
    assert c.a_to_b.limits.loss_s == 0.0


def test_probe_byte_accepted_then_data_after_it(tmp_path: Path) -> None:
    """The receiver takes the probed byte (ACKs it, window still 0): the data after it is new."""
    conv = Conversation()
    probe_seq = _closed_window_then_probes(conv, probes=1)
    conv.segment("s", "A", dt_s=0.3, win=512, ack=probe_seq + 1)
    conv.segment("c", "PA", dt_s=0.001, seq=probe_seq + 1, payload=MSS)
    conv.segment("s", "A", dt_s=0.05, win=512)
    c = analyse(conv, tmp_path)
    assert c.a_to_b.zero_window_probes == 1
    assert c.a_to_b.retransmissions == 0
    assert c.a_to_b.unique_bytes == 5 * MSS + 1


def test_one_byte_retransmission_with_an_open_window_is_still_one(tmp_path: Path) -> None:
    """Only a closed window makes a one-byte resend a probe."""
    conv = Conversation()
    conv.handshake()
    conv.segment("c", "PA", dt_s=0.001, payload=1)
    conv.segment("c", "PA", dt_s=0.5, seq=conv.nxt["c"] - 1, payload=1)
    conv.segment("s", "A", dt_s=0.05, win=512)
    c = analyse(conv, tmp_path)
    assert c.a_to_b.zero_window_probes == 0
    assert c.a_to_b.retransmissions == 1


def test_window_scale_from_a_synack_alone(tmp_path: Path) -> None:
    """The SYN was not captured; the SYN-ACK's option proves the SYN offered scaling too."""
    conv = Conversation()
    conv.handshake(s_opts=[("MSS", MSS), ("WScale", 5)], s_win=2000)
    del conv.frames[0]
    conv.segment("c", "PA", dt_s=0.001, payload=MSS, win=300)
    conv.segment("s", "A", dt_s=0.05, win=1000)
    c = analyse(conv, tmp_path)
    assert c.handshake.syn_count == 0
    assert c.handshake.window_scaling
    assert c.handshake.window_scale_known
    assert c.b_to_a.window_scale == 5
    assert c.b_to_a.max_window_bytes == 32_000
    assert c.a_to_b.window_scale is None  # the client's own shift was in the SYN
    assert c.a_to_b.max_window_bytes == 1024  # as sent (the handshake ACK): shift unknown


def test_synack_without_the_option_turns_scaling_off(tmp_path: Path) -> None:
    """RFC 7323: the SYN offered a shift, the SYN-ACK did not: nobody scales."""
    conv = Conversation()
    conv.handshake(c_opts=[("WScale", 7)], s_opts=[("MSS", MSS)], s_win=1000)
    conv.segment("s", "A", dt_s=0.01, win=40_000)
    conv.segment("c", "A", dt_s=0.01, win=30_000)
    c = analyse(conv, tmp_path)
    assert c.handshake.window_scale_known
    assert not c.handshake.window_scaling
    assert (c.a_to_b.window_scale, c.b_to_a.window_scale) == (0, 0)
    assert c.b_to_a.max_window_bytes == 40_000
    assert c.a_to_b.max_window_bytes == 64_240  # the SYN's own window


def test_synack_option_without_the_syns_is_ignored(tmp_path: Path) -> None:
    """A SYN-ACK that scales although the captured SYN did not offer it: no scaling."""
    conv = Conversation()
    conv.handshake(c_opts=[("MSS", MSS)], s_opts=[("WScale", 7)], s_win=1000)
    conv.segment("s", "A", dt_s=0.01, win=500)
    c = analyse(conv, tmp_path)
    assert not c.handshake.window_scaling
    assert c.b_to_a.window_scale == 0
    assert c.b_to_a.max_window_bytes == 1000


def test_syn_and_synack_windows_count(tmp_path: Path) -> None:
    """Only the handshake from the receiver: its window is the SYN-ACK's, never 0 B."""
    conv = Conversation()
    conv.handshake(s_win=29_200)
    for _ in range(3):
        conv.segment("c", "PA", dt_s=0.001, payload=MSS)
    c = analyse(conv, tmp_path)
    assert c.b_to_a.max_window_bytes == 29_200  # not scaled: a SYN-ACK's window never is
    assert c.a_to_b.max_window_bytes == 1024 << 7  # the client's ACK, scaled
    assert c.b_to_a.min_window_bytes is None
