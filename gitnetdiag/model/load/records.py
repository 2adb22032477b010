"""Records of a load run: one operation, one ramp step, the whole run.

All are frozen and JSON-serialisable (``to_dict`` / ``from_dict``), so a run
directory or a Locust master's results give the same report offline.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

LOAD_REPORT_VERSION = 2
"""2: several remotes (``targets``, per-step ``by_target``, ``OpRecord.target``)."""

HOST_COUNTERS_SHOWN = (
    "ListenOverflows",
    "ListenDrops",
    "SyncookiesSent",
    "TCPReqQFullDoCookies",
    "TCPReqQFullDrop",
    "TCPAbortOnData",
    "TCPTimeouts",
)
"""Kernel counters the step table shows first (all non-zero deltas are kept)."""
CLIENT_COUNTERS = ("TCPSynRetrans",)
"""Counters of the load generator's own namespace kept per step: a SYN retransmitted (the
connect waited an initial SYN timeout, 1 s) is what a dropped SYN costs a client."""


RTO_STEP_S = 0.9
"""An operation this much slower than its step's median waited for a retransmitted SYN
(Linux's initial SYN timeout is 1 s; the margin absorbs scheduling jitter)."""
_DEFAULT_PORTS = {"git": 9418, "ssh": 22, "https": 443, "http": 80}


def target_port(url: str) -> int | None:
    """The TCP port a remote URL connects to (scheme default when absent; scp-like
    ``user@host:path`` is SSH's 22)."""
    if "://" not in url:
        return 22
    try:
        parts = urlsplit(url)
        return parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        return None


class Operation(StrEnum):
    """What one load operation does against the remote."""

    CLONE = "clone"
    """``git clone --bare`` into a scratch directory (removed right after)."""
    FETCH = "fetch"
    """``git fetch`` of the remote's HEAD into a per-slot repository (incremental after the
    first one, like a CI runner's fetch)."""
    PUSH = "push"
    """``git push`` of a fresh commit to a throwaway branch ``gitnetdiag/probe-<id>``."""
    LS_REMOTE = "ls-remote"
    """``git ls-remote``: connection, ref advertisement, nothing else."""


@dataclass(frozen=True, kw_only=True)
class OpRecord:
    """One finished operation."""

    op: str
    """An :class:`Operation` value."""
    step: int
    """Index of the ramp step it belongs to (0-based)."""
    slot: int
    """Which concurrent slot (thread or Locust user) ran it."""
    start_s: float
    """Start, seconds since the start of the run."""
    wall_s: float
    """Duration of the git command (setup and cleanup are not counted)."""
    ok: bool
    """True when git exited 0 within the timeout."""
    kind: str | None = None
    """Failure kind (``timeout``, ``hung``, ``reset``, ``refused``, ``auth``, ``tls``,
    ``server-error``, ...), None on success."""
    message: str = ""
    """git's whole error message on failure, on one line (URLs and secrets redacted)."""
    bytes_moved: int = 0
    """Bytes of pack data received (clone, fetch), sent (push) or ref listing (ls-remote)."""
    target: int = 0
    """Index of the remote it ran against in :attr:`LoadReport.targets`."""
    cleanup: str | None = None
    """Push only: ``deleted``, ``never-created``, ``leftover`` or ``unconfirmed`` (see
    :class:`gitnetdiag.probe.cleanup.RefCleanup`); pushes cut by Ctrl-C/SIGTERM are not
    recorded, their branches are counted in :attr:`LoadReport.cleanup`."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OpRecord:
        return cls(**data)


@dataclass(frozen=True, kw_only=True)
class LatencySummary:
    """Latency distribution of the successful operations of a step, seconds."""

    p50_s: float
    """Median."""
    p75_s: float
    """75th percentile."""
    p90_s: float
    """90th percentile."""
    p99_s: float
    """99th percentile."""
    max_s: float
    """Slowest."""
    min_s: float
    """Fastest."""
    q1_s: float
    """25th percentile (box bottom)."""
    whisker_low_s: float
    """Lowest value within 1.5 IQR below the box (box-plot whisker)."""
    whisker_high_s: float
    """Highest value within 1.5 IQR above the box."""
    mean_s: float
    """Arithmetic mean."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class ErrorGroup:
    """Failures of one kind within a step."""

    kind: str
    """Failure kind."""
    count: int
    """How many operations failed this way."""
    messages: tuple[str, ...] = ()
    """Up to three distinct git messages, redacted."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class TargetStep:
    """One remote's share of a step's operations."""

    target: int
    """Index of the remote in :attr:`LoadReport.targets`."""
    url: str
    """The remote, credentials redacted."""
    ops: int
    """Operations finished against it (ok + failed)."""
    ok: int
    """Operations that succeeded."""
    failed: int
    """Operations that failed."""
    p50_s: float | None
    """Median latency of its successful operations, None when none succeeded."""
    ops_by_op: dict[str, int] = field(default_factory=dict)
    """Finished operations per type."""
    errors: tuple[ErrorGroup, ...] = ()
    """Its failures by kind, most frequent first."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TargetStep:
        return cls(**{**data, "errors": _error_groups(data.get("errors", ()))})


def _error_groups(items: Any) -> tuple[ErrorGroup, ...]:
    return tuple(ErrorGroup(kind=e["kind"], count=e["count"], messages=tuple(e["messages"]))
                 for e in items)


@dataclass(frozen=True, kw_only=True)
class ListenerSample:
    """The server's listening socket on the loaded port over one step (``ss -ltn``)."""

    port: int
    """The port the remotes connect to."""
    backlog: int
    """Configured listen backlog (Send-Q of the LISTEN socket, capped by somaxconn)."""
    accept_queue_max: int
    """Largest accept queue (Recv-Q) seen in the samples taken while the step ran."""
    samples: int = 1
    """How many ``ss`` samples the maximum is taken over."""
    process: str = ""
    """Owning process (``git-daemon``), empty when not visible."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class StepResult:
    """One step of the ramp: a fixed concurrency for a fixed time."""

    index: int
    """0-based step number."""
    concurrency: int
    """Concurrent slots (threads or Locust users)."""
    elapsed_s: float
    """From the step's start until its last operation finished."""
    ops: int
    """Operations finished (ok + failed)."""
    ok: int
    """Operations that succeeded."""
    failed: int
    """Operations that failed."""
    ops_per_s: float
    """Successful operations per second of ``elapsed_s``."""
    ops_per_hour: float
    """``ops_per_s`` x 3600: the unit capacity reference profiles use."""
    latency: LatencySummary | None
    """Latency of the successful operations, None when none succeeded."""
    latency_by_op: dict[str, LatencySummary] = field(default_factory=dict)
    """The same per operation type."""
    ops_by_op: dict[str, int] = field(default_factory=dict)
    """Finished operations per type."""
    errors: tuple[ErrorGroup, ...] = ()
    """Failures by kind, most frequent first."""
    bytes_moved: int = 0
    """Sum of the operations' bytes."""
    host_deltas: dict[str, int] = field(default_factory=dict)
    """Non-zero server kernel counter deltas over the step (``ListenOverflows``, ...)."""
    interrupted: bool = False
    """True when Ctrl-C cut the step short."""
    by_target: tuple[TargetStep, ...] = ()
    """The step's operations and errors per remote, in the order of the report's targets."""
    slow_ops: int = 0
    """Successful operations at least :data:`gitnetdiag.load.stats.RTO_STEP_S` slower than
    the step's median: the step a retransmitted SYN (1 s initial timeout) leaves in the
    latency."""
    listener: ListenerSample | None = None
    """The server's listener on the loaded port (``--host-netns``/``--host-local``), None
    when not read."""
    client_deltas: dict[str, int] = field(default_factory=dict)
    """Non-zero deltas of :data:`CLIENT_COUNTERS` in the load's own network namespace over
    the step (``TCPSynRetrans``: SYNs its kernel retransmitted), empty when not read."""

    @property
    def error_ratio(self) -> float:
        return self.failed / self.ops if self.ops else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["error_ratio"] = self.error_ratio
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepResult:
        fields = {k: v for k, v in data.items() if k != "error_ratio"}
        if fields.get("latency") is not None:
            fields["latency"] = LatencySummary(**fields["latency"])
        fields["latency_by_op"] = {
            k: LatencySummary(**v) for k, v in fields.get("latency_by_op", {}).items()
        }
        fields["errors"] = _error_groups(fields.get("errors", ()))
        fields["by_target"] = tuple(TargetStep.from_dict(t) for t in fields.get("by_target", ()))
        if fields.get("listener") is not None:
            fields["listener"] = ListenerSample(**fields["listener"])
        return cls(**fields)


@dataclass(frozen=True, kw_only=True)
class LoadReport:
    """A whole load run."""

    target: str
    """The remote (the first one when there are several), credentials redacted."""
    protocol: str
    """``h1``, ``h2``, ``ssh`` or ``git``."""
    ops: tuple[str, ...]
    """Operation types in the mix."""
    mix: tuple[int, ...]
    """Relative weight of each operation type (same order as ``ops``)."""
    step_duration_s: float
    """Planned duration of each step."""
    timeout_s: float
    """Timeout of each git command."""
    started: str
    """Start time, ISO 8601 UTC."""
    source: str
    """``local`` (this process ran the operations) or ``locust`` (collected from a master)."""
    steps: tuple[StepResult, ...]
    """Ramp steps in order."""
    min_ops_per_hour: float | None = None
    """Pass mark: some step must reach it (with an error ratio <= ``max_error_ratio``)."""
    max_error_ratio: float = 0.01
    """Highest error ratio a passing step may have."""
    interrupted: bool = False
    """True when the run was stopped by Ctrl-C."""
    cleanup: dict[str, int] = field(default_factory=dict)
    """Throwaway branches by what became of them: ``deleted``, ``never-created``, ``leftover``
    (always present), ``unconfirmed``."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Anything else worth keeping (lab instance, Locust's own counts, worker count)."""
    targets: tuple[str, ...] = ()
    """Every remote the operations were spread over, redacted, in the order given
    (``OpRecord.target`` indexes it); empty in version 1 records, which had one."""
    version: int = LOAD_REPORT_VERSION
    """Format version of this record."""

    @property
    def remotes(self) -> tuple[str, ...]:
        """The remotes loaded (``targets``, or ``target`` alone in a version 1 record)."""
        return self.targets or (self.target,)

    @property
    def passed(self) -> bool | None:
        """Pass/fail against ``min_ops_per_hour``; None when no pass mark was given."""
        if self.min_ops_per_hour is None:
            return None
        return any(
            s.ops_per_hour >= self.min_ops_per_hour and s.error_ratio <= self.max_error_ratio
            for s in self.steps
        )

    @property
    def total_ops(self) -> int:
        return sum(s.ops for s in self.steps)

    @property
    def total_failed(self) -> int:
        return sum(s.failed for s in self.steps)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["steps"] = [s.to_dict() for s in self.steps]
        data["passed"] = self.passed
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LoadReport:
        fields = {k: v for k, v in data.items() if k != "passed"}
        fields["ops"] = tuple(fields["ops"])
        fields["mix"] = tuple(fields["mix"])
        fields["targets"] = tuple(fields.get("targets", ()))
        fields["steps"] = tuple(StepResult.from_dict(s) for s in fields["steps"])
        return cls(**fields)
