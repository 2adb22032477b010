"""The ramp: for each concurrency step, that many slots run operations back to back.

Each slot is a thread that picks the next operation from the shared mix and
the remote to run it against (round robin per operation type over the
remotes, :class:`~gitnetdiag.load.stats.TargetPicker`), runs it (a git
process), records it, and starts the next one until the step's time is up;
operations still running then finish and count for the step (its elapsed time
stretches to the last one). Ctrl-C or SIGTERM kills every running git, drops
the operations it cut, cleans up (with further signals held until the
clean-up is done) and returns what was measured.

Each remote has its own :class:`OperationRunner` (a
:class:`~gitnetdiag.load.operations.Workspace` unless the caller passes a
factory: tests pass a fake one).
"""

from __future__ import annotations

import functools
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.load.hostcounters import CounterSource, LocalNetstat
from gitnetdiag.load.operations import InFlight, OpOutcome, Workspace
from gitnetdiag.load.stats import (
    MixPicker,
    TargetPicker,
    counter_deltas,
    listener_sample,
    summarize_step,
)
from gitnetdiag.model.host.listeners import ListenerInfo
from gitnetdiag.model.load.records import (
    CLIENT_COUNTERS,
    ListenerSample,
    LoadReport,
    OpRecord,
    StepResult,
    target_port,
)
from gitnetdiag.probe.cleanup import DEFAULT_CLEANUP_WAIT_S, interrupts_deferred
from gitnetdiag.probe.gitpush import Transport
from gitnetdiag.proc import sigterm_interrupts
from gitnetdiag.redaction import redact_url

TICK_S = 0.25


@dataclass(frozen=True, kw_only=True)
class LoadOptions:
    """Everything one local load run needs."""

    transport: Transport
    """Remote and protocol (the first remote when there are several)."""
    ops: tuple[str, ...]
    """Operation types."""
    mix: tuple[int, ...]
    """Weights, one per operation type."""
    concurrency: tuple[int, ...]
    """Ramp steps."""
    step_duration_s: float
    """Time each step starts new operations."""
    timeout_s: float
    """Timeout of each git command."""
    push_bytes: int = 64 * 1024
    """Size of the random file each push adds."""
    min_ops_per_hour: float | None = None
    """Pass mark."""
    max_error_ratio: float = 0.01
    """Highest error ratio of a passing step."""
    counters: CounterSource | None = None
    """Server counters read around each step."""
    scratch_parent: Path | None = None
    """Where the scratch directory goes (default: the system temp directory)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Copied into the report."""
    extra_transports: tuple[Transport, ...] = ()
    """Further remotes of the same protocol; operations are spread over all of them."""
    cleanup_wait_s: float = DEFAULT_CLEANUP_WAIT_S
    """How long a push's clean-up waits for a server still applying it (a slow hook)."""
    client_counters: CounterSource | None = field(default_factory=LocalNetstat)
    """This process's own namespace's counters (its SYN retransmissions), None: not read."""

    @property
    def transports(self) -> tuple[Transport, ...]:
        """Every remote, in the order given."""
        return (self.transport, *self.extra_transports)


class OperationRunner(Protocol):
    """Runs the operations against one remote (:class:`Workspace` is the real one)."""

    def prepare(self, ops: Sequence[str]) -> None: ...

    def run(self, op: str, slot: int) -> OpOutcome: ...

    def close(self) -> dict[str, int]: ...

    @property
    def pending_branches(self) -> tuple[str, ...]: ...

    @property
    def leftovers(self) -> tuple[str, ...]: ...


RunnerFactory = Callable[[Transport, InFlight], OperationRunner]
"""Makes the runner of one remote; every runner shares the run's :class:`InFlight`."""


@dataclass(frozen=True, kw_only=True)
class LiveStatus:
    """What the live display shows while a step runs."""

    step: int
    """Step index."""
    steps: int
    """Number of steps."""
    concurrency: int
    """Slots of this step."""
    elapsed_s: float
    """Since the step started."""
    duration_s: float
    """Planned step duration."""
    ok: int
    """Successful operations so far in this step."""
    failed: int
    """Failed operations so far."""
    errors: dict[str, int]
    """Failures by kind so far."""


class LoadReporter(Protocol):
    """Progress callbacks (the CLI's live display; tests pass a silent one)."""

    def tick(self, status: LiveStatus) -> None: ...

    def step_done(self, step: StepResult) -> None: ...

    def warn(self, message: str) -> None: ...


class SilentLoadReporter:
    """A reporter that shows nothing."""

    def tick(self, status: LiveStatus) -> None:
        return None

    def step_done(self, step: StepResult) -> None:
        return None

    def warn(self, message: str) -> None:
        return None


