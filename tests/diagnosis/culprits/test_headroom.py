"""A window culprit whose own evidence contradicts it does not rank (issue 34 item 5).

The run behind it: a git push over HTTP/2 to a local nginx on loopback whose backend
never reads the pack; nginx logs the POST as 400, the push hangs 15.4 s after 0.3 MiB.
It was ranked ``h2-flow-control-window`` first at 15.6 s ("a 65536 B HTTP/2 window over
0 ms RTT allows only 4427 MB/s") with exit 0. A window that allows gigabytes per second
neither slowed nor stopped a push that needed half a megabyte per second: the stall is
unexplained, the verdict inconclusive.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.culprits.h2 import h2_flow_control_window
from gitnetdiag.diagnosis.culprits.headroom import (
    HEADROOM_RATIO,
    STALL_FRAMING_RATIO,
    STALL_PREAMBLE_BYTES,
    stopped_within_window,
    window_headroom,
)
from gitnetdiag.diagnosis.culprits.ssh import ssh_channel_window
from gitnetdiag.diagnosis.culprits.tcp_windows import tcp_receive_window_clamp
from gitnetdiag.diagnosis.observations import (
    H2Ledger,
    Observations,
    ProtocolObservation,
    PushObservation,
    SshLedger,
)
from tests.diagnosis.culprits.crafted import MB, cap, clamped, proto, run

NGINX_RTT_S = 1.8117e-05
"""The run's RTT on loopback (``rtt 0.0 ms``)."""
NGINX_PACK = 8_390_014


NGINX_MOVED = 315_000
"""What the reproduction's hung push had moved: 0.3 MiB, 4.8 of its 64 KiB windows."""


def _hung(duration_s: float = 15.41, size: int = NGINX_PACK,
          moved: int | None = NGINX_MOVED) -> PushObservation:
    return PushObservation(duration_s=duration_s, bytes=size, ok=False, error_kind="hung",
                      error_message="Writing objects:  36% (4/11)", moved_bytes=moved)


def nginx_hung_h2(*, ledger: bool = True, moved: int | None = NGINX_MOVED) -> Observations:
    """The observations of the reproduction (run directory figures, HTTP/2 only)."""
    window = H2Ledger(source="native HTTP/2 probe of 127.0.0.1:18444",
                      server_initial_window_bytes=65536, connection_window_bytes=2147483647,
                      max_frame_size_bytes=16777215, stream_zero_credit_s=0.025,
                      connection_zero_credit_s=0.0, window_updates=17)
    capture = cap(source="capture h2 push 1 45336->18444", handshake_rtt_s=2.6e-05,
                  window_scale=10, advertised_window_median_bytes=221_184,
                  advertised_window_max_bytes=381_952, bytes_in_flight_median=65_804,
                  bytes_in_flight_p95=65_804, rwnd_limited_share=0.0,
                  network_limited_share=0.0103, self_limited_share=0.9897)
    h2 = ProtocolObservation(pushes=(_hung(moved=moved),), capture=capture,
                             h2_ledger=window if ledger else None)
    return Observations(
        run=run(rtt_s=NGINX_RTT_S, requested_protocols=("h2",), git_version="2.39.5",
                libcurl_version="7.88.1", server_headers=("nginx/1.22.1",)),
        protocols={"h2": h2})


@pytest.mark.parametrize("moved", [NGINX_MOVED, None], ids=["moved-0.3MiB", "moved-unknown"])
@pytest.mark.parametrize("ledger", [True, False], ids=["granted-window", "in-flight-only"])
def test_a_window_far_above_what_the_hung_push_needed_does_not_rank(
        ledger: bool, moved: int | None) -> None:
    """65536 B over 0.018 ms allows 3.6 GB/s; the push needed 8.4 MB in 15.4 s, 0.54 MB/s.
    Without the ledger the bytes in flight (at most the window) say as much. It had moved
    0.3 MiB, many windows: the credit came again and again (a run directory older than the
    moved bytes says nothing either way: the rule stands)."""
    obs = nginx_hung_h2(ledger=ledger, moved=moved)
    assert h2_flow_control_window(obs) is None
    result = diagnose(obs)
    assert [f.id for f in result.findings] == []
    # The only protocol's push hung: failed (issue 42; it was inconclusive), unexplained.
    assert result.verdict == "failed"
    (stalled,) = result.measurement_failures
    assert (stalled.protocol, stalled.kind, stalled.explained_by) == ("h2", "hung", None)
    assert result.headline.startswith("HTTP/2 pushes fail (hung after 15 s")
    assert result.headline.endswith("): cause not identified.")


def test_the_headroom_names_its_figures() -> None:
    room = window_headroom(nginx_hung_h2(), 65536, NGINX_RTT_S)
    assert room is not None and room.ratio == HEADROOM_RATIO
    assert room.allows_bytes_per_s == pytest.approx(65536 / NGINX_RTT_S)
    assert room.reference_bytes_per_s == pytest.approx(NGINX_PACK / 15.41)
    assert "stalled HTTP/2 push needed" in room.reference


