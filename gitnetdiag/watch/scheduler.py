"""Cycles on each target's interval, each in its own process, with run-directory retention.

    Scheduler thread per target ──> Scheduler.probe(target)  <── /probe?target=NAME
                                      one cycle per target at a time,
                                      at most max_parallel over all targets
                                      SubprocessCycle: [ip netns exec CLIENT_NS]
                                          python -m gitnetdiag.watch.cycle  (job on stdin)
                                      WatchMetrics.record(sample); prune old run dirs
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path

from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.model.lab.state import load_state
from gitnetdiag.rundir import MANIFEST_NAME, load_run
from gitnetdiag.watch.config import Target, WatchConfig
from gitnetdiag.watch.metrics import WatchMetrics
from gitnetdiag.watch.sample import ProbeSample, cleanup_failures_of, failed_sample

log = logging.getLogger("gitnetdiag.watch")

CycleRunner = Callable[[Target, Path, float], tuple[ProbeSample, str | None]]
"""Runs one cycle into a run directory; returns the sample and, when the cycle gave no
diagnosis for a reason of the exporter's own (deadline, crash, lab down), that kind."""

CLEANUP_GRACE_S = 90.0
"""How long a stopping exporter waits for its running cycles (each one ends, its clean-up
included, by its own deadline)."""

ANSWER_GRACE_S = 1.5
"""A cycle ends itself at its deadline, its clean-up included (``watch.cycle``), and prints
its sample: this long more for that answer before it is stopped."""

STOP_GRACE_S = 2.5
"""A cycle still running after its deadline and :data:`ANSWER_GRACE_S` gets SIGTERM, then
SIGKILL after this long: the answer comes within 4 s of the deadline, whatever the server
does (what the cycle's manifest says it may have left is counted)."""

DEADLINE_EXIT = 124
"""A cycle that reached its deadline exits with this code, after its sample (``timeout``'s)."""

RUN_NAME_RE = re.compile(r"^(\d{8}T\d{6}\.\d{3}Z)(-fetch)?(\.log)?$")
"""A run directory (the clones of a ``both`` cycle: ``-fetch``) or its cycle log, made by the
exporter; nothing else is pruned."""


def run_dir_name(started_unix_s: float) -> str:
    """``20261122T210501.123Z``: names sort in time order."""
    moment = datetime.fromtimestamp(started_unix_s, UTC)
    return moment.strftime("%Y%m%dT%H%M%S") + f".{moment.microsecond // 1000:03d}Z"


def runs_to_prune(names: Iterable[str], keep: int) -> list[str]:
    """Entries of a target's directory to delete so that the newest ``keep`` runs stay."""
    runs = sorted({m.group(1) for m in map(RUN_NAME_RE.match, names) if m}, reverse=True)
    doomed = set(runs[keep:])
    return sorted(n for n in names if (m := RUN_NAME_RE.match(n)) and m.group(1) in doomed)


def _job(target: Target, run_dir: Path, started_unix_s: float) -> str:
    return json.dumps({"target": asdict(target), "run_dir": str(run_dir),
                       "started_unix_s": started_unix_s, "deadline_s": target.cycle_deadline_s})


def left_by(run_dir: Path) -> tuple[str, ...]:
    """The branches a cycle's run directory says it may have left (none without one)."""
    if not (run_dir / MANIFEST_NAME).is_file():
        return ()
    try:
        manifest = load_run(run_dir)
    except GitnetdiagError:
        return ()
    return cleanup_failures_of(manifest.errors, manifest.protocols)


