"""A git push watched while it runs: bounded in time, stopped early, stalls caught.

Users on slow links cannot wait for a whole pack (minutes at 1 MB/s), and a
hung push (libcurl's HTTP/2 upload stall) must not take the git timeout. So
:func:`run_monitored_push` follows the bytes the push moves, from two
sources: git's ``Writing objects: ..., X MiB`` progress (``--progress``) and
the kernel's ``bytes_acked`` of git's sockets (``ss -tin``, written to
``<stem>.tcpinfo.jsonl`` as evidence). It stops git

    STABLE   four consecutive 0.5 s windows within 10% of each other (after the first
             window, slow start): the rate is known
    BUDGET   the time budget, counted from the start of the pack (a slow login is not
             part of it), is spent while bytes still move
    STALL    no byte moved for ``stall_timeout_s`` while the pack was unfinished (less
             than ``MIN_PROGRESS_BYTES`` in a sample, a keepalive, is no progress)
    SERVER_STALL  the whole pack was handed over (git printed ``Total``), and for
             ``stall_timeout_s`` nothing more happened: no byte acknowledged or
             received, no line from git or the server (``remote: ...``)

by killing its process group. Before the pack is finished that creates
nothing (receive-pack applies a ref only after the whole pack arrived); after
it the server may still apply it (a slow hook), which the clean-up waits for.
The push's phases (sending the pack, waiting for the server's status) are
told to ``on_phase`` as they begin. :class:`RateMonitor` is the pure part.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gitnetdiag.probe.gitpush import GitInterrupted, GitRun, PackProgress, parse_pack_progress
from gitnetdiag.probe.tcpinfo import (
    SAMPLE_INTERVAL_S,
    TcpInfoSample,
    append_samples,
    sample_ss,
)
from gitnetdiag.proc import kill_group, start
from gitnetdiag.rundir import PushRecord, ToolVersions
from gitnetdiag.rundir.records import StopReason as StopReason  # re-exported: the probes'
from gitnetdiag.safefile import keep_file

DEFAULT_BUDGET_S = 10.0
"""Time budget of one measured push (ndt7 measures a direction in 10 s)."""
DEFAULT_STALL_TIMEOUT_S = 15.0
"""No byte moved for this long ends a push as stalled."""
STABLE_WINDOWS = 4
STABLE_TOLERANCE = 0.10
WINDOW_S = 0.5
"""Four half-second windows within 10% stop a push about 1.5 s sooner than three 1 s
windows, at the same rate (within 3% on recorded HTTP/2 and loss pushes); three half-second
windows were too lenient under loss (30% off)."""
SLOW_START_S = 1.0
"""Left out of the measured rate (when the push ran more than twice as long)."""
PREAMBLE_BYTES = 64 * 1024
"""Bytes a push moves before its pack (TLS or SSH handshake, authentication, ref
negotiation: a few kB): the rate and the time budget start at the last sample below this,
so a slow login (seconds of an SSH key lookup) is neither transfer time nor budget."""
RECENT_PROGRESS_S = 2.0
"""At the budget, bytes must have moved this recently for the rate to count."""
MIN_PROGRESS_BYTES = 100
"""Bytes that must move between two samples for the transfer to progress: a keepalive packet
is 5 B, with its framing (chunked HTTP, TLS, HTTP/2, SSH) 13-70 B, and upload-pack sends one
every 5 s while pack-objects is silent, mid-pack too: a pack that stopped while keepalives
trickle is a stall, not bytes moving (issue 42). A real transfer moves more than this in a
quarter-second sample from 400 B/s up."""


@dataclass(frozen=True, kw_only=True)
class Progress:
    """Bytes a push has moved so far."""

    t_s: float
    """Seconds since the push started."""
    moved_bytes: int
    """Bytes moved: the kernel's ``bytes_acked`` when known, else git's written bytes."""


class RateMonitor:
    """Decides from progress points when a push has said enough (pure, no clock)."""

    def __init__(self, *, budget_s: float | None, stall_timeout_s: float | None) -> None:
        self.budget_s = budget_s
        self.stall_timeout_s = stall_timeout_s
        self.points: list[Progress] = [Progress(t_s=0.0, moved_bytes=0)]
        self.last_change_s = 0.0
        self.last_sign_of_life_s = 0.0
        self.pack_finished_s: float | None = None
        self.known_pack_start_s: float | None = None
        """Set by :meth:`pack_started_after`: where the pack started, whatever moved before."""

    def alive(self, t_s: float) -> None:
        """Something other than sent bytes happened at ``t_s``: bytes received, a line
        from git or the server."""
        self.last_sign_of_life_s = max(self.last_sign_of_life_s, t_s)

    def pack_started_after(self, t_s: float) -> None:
        """The pack is known to have started after ``t_s`` (a clone: git's first
        ``Receiving objects`` line came after the sample at ``t_s``): the rate and the
        budget count from there, whatever moved before (a server's progress lines can
        pass :data:`PREAMBLE_BYTES` long before its pack).

        On a loaded machine git's stderr can lag the socket: the kernel may have counted
        the pack before git said a word of it. A sample interval over ``t_s`` that grew by
        more than :data:`PREAMBLE_BYTES` (no progress lines do) held pack bytes, so the
        start steps back before it: else the whole pack falls before the start and the
        clone has no rate."""
        index = max((i for i, p in enumerate(self.points) if p.t_s <= t_s), default=0)
        while (index > 0 and self.points[index].moved_bytes
               - self.points[index - 1].moved_bytes > PREAMBLE_BYTES):
            index -= 1
        self.known_pack_start_s = min(t_s, self.points[index].t_s)

    def add(self, point: Progress) -> None:
        last = self.points[-1]
        if point.moved_bytes > last.moved_bytes:
            progressed = point.moved_bytes - last.moved_bytes >= MIN_PROGRESS_BYTES
            if point.t_s <= last.t_s and len(self.points) > 1:
                # A later count of the same sample (git's own, read after it exited): it
                # corrects that sample, it adds no instant of zero length to measure over.
                self.points[-1] = Progress(t_s=last.t_s, moved_bytes=point.moved_bytes)
                if progressed:
                    self.last_change_s = last.t_s
            else:
                if progressed:
                    self.last_change_s = point.t_s
                self.points.append(point)
        elif point.t_s > self.points[-1].t_s:
            self.points.append(Progress(t_s=point.t_s, moved_bytes=self.points[-1].moved_bytes))

    def window_rates(self) -> list[float]:
        """Bytes per second in consecutive whole windows since the first byte moved."""
        start = self.first_data_s()
        if start is None:
            return []
        rates = []
        edge = start
        while edge + WINDOW_S <= self.points[-1].t_s:
            rates.append((self.moved_at(edge + WINDOW_S) - self.moved_at(edge)) / WINDOW_S)
            edge += WINDOW_S
        return rates

    def pack_started_s(self) -> float | None:
        """When the pack started moving: the last point before the bytes moved passed
        :data:`PREAMBLE_BYTES`; None while the push is still logging in or negotiating."""
        if self.known_pack_start_s is not None:
            return self.known_pack_start_s
        for before, point in zip(self.points, self.points[1:], strict=False):
            if point.moved_bytes > PREAMBLE_BYTES:
                return before.t_s
        return None

    def first_data_s(self) -> float | None:
        """Where the rate is measured from: the start of the pack (or the first byte, for
        a push too small to pass the preamble)."""
        started = self.pack_started_s()
        if started is not None:
            return started
        return next((p.t_s for p in self.points if p.moved_bytes > 0), None)

    def moved_at(self, t_s: float) -> float:
        """Bytes moved at ``t_s``, interpolated between the points around it (samples
        come every 250-300 ms, too coarse for 1 s windows within 10%)."""
        before = self.points[0]
        for point in self.points:
            if point.t_s >= t_s:
                if point.t_s == before.t_s:
                    return float(point.moved_bytes)
                share = (t_s - before.t_s) / (point.t_s - before.t_s)
                return before.moved_bytes + share * (point.moved_bytes - before.moved_bytes)
            before = point
        return float(before.moved_bytes)

    def stop_reason(self, now_s: float, *, pack_finished: bool) -> StopReason | None:
        if pack_finished:
            if self.pack_finished_s is None:
                self.pack_finished_s = now_s
            quiet_since = max(self.last_change_s, self.last_sign_of_life_s, self.pack_finished_s)
            if self.stall_timeout_s is not None and now_s - quiet_since >= self.stall_timeout_s:
                return StopReason.SERVER_STALL
            return None
        if self.stall_timeout_s is not None and now_s - self.last_change_s >= self.stall_timeout_s:
            return StopReason.STALL
        if self.budget_s is None:
            return None
        started = self.pack_started_s()
        if started is None:
            # Still logging in (a slow key lookup, an auth backend) or negotiating: the
            # budget is for the pack; the stall and overall timeouts bound this part.
            return None
        rates = self.window_rates()[1:]  # the first window is slow start
        recent = rates[-STABLE_WINDOWS:]
        if len(recent) == STABLE_WINDOWS and min(recent) > 0 and (
                max(recent) - min(recent) <= STABLE_TOLERANCE * max(recent)):
            return StopReason.STABLE
        # A push that stopped moving when the budget ran out is not a measured rate: it
        # gets the stall timeout to move again (or to be reported as stalled).
        if now_s - started >= self.budget_s and now_s - self.last_change_s < RECENT_PROGRESS_S:
            return StopReason.BUDGET
        return None

    def rate_bytes_per_s(self) -> float | None:
        """The measured rate: from the first byte to the last point, slow start excluded
        when more than one window was seen."""
        start = self.first_data_s()
        end = self.points[-1]
        if start is None or end.t_s <= start:
            return None
        if end.t_s - start > 2 * SLOW_START_S:
            start += SLOW_START_S
        moved = end.moved_bytes - self.moved_at(start)
        return moved / (end.t_s - start) if moved > 0 else None


@dataclass(frozen=True, kw_only=True)
class MonitoredPush:
    """A push run under the monitor."""

    run: GitRun
    """The git run (``timed_out`` when the monitor or the timeout killed it)."""
    stopped: StopReason | None
    """Why the monitor stopped it; None when git ended by itself (or at the timeout)."""
    moved_bytes: int
    """Bytes moved when it ended."""
    measured_s: float
    """Seconds the rate was measured over (from the first byte moved)."""
    rate_bytes_per_s: float | None
    """Rate of the bytes moved (slow start excluded), None when nothing moved."""
    last_progress: str
    """git's last progress line."""
    tcpinfo_samples: int
    """TCP_INFO samples recorded."""