@dataclass(frozen=True, kw_only=True)
class LoadOutcome:
    """A finished (or interrupted) run."""

    report: LoadReport
    """The report."""
    records: tuple[OpRecord, ...]
    """Every operation measured."""
    leftover_branches: tuple[str, ...] = ()
    """Throwaway branches left ``leftover`` or ``unconfirmed``, each with the exact command
    that removes it (URL redacted; should be empty)."""


class _Step:
    """Shared state of the slots of one step."""

    def __init__(self, index: int, deadline: float, run_start: float) -> None:
        self.index = index
        self.deadline = deadline
        self.run_start = run_start
        self.records: list[OpRecord] = []
        self.last_end = 0.0
        self.lock = threading.Lock()
        self.errors: list[BaseException] = []


def _slot(
    slot: int, step: _Step, picker: MixPicker, targets: TargetPicker,
    runners: Sequence[OperationRunner], stop: threading.Event,
) -> None:
    try:
        while not stop.is_set() and time.monotonic() < step.deadline:
            op = picker.next()
            target = targets.next(op)
            started = time.monotonic()
            outcome = runners[target].run(op, slot)
            ended = time.monotonic()
            if stop.is_set():
                return  # cut by Ctrl-C: not a measurement
            record = OpRecord(
                op=op, step=step.index, slot=slot, start_s=started - step.run_start,
                wall_s=outcome.wall_s, ok=outcome.ok, kind=outcome.kind,
                message=outcome.message, bytes_moved=outcome.bytes_moved, target=target,
                cleanup=outcome.cleanup,
            )
            with step.lock:
                step.records.append(record)
                step.last_end = max(step.last_end, ended)
    except BaseException as exc:  # surfaced by the main thread
        with step.lock:
            step.errors.append(exc)
        stop.set()


class _ServerWatch:
    """The server's side of each step: counter snapshots before and after it, and ``ss``
    samples of its listener on the loaded port while it runs (backlog, accept queue). A
    failed read warns; after a failed listener read no more samples are taken."""

    def __init__(self, source: CounterSource | None, port: int | None,
                 reporter: LoadReporter, client: CounterSource | None) -> None:
        self.source = source
        self.listener_source = source if port is not None else None
        self.port = port
        self.reporter = reporter
        self.client = client
        self.before: dict[str, int] | None = None
        self.client_before: dict[str, int] | None = None
        self.samples: list[list[ListenerInfo]] = []

    def begin(self) -> None:
        self.before = self.source.snapshot() if self.source is not None else None
        self.client_before = self._client_snapshot()
        self.samples = []
        self.sample()

    def _client_snapshot(self) -> dict[str, int] | None:
        if self.client is None:
            return None
        try:
            return self.client.snapshot()
        except GitnetdiagError as exc:
            self.reporter.warn(f"this machine's counters (SYN retransmissions): {exc.message}")
            self.client = None
            return None

    def client_deltas(self) -> dict[str, int]:
        """The load's own SYN retransmissions over the step (empty when not read)."""
        before, after = self.client_before, self._client_snapshot()
        if before is None or after is None:
            return {}
        moved = counter_deltas(before, after)
        return {k: moved[k] for k in CLIENT_COUNTERS if moved.get(k)}

    def sample(self) -> None:
        if self.listener_source is None:
            return
        try:
            self.samples.append(self.listener_source.listeners())
        except GitnetdiagError as exc:
            self.reporter.warn(f"server listeners (ss -ltn): {exc.message}")
            self.listener_source = None

    def deltas(self, index: int) -> dict[str, int] | None:
        """The counters' change over the step, None when they could not be read."""
        if self.source is None or self.before is None:
            return None
        try:
            return counter_deltas(self.before, self.source.snapshot())
        except GitnetdiagError as exc:
            self.reporter.warn(f"host counters after step {index}: {exc.message}")
            return None

    def listener(self) -> ListenerSample | None:
        if self.port is None or not self.samples:
            return None
        return listener_sample(self.samples, self.port)


def _status(step: _Step, steps: int, concurrency: int, began: float, duration_s: float
            ) -> LiveStatus:
    with step.lock:
        records = list(step.records)
    failed = [r for r in records if not r.ok]
    return LiveStatus(
        step=step.index, steps=steps, concurrency=concurrency,
        elapsed_s=time.monotonic() - began, duration_s=duration_s,
        ok=len(records) - len(failed), failed=len(failed),
        errors=dict(Counter(r.kind or "other" for r in failed)),
    )


def _leftovers(runners: Sequence[OperationRunner]) -> tuple[str, ...]:
    return tuple(line for runner in runners for line in runner.leftovers)


def _close_all(runners: Sequence[OperationRunner]) -> dict[str, int]:
    """Close every runner and add up their clean-up counts; Ctrl-C or SIGTERM meanwhile
    is held (the clean-up is bounded) so that no runner is left half cleaned."""
    totals: Counter[str] = Counter({"leftover": 0})
    with interrupts_deferred():
        for runner in runners:
            totals.update(runner.close())
    return dict(totals)