class SubprocessCycle:
    """A :data:`CycleRunner` that runs ``python -m gitnetdiag.watch.cycle``.

    A lab target's cycle runs in the lab's client namespace, so its packets cross
    the lab router; the exporter itself stays where Prometheus can reach it.
    """

    def __init__(self, python: str = sys.executable, grace_s: float = STOP_GRACE_S) -> None:
        self.python = python
        self.grace_s = grace_s
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen[str]] = set()
        self._stopping = False

    def __call__(self, target: Target, run_dir: Path,
                 started_unix_s: float) -> tuple[ProbeSample, str | None]:
        def failed(kind: str, message: str) -> tuple[ProbeSample, str | None]:
            sample = failed_sample(target.name, target.protocols, kind, message,
                                   started_unix_s=started_unix_s,
                                   duration_s=time.time() - started_unix_s,
                                   run_dirs={d: str(p) if p.is_dir() else "" for d, p
                                             in target.run_dirs(run_dir).items()})
            # A cycle stopped at its deadline (or by us) still cleaned up, and its
            # manifest says which branches it may have left: they count too.
            return replace(sample, cleanup_failures=left_by(run_dir)), kind

        argv = [self.python, "-m", "gitnetdiag.watch.cycle"]
        if target.lab is not None:
            try:
                argv = ["ip", "netns", "exec", load_state(target.lab).client_ns, *argv]
            except GitnetdiagError as exc:
                return failed(exc.reference, exc.one_line())
        log_path = run_dir.with_name(run_dir.name + ".log")
        with log_path.open("w") as stderr:
            # A session of its own: Ctrl-C at the exporter's terminal must not reach the
            # cycle as well, or its clean-up would get a second signal (our SIGTERM).
            try:
                proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=stderr, text=True, start_new_session=True)
            except OSError as exc:
                return failed("worker-crash", f"cannot start {argv[0]}: {exc.strerror}")
            with self._lock:
                self._running.add(proc)
                if self._stopping:  # started just as the exporter began to stop
                    proc.send_signal(signal.SIGTERM)
            try:
                out, timed_out = self._communicate(proc, _job(target, run_dir, started_unix_s),
                                                   target.cycle_deadline_s)
            finally:
                with self._lock:
                    self._running.discard(proc)
        if timed_out:
            return failed("deadline", f"the cycle ran past its deadline of "
                          f"{target.cycle_deadline_s:.0f} s and was stopped")
        if self._stopping:
            return failed("interrupted", "the exporter stopped during the cycle")
        try:
            sample = ProbeSample.from_dict(json.loads(out))
            # It ended itself at its deadline: its sample says what it measured and left.
            return sample, "deadline" if proc.returncode == DEADLINE_EXIT else None
        except (ValueError, TypeError, KeyError):
            tail = log_path.read_text(errors="replace").strip().splitlines()[-1:] or [""]
            return failed("worker-crash", f"the cycle process exited {proc.returncode} "
                          f"without a sample: {tail[0][:200]}")

    def _communicate(self, proc: subprocess.Popen[str], job: str,
                     deadline_s: float) -> tuple[str, bool]:
        try:
            return proc.communicate(job, timeout=deadline_s + ANSWER_GRACE_S)[0], False
        except subprocess.TimeoutExpired:
            # SIGTERM first: whatever holds the cycle past its deadline, the probe turns it
            # into its clean-up path, which ends at once (the deadline has passed).
            proc.send_signal(signal.SIGTERM)
            try:
                proc.communicate(timeout=self.grace_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
            return "", True

    def terminate_all(self) -> None:
        """SIGTERM every running cycle (the exporter is stopping)."""
        with self._lock:
            self._stopping = True
            for proc in self._running:
                proc.send_signal(signal.SIGTERM)


class Scheduler:
    """Runs the configured targets' cycles and records them."""

    def __init__(self, config: WatchConfig, metrics: WatchMetrics, cycle: CycleRunner,
                 clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.metrics = metrics
        self.cycle = cycle
        self.clock = clock
        self._slots = threading.BoundedSemaphore(config.max_parallel)
        self._target_locks = {t.name: threading.Lock() for t in config.targets}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def target_dir(self, target: Target) -> Path:
        return self.config.runs_dir / target.name

    def probe(self, target: Target) -> ProbeSample:
        """One cycle of ``target`` now (waits for a running one of the same target)."""
        with self._target_locks[target.name], self._slots:
            started = self.clock()
            directory = self.target_dir(target)
            directory.mkdir(parents=True, exist_ok=True, mode=0o750)
            self.metrics.in_flight.inc()
            try:
                sample, failure = self.cycle(target, directory / run_dir_name(started), started)
            finally:
                self.metrics.in_flight.dec()
            self.metrics.record(sample, cycle_failure=failure)
            self.prune(target)
        _log_sample(sample)
        return sample

    def prune(self, target: Target) -> None:
        """Keep the newest ``keep_runs`` run directories of ``target``."""
        directory = self.target_dir(target)
        names = [p.name for p in directory.iterdir()]
        for name in runs_to_prune(names, target.keep_runs):
            path = directory / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        retained = len({m.group(1) for p in directory.iterdir()
                        if (m := RUN_NAME_RE.match(p.name)) and p.is_dir()})
        self.metrics.retained.labels(target.name).set(retained)

    def _loop(self, target: Target) -> None:
        due = self.clock()
        while not self._stop.is_set():
            try:
                self.probe(target)
            except Exception:  # a bug in one cycle must not end the target's schedule
                log.exception("watch: %s: the cycle failed", target.name)
            due += target.interval_s
            now = self.clock()
            if due < now:  # an overrun: start again now rather than catch up in a burst
                due = now
            self._stop.wait(due - now)

    def start(self) -> None:
        """A thread per scheduled target (``interval`` > 0)."""
        for target in self.config.targets:
            if target.interval_s <= 0:
                continue
            thread = threading.Thread(target=self._loop, args=(target,),
                                      name=f"watch-{target.name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout_s: float = CLEANUP_GRACE_S) -> None:
        """Stop scheduling, let running cycles clean up, wait for them."""
        self._stop.set()
        if isinstance(self.cycle, SubprocessCycle):
            self.cycle.terminate_all()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))


def _log_sample(sample: ProbeSample) -> None:
    parts = []
    for d in sample.directions:
        rows = []
        for p in d.protocols:
            if p.success and p.rate_bytes_per_s is not None:
                rows.append(f"{p.protocol} {p.rate_bytes_per_s / 2**20:.2f} MiB/s")
            else:
                rows.append(f"{p.protocol} {p.error_kind or 'ok'}")
        top = max(d.culprit_scores.items(), key=lambda kv: kv[1], default=None)
        culprit = f", top culprit {top[0]} {top[1]:.2f}" if top and top[1] > 0 else ""
        parts.append(f"{d.direction} {d.verdict}: {', '.join(rows)}{culprit}")
    log.info("watch: %s in %.1f s: %s%s", sample.target, sample.duration_s, "; ".join(parts),
             f" ({sample.error})" if sample.error else "")