ProgressCallback = Callable[[int, float | None], None]
"""Told the bytes moved and the rate so far, about every sample (live progress)."""
PhaseCallback = Callable[[str], None]
"""Told each phase of the push as it begins, in one line (``sending the pack``)."""


class _Watch:
    """What one sample of a running push reads: git's output, the kernel's counters."""

    def __init__(self, port: int, session_id: int, tcpinfo_path: Path | None) -> None:
        self.port = port
        self.session_id = session_id
        self.tcpinfo_path = tcpinfo_path
        self.samples = 0
        self.received = 0.0
        self.stderr_chars = 0

    def sample(self, now_s: float, err: bytearray,
               monitor: RateMonitor) -> tuple[PackProgress, int]:
        """Read git's progress and the sockets once; feed the monitor; (progress, moved)."""
        stderr = err.decode(errors="replace")
        progress = parse_pack_progress(stderr)
        found = sample_ss(self.port, self.session_id, now_s)
        if self.tcpinfo_path is not None:
            append_samples(self.tcpinfo_path, found)
        self.samples += len(found)
        # Counted from zero: a socket first seen after a fast pack was sent still moved it.
        acked = sum(sample.counters.get("bytes_acked", 0.0) for sample in found)
        received = sum(sample.counters.get("bytes_received", 0.0) for sample in found)
        if received > self.received or len(stderr) > self.stderr_chars:
            monitor.alive(now_s)
        self.received, self.stderr_chars = max(self.received, received), len(stderr)
        # One source per push: git's count runs ahead of the kernel's by its buffers.
        moved = int(acked) if self.samples else progress.written_bytes or 0
        monitor.add(Progress(t_s=now_s, moved_bytes=moved))
        return progress, monitor.points[-1].moved_bytes