def test_the_same_hang_behind_a_window_that_binds_still_ranks() -> None:
    """The field's HTTP/2 edge: 65535 B over 50 ms allows 1.31 MB/s, and the hung push of
    25 MB needed 1.6 MB/s in its 15.4 s: the window is still the story."""
    obs = nginx_hung_h2()
    h2 = obs.protocols["h2"]
    assert h2.h2_ledger is not None and h2.capture is not None
    slow = replace(h2, pushes=(_hung(size=25_000_000),),
                   h2_ledger=replace(h2.h2_ledger, server_initial_window_bytes=65535),
                   capture=replace(h2.capture, handshake_rtt_s=0.05))
    obs = replace(obs, run=replace(obs.run, rtt_s=0.05), protocols={"h2": slow})
    assert window_headroom(obs, 65535, 0.05) is None
    top = diagnose(obs).findings[0]
    assert top.id == "h2-flow-control-window"
    assert "stalled" in top.summary


@pytest.mark.parametrize(("reached", "ruled_out"), [
    (1.31e6 / HEADROOM_RATIO, True),  # the window allows exactly four times the fastest push
    (1.31e6 / HEADROOM_RATIO * 1.05, False),  # just under four times: it may have bound
])
def test_four_times_the_fastest_rate_is_the_line(reached: float, ruled_out: bool) -> None:
    size = 24_000_000
    obs = Observations(run=run(rtt_s=0.05), protocols={"h1": proto(size / reached, size=size,
                                                                     trace={})})
    assert (window_headroom(obs, 1.31e6 * 0.05, 0.05) is not None) is ruled_out


def test_a_window_above_the_path_rate_did_not_bind() -> None:
    """The path's own rate binds first: a window allowing more is not what limited it,
    whatever the pushes reached."""
    obs = Observations(run=run(rtt_s=0.05, path_rate_bytes_per_s=1.0e6),
                       protocols={"h2": proto(MB / 0.9e6)})
    room = window_headroom(obs, 65535, 0.05)
    assert room is not None and room.reference == "path rate" and room.ratio == 1.0
    assert window_headroom(obs, 40_000, 0.05) is None  # 0.8 MB/s: below the path


def test_nothing_measured_tells_nothing() -> None:
    obs = Observations(run=run(rtt_s=0.05), protocols={"h2": ProtocolObservation()})
    assert window_headroom(obs, 65535, 0.05) is None
    assert window_headroom(obs, None, 0.05) is None
    assert window_headroom(obs, 65535, None) is None


def test_a_receive_window_far_above_every_rate_is_no_clamp() -> None:
    """Every sender sat at a 1 MB window (below the 1 MiB fallback) over 20 ms: it allows
    50 MB/s, the pushes moved 3 MB/s. The receiver shrank its window (it read slowly):
    raising tcp_rmem would change nothing."""
    slow = {name: proto(8.0, capture=clamped(1_000_000)) for name in ("h1", "h2", "ssh")}
    obs = Observations(run=run(rtt_s=0.02), protocols=slow)
    assert tcp_receive_window_clamp(obs) is None
    # the same window over 300 ms allows 3.3 MB/s, what they moved: a clamp
    obs = replace(obs, run=replace(obs.run, rtt_s=0.3))
    assert tcp_receive_window_clamp(obs) is not None


def test_an_ssh_channel_window_far_above_every_rate_does_not_rank() -> None:
    """The lab's slow-auth run: SSH at 42 kB/s against HTTP/2's 8.9 MB/s, its 2 MiB channel
    window over 21 ms allowing 100 MB/s. SSH is slow for another reason (a slow login)."""
    ledger = SshLedger(source="ssh probe log", initial_window_bytes=2_097_152,
                       max_packet_bytes=32_768, zero_window_s=0.0, window_adjusts=3)
    obs = Observations(run=run(rtt_s=0.021), protocols={
        "h2": proto(MB / 8.88e6, capture=cap()),
        "ssh": proto(MB / 42_300, capture=cap(), ssh_ledger=ledger)})
    assert ssh_channel_window(obs) is None
    # a 131072 B window over the same path allows 6.2 MB/s: below HTTP/2's rate, it ranks
    small = replace(obs.protocols["ssh"], ssh_ledger=replace(ledger, initial_window_bytes=131_072))
    assert ssh_channel_window(replace(obs, protocols={**obs.protocols, "ssh": small})) is not None


# A hung push that stopped dead within one window (tests/probe/test_h2_stall.py): the
# loopback HTTP/2 server that never sends WINDOW_UPDATE; git:// pushed beside it.
LOOPBACK_RTT_S = 1.4631e-05
LOOPBACK_PACK = 4_195_158
LOOPBACK_MOVED = 959
"""bytes_acked of the hung push's sockets: handshake, headers, the 4-byte probe POST."""
GIT_RATE = 246_295_896.0
"""The git:// push beside it (trace2 upload phase)."""


