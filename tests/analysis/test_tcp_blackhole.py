"""A path-MTU black hole in a short capture: what got through, what never did, and no crash."""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.analysis.tcp import ConnectionAnalysis, analyze_connections
from gitnetdiag.capture import read_capture
from gitnetdiag.pipeline._metrics import capture_metrics, flight_series
from tests.capture.craft import Conversation

RTT = 0.05


def blackholed_push() -> Conversation:
    """ClientHello (377 B) and a request line (200 B) get through; the first full-size
    segment and its followers vanish and are resent with doubling timeouts, with no ACK
    from the server in the last seconds (the stalled push of issue 14)."""
    conv = Conversation()
    conv.handshake()
    conv.segment("c", "PA", dt_s=0.001, payload=377)
    conv.segment("s", "PA", dt_s=RTT, payload=2000)
    conv.segment("c", "PA", dt_s=0.001, payload=200)
    conv.segment("s", "A", dt_s=RTT)
    lost = conv.nxt["c"]
    for _ in range(3):
        conv.segment("c", "PA", dt_s=0.0002, payload=1448)
    conv.segment("c", "PA", dt_s=0.0002, payload=600)  # a small tail gets through: SACKed
    conv.segment("s", "A", dt_s=RTT, ack=lost)
    timeout = 0.3
    for _ in range(5):
        conv.segment("c", "PA", dt_s=timeout, seq=lost, payload=1448)
        timeout *= 2
    return conv


def analyse(conv: Conversation, tmp_path: Path) -> ConnectionAnalysis:
    r = read_capture(conv.pcap(tmp_path / "c.pcap"))
    (c,) = analyze_connections(r.packets, r.connections)
    return c


def test_series_of_both_directions_have_one_length(tmp_path: Path) -> None:
    """The last bins hold only the client's resends: every series still ends together."""
    c = analyse(blackholed_push(), tmp_path)
    lengths = {len(arr) for series in (c.series.sent_bytes, c.series.goodput_bytes,
                                       c.series.retransmitted_bytes, c.series.max_in_flight_bytes,
                                       c.series.min_window_bytes) for arr in series}
    assert len(lengths) == 1, lengths


def test_flight_series_of_a_stalled_push_is_no_index_error(tmp_path: Path) -> None:
    """Regression (issue 14): ``flight_series`` indexed the shorter window series."""
    c = analyse(blackholed_push(), tmp_path)
    flight = flight_series(c)
    assert flight is not None
    assert len(flight.t_s) == len(flight.bytes_in_flight) == len(flight.advertised_window)
    assert flight.bytes_in_flight[-1] > 0


def test_largest_acknowledged_segment_and_the_resent_ones_never_acknowledged(
    tmp_path: Path,
) -> None:
    c = analyse(blackholed_push(), tmp_path)
    up = c.a_to_b
    assert up.max_acked_segment_bytes == 377
    assert up.unacked_retransmissions == 5
    assert up.min_unacked_retransmitted_bytes == 1448
    metrics = capture_metrics(c, "h1")
    assert metrics.max_acked_segment_bytes == 377
    assert metrics.unacked_retransmissions == 5
    assert metrics.min_unacked_retransmitted_bytes == 1448
    assert metrics.mss_bytes == 1460


def test_a_healthy_transfer_leaves_nothing_unacknowledged(tmp_path: Path) -> None:
    conv = Conversation()
    conv.handshake()
    for _ in range(10):
        for _ in range(4):
            conv.segment("c", "PA", dt_s=0.0002, payload=1448)
        conv.segment("s", "A", dt_s=RTT)
    up = analyse(conv, tmp_path).a_to_b
    assert up.max_acked_segment_bytes == 1448
    assert up.unacked_retransmissions == 0
    assert up.min_unacked_retransmitted_bytes is None