def _phase_of(progress: PackProgress, monitor: RateMonitor) -> tuple[str, str] | None:
    """(phase, its line) of a push: ``sending``, then ``waiting``; None before the pack."""
    if progress.pack_finished:
        moved = monitor.points[-1].moved_bytes
        return "waiting", (f"pack sent ({moved / 2**20:.1f} MiB, {progress.objects} objects): "
                           "waiting for the server's status")
    if monitor.pack_started_s() is not None or progress.written_bytes:
        return "sending", "sending the pack"
    return None


@dataclass(frozen=True, kw_only=True)
class PushLimits:
    """When a monitored push is stopped."""

    timeout_s: float
    """Killed after this long whatever happens (``hung``)."""
    budget_s: float | None
    """Stopped mid-pack once its rate is stable or this is spent; None: a complete push."""
    stall_timeout_s: float | None
    """Stopped when no byte moves for this long; None: only the timeout."""


def run_monitored_push(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, limits: PushLimits, port: int,
    stderr_path: Path, tcpinfo_path: Path | None,
    on_progress: ProgressCallback | None = None, on_phase: PhaseCallback | None = None,
) -> MonitoredPush:
    """Run ``git push --progress`` under a :class:`RateMonitor`; see the module doc.

    ``limits.budget_s`` None: a complete push (still stopped on a stall). A
    KeyboardInterrupt kills the group and raises :class:`GitInterrupted`. git's exit is
    seen at once (the wait between samples ends with it), not at the next sample.
    """
    started = time.monotonic()
    proc = start(argv, isolate="session", cwd=cwd, env=env,
                 missing_hint="install the Debian package 'git'")
    out, err = bytearray(), bytearray()
    readers = [threading.Thread(target=_drain, args=(stream, sink), daemon=True)
               for stream, sink in ((proc.stdout, out), (proc.stderr, err))]
    for reader in readers:
        reader.start()
    monitor = RateMonitor(budget_s=limits.budget_s, stall_timeout_s=limits.stall_timeout_s)
    watch = _Watch(port, proc.pid, tcpinfo_path)
    stopped: StopReason | None = None
    timed_out = False
    phase: str | None = None
    try:
        while not exited(proc, SAMPLE_INTERVAL_S):
            now = time.monotonic() - started
            progress, moved = watch.sample(now, err, monitor)
            if on_progress is not None:
                on_progress(moved, monitor.rate_bytes_per_s())
            now_phase = _phase_of(progress, monitor)
            if now_phase is not None and now_phase[0] != phase:
                phase = now_phase[0]
                if on_phase is not None:
                    on_phase(now_phase[1])
            stopped = monitor.stop_reason(now, pack_finished=progress.pack_finished)
            if stopped is None and now >= limits.timeout_s:
                timed_out = True
            if stopped is not None or timed_out:
                kill_group(proc)
                break
    except KeyboardInterrupt as exc:
        kill_group(proc)
        run = _finish(proc, argv, started, False, readers, out, err, stderr_path)
        raise GitInterrupted(run) from exc
    except BaseException:
        kill_group(proc)
        raise
    run = _finish(proc, argv, started, timed_out or stopped is not None, readers, out, err,
                  stderr_path)
    first = monitor.first_data_s()
    last = monitor.points[-1]
    return MonitoredPush(
        run=run, stopped=stopped, moved_bytes=last.moved_bytes,
        measured_s=last.t_s - first if first is not None else 0.0,
        rate_bytes_per_s=monitor.rate_bytes_per_s(),
        last_progress=_last_progress_line(run.stderr), tcpinfo_samples=watch.samples,
    )


