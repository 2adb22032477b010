"""A clone's capture, taken at the client, read as the server's sending (the view the push
detectors read): a segment lost on the path arrives later to fill its hole and counts as a
retransmission of the server's; the window is the client's."""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.analysis.capture_analysis import analyze_capture
from gitnetdiag.analysis.tcp_results import ConnectionSeries
from gitnetdiag.analysis.tcpinfo import ReceiverTcpSummary
from gitnetdiag.analysis.window import receiver_window_limited_share
from gitnetdiag.pipeline._metrics import capture_metrics
from tests.capture.craft import Conversation

MSS = 1448
SEGMENTS = 200
LOST = {40, 41, 120}


def _download(path: Path) -> Path:
    """A clone's connection: handshake, a small request, 200 full segments from the server
    with three lost on the way (they arrive once resent, after their successors)."""
    conv = Conversation(server=("10.0.0.2", 22))
    conv.handshake(rtt_s=0.05)
    conv.segment("c", "PA", dt_s=0.001, payload=200, win=2048)
    conv.segment("s", "A", dt_s=0.05, win=2048)
    start = conv.nxt["s"]
    resend = []
    for index in range(SEGMENTS):
        seq = start + index * MSS
        if index in LOST:
            resend.append(seq)
            continue
        conv.segment("s", "A", dt_s=0.0005, seq=seq, payload=MSS, win=2048)
        conv.segment("c", "A", dt_s=0.0001, win=2048)
        if index % 40 == 39 and resend:
            for lost in resend:
                conv.segment("s", "A", dt_s=0.05, seq=lost, payload=MSS, win=2048)
            resend.clear()
    for lost in resend:
        conv.segment("s", "A", dt_s=0.05, seq=lost, payload=MSS, win=2048)
    conv.segment("c", "A", dt_s=0.0001, win=2048)
    return conv.pcap(path)


def test_holes_filled_at_the_receiver_are_the_servers_retransmissions(tmp_path: Path) -> None:
    analysis = analyze_capture(_download(tmp_path / "fetch-ssh-1.pcap"))
    (conn,) = analysis.connections
    tcp = ReceiverTcpSummary(source="ss -tin", samples=10, span_s=1.0, received_bytes=289_600,
                             advertised_window_max_bytes=260_000, receive_buffer_max_bytes=None,
                             rcv_space_max_bytes=None, min_rtt_s=0.05, median_rtt_s=0.06)
    metrics = capture_metrics(conn, "fetch ssh #1", receiver="a", tcp=tcp)
    assert metrics.source == "capture fetch ssh #1 22->40000 (download, at the client)"
    assert metrics.retransmitted_bytes == len(LOST) * MSS
    assert metrics.retransmission_rate is not None
    assert abs(metrics.retransmission_rate - len(LOST) / SEGMENTS) < 0.005
    # The client's window (2048 scaled by 2^7), the RTTs of the handshake and TCP_INFO.
    assert metrics.advertised_window_max_bytes == 2048 * 128
    assert metrics.handshake_rtt_s is not None and abs(metrics.handshake_rtt_s - 0.05) < 0.001
    assert (metrics.min_rtt_s, metrics.median_rtt_s) == (0.05, 0.06)
    assert metrics.resets_from_server == 0


def test_a_connect_answered_by_a_reset_gives_its_refusal_time(tmp_path: Path) -> None:
    """SYN, then an RST 0.3 ms later and nothing else: refused sooner than any round trip."""
    conv = Conversation(server=("10.0.0.2", 22))
    conv.segment("c", "S", win=64240, options=[("MSS", 1460), ("WScale", 7)])
    conv.segment("s", "RA", dt_s=0.0003, seq=0, ack=conv.nxt["c"])
    (conn,) = analyze_capture(conv.pcap(tmp_path / "fetch-ssh-1.pcap")).connections
    metrics = capture_metrics(conn, "fetch ssh #1", receiver="a")
    assert metrics.resets_from_server == 1
    assert metrics.refused_after_s is not None and abs(metrics.refused_after_s - 0.0003) < 1e-6


def _paced(path: Path, window_field: int) -> Path:
    """A download at 100 ms RTT whose server sends 90 full segments (130,320 B) a round trip,
    the client advertising ``window_field`` x 2^7 bytes and acknowledging every segment."""
    conv = Conversation(server=("10.0.0.2", 443))
    conv.handshake(rtt_s=0.1)
    conv.segment("c", "PA", dt_s=0.001, payload=200, win=window_field)
    for burst in range(20):
        for index in range(90):
            gap = 0.1 - 90 * 0.0006 if burst and not index else 0.0005
            conv.segment("s", "A", dt_s=gap, payload=MSS, win=2048)
            conv.segment("c", "A", dt_s=0.0001, win=window_field)
    return conv.pcap(path)


