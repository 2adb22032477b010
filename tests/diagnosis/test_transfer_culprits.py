"""Download culprits from crafted clone observations: each fires on its signature only."""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.analysis.tcpinfo import ReceiverTcpSummary, summarize_receiver
from gitnetdiag.analysis.trace2 import ReceiverPhases
from gitnetdiag.diagnosis.transfers import TransferObservation
from tests.diagnosis.transfer_cases import ranked

PHASES = ReceiverPhases(
    protocol_version=2, ref_count=3, ref_advertisement_s=0.1, negotiation_s=0.0,
    negotiation_rounds=1, request_sent_s=0.15, first_pack_byte_s=0.3,
    server_objects_counted=1000, server_objects_compressed=500, server_counting_done_s=0.2,
    server_compressing_done_s=0.25, pack_received_s=None, received_bytes=None,
    index_pack_s=None, checkout_s=None, total_s=None)
TCP = ReceiverTcpSummary(
    source="ss -tin", samples=20, span_s=5.0, received_bytes=3_000_000,
    advertised_window_max_bytes=3_000_000, receive_buffer_max_bytes=6_000_000,
    rcv_space_max_bytes=2_000_000, min_rtt_s=0.05, median_rtt_s=0.05)
HEALTHY = TransferObservation(
    protocol="h1", repeat=1, outcome="bounded", moved_bytes=40_000_000, measured_s=4.0,
    rate_bytes_per_s=10_000_000.0, wall_s=4.5, phases=PHASES, tcp=TCP, path_rtt_s=0.05,
    client_rmem_max_bytes=6_291_456)


def test_healthy_clone_ranks_nothing() -> None:
    """A fast clone (rate far under window / RTT, first byte at once) has no culprit."""
    assert ranked([HEALTHY]) == ()


def test_clamped_receive_window_ranks_first() -> None:
    """Rate at window / RTT with the receive buffer at tcp_rmem's maximum: the clamp."""
    clamped = replace(
        HEALTHY, moved_bytes=3_000_000, measured_s=5.0, rate_bytes_per_s=600_000.0,
        client_rmem_max_bytes=65_536,
        tcp=replace(TCP, advertised_window_max_bytes=32_000, receive_buffer_max_bytes=65_536))
    findings = ranked([clamped])
    assert [f.id for f in findings] == ["client-tcp-receive-window-clamp"]
    assert findings[0].score > 0.8 and 4.0 < findings[0].cost_s < 5.0
    assert "tcp_rmem" in findings[0].fix


def test_large_window_rate_is_not_a_clamp() -> None:
    """A window-bound rate with a large window and room to grow is the path, not a clamp."""
    bound = replace(HEALTHY, rate_bytes_per_s=50_000_000.0,
                    tcp=replace(TCP, receive_buffer_max_bytes=3_000_000))
    assert ranked([bound]) == ()


def test_slow_pack_generation_ranks_first() -> None:
    """Seconds between the request and the first pack byte: the server's pack generation."""
    slow = replace(HEALTHY, phases=replace(PHASES, first_pack_byte_s=6.15, total_s=8.0),
                   wall_s=8.0)
    findings = ranked([slow])
    assert [f.id for f in findings] == ["server-pack-generation"]
    assert abs(findings[0].cost_s - 5.95) < 1e-6
    assert "repack -adb" in findings[0].fix and "--filter=blob:none" in findings[0].fix