def exited(proc: subprocess.Popen[bytes], wait_s: float) -> bool:
    """Whether ``proc`` exited within ``wait_s`` (the wait ends when it does)."""
    try:
        proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        return False
    return True


def _drain(stream: object, sink: bytearray) -> None:
    fd = stream.fileno()  # type: ignore[attr-defined]
    while chunk := os.read(fd, 65536):
        sink.extend(chunk)


def _finish(proc: subprocess.Popen[bytes], argv: Sequence[str], started: float, killed: bool,
            readers: list[threading.Thread], out: bytearray, err: bytearray,
            stderr_path: Path) -> GitRun:
    proc.wait()
    wall_s = time.monotonic() - started  # at git's exit, not after its pipes drained
    for reader in readers:
        reader.join(timeout=5)
    stderr = err.decode(errors="replace")
    keep_file(stderr_path, stderr.encode())  # a full run directory: the manifest says so
    return GitRun(argv=tuple(argv), exit_code=None if killed else proc.returncode,
                  wall_s=wall_s, timed_out=killed, stderr=stderr,
                  stdout=out.decode(errors="replace"))


def _last_progress_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.replace("\r", "\n").splitlines() if line.strip()]
    progress = [line for line in lines if "objects:" in line]
    return progress[-1] if progress else (lines[-1] if lines else "")


