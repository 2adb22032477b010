"""Captures whose timestamps are out of order: analysed in frame order, bounded memory."""

from __future__ import annotations

import resource
from pathlib import Path

import numpy as np
import pytest

from gitnetdiag.analysis.capture_analysis import analyze_capture
from gitnetdiag.analysis.tcp_clock import UNTRUSTED, ClockState, retime
from gitnetdiag.analysis.tcp_state import MAX_SERIES_BINS
from tests.capture.craft import Conversation

TEN_YEARS_NS = 10 * 365 * 86_400 * 1_000_000_000


def _transfer(rounds: int = 20) -> Conversation:
    conv = Conversation()
    conv.handshake()
    for _ in range(rounds):
        conv.segment("c", "PA", dt_s=0.001, payload=1000)
        conv.segment("s", "A", dt_s=0.05)
    return conv


def _restamp(conv: Conversation, index: int, delta_ns: int) -> None:
    ts, frame = conv.frames[index]
    conv.frames[index] = (ts + delta_ns, frame)


def test_timestamp_stepping_back_is_no_crash_and_is_named(tmp_path: Path) -> None:
    """A frame stamped 5 s early: no IndexError, no negative time, a warning naming frame 11."""
    conv = _transfer()
    _restamp(conv, 10, -5_000_000_000)
    result = analyze_capture(conv.pcap(tmp_path / "back.pcap"))
    (c,) = result.connections
    assert any("step backwards" in w and "frame 11" in w for w in result.warnings)
    assert c.duration_s == pytest.approx(20 * 0.051 + 0.0501, abs=1e-3)
    assert all(v >= 0 for v in c.series.sent_bytes[0])
    assert c.a_to_b.rtt.min_s is not None and c.a_to_b.rtt.min_s >= 0
    limits = c.a_to_b.limits
    assert min(limits.rwnd_s, limits.cwnd_s, limits.loss_s, limits.self_s) >= 0


def test_every_frame_reversed_in_time(tmp_path: Path) -> None:
    """Timestamps running backwards throughout (a reversed file) still analyse."""
    conv = _transfer()
    times = [ts for ts, _ in conv.frames][::-1]
    conv.frames = [(t, frame) for t, (_, frame) in zip(times, conv.frames, strict=True)]
    result = analyze_capture(conv.pcap(tmp_path / "reversed.pcap"))
    (c,) = result.connections
    assert c.duration_s == 0
    assert c.a_to_b.payload_bytes == 20_000
    assert any("step backwards at 42 frame(s) (frames 2, 3, 4, 5, 6, ...)" in w
               for w in result.warnings)


def test_last_frame_ten_years_later_stays_small(tmp_path: Path) -> None:
    """The issue's 23.5 GiB allocation: the series is coarsened instead, memory stays small."""
    conv = _transfer()
    _restamp(conv, len(conv.frames) - 1, TEN_YEARS_NS)
    path = conv.pcap(tmp_path / "leap.pcap")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = analyze_capture(path)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    (c,) = result.connections
    assert grown_kib < 200 * 1024
    assert any("more than a day ahead" in w and "frame 43" in w for w in result.warnings)
    assert len(c.series.sent_bytes[0]) <= MAX_SERIES_BINS
    assert c.series.bin_s * len(c.series.min_window_bytes[1]) >= TEN_YEARS_NS / 1e9
    assert sum(c.series.sent_bytes[0]) == 20_000


def test_a_frame_stamped_years_ahead_in_the_middle(tmp_path: Path) -> None:
    """A leap ahead and back at the next frame: a lone frame stamped ahead, taken as
    simultaneous with the frame before it; the connection keeps its duration."""
    conv = _transfer()
    _restamp(conv, 20, TEN_YEARS_NS)
    result = analyze_capture(conv.pcap(tmp_path / "spike.pcap"))
    (c,) = result.connections
    assert c.duration_s == pytest.approx(20 * 0.051 + 0.0501, abs=1e-3)
    assert c.a_to_b.payload_bytes == 20_000
    assert sum(c.series.goodput_bytes[0]) == 20_000
    assert any("frame 21" in w for w in result.warnings)
    assert any("frame 22" in w for w in result.warnings)


def test_long_connection_series_is_coarsened_not_cut(tmp_path: Path) -> None:
    """An hour-long connection: bins are widened, and every byte stays in the series."""
    conv = Conversation()
    conv.handshake()
    for _ in range(40):
        conv.segment("c", "PA", dt_s=100.0, payload=500)
        conv.segment("s", "A", dt_s=0.05)
    result = analyze_capture(conv.pcap(tmp_path / "long.pcap"))
    (c,) = result.connections
    assert c.series.bin_s == pytest.approx(0.4)
    assert len(c.series.sent_bytes[0]) <= MAX_SERIES_BINS
    assert sum(c.series.sent_bytes[0]) == 40 * 500
    assert max(c.series.max_in_flight_bytes[0]) == 500
    assert result.warnings == []


