"""client-http2-window from what the clones showed, not only from the release table: the
lab's client-h2-window fault runs libcurl 7.88.1 (documented 32 MiB) with its window held at
65,535 B, so the detector must believe the rate and git's own frames (``--full``)."""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.analysis.h2ledger import GitH2Window
from gitnetdiag.analysis.tcpinfo import SenderTcpSummary
from gitnetdiag.diagnosis.culprits.h2 import client_http2_window
from gitnetdiag.diagnosis.culprits.weights import weight
from gitnetdiag.diagnosis.transfers import TransferObservation
from tests.diagnosis.test_transfer_culprits import HEALTHY, TCP
from tests.diagnosis.transfer_cases import on, ranked

# The lab's client-h2-window at 50 ms (2026-11-26): HTTP/1.1 11.8 MB/s, HTTP/2 0.95 MB/s,
# git's frames: stream and connection window 65,535 B; the server's socket held by its
# application (HTTP/2's window), never by its send buffer or the client's TCP window.
RTT = 0.0505
H2_TCP = replace(TCP, samples=15, span_s=3.77, received_bytes=3_289_634,
                 advertised_window_max_bytes=521_947, receive_buffer_max_bytes=825_976,
                 rcv_space_max_bytes=47_605, min_rtt_s=0.0504, median_rtt_s=0.0503)
H2_SENDER = SenderTcpSummary(
    source="ss -tin, server (netns gnd-h2w-server)", samples=15, sent_bytes=3_338_659,
    busy_s=3.9, rwnd_limited_s=0.0, sndbuf_limited_s=0.0, buffer_full_share=0.0,
    window_full_share=0.0, cwnd_full_share=0.0, app_share=1.0, flight_median_bytes=53_576,
    flight_max_bytes=55_024, send_buffer_max_bytes=294_912, peer_window_median_bytes=510_976)
H1 = replace(HEALTHY, protocol="h1", libcurl="7.88.1", outcome="ok", moved_bytes=6_291_456,
             measured_s=0.53, rate_bytes_per_s=11_800_000.0, path_rtt_s=RTT)
H2 = replace(HEALTHY, protocol="h2", libcurl="7.88.1", outcome="bounded",
             moved_bytes=4_900_000, measured_s=5.1, rate_bytes_per_s=953_000.0, path_rtt_s=RTT,
             libcurl_window_bytes=33_554_432, tcp=H2_TCP, sender=H2_SENDER, stopped="stable")
FRAMES = GitH2Window(stream_window_bytes=65_535, connection_window_bytes=65_535,
                     window_updates=200, data_bytes=4_942_565, first_frame=9)


def _runs(h2: TransferObservation) -> list[TransferObservation]:
    return [H1, h2]


def _score(*signals: str) -> float:
    return round(sum(weight("client-http2-window", s) for s in signals), 2)


def test_rate_at_the_default_window_ranks_first_against_the_release_table() -> None:
    """No frames, a release documented at 32 MiB: 48 kB per round trip, 12x slower than
    HTTP/1.1 through the same server, is the default window's rate."""
    findings = ranked(_runs(H2), calibrations={})
    assert [f.id for f in findings][:1] == ["client-http2-window"]
    top = findings[0]
    assert top.score == _score("slower-than-h1", "rate-at-default-window")
    assert 4.5 < top.cost_s < 4.8  # 4.9 MB at 11.8 MB/s takes 0.42 s of the 5.1 s
    assert "http.version HTTP/1.1" in top.fix
    documented = [e for e in top.evidence if "documented" in e.what]
    assert [e.value for e in documented] == [33_554_432.0]
    assert "7.88.1" in documented[0].what and "issues/1102" not in documented[0].source
    flight = next(e for e in top.evidence if e.what.startswith("HTTP/2 bytes per round trip"))
    assert flight.value is not None and 40_000 < flight.value < 55_000
    assert "33554432 B" in top.summary and "65535 B" in top.summary


def test_git_frames_give_the_window_and_outweigh_the_rate_alone() -> None:
    hit = client_http2_window(on(_runs(replace(H2, git_h2_window=FRAMES))))
    assert hit is not None
    assert hit.score == _score("slower-than-h1", "advertised-small-window", "rate-at-window")
    assert hit.score > _score("slower-than-h1", "rate-at-default-window")
    seen = next(e for e in hit.evidence if e.what.startswith("HTTP/2 window git advertised"))
    assert seen.value == 65_535.0 and seen.threshold is not None
    assert 590_000 < seen.threshold < 600_000  # HTTP/1.1's bytes per round trip
    assert "frame 9" in seen.source
    assert any(e.value == 33_554_432.0 and "documented" in e.what for e in hit.evidence)
    assert "decrypted frames" in hit.summary


def test_the_smaller_of_stream_and_connection_window_binds() -> None:
    connection_only = replace(FRAMES, stream_window_bytes=33_554_432)
    hit = client_http2_window(on(_runs(replace(H2, git_h2_window=connection_only))))
    assert hit is not None and "65535 B" in hit.summary


def test_large_window_in_git_frames_silences_it_even_for_a_listed_release() -> None:
    """Frames win over the table: a 7.49 whose frames show 32 MiB was not window-bound."""
    large = replace(FRAMES, stream_window_bytes=33_554_432, connection_window_bytes=33_554_432)
    assert client_http2_window(on(_runs(replace(H2, git_h2_window=large)))) is None
    old = [replace(H1, libcurl="7.49.0"), replace(H2, libcurl="7.49.0", git_h2_window=large)]
    assert client_http2_window(on(old)) is None
    assert client_http2_window(on([old[0], replace(old[1], git_h2_window=None)])) is not None


def test_frames_with_a_small_window_but_far_more_per_round_trip_do_not_fire() -> None:
    """3 MB/s at 50 ms is 150 kB per round trip: more than 1.5x a 65,535 B window."""
    fast = replace(H2, rate_bytes_per_s=3_000_000.0, git_h2_window=FRAMES)
    assert client_http2_window(on(_runs(fast))) is None


def test_rate_alone_outside_the_default_window_or_h2_not_slower_is_silent() -> None:
    assert client_http2_window(on(_runs(replace(H2, rate_bytes_per_s=3_000_000.0)))) is None
    assert client_http2_window(on(_runs(replace(H2, rate_bytes_per_s=200_000.0)))) is None  # 10 kB
    assert client_http2_window(on(_runs(replace(H2, rate_bytes_per_s=9_000_000.0)))) is None
    slow_h1 = replace(H1, rate_bytes_per_s=1_200_000.0)  # every transport alike: not HTTP/2's
    assert client_http2_window(on([slow_h1, H2])) is None
    assert client_http2_window(on([H2])) is None