def loopback_hung_h2(*, moved: int | None = LOOPBACK_MOVED, in_flight: int = 32_768,
                     ledger_window: int | None = None,
                     message: str = "Writing objects:  57% (4/7)") -> Observations:
    """The reproduction's observations: the hung HTTP/2 push's TCP_INFO caught one
    segment of in flight (32768 B: one loopback MSS), no ledger unless ``ledger_window``."""
    hung = PushObservation(duration_s=15.55, bytes=LOOPBACK_PACK, ok=False, error_kind="hung",
                      error_message=message, moved_bytes=moved)
    ledger = None if ledger_window is None else H2Ledger(
        source="native HTTP/2 probe of 127.0.0.1:45927",
        server_initial_window_bytes=ledger_window, connection_window_bytes=ledger_window,
        max_frame_size_bytes=16384, stream_zero_credit_s=15.0, connection_zero_credit_s=0.0,
        window_updates=0)
    capture = cap(source="TCP_INFO (ss -tin) h2 push 1", handshake_rtt_s=None,
                  advertised_window_median_bytes=65_536, advertised_window_max_bytes=65_536,
                  bytes_in_flight_median=32_768, bytes_in_flight_p95=in_flight,
                  rwnd_limited_share=0.0, network_limited_share=0.1, self_limited_share=0.9)
    size = LOOPBACK_PACK
    return Observations(
        run=run(rtt_s=LOOPBACK_RTT_S, requested_protocols=("h2", "git"), git_version="2.39.5",
                libcurl_version="7.88.1"),
        protocols={"h2": ProtocolObservation(pushes=(hung,), capture=capture, h2_ledger=ledger),
                   "git": proto(size / GIT_RATE, size=size, n=1)})


def test_a_push_that_hung_within_one_window_ranks_whatever_the_window_allows() -> None:
    """32768 B over 0.015 ms allows 2.2 GB/s, more than 4x git://'s 246 MB/s: by rates the
    window did not bind. But the push moved 959 B of its 4.2 MB pack and stopped: the
    credit ran out and never came back, the window's own stall."""
    obs = loopback_hung_h2()
    assert window_headroom(obs, 32_768, LOOPBACK_RTT_S) is not None  # the rate rule alone
    dead = stopped_within_window(obs.protocols["h2"].pushes, 32_768)
    assert dead is not None and dead.moved_bytes == LOOPBACK_MOVED
    assert dead.limit_bytes == pytest.approx(32_768 * STALL_FRAMING_RATIO + STALL_PREAMBLE_BYTES)
    hit = h2_flow_control_window(obs)
    assert hit is not None
    [moved] = [e for e in hit.evidence if e.what.startswith("bytes a hung HTTP/2 push moved")]
    assert (moved.value, moved.of, moved.comparison) == (LOOPBACK_MOVED, LOOPBACK_PACK, "<=")
    assert moved.threshold == pytest.approx(dead.limit_bytes)
    assert any("stalled" in e.what for e in hit.evidence)
    assert diagnose(obs).findings[0].id == "h2-flow-control-window"


def test_a_push_that_hung_after_many_windows_is_still_ruled_out() -> None:
    """The same hang after 0.3 MiB over that 32768 B window (9.6 windows): credit was
    granted again and again, the rate rule stands (the nginx case)."""
    obs = loopback_hung_h2(moved=NGINX_MOVED)
    assert stopped_within_window(obs.protocols["h2"].pushes, 32_768) is None
    assert h2_flow_control_window(obs) is None
    assert "h2-flow-control-window" not in [f.id for f in diagnose(obs).findings]


@pytest.mark.parametrize(("moved", "ranks"), [
    (85_000, True),  # 65535 B x 1.05 + 16 KiB = 85196 B: one window and its preamble
    (86_000, False),  # beyond it: the window was credited again
])
def test_one_granted_window_and_its_preamble_is_the_line(moved: int, ranks: bool) -> None:
    """With the native probe's ledger the granted window (65535 B) is the one compared."""
    obs = loopback_hung_h2(moved=moved, ledger_window=65_535)
    assert window_headroom(obs, 65_535, LOOPBACK_RTT_S) is not None
    assert (h2_flow_control_window(obs) is not None) is ranks


@pytest.mark.parametrize("case", ["pack-within-window", "still-compressing", "moved-unknown"])
def test_no_stall_signature_without_a_pack_the_window_held(case: str) -> None:
    """A pack no larger than the window never ran out of credit; a push that stopped while
    git still compressed sent none of its pack; an older run directory has no moved bytes:
    none of them is the window's stall, and the rate rule decides."""
    push = loopback_hung_h2().protocols["h2"].pushes[0]
    if case == "pack-within-window":
        push = replace(push, bytes=30_000)
    elif case == "still-compressing":
        push = replace(push, error_message="Compressing objects:  50% (2/4)")
    else:
        push = replace(push, moved_bytes=None)
    assert stopped_within_window((push,), 32_768) is None
    obs = loopback_hung_h2()
    obs = replace(obs, protocols={**obs.protocols,
                                  "h2": replace(obs.protocols["h2"], pushes=(push,))})
    assert h2_flow_control_window(obs) is None