def run_load(
    options: LoadOptions,
    reporter: LoadReporter | None = None,
    *,
    stop: threading.Event | None = None,
    runner_factory: RunnerFactory | None = None,
) -> LoadOutcome:
    """Run the whole ramp and clean up; Ctrl-C, SIGTERM (or ``stop``) end it early with a
    report."""
    with sigterm_interrupts():
        return _run_load(options, reporter, stop=stop, runner_factory=runner_factory)


def _wait_step(threads: list[threading.Thread], watch: _ServerWatch, reporter: LoadReporter,
               stop: threading.Event, inflight: InFlight,
               status: Callable[[], LiveStatus]) -> bool:
    """Start a step's slots and sample the server until they end; True when Ctrl-C
    stopped them (every git of the load killed)."""
    for thread in threads:
        thread.start()
    try:
        while any(t.is_alive() for t in threads):
            time.sleep(TICK_S)
            watch.sample()
            reporter.tick(status())
    except KeyboardInterrupt:
        stop.set()
        inflight.kill_all()
        for thread in threads:
            thread.join(timeout=10.0)
        return True
    return False


def _load_report(options: LoadOptions, urls: tuple[str, ...], started_iso: str,
                 steps: tuple[StepResult, ...], interrupted: bool,
                 cleanup: dict[str, int]) -> LoadReport:
    return LoadReport(
        target=urls[0],
        targets=urls,
        protocol=options.transport.protocol.value,
        ops=options.ops,
        mix=options.mix,
        step_duration_s=options.step_duration_s,
        timeout_s=options.timeout_s,
        started=started_iso,
        source="local",
        steps=steps,
        min_ops_per_hour=options.min_ops_per_hour,
        max_error_ratio=options.max_error_ratio,
        interrupted=interrupted,
        cleanup=cleanup,
        extra=dict(options.extra),
    )


def _run_load(
    options: LoadOptions,
    reporter: LoadReporter | None,
    *,
    stop: threading.Event | None,
    runner_factory: RunnerFactory | None,
) -> LoadOutcome:
    reporter = reporter or SilentLoadReporter()
    stop = stop or threading.Event()
    inflight = InFlight()
    started_iso = datetime.now(UTC).isoformat(timespec="seconds")

    def workspace(transport: Transport, shared: InFlight) -> OperationRunner:
        return Workspace(transport, timeout_s=options.timeout_s, push_bytes=options.push_bytes,
                         scratch_parent=options.scratch_parent, inflight=shared,
                         cleanup_wait_s=options.cleanup_wait_s)

    make = runner_factory or workspace
    urls = tuple(redact_url(t.url) for t in options.transports)
    runners: list[OperationRunner] = []
    picker = MixPicker(options.ops, options.mix)
    targets = TargetPicker(len(options.transports))
    steps: list[StepResult] = []
    records: list[OpRecord] = []
    interrupted = False
    ports = {target_port(t.url) for t in options.transports}
    watch = _ServerWatch(options.counters, ports.pop() if len(ports) == 1 else None, reporter,
                         options.client_counters)
    try:
        for transport in options.transports:
            runners.append(make(transport, inflight))
        for runner in runners:
            runner.prepare(options.ops)
        run_start = time.monotonic()
        for index, concurrency in enumerate(options.concurrency):
            if stop.is_set():
                break
            watch.begin()
            began = time.monotonic()
            step = _Step(index, began + options.step_duration_s, run_start)
            threads = [
                threading.Thread(target=_slot,
                                 args=(slot, step, picker, targets, runners, stop),
                                 name=f"load-slot-{slot}", daemon=True)
                for slot in range(concurrency)
            ]
            interrupted = _wait_step(threads, watch, reporter, stop, inflight, functools.partial(
                _status, step, len(options.concurrency), concurrency, began,
                options.step_duration_s))
            if step.errors and not interrupted:
                error = step.errors[0]
                if isinstance(error, KeyboardInterrupt):
                    interrupted = True
                else:
                    raise error
            end = max(step.last_end, step.deadline) if not interrupted else time.monotonic()
            result = summarize_step(
                step.records, index=index, concurrency=concurrency, elapsed_s=end - began,
                host_deltas=watch.deltas(index), interrupted=interrupted or stop.is_set(),
                targets=urls, listener=watch.listener(), client_deltas=watch.client_deltas(),
            )
            steps.append(result)
            records.extend(step.records)
            reporter.step_done(result)
            if interrupted:
                break
    except KeyboardInterrupt:
        interrupted = True
        inflight.kill_all()
    finally:
        cleanup = _close_all(runners)
    report = _load_report(options, urls, started_iso, tuple(steps),
                          interrupted or stop.is_set(), cleanup)
    return LoadOutcome(report=report, records=tuple(records),
                       leftover_branches=_leftovers(runners))