CONFIRM_STALL_S = 4.0
"""Once a push showed a path-MTU black hole (:func:`swallowed_full_size`), the next pushes
only confirm it: no byte moved for this long ends them. The kernel resends the first
full-size segment 0.3, 0.9 and 2.1 s after it (its timeout doubles from about 200 ms plus
the RTT), so three resends, more than the capture analysis needs, fit; the lab's pushes
into the black hole showed the first two within 2.3 s."""
MIN_RESENDS = 2
"""Resends with no byte acknowledged since, the fewest that make a black hole (the capture
analysis asks as many of the segments it sees)."""
FULL_SIZE_SHARE = 0.9
"""The resent bytes per resend, as a share of the connection's MSS, from which the
resent segments are full-size (the lab's: 1448 B each, MSS 1448)."""


def swallowed_full_size(samples: Sequence[TcpInfoSample]) -> bool:
    """The kernel's counters of a push that stopped moving show a path-MTU black hole (pure).

    On one of its connections: data was acknowledged at first (the handshake and its small
    segments passed: more than the SYN's one byte, less than :data:`PREAMBLE_BYTES`, so the
    pack itself never moved), then full-size segments were resent at least
    :data:`MIN_RESENDS` times and not one byte more was acknowledged. A path that is down
    altogether, one that went down after the pack moved (full-size segments passed then),
    or a peer that stopped reading does not look like that: the first acknowledges
    nothing, the second too much, the third resends nothing (its zero window is probed).
    """
    by_socket: dict[str, list[TcpInfoSample]] = {}
    for sample in sorted(samples, key=lambda s: s.t_s):
        by_socket.setdefault(sample.local, []).append(sample)
    return any(_swallowed(series) for series in by_socket.values())


def _swallowed(series: list[TcpInfoSample]) -> bool:
    last = series[-1].counters
    acked = last.get("bytes_acked")
    mss = last.get("snd_mss")
    if acked is None or not 1 < acked < PREAMBLE_BYTES or not mss or not last.get("unacked", 1):
        return False
    since = next(s.counters for s in series if s.counters.get("bytes_acked") == acked)
    resends = last.get("total_retrans", 0.0) - since.get("total_retrans", 0.0)
    resent_bytes = last.get("bytes_retrans", 0.0) - since.get("bytes_retrans", 0.0)
    return resends >= MIN_RESENDS and resent_bytes >= FULL_SIZE_SHARE * mss * resends


NATIVE_BUDGET_S = 1.5
"""At most this many seconds of upload for a native probe (7 round trips at 200 ms)."""
NATIVE_MIN_S = 1.0
NATIVE_ROUND_TRIPS = 20
"""Round trips of window updates a native probe needs to show the window and credit
pattern (the SETTINGS and the initial channel window come before any data): 1 s at 50 ms
RTT, never less than :data:`NATIVE_MIN_S` nor more than :data:`NATIVE_BUDGET_S`."""
NATIVE_MIN_BYTES = 1024 * 1024