def test_own_capture_reads_the_packet_sockets_stamping_race_without_a_warning(
        tmp_path: Path) -> None:
    """The race tcpdump shows on Linux (an ACK stamped 1 us before the segment queued
    ahead of it): in gitnetdiag's own capture no warning, in anybody else's the same
    warning as before; the connection reads the same either way."""
    conv = _transfer()
    # Frame 12 (a client segment) stamped 1 us before frame 11 (the ACK queued ahead of it).
    _restamp(conv, 11, -(conv.frames[11][0] - conv.frames[10][0]) - 1_000)
    path = conv.pcap(tmp_path / "race.pcap")
    own = analyze_capture(path, own_capture=True)
    foreign = analyze_capture(path)
    assert not [w for w in own.warnings if "step backwards" in w], own.warnings
    assert any("step backwards at 1 frame(s) (frame 12)" in w for w in foreign.warnings)
    assert own.connections[0].to_dict() == foreign.connections[0].to_dict()


def test_own_capture_still_warns_of_a_real_step_back(tmp_path: Path) -> None:
    """A step back of a millisecond or more is no stamping race: named, the short one not."""
    conv = _transfer()
    _restamp(conv, 11, -(conv.frames[11][0] - conv.frames[10][0]) - 1_000)
    _restamp(conv, 21, -(conv.frames[21][0] - conv.frames[20][0]) - 2_000_000)
    own = analyze_capture(conv.pcap(tmp_path / "step.pcap"), own_capture=True)
    assert any("step backwards at 1 frame(s) (frame 22)" in w for w in own.warnings), own.warnings
    foreign = analyze_capture(tmp_path / "step.pcap")
    assert any("step backwards at 2 frame(s) (frames 12, 22)" in w for w in foreign.warnings)


MS = 1_000_000


def _retimed(stamps_ms: list[float], *, split: int | None = None
             ) -> tuple[list[float], list[int], ClockState]:
    """``retime`` over stamps in ms, in one chunk or two (split before index ``split``)."""
    raw = np.array([round(v * MS) for v in stamps_ms], dtype=np.int64)
    state = ClockState()
    times: list[float] = []
    epochs: list[int] = []
    for part in (np.split(raw, [split]) if split else [raw]):
        ts, epoch = retime(part, state)
        times += (ts / MS).tolist()
        epochs += epoch.tolist() if epoch is not None else [0] * len(part)
    return times, epochs, state


@pytest.mark.parametrize("split", [None, 2, 3, 4])
def test_a_lone_frame_stamped_early_is_simultaneous_with_the_one_before(
        split: int | None) -> None:
    """10 11 [3] 12 13: the frame at 3 is read at 11, the others keep their times and no
    RTT sample is taken from it; the same when a chunk ends at or around it."""
    times, epochs, state = _retimed([10, 11, 3, 12, 13], split=split)
    assert times == [10, 11, 11, 12, 13]
    # A chunk that ends at the frame reads it as a clock step until the next chunk shows
    # otherwise: the frames after it are in a new epoch (a few RTT samples fewer).
    assert epochs == ([0, 0, UNTRUSTED, 1, 1] if split == 3 else [0, 0, UNTRUSTED, 0, 0])
    assert state.bridged == (0, 1)


def test_a_lone_frame_stamped_ahead_is_simultaneous_with_the_one_before() -> None:
    """10 [90] 11 12 13: the frame at 90 is read at 10, the frames after keep their times."""
    times, epochs, state = _retimed([10, 90, 11, 12, 13])
    assert times == [10, 10, 11, 12, 13]
    assert epochs == [0, UNTRUSTED, 0, 0, 0]
    assert state.bridged == (0, 1)


@pytest.mark.parametrize("split", [None, 2, 3, 4])
def test_a_clock_step_back_keeps_the_spacing_after_it(split: int | None) -> None:
    """10 11 [3] 4 5: the frame at 3 is read at 11 and the frames after keep their 1 ms
    spacing (clamping them would squeeze them into 11); they start a new epoch, so no RTT
    sample spans the step."""
    times, epochs, state = _retimed([10, 11, 3, 4, 5], split=split)
    assert times == [10, 11, 11, 12, 13]
    assert epochs == [0, 0, UNTRUSTED, 1, 1]
    assert state.bridged == (1, 0)


def test_a_step_back_under_a_millisecond_keeps_its_rtt_samples() -> None:
    """The packet socket's stamping race (a few us): read at the frame before, as any lone
    frame, but its stamp is good enough for an RTT sample."""
    times, epochs, state = _retimed([10, 11, 10.999, 12])
    assert times == [10, 11, 11, 12]
    assert epochs == [0, 0, 0, 0]
    assert state.bridged == (0, 1)


def test_a_clock_step_back_mid_transfer_keeps_the_duration_and_the_rtt(
        tmp_path: Path) -> None:
    """The clock steps back 5 s between two rounds and runs on: the connection lasts as
    long as it did, and no RTT sample spans the step (one would be about -5 s, or 0 s
    once clamped)."""
    conv = _transfer()
    for index in range(21, len(conv.frames)):
        _restamp(conv, index, -5_000_000_000)
    result = analyze_capture(conv.pcap(tmp_path / "stepped.pcap"))
    (c,) = result.connections
    assert c.duration_s == pytest.approx(20 * 0.051 + 0.0501 - 0.001, abs=1e-3)
    assert c.a_to_b.rtt.min_s == pytest.approx(0.05, abs=1e-3)
    assert any("1 clock step(s) back bridged" in w for w in result.warnings), result.warnings

