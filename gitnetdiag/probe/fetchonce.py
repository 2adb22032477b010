"""One bounded clone of what the URL serves, watched while it runs, then removed.

A clone is read-only: git's upload-pack on the server reads refs and objects
and writes nothing, so a fetch measures the user's real repository with read
access alone. The clone goes into a private temporary directory, runs with
git's traces on (trace2 events, the packet trace of the ref advertisement) and
``--progress`` (the server's sideband ``remote:`` lines and the client's
``Receiving objects``), and is followed by the same pure
:class:`~gitnetdiag.probe.budget.RateMonitor` as a push, fed with the bytes received
so far: the kernel's ``bytes_received`` of git's sockets (``ss -tin``, any user) or
git's own count of the pack, whichever is larger (the kernel's stays behind once a
socket closed between two samples). Until git counts the pack aloud the server's
words are the progress (:class:`~gitnetdiag.probe.packphase.PackPhaseWatch`: a server
that talks and never sends a pack is a stall of its pack phase, ``server-stall``, not a
rate); from the first pack byte the monitor stops git mid-pack once the rate is stable
or the budget (counted from there) is spent, or when nothing moves for the stall
timeout. Once the whole pack arrived (``Receiving objects: 100%``) git is left to
resolve deltas and check out, so those phases are seen. Whatever happened, the
temporary directory is removed and checked gone.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol as TypingProtocol

from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.outcomes import MEASURED_OUTCOMES, TransferOutcome
from gitnetdiag.probe.budget import DEFAULT_BUDGET_S, Progress, RateMonitor, StopReason, exited
from gitnetdiag.probe.capture import Capture
from gitnetdiag.probe.cgroupcpu import CgroupCpuWatch
from gitnetdiag.probe.fetchfull import FetchWire
from gitnetdiag.probe.gitpush import GitInterrupted, GitRun, Transport, failure_line
from gitnetdiag.probe.options import ProbeOptions, Reporter
from gitnetdiag.probe.packphase import PackPhaseWatch, words_limit
from gitnetdiag.probe.pushonce import now_iso
from gitnetdiag.probe.servertcp import SampleAhead, ServerSampler, ServerVantage, sample_server
from gitnetdiag.probe.tcpinfo import SAMPLE_INTERVAL_S, TcpInfoSample, append_samples, sample_ss
from gitnetdiag.probe.trace2 import parse_curl_trace, redact_curl_trace, request_endings
from gitnetdiag.proc import kill_group, make_scratch, scratch_removed, start
from gitnetdiag.rundir.cgroupcpu import CgroupCpuRecord, CpuStatSample
from gitnetdiag.rundir.records import (
    CloneRecord,
    HttpRequestRecord,
    PackWaitRecord,
    TimelinePoint,
)
from gitnetdiag.safefile import keep_file, replace_file
from gitnetdiag.serial import to_jsonable
from gitnetdiag.vocabulary import TransportKind

FETCH_SAFETY_CONFIG = (
    "-c", "protocol.version=2", "-c", "core.hooksPath=/dev/null",
    "-c", "submodule.recurse=false", "-c", "fetch.recurseSubmodules=no",
    "-c", "advice.detachedHead=false", "-c", "core.fsmonitor=false",
)
"""A clone runs no hook, recurses into no submodule and speaks protocol v2 (``ls-refs``)
where the server can; the server side is untouched whatever the config says."""
FETCH_COUNT_CONFIG = ("-c", "fetch.unpackLimit=1")
"""Every pack goes through ``index-pack``, which counts it aloud (``Receiving objects: 100%
(10/10), 8.00 MiB``; trace2's ``total_bytes``). Below 100 objects git would run
``unpack-objects`` instead, which says nothing when stderr is not a terminal: an 8 MiB clone
of 10 objects that came between two samples left no count of its bytes, and a clone that
finished was declared failed (issue 34)."""

_RECEIVING_RE = re.compile(
    r"(?:Receiving|Unpacking) objects: +(\d+)% \(\d+/\d+\)"
    r"(?:, ([\d.]+) (bytes|KiB|MiB|GiB))?")
_UNITS = {"bytes": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


def clone_argv(transport: Transport, dest: Path, branch: str | None = None) -> list[str]:
    """git clone of the remote into ``dest``: no templates (no hooks), progress on; with
    ``branch`` that branch alone (``--fetch-seed``'s throwaway branch), no tags."""
    only = ["--single-branch", "--no-tags", "--branch", branch] if branch else []
    return ["git", *transport.config_args(), *FETCH_SAFETY_CONFIG, *FETCH_COUNT_CONFIG,
            "clone", "--progress",
            "--no-local", "--template=", *only, transport.command_url, str(dest)]


def received_from_progress(stderr: str) -> tuple[int | None, bool]:
    """Bytes git says it received (``Receiving objects: ..., X MiB``, rounded by git) and
    whether the whole pack arrived (``Receiving objects: 100%``)."""
    received = None
    finished = False
    for match in _RECEIVING_RE.finditer(stderr):
        finished = finished or match.group(1) == "100"
        if match.group(2):
            received = int(float(match.group(2)) * _UNITS[match.group(3)])
    return received, finished


def pack_begun(stderr: str) -> bool:
    """git counts a pack aloud: its first ``Receiving objects`` (or ``Unpacking objects``)
    line, printed once an object arrived (or within a second of the first pack bytes)."""
    return _RECEIVING_RE.search(stderr) is not None


class FetchState(TypingProtocol):
    """The parts of a fetch run a clone reads and reports to (``fetchrun._FetchRun``)."""

    options: ProbeOptions
    run_dir: Path
    reporter: Reporter
    branch: str | None
    """The branch every clone fetches alone (``--fetch-seed``); None: what the URL serves."""
    capture_enabled: bool
    """Each clone is captured (root and tcpdump, and ``--capture`` not turned off)."""
    warnings: list[str]
    """The run's warnings (a capture that could not start)."""

    def transport(self, protocol: TransportKind) -> Transport: ...


@dataclass(frozen=True, kw_only=True)
class MonitoredClone:
    """A clone run under the monitor."""

    run: GitRun
    """The git run (``timed_out`` when the monitor or the timeout killed it)."""
    stopped: StopReason | None
    """Why the monitor stopped it; None when git ended by itself (or at the timeout)."""
    monitor: RateMonitor
    """The bytes received over time."""
    timeline: tuple[TimelinePoint, ...]
    """When each part of stderr had been written, with the bytes received."""
    tcpinfo_samples: int
    """``ss -tin`` samples recorded."""
    server_samples: int = 0
    """``ss -tin`` samples of the server's sockets recorded (a local server only)."""
    stall_detail: str = ""
    """What a clone the monitor stopped for no progress saw last, in one line ("" when it
    was not stopped so)."""
    pack_wait: PackWaitRecord | None = None
    """A clone stopped in the server's pack phase (``server-stall``): its wait for the
    pack, the server's last words and the bound that stopped it."""
    cgroup_cpu: CgroupCpuRecord | None = None
    """The CPU counters of git's cgroup before and after (:mod:`~gitnetdiag.probe.cgroupcpu`)."""
    cpu_samples: tuple[CpuStatSample, ...] = ()
    """Those counters at each sample while git ran."""


_Sampler = Callable[[int, int, float], list[TcpInfoSample]]


@dataclass(frozen=True, kw_only=True)
class ServerWatch:
    """Where a clone's server-side samples come from and go (a local server only)."""

    sampler: ServerSampler
    path: Path
    """``<stem>.server-tcpinfo.jsonl``."""


def _received(found: Sequence[TcpInfoSample], seen: dict[str, float]) -> int:
    """Bytes received on every socket git opened so far (one git started each, so the
    kernel's count is the clone's; a socket closed since keeps its last count)."""
    for sample in found:
        value = sample.counters.get("bytes_received")
        if value is not None:
            seen[sample.local] = max(value, seen.get(sample.local, 0.0))
    return int(sum(seen.values()))


class _CloneWatch:
    """What one sample of a running clone reads, and what it decides (see the module doc)."""

    def __init__(self, *, budget_s: float | None, stall_timeout_s: float | None, port: int,
                 session_id: int, tcpinfo_path: Path, sampler: _Sampler,
                 server: ServerWatch | None) -> None:
        self.monitor = RateMonitor(budget_s=budget_s, stall_timeout_s=stall_timeout_s)
        self.before_pack = PackPhaseWatch(
            stall_timeout_s, words_limit(stall_timeout_s, budget_s, DEFAULT_BUDGET_S))
        self.port, self.session_id = port, session_id
        self.tcpinfo_path, self.sampler, self.server = tcpinfo_path, sampler, server
        self.timeline: list[TimelinePoint] = []
        self.samples = self.server_samples = 0
        self.seen: dict[str, float] = {}
        self.begun = False
        """git counts the pack aloud (``Receiving objects``): the monitor decides."""
        self.finished_s: float | None = None
        """When git said the whole pack was in (``Receiving objects: 100%``)."""

    def sample(self, now: float, err: bytearray) -> StopReason | None:
        """Read git's stderr and the sockets once, feed the monitor; why to stop, if so."""
        size = len(err)
        stderr = bytes(err[:size]).decode(errors="replace")
        from_git, pack_finished = received_from_progress(stderr)
        server = self.server if self.finished_s is None else None  # the sender, during the pack
        # git's sockets as last seen: the server's ss runs beside the client's
        ahead = SampleAhead(server.sampler, self.port, set(self.seen), now) \
            if server is not None and self.seen else None
        found = self.sampler(self.port, self.session_id, now)
        append_samples(self.tcpinfo_path, found)
        self.samples += len(found)
        kernel = _received(found, self.seen) if self.samples else 0
        # The kernel counts every byte that reached git's sockets, git only the pack it
        # read: the larger is the download so far (the kernel's count stays behind once
        # the socket is closed, or when it was last seen before the pack came).
        moved = max(kernel, from_git or 0)
        if server is not None:
            sent = (ahead.result() if ahead is not None
                    else server.sampler(self.port, set(self.seen), now))
            append_samples(server.path, sent)
            self.server_samples += len(sent)
        if self.finished_s is None:  # after the pack, index-pack and checkout are not transfer
            if not self.begun and pack_begun(stderr):
                self.begun = True
                self.monitor.pack_started_after(self.monitor.points[-1].t_s)
            self.monitor.add(Progress(t_s=now, moved_bytes=moved))
            self.before_pack.see(now, stderr=stderr, stderr_bytes=size, received_bytes=kernel)
            self.finished_s = now if pack_finished else None
        self.timeline.append(TimelinePoint(t_s=now, stderr_bytes=size,
                                           received_bytes=self.monitor.points[-1].moved_bytes))
        # Once the pack is in, the quiet that follows is this client's own index-pack
        # and checkout (what client-index-pack-cpu measures), not a server stalling as
        # after a push's pack: only the overall timeout bounds it.
        if self.finished_s is not None:
            return None
        if not self.begun:  # the server's words and the handshakes, not pack bytes
            if not self.before_pack.stalled(now):
                return None
            return StopReason.SERVER_STALL if self.before_pack.server_line else StopReason.STALL
        return self.monitor.stop_reason(now, pack_finished=False)

    def pack_wait(self, stopped: StopReason | None) -> PackWaitRecord | None:
        """A clone stopped in the server's pack phase: how long it had waited for its pack
        (the words' time: since the last bytes beyond them), the server's last words, and
        the bound that stopped it; None for any other ending."""
        watch = self.before_pack
        if stopped is not StopReason.SERVER_STALL:
            return None
        now = self.monitor.points[-1].t_s
        words_only = watch.words_only(now)
        bound = watch.words_limit_s if words_only else watch.stall_timeout_s
        return PackWaitRecord(wait_s=watch.words_s(now), server_words=watch.server_line,
                              words_only=words_only, bound_s=bound or 0.0)

    def stall_detail(self, stopped: StopReason | None) -> str:
        """What a stopped-moving clone had seen last, in one line."""
        now = self.monitor.points[-1].t_s
        quiet = self.before_pack.quiet_s(now)
        if stopped is StopReason.SERVER_STALL and self.before_pack.words_only(now):
            return (f"no pack after {self.before_pack.words_s(now):.1f} s: the server sent "
                    f"only progress, last 'remote: {self.before_pack.server_line}' "
                    f"({self.monitor.points[-1].moved_bytes} B received)")
        if stopped is StopReason.SERVER_STALL:
            return (f"stalled in the server's pack phase: no pack byte, and nothing new from "
                    f"the server for {quiet:.1f} s after "
                    f"'remote: {self.before_pack.server_line}'")
        if stopped is StopReason.STALL and not self.begun:
            return (f"stalled waiting for the server: nothing for {quiet:.1f} s after "
                    f"{self.monitor.points[-1].moved_bytes} B received (connect, ref "
                    "advertisement, request), no word of its pack")
        if stopped is StopReason.STALL:
            return (f"stalled mid-pack: no byte for "
                    f"{self.monitor.points[-1].t_s - self.monitor.last_change_s:.1f} s "
                    f"after {self.monitor.points[-1].moved_bytes} B")
        return ""


def run_monitored_clone(argv: Sequence[str], *, env: Mapping[str, str], timeout_s: float,
                        budget_s: float | None, stall_timeout_s: float | None, port: int,
                        tcpinfo_path: Path, on_progress: Callable[[int, float | None], None],
                        sampler: _Sampler = sample_ss,
                        server: ServerWatch | None = None) -> MonitoredClone:
    """Run ``git clone --progress`` under a :class:`RateMonitor` (see the module doc); the
    CPU counters of git's cgroup are read around it (:class:`CgroupCpuWatch`)."""
    cpu = CgroupCpuWatch()
    cpu.before_start()
    started = time.monotonic()
    proc = start(argv, isolate="session", cwd="/", env=env,
                 missing_hint="install the Debian package 'git'")
    out, err = bytearray(), bytearray()
    readers = [threading.Thread(target=_drain, args=(stream, sink), daemon=True)
               for stream, sink in ((proc.stdout, out), (proc.stderr, err))]
    for reader in readers:
        reader.start()
    watch = _CloneWatch(budget_s=budget_s, stall_timeout_s=stall_timeout_s, port=port,
                        session_id=proc.pid, tcpinfo_path=tcpinfo_path, sampler=sampler,
                        server=server)
    monitor = watch.monitor
    stopped: StopReason | None = None
    killed = False
    try:
        # The first interval also looks for git's cgroup (a wrapper may move it at once).
        cpu.settle(proc.pid, lambda: proc.poll() is None, SAMPLE_INTERVAL_S,
                   lambda: time.monotonic() - started)
        while proc.poll() is None:
            # git's exit ends the wait at once: its wall time is when it exited, not the
            # next sample's (up to a sample interval later).
            if watch.timeline and exited(proc, SAMPLE_INTERVAL_S):
                break
            now = time.monotonic() - started
            stopped = watch.sample(now, err)
            cpu.sample(now)
            on_progress(monitor.points[-1].moved_bytes, monitor.rate_bytes_per_s())
            if stopped is not None or now >= timeout_s:
                killed = True
                kill_group(proc)
                break
    except KeyboardInterrupt as exc:
        kill_group(proc)
        raise GitInterrupted(_finish(proc, argv, started, True, readers, out, err)) from exc
    except BaseException:
        kill_group(proc)
        raise
    run = _finish(proc, argv, started, killed, readers, out, err)
    # A clone quicker than the samples: git's own count of the whole pack, read after it
    # exited, was all there when it exited (not at the last sample, which may never have
    # come on a loaded machine: a rate over no time): a lower bound on the rate.
    from_git, _ = received_from_progress(run.stderr)
    if stopped is None and from_git is not None and from_git > monitor.points[-1].moved_bytes:
        monitor.add(Progress(t_s=max(monitor.points[-1].t_s, run.wall_s), moved_bytes=from_git))
    watch.timeline.append(TimelinePoint(t_s=run.wall_s, stderr_bytes=len(err),
                                        received_bytes=monitor.points[-1].moved_bytes))
    return MonitoredClone(run=run, stopped=stopped, monitor=monitor,
                          timeline=tuple(watch.timeline), tcpinfo_samples=watch.samples,
                          server_samples=watch.server_samples,
                          stall_detail=watch.stall_detail(stopped),
                          pack_wait=watch.pack_wait(stopped), cgroup_cpu=cpu.finish(run.wall_s),
                          cpu_samples=tuple(cpu.samples))


def _drain(stream: object, sink: bytearray) -> None:
    read = stream.read1  # type: ignore[attr-defined]
    while chunk := read(65536):
        sink.extend(chunk)


def _finish(proc: object, argv: Sequence[str], started: float, killed: bool,
            readers: list[threading.Thread], out: bytearray, err: bytearray) -> GitRun:
    proc.wait()  # type: ignore[attr-defined]
    for reader in readers:
        reader.join(timeout=5)
    return GitRun(argv=tuple(argv), exit_code=None if killed else proc.returncode,  # type: ignore[attr-defined]
                  wall_s=time.monotonic() - started, timed_out=killed,
                  stderr=err.decode(errors="replace"), stdout=out.decode(errors="replace"))


def _outcome(clone: MonitoredClone) -> TransferOutcome:
    if clone.stopped in (StopReason.STALL, StopReason.SERVER_STALL):
        return "stalled"
    if clone.stopped is not None:
        return "bounded"
    if clone.run.timed_out:
        return "hung"
    return "ok" if clone.run.ok else "failed"


def remove_clone(scratch: Path) -> bool:
    """Remove the partial clone's directory; True when it is gone afterwards."""
    shutil.rmtree(scratch, ignore_errors=True)
    scratch_removed(scratch)
    return not scratch.exists()


def _start_capture(state: FetchState, path: Path, host: str | None, port: int
                   ) -> Capture | None:
    """tcpdump of the clone's connection when the run captures (root), else None; a capture
    that does not start is a warning, the clone goes on without it."""
    if host is None or not state.capture_enabled:
        return None
    capture = Capture(path, host=host, port=port)
    try:
        capture.start()
    except GitnetdiagError as exc:
        state.warnings.append(f"capture of {path.name} did not start: {exc.message}")
        return None
    return capture


def fetch_once(state: FetchState, protocol: TransportKind, repeat: int, port: int,
               host: str | None = None) -> CloneRecord:
    """Clone once over ``protocol`` into a temporary directory, bounded; remove it. With
    ``host`` and captures on, the clone's packets go to ``<stem>.pcap`` (headers only).

    A Ctrl-C stops git, removes the clone and propagates as :class:`GitInterrupted`.
    """
    options = state.options
    transport = state.transport(protocol)
    stem = f"fetch-{protocol.value}-{repeat}"
    artifacts = {"trace2": f"{stem}.trace2.json", "stderr": f"{stem}.stderr.txt",
                 "packet_trace": f"{stem}.packet.txt", "timeline": f"{stem}.timeline.jsonl",
                 "tcpinfo": f"{stem}.tcpinfo.jsonl",
                 "server_tcpinfo": f"{stem}.server-tcpinfo.jsonl",
                 "cgroup_cpu": f"{stem}.cgroup-cpu.jsonl"}
    if protocol.is_http:  # the requests, their statuses and silences (no data lines)
        artifacts["curl_trace"] = f"{stem}.curl.txt"
    paths = {kind: (state.run_dir / name).resolve() for kind, name in artifacts.items()}
    wire = (FetchWire(state.run_dir, stem, host=_host(transport.url), port=port)
            if options.full and protocol is TransportKind.H2 else None)
    env = transport.env({
        "GIT_TRACE2_EVENT": str(paths["trace2"]), "GIT_TRACE2_EVENT_NESTING": "10",
        "GIT_TRACE_PACKET": str(paths["packet_trace"]), "GIT_PROGRESS_DELAY": "0",
        **_curl_env(paths.get("curl_trace")), **(wire.env if wire else {}),
    })
    label = f"fetch {protocol.value} #{repeat}"
    state.reporter.begin(label)
    started_at, started_epoch = now_iso(), time.time()
    scratch = make_scratch("gitnetdiag-clone-")  # the guardian removes it after a SIGKILL
    # Under --full the wire's whole-packet capture (same file name) is the clone's capture.
    capture = (None if wire is not None
               else _start_capture(state, state.run_dir / f"{stem}.pcap", host, port))
    if capture is not None:
        artifacts["capture"] = f"{stem}.pcap"
        paths["capture"] = (state.run_dir / artifacts["capture"]).resolve()
    try:
        with wire or contextlib.nullcontext():
            clone = run_monitored_clone(
                clone_argv(transport, scratch / "clone", state.branch), env=env,
                timeout_s=options.timeout_s,
                budget_s=options.budget_s, stall_timeout_s=options.stall_timeout_s, port=port,
                tcpinfo_path=paths["tcpinfo"],
                on_progress=lambda moved, rate: state.reporter.moved(label, moved, rate),
                server=_server_watch(options, paths["server_tcpinfo"]))
    finally:
        if capture is not None:
            capture.stop()
        removed = remove_clone(scratch)
    _keep_artifacts(state, paths, clone)
    artifacts = {kind: name for kind, name in artifacts.items() if paths[kind].exists()}
    if wire is not None:
        artifacts.update(wire.frames())
    outcome = _outcome(clone)
    kind = clone.run.failure_kind() if outcome in ("failed", "hung") else None
    rate = clone.monitor.rate_bytes_per_s()
    first = clone.monitor.first_data_s()
    last = clone.monitor.points[-1]
    record = CloneRecord(
        protocol=protocol.value, repeat=repeat, direction="fetch", started_at=started_at,
        started_epoch_s=started_epoch, outcome=outcome,
        failure_kind=kind,
        last_line=("" if outcome in MEASURED_OUTCOMES
                   else clone.stall_detail or failure_line(clone.run.stderr)),
        wall_s=clone.run.wall_s, moved_bytes=last.moved_bytes,
        measured_s=last.t_s - first if first is not None else 0.0,
        rate_bytes_per_s=rate if outcome in MEASURED_OUTCOMES else None,
        stopped=clone.stopped,
        last_progress=_last_progress(clone.run.stderr), tcpinfo_samples=clone.tcpinfo_samples,
        server_tcpinfo_samples=clone.server_samples,
        full_warning=wire.warning if wire else "",
        clone_removed=removed, artifacts=artifacts,
        http_requests=_curl_requests(paths.get("curl_trace"), failed=not clone.run.ok),
        pack_wait=clone.pack_wait, cgroup_cpu=clone.cgroup_cpu)
    state.reporter.done(label, _detail(record, clone.stall_detail),
                        ok=outcome in MEASURED_OUTCOMES and removed)
    return record


def _keep_artifacts(state: FetchState, paths: Mapping[str, Path], clone: MonitoredClone
                    ) -> None:
    """git's stderr, the progress timeline and the cgroup's counters at each sample. A full
    run directory: the clone is still recorded, without these files (a warning)."""
    keep_file(paths["stderr"], clone.run.stderr.encode(), lambda m: _warn(state, m))
    keep_file(paths["timeline"], "".join(
        json.dumps({"t_s": p.t_s, "stderr_bytes": p.stderr_bytes,
                    "received_bytes": p.received_bytes}) + "\n" for p in clone.timeline).encode(),
        lambda m: _warn(state, m))
    if clone.cpu_samples:
        keep_file(paths["cgroup_cpu"], "".join(
            json.dumps(to_jsonable(sample)) + "\n" for sample in clone.cpu_samples).encode(),
            lambda m: _warn(state, m))


def _curl_env(path: Path | None) -> dict[str, str]:
    """git's curl trace into ``path`` without its data lines; nothing without a path."""
    return {} if path is None else {"GIT_TRACE_CURL": str(path), "GIT_TRACE_CURL_NO_DATA": "1"}


FINISHED_EARLY = ("the response ended (curl: connection left intact) before git had its "
                  "pack")
"""How a failed clone's last request ended when curl saw nothing wrong with it: an HTTP/2
edge that ends the stream at its timeout leaves curl content and git short of its pack."""


def _curl_requests(path: Path | None, *, failed: bool
                   ) -> tuple[HttpRequestRecord, ...]:
    """An HTTPS clone's requests from its curl trace, redacted in place; () without one.
    The last request of a failed clone that curl saw end well after a silence, with a 2xx
    (or no) status, is recorded as ended by the server side after that silence
    (:data:`FINISHED_EARLY`)."""
    if path is None or not path.is_file():
        return ()
    text = redact_curl_trace(path.read_text(errors="replace"))
    replace_file(path, text.encode())
    requests = parse_curl_trace(text).requests
    records = []
    endings = request_endings(requests, failed=failed, early=FINISHED_EARLY)
    for r, (silence, ending) in zip(requests, endings, strict=True):
        records.append(HttpRequestRecord(
            method=r.method, path=r.path, status=r.status, server=r.server,
            content_length_bytes=r.content_length_bytes, streamed=r.streamed,
            silence_before_close_s=silence, ending=ending,
            silence_before_status_s=r.silence_before_status_s))
    return tuple(records)


def _detail(record: CloneRecord, stall: str) -> str:
    """The clone's line when it ends: outcome, bytes, rate, why it stalled."""
    return (f"{record.outcome}, {record.moved_bytes / 2**20:.1f} MiB"
            + (f", {record.rate_bytes_per_s / 2**20:.2f} MiB/s"
               if record.rate_bytes_per_s else "")
            + (f": {stall}" if stall else "")
            + ("" if record.clone_removed else ", PARTIAL CLONE LEFT"))


def _warn(state: FetchState, message: str) -> None:
    state.warnings.append(message)
    state.reporter.warn(message)


def _host(url: str) -> str:
    from gitnetdiag.remoteurl import endpoint_of

    return endpoint_of(url)[0]


def _server_watch(options: ProbeOptions, path: Path) -> ServerWatch | None:
    """The server's sockets are sampled when it runs on this machine (see
    :mod:`gitnetdiag.probe.servertcp`)."""
    if options.server_netns is None and not options.server_local:
        return None
    vantage = ServerVantage(netns=options.server_netns)
    return ServerWatch(
        sampler=lambda port, peers, t_s: sample_server(vantage, port, peers, t_s), path=path)


def _last_progress(stderr: str) -> str:
    lines = [line.strip() for line in stderr.replace("\r", "\n").splitlines() if line.strip()]
    progress = [line for line in lines if "objects:" in line or "deltas:" in line]
    return progress[-1] if progress else (lines[-1] if lines else "")
