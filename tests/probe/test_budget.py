"""The rate monitor: when a watched push has said enough (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitnetdiag.probe.budget import (
    NATIVE_DOWNLOAD_BUDGET_S,
    Progress,
    RateMonitor,
    StopReason,
    native_download_budget,
    native_pack_bytes,
    swallowed_full_size,
)
from gitnetdiag.probe.tcpinfo import TcpInfoSample, append_samples, read_samples


def _feed(monitor: RateMonitor, rate_of: dict[float, float], until_s: float,
          step_s: float = 0.25) -> StopReason | None:
    """Feed points every ``step_s``: bytes/s by start time of the segment."""
    moved, t = 0.0, 0.0
    while t < until_s:
        t += step_s
        rate = next(r for start, r in sorted(rate_of.items(), reverse=True) if t > start)
        moved += rate * step_s
        monitor.add(Progress(t_s=t, moved_bytes=int(moved)))
        reason = monitor.stop_reason(t, pack_finished=False)
        if reason is not None:
            return reason
    return None


def test_a_steady_rate_stops_after_four_half_second_windows_past_slow_start() -> None:
    """Slow start, then 1 MB/s: stable after the first window plus four more."""
    monitor = RateMonitor(budget_s=10, stall_timeout_s=15)
    reason = _feed(monitor, {0.0: 200_000, 1.0: 1_000_000}, until_s=20)
    assert reason is StopReason.STABLE
    assert monitor.points[-1].t_s <= 3.5
    rate = monitor.rate_bytes_per_s()
    assert rate is not None and rate == pytest.approx(1_000_000, rel=0.1)


def test_a_rate_that_keeps_changing_runs_to_the_budget() -> None:
    monitor = RateMonitor(budget_s=6, stall_timeout_s=15)
    rates = {float(t): 1_000_000 * (1 + (t % 2)) for t in range(0, 20)}
    assert _feed(monitor, rates, until_s=20) is StopReason.BUDGET
    assert monitor.points[-1].t_s == pytest.approx(6.0)


def test_no_progress_for_the_stall_timeout_is_a_stall_even_without_a_budget() -> None:
    """Bytes move, then stop (the HTTP/2 upload hang): stalled 15 s after the last byte."""
    monitor = RateMonitor(budget_s=None, stall_timeout_s=15)
    assert _feed(monitor, {0.0: 500_000, 2.0: 0.0}, until_s=60) is StopReason.STALL
    assert monitor.points[-1].t_s == pytest.approx(17.0)


def test_a_finished_pack_is_never_cut() -> None:
    """Once git handed over the whole pack the server may apply it: let git finish."""
    monitor = RateMonitor(budget_s=1, stall_timeout_s=1)
    monitor.add(Progress(t_s=30.0, moved_bytes=0))
    assert monitor.stop_reason(30.0, pack_finished=True) is None
    assert monitor.stop_reason(30.0, pack_finished=False) is StopReason.STALL


def test_nothing_moved_gives_no_rate() -> None:
    monitor = RateMonitor(budget_s=10, stall_timeout_s=None)
    monitor.add(Progress(t_s=3.0, moved_bytes=0))
    assert monitor.rate_bytes_per_s() is None
    assert monitor.stop_reason(3.0, pack_finished=False) is None


def test_a_push_stopped_dead_at_the_budget_waits_for_the_stall_timeout() -> None:
    """Nothing moves after 1 s (a path-MTU black hole): not a rate at the 10 s budget, but a
    stall at 16 s."""
    monitor = RateMonitor(budget_s=10, stall_timeout_s=15)
    assert _feed(monitor, {0.0: 500, 1.0: 0.0}, until_s=60) is StopReason.STALL
    assert monitor.points[-1].t_s == pytest.approx(16.0)


def test_native_probes_send_twenty_round_trips_of_the_pack_at_gits_rate() -> None:
    mib = 1024 * 1024
    assert native_pack_bytes(24 * mib, [1.3e6], budget_s=10) == int(1.3e6 * 1.5)  # RTT unknown
    assert native_pack_bytes(24 * mib, [1.3e6], budget_s=10, rtt_s=0.05) == int(1.3e6 * 1.0)
    assert native_pack_bytes(24 * mib, [1.3e6], budget_s=10, rtt_s=0.2) == int(1.3e6 * 1.5)
    assert native_pack_bytes(24 * mib, [], budget_s=10) == mib  # stalled: a first MiB
    assert native_pack_bytes(24 * mib, [50e6], budget_s=10) == 24 * mib
    assert native_pack_bytes(24 * mib, [1.3e6], budget_s=None) == 24 * mib  # --complete


def test_the_probe_command_shows_bytes_and_rate_while_a_push_runs() -> None:
    from rich.console import Console
    from rich.progress import Progress as RichProgress

    from gitnetdiag.commands.probe import RichReporter

    console = Console(record=True, width=100, force_terminal=True)
    progress = RichProgress(console=console)
    reporter = RichReporter(progress, console)
    reporter.begin("push h2 #1")
    reporter.moved("push h2 #1", 5 * 2**20, 1.25 * 2**20)
    [task] = progress.tasks
    assert task.description == "push h2 #1: 5.0 MiB, 1.25 MiB/s"
    reporter.moved("push h1 #1", 1, None)  # not begun: ignored
    reporter.phase("push h2 #1", "waiting for the server's status")
    reporter.moved("push h2 #1", 5 * 2**20, None)
    assert progress.tasks[0].description == "push h2 #1: 5.0 MiB; waiting for the server's status"


def test_a_non_terminal_stderr_gets_a_line_per_step_and_phase() -> None:
    """A log or CI stderr sees each step and phase as it happens (no spinner, no
    byte counter), and a terminal gone away (EIO after SIGHUP) stops nothing."""
    from rich.console import Console
    from rich.progress import Progress as RichProgress

    from gitnetdiag.commands.probe import RichReporter

    console = Console(record=True, width=200, force_terminal=False)
    progress = RichProgress(console=console)
    reporter = RichReporter(progress, console)
    reporter.begin("push h1 #1")
    reporter.moved("push h1 #1", 5 * 2**20, None)
    reporter.phase("push h1 #1", "waiting for the server's status")
    reporter.done("push h1 #1", "0.11 s", ok=True)
    assert console.export_text().splitlines() == [
        "push h1 #1 ...", "push h1 #1: waiting for the server's status",
        "ok push h1 #1: 0.11 s"]
    assert progress.tasks == []

    class Gone:
        def write(self, text: str) -> int:
            raise OSError(5, "Input/output error")

        def flush(self) -> None:
            raise OSError(5, "Input/output error")

    dead = Console(file=Gone(), force_terminal=False)  # type: ignore[arg-type]
    RichReporter(RichProgress(console=dead), dead).warn("the branch is left")


def test_a_slow_login_is_not_transfer_time() -> None:
    """SSH behind a slow key lookup: 4 kB of handshake at once, 8.4 s of nothing, then the
    pack at 1 MB/s until the budget. Counted from the first byte the rate was 0.15 MB/s
    and a 3 MiB push was projected at minutes (the lab's slow-auth fault ranked
    ssh-channel-window first); from the start of the pack it is the path's rate."""
    monitor = RateMonitor(budget_s=10, stall_timeout_s=15)
    monitor.add(Progress(t_s=0.25, moved_bytes=4_000))
    for i in range(1, 34):  # quiet until 8.6 s, samples every 0.25 s
        monitor.add(Progress(t_s=0.25 + i * 0.25, moved_bytes=4_000))
    t, moved = 8.5, 4_000
    reason = None
    while reason is None and t < 12:
        t += 0.25
        moved += 250_000
        monitor.add(Progress(t_s=t, moved_bytes=moved))
        reason = monitor.stop_reason(t, pack_finished=False)
    assert monitor.first_data_s() == pytest.approx(8.5)
    rate = monitor.rate_bytes_per_s()
    assert rate is not None and rate == pytest.approx(1_000_000, rel=0.1)