def test_a_window_bound_download_is_seen_from_what_arrives_per_round_trip(
        tmp_path: Path) -> None:
    """At the receiver the server's unacknowledged bytes are a segment or two; what one
    round trip brings is the flight. 130,320 B a round trip against the client's 131,072 B
    window: bound all along; against 1 MiB: only in the first round trip, while the window
    of the handshake's ACK (131,072 B) was the last the client had advertised."""
    bound = capture_metrics(
        analyze_capture(_paced(tmp_path / "fetch-h1-1.pcap", 1024)).connections[0],
        "fetch h1 #1", receiver="a")
    assert bound.advertised_window_max_bytes == 1024 * 128
    assert bound.rwnd_limited_share is not None and bound.rwnd_limited_share >= 0.9
    open_window = capture_metrics(
        analyze_capture(_paced(tmp_path / "fetch-h1-2.pcap", 8192)).connections[0],
        "fetch h1 #2", receiver="a")
    assert open_window.rwnd_limited_share is not None
    assert open_window.rwnd_limited_share <= 0.1


def test_no_round_trip_known_or_shorter_than_one_is_no_window_share() -> None:
    """Without the RTT, or a transfer shorter than one round trip, nothing is measured; a
    round trip before any window from the client is not counted."""
    series = ConnectionSeries(
        bin_s=0.1, start_ts_ns=0, sent_bytes=[[0] * 6, [0, 50_000, 50_000, 0, 0, 0]],
        goodput_bytes=[[0] * 6, [0, 50_000, 50_000, 50_000, 0, 0]],
        retransmitted_bytes=[[0] * 6] * 2, max_in_flight_bytes=[[-1] * 6] * 2,
        min_window_bytes=[[-1, -1, 100_000, 100_000, -1, -1], [-1] * 6])
    assert receiver_window_limited_share(series, None) is None
    assert receiver_window_limited_share(series, 0.5) is None
    # Round trips of one bin: 50 kB against no window yet, then against 100 kB twice.
    assert receiver_window_limited_share(series, 0.1) == 0.0
    assert receiver_window_limited_share(series, 0.2) == 1.0  # 100 kB per 0.2 s


def test_a_black_hole_towards_the_client_leaves_only_small_segments(tmp_path: Path) -> None:
    """The server's full-size segments never reach the capture at the client: what arrived
    is its small ones (the largest the client's cumulative ACK covered: 883 B; the 986 B one
    beyond the hole is not), well below the 1460 B MSS of the handshake."""
    conv = Conversation(server=("10.0.0.2", 8443))
    conv.handshake(rtt_s=0.05)
    conv.segment("c", "PA", dt_s=0.001, payload=377, win=2048)
    for size in (300, 883, 45):
        conv.segment("s", "PA", dt_s=0.05, payload=size, win=2048)
        conv.segment("c", "A", dt_s=0.0001, win=2048)
    hole = conv.nxt["s"]
    conv.segment("s", "PA", dt_s=0.01, seq=hole + 7 * MSS, payload=986, win=2048)
    conv.segment("c", "A", dt_s=0.0001, win=2048, ack=hole)
    (conn,) = analyze_capture(conv.pcap(tmp_path / "fetch-h1-1.pcap")).connections
    tcp = ReceiverTcpSummary(source="ss -tin", samples=2, span_s=6.0, received_bytes=2214,
                             advertised_window_max_bytes=67_072, receive_buffer_max_bytes=None,
                             rcv_space_max_bytes=None, min_rtt_s=0.05, median_rtt_s=0.05,
                             rcv_mss_max_bytes=986, advmss_bytes=1448)
    metrics = capture_metrics(conn, "fetch h1 #1", receiver="a", tcp=tcp)
    assert (metrics.max_received_segment_bytes, metrics.mss_bytes) == (883, 1460)
    assert not metrics.retransmitted_bytes
    # No server payload in the capture: the kernel's estimate stands in.
    conv = Conversation(server=("10.0.0.2", 8443))
    conv.handshake(rtt_s=0.05)
    (conn,) = analyze_capture(conv.pcap(tmp_path / "fetch-h1-2.pcap")).connections
    at_client = capture_metrics(conn, "fetch h1 #2", receiver="a", tcp=tcp)
    assert at_client.max_received_segment_bytes == 986
    assert capture_metrics(conn, "fetch h1 #2", receiver="a").max_received_segment_bytes is None


def test_without_the_handshake_the_window_is_no_size(tmp_path: Path) -> None:
    """A capture that starts mid-clone (no SYN, no SYN-ACK): the window field's scale is
    unknown, so neither the client's window nor the window-bound share is read from it; the
    client's TCP_INFO gives its window."""
    conv = Conversation(server=("10.0.0.2", 443))
    for _ in range(300):
        conv.segment("s", "A", dt_s=0.0005, payload=MSS, win=502)
        conv.segment("c", "A", dt_s=0.0001, win=502)
    (conn,) = analyze_capture(conv.pcap(tmp_path / "fetch-h1-1.pcap")).connections
    assert not conn.handshake.window_scale_known
    tcp = ReceiverTcpSummary(source="ss -tin", samples=10, span_s=1.0, received_bytes=434_400,
                             advertised_window_max_bytes=4_000_000, receive_buffer_max_bytes=None,
                             rcv_space_max_bytes=None, min_rtt_s=0.05, median_rtt_s=0.05)
    metrics = capture_metrics(conn, "fetch h1 #1", receiver="a", tcp=tcp)
    assert metrics.rwnd_limited_share is None
    assert metrics.advertised_window_max_bytes == 4_000_000