def test_download_socket_summary_takes_the_busiest_socket() -> None:
    """The socket that received most is the download; levels while bytes arrived."""
    def sample(t: float, local: str, received: float, ssthresh: float) -> dict[str, object]:
        return {"t_s": t, "local": local, "source": "ss -tin",
                "counters": {"bytes_received": received, "rcv_ssthresh": ssthresh,
                             "rcv_buf_bytes": 65536.0, "rtt_us": 50_000.0,
                             "min_rtt_us": 49_000.0}}
    summary = summarize_receiver([
        sample(0.25, "a:1", 1000, 900_000), sample(0.25, "a:2", 10_000, 30_000),
        sample(0.5, "a:2", 50_000, 32_000), sample(0.75, "a:2", 50_000, 99_000)])
    assert summary is not None
    assert summary.received_bytes == 50_000
    assert summary.advertised_window_max_bytes == 32_000  # the idle sample is left out
    assert summary.receive_buffer_max_bytes == 65536 and summary.min_rtt_s == 0.049
    assert summary.window_rate_limit_bytes_per_s == 32_000 / 0.049
    assert summarize_receiver([]) is None


def test_out_of_order_segments_of_the_download_socket() -> None:
    """``rcv_ooopack`` and ``data_segs_in`` of the last sample; a socket ``ss`` showed with
    ``snd_wnd`` (Linux 6.2+) but never with ``rcv_ooopack`` had none out of order; an older
    kernel's (neither) leaves it unknown."""
    def sample(t: float, received: float, extra: dict[str, float]) -> dict[str, object]:
        return {"t_s": t, "local": "a:1", "source": "ss -tin",
                "counters": {"bytes_received": received, "rcv_ssthresh": 100_000.0,
                             "data_segs_in": received / 1000, **extra}}
    lossy = summarize_receiver([sample(0.5, 500_000, {"rcv_ooopack": 40.0}),
                                sample(1.0, 1_000_000, {"rcv_ooopack": 120.0})])
    assert lossy is not None
    assert (lossy.out_of_order_segments, lossy.data_segments_in) == (120, 1000)
    assert lossy.out_of_order_share == 0.12
    clean = summarize_receiver([sample(1.0, 1_000_000, {"snd_wnd_bytes": 65536.0})])
    assert clean is not None and clean.out_of_order_share == 0.0
    old = summarize_receiver([sample(1.0, 1_000_000, {})])
    assert old is not None and old.out_of_order_segments is None
    assert old.out_of_order_share is None


def test_small_window_still_growing_is_not_a_clamp() -> None:
    """A short clone whose window had not grown yet, far below tcp_rmem's maximum: no clamp."""
    young = replace(
        HEALTHY, moved_bytes=900_000, measured_s=1.2, rate_bytes_per_s=750_000.0,
        tcp=replace(TCP, advertised_window_max_bytes=64_000, receive_buffer_max_bytes=262_144))
    assert ranked([young]) == ()
    offline = replace(young, client_rmem_max_bytes=None)  # ceiling unknown: the small window
    assert [f.id for f in ranked([offline])] == ["client-tcp-receive-window-clamp"]


def test_longest_gap_is_mid_pack_only() -> None:
    """Samples that read the same bytes received with more later: a gap; the server's wait
    before the pack (a few kB of refs received), and the idle tail after the last byte, are
    not."""
    from gitnetdiag.analysis.tcpinfo import longest_gap_s

    def rows(*points: tuple[float, float]) -> list[dict[str, object]]:
        return [{"t_s": t, "counters": {"bytes_received": b}} for t, b in points]

    kb = 1024
    got = longest_gap_s(rows((0.0, 0), (0.3, 2 * kb), (0.6, 2 * kb), (0.9, 2 * kb),
                             (1.2, 2 * kb), (1.5, 100 * kb), (1.8, 100 * kb), (2.1, 100 * kb),
                             (2.4, 500 * kb), (2.7, 500 * kb), (3.0, 900 * kb),
                             (3.3, 900 * kb), (3.6, 900 * kb), (3.9, 900 * kb)))
    # 1.5 -> 2.1 at 100 kB; the 0.9 s wait at 2 kB is before the pack, the tail after it
    assert got is not None and abs(got - 0.6) < 1e-9
    assert longest_gap_s(rows((0.0, 100 * kb), (0.3, 200 * kb), (0.6, 300 * kb))) is None
    assert longest_gap_s(rows((0.0, 100 * kb), (0.3, 100 * kb), (0.6, 100 * kb))) is None