def test_the_budget_starts_with_the_pack_not_the_login() -> None:
    """The lab's slow-auth over SSH: 11 s of key lookup moving a few hundred bytes. Cut at
    the 10 s budget it gave 44 B/s and a 3 MiB push projected at 20 hours (ranked
    ssh-channel-window first); the budget now waits for the pack, then measures it."""
    monitor = RateMonitor(budget_s=10, stall_timeout_s=15)
    t, moved = 0.0, 3_000
    while t < 11.0:  # a few bytes every second or so: never a stall, never a pack
        t += 0.25
        if int(t * 4) % 5 == 0:
            moved += 100
        monitor.add(Progress(t_s=t, moved_bytes=moved))
        assert monitor.stop_reason(t, pack_finished=False) is None, t
    assert monitor.pack_started_s() is None
    reason = None
    while reason is None and t < 30:
        t += 0.25
        moved += 250_000
        monitor.add(Progress(t_s=t, moved_bytes=moved))
        reason = monitor.stop_reason(t, pack_finished=False)
    assert reason is StopReason.STABLE
    assert monitor.pack_started_s() == pytest.approx(11.0)
    rate = monitor.rate_bytes_per_s()
    assert rate is not None and rate == pytest.approx(1_000_000, rel=0.1)


def test_no_answer_after_the_whole_pack_is_a_stall_at_the_server() -> None:
    """Once git printed ``Total`` the budget no longer applies, but silence does: no byte
    acknowledged or received and no line for the stall timeout ends the push as
    ``server-stall``; a line from the server (``remote: ...``) restarts the count."""
    from gitnetdiag.probe.budget import StopReason

    monitor = RateMonitor(budget_s=10, stall_timeout_s=3)
    monitor.add(Progress(t_s=0.25, moved_bytes=1_000_000))
    assert monitor.stop_reason(0.5, pack_finished=True) is None
    monitor.add(Progress(t_s=2.0, moved_bytes=1_000_000))
    monitor.alive(2.0)  # "remote: running the hook"
    assert monitor.stop_reason(4.9, pack_finished=True) is None
    assert monitor.stop_reason(5.0, pack_finished=True) is StopReason.SERVER_STALL
    unlimited = RateMonitor(budget_s=None, stall_timeout_s=None)
    assert unlimited.stop_reason(1000.0, pack_finished=True) is None