def native_seconds(rtt_s: float | None) -> float:
    """Seconds of upload a native probe gets on a path of ``rtt_s`` (pure)."""
    if rtt_s is None or rtt_s <= 0:
        return NATIVE_BUDGET_S
    return min(NATIVE_BUDGET_S, max(NATIVE_MIN_S, NATIVE_ROUND_TRIPS * rtt_s))


def native_pack_bytes(pack_bytes: int, git_rates_bytes_per_s: Sequence[float],
                      budget_s: float | None, rtt_s: float | None = None) -> int:
    """How much of the pack a native probe sends (pure): about :func:`native_seconds` at
    the rate git measured over the same protocol, the whole pack for complete runs.

    A cut pack fails the server's unpack, so receive-pack never applies the ref: the
    ledger gets its steady state and nothing is created.
    """
    if budget_s is None:
        return pack_bytes
    rate = max(git_rates_bytes_per_s, default=0.0)
    wanted = max(NATIVE_MIN_BYTES, int(rate * min(budget_s, native_seconds(rtt_s))))
    return min(pack_bytes, wanted)


NATIVE_DOWNLOAD_BUDGET_S = 2 * SLOW_START_S + 0.1
"""Seconds of pack a native download gets: just over the span from which its rate leaves
slow start out (:meth:`RateMonitor.rate_bytes_per_s`), as the whole pack's did."""
NATIVE_PACK_RTTS = 20
"""Round trips of pack a native download gets on a measured path: ten of slow start (from
10 segments, doubling each round trip, the flight passes 5 MB by then) and ten more."""
NATIVE_MIN_BUDGET_S = 0.6
"""...and at least this long (a few of the monitor's 0.25 s samples)."""


def native_download_budget(budget_s: float | None, rtt_s: float | None, *,
                           rtts: int = NATIVE_PACK_RTTS) -> float | None:
    """The time budget of a native download (pure): ``rtts`` round trips of the path plus
    0.1 s, between :data:`NATIVE_MIN_BUDGET_S` and
    :data:`NATIVE_DOWNLOAD_BUDGET_S` (that alone when the RTT is unknown), never more than
    the run's ``budget_s``; None (a complete run): the whole pack. Its rate is measured as
    before (:meth:`RateMonitor.rate_bytes_per_s`: over the whole span under 2 s).

    Under the run's budget a slow download (a 65535 B window, 0.9 MB/s at 50 ms RTT) ran
    until its rate was stable (2.5 s of pack at the least, 2.8-3.0 s in all); 2.1 s of pack
    gave the default window's rate within 2% of the stable one (replayed on two recorded
    demo runs' ledgers), a fixed 1 s 12-25% under. Twenty round trips, replayed on the
    ledgers of three demo runs at 20, 50 and 100 ms (``benchmarks/native_bound_replay.py``,
    2026-12-06): every rate within 3.8% of the 2.1 s rule's (the default window's +3.1% and
    -1.3%, the SSH download's -3.8% at 50 ms), 2.9 s of pack fewer in all, 1.4 s at 50 ms
    (1.1 s of pack instead of 2.1; issue 47)."""
    if budget_s is None:
        return None
    if not rtt_s or rtt_s <= 0:
        return min(budget_s, NATIVE_DOWNLOAD_BUDGET_S)
    paced = max(NATIVE_MIN_BUDGET_S, rtts * rtt_s + 0.1)
    return round(min(budget_s, NATIVE_DOWNLOAD_BUDGET_S, paced), 3)


def stall_detail(push: PushRecord, env: ToolVersions | None) -> str:
    """What a stalled push had seen, for its error: bytes moved, git's last line, versions."""
    parts = []
    if push.stopped == StopReason.SERVER_STALL:
        parts.append("the whole pack was sent and the server never answered")
    if push.moved_bytes is not None:
        parts.append(f"{push.moved_bytes} bytes moved")
    if push.last_progress or push.last_line:
        parts.append(f"last: {push.last_progress or push.last_line!r}")
    if env is not None:
        parts.append(", ".join(f"{name} {version}" for name, version in
                               (("git", env.git), ("libcurl", env.libcurl),
                                ("nghttp2", env.nghttp2)) if version))
    kept = [part for part in parts if part]
    return f" ({'; '.join(kept)})" if kept else ""