def _socket(rows: list[tuple[float, float, float, float]], *, mss: float = 1448,
            unacked: float = 12) -> list[TcpInfoSample]:
    """Samples of one socket: (t_s, bytes_acked, total_retrans, bytes_retrans)."""
    return [TcpInfoSample(t_s=t, local="198.18.1.2:46174", peer="198.18.2.2:8443",
                          source="ss -tin",
                          counters={"bytes_acked": acked, "total_retrans": resends,
                                    "bytes_retrans": resent, "snd_mss": mss,
                                    "unacked": unacked})
            for t, acked, resends, resent in rows]


BLACK_HOLE = [(0.26, 664, 0, 0), (0.5, 1191, 0, 0), (2.25, 1191, 2, 2896),
              (4.22, 1191, 3, 4344), (6.34, 1191, 4, 5792)]
"""The lab's HTTP/1.1 push into the path-MTU black hole, as ``ss -tin`` sampled it."""


def test_full_size_segments_resent_after_small_ones_passed_are_a_black_hole() -> None:
    assert swallowed_full_size(_socket(BLACK_HOLE))


def test_what_a_black_hole_does_not_look_like() -> None:
    """A peer that stopped reading resends nothing; a dead path acknowledged nothing; a
    lossy one moved again; small resent segments are no MTU matter; a path that went down
    after megabytes of the pack passed carried full-size segments before."""
    stopped_reading = [(0.5, 1191, 0, 0), (6.0, 1191, 0, 0)]
    dead = [(0.5, 1, 1, 1448), (6.0, 1, 4, 5792)]
    lossy = [(0.5, 1191, 0, 0), (3.0, 1191, 3, 4344), (6.0, 90_000, 4, 5792)]
    small = [(0.5, 1191, 0, 0), (6.0, 1191, 4, 400)]
    down_after_the_pack_moved = [(0.5, 5_000_000, 0, 0), (6.0, 5_000_000, 4, 5792)]
    for rows in (stopped_reading, dead, lossy, small, down_after_the_pack_moved):
        assert not swallowed_full_size(_socket(rows)), rows
    assert not swallowed_full_size(_socket(BLACK_HOLE, unacked=0))
    assert not swallowed_full_size([])


def test_samples_read_back_from_the_run_directory(tmp_path: Path) -> None:
    """What the push wrote reads back; a line cut by a crash is skipped."""
    path = tmp_path / "h1-1.tcpinfo.jsonl"
    append_samples(path, _socket(BLACK_HOLE))
    with path.open("a") as handle:
        handle.write('{"t_s": 7.0, "local": "198.18.1.2:4')
    assert read_samples(path) == _socket(BLACK_HOLE)
    assert read_samples(tmp_path / "missing.jsonl") == []


def test_a_native_download_gets_twenty_round_trips_of_pack() -> None:
    """Twenty round trips of its path plus 0.1 s (0.6 to 2.1 s), never more than the run's
    budget; the whole pack in a complete run; 2.1 s when the RTT is unknown."""
    assert native_download_budget(10.0, 0.05) == 1.1
    assert native_download_budget(10.0, 0.01) == 0.6  # a LAN: a few samples at the least
    assert native_download_budget(10.0, 0.2) == NATIVE_DOWNLOAD_BUDGET_S == 2.1
    assert native_download_budget(10.0, None) == native_download_budget(10.0, 0.0) == 2.1
    assert native_download_budget(0.8, 0.05) == 0.8
    assert native_download_budget(None, 0.05) is None
    assert native_download_budget(10.0, 0.05, rtts=30) == 1.6


def test_a_native_download_s_rate_is_measured_as_before_over_its_shorter_span() -> None:
    """At 50 ms: 64 kB of preamble, then 1 MB per 0.25 s: stopped after 1.1 s of pack, the
    rate over the whole span (under 2 s nothing is left out, as for a whole fast pack)."""
    monitor = RateMonitor(budget_s=native_download_budget(10.0, 0.05), stall_timeout_s=15.0)
    moved = [0, 60_000] + [60_000 + 1_000_000 * n for n in range(1, 10)]
    stop = None
    for n, value in enumerate(moved):
        t_s = 0.25 * n
        monitor.add(Progress(t_s=t_s, moved_bytes=value))
        stop = monitor.stop_reason(t_s, pack_finished=False)
        if stop is not None:
            break
    assert stop is StopReason.BUDGET and monitor.points[-1].t_s == pytest.approx(1.5)
    assert monitor.rate_bytes_per_s() == pytest.approx(4_000_000, rel=0.01)
