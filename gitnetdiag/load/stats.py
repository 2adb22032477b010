"""Pure helpers of the load test: option parsing, the op mix, percentiles, step records.

Nothing here runs a program or opens a socket.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from gitnetdiag.errors import UsageError
from gitnetdiag.host.netstat import counter_deltas as host_counter_deltas
from gitnetdiag.model.host.listeners import ListenerInfo
from gitnetdiag.model.load.records import (
    RTO_STEP_S,
    ErrorGroup,
    LatencySummary,
    ListenerSample,
    Operation,
    OpRecord,
    StepResult,
    TargetStep,
)
from gitnetdiag.redaction import redact_url, without_fragment

MAX_MESSAGES_PER_KIND = 3
MAX_MESSAGE_CHARS = 500
"""A git error message longer than this is cut (with an ellipsis)."""
_PROGRESS = re.compile(
    r"^(remote: )?(Cloning into|Counting objects|Compressing objects|Enumerating objects|"
    r"Receiving objects|Resolving deltas|Writing objects|Unpacking objects|Total \d)")


def parse_ops(text: str) -> tuple[Operation, ...]:
    """``clone,fetch,push`` -> operations, in the order given, no duplicates."""
    chosen: list[Operation] = []
    for name in (part.strip().lower() for part in text.split(",")):
        if not name:
            continue
        try:
            op = Operation(name)
        except ValueError as exc:
            raise UsageError(
                f"unknown operation {name!r}", hint="use clone, fetch, push, ls-remote"
            ) from exc
        if op in chosen:
            raise UsageError(f"operation {name} is listed twice", hint="list each once")
        chosen.append(op)
    if not chosen:
        raise UsageError("no operation given", hint="e.g. --ops clone,fetch,push")
    return tuple(chosen)


def parse_mix(text: str | None, count: int) -> tuple[int, ...]:
    """``40:35:25`` -> weights, one per operation; None gives equal weights."""
    if text is None:
        return (1,) * count
    parts = [p.strip() for p in text.replace(",", ":").split(":")]
    try:
        weights = tuple(int(p) for p in parts)
    except ValueError as exc:
        raise UsageError(f"cannot read the mix {text!r}", hint="write it like 40:35:25") from exc
    if len(weights) != count:
        raise UsageError(
            f"the mix {text!r} has {len(weights)} weights for {count} operations",
            hint="give one weight per operation in --ops, in the same order",
        )
    if any(w < 0 for w in weights) or sum(weights) == 0:
        raise UsageError(f"bad mix {text!r}", hint="weights are >= 0 and not all 0")
    return weights


def parse_concurrency(text: str) -> tuple[int, ...]:
    """``1,2,4,8`` -> steps of the ramp."""
    try:
        steps = tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError as exc:
        raise UsageError(f"cannot read the concurrency {text!r}", hint="write it like 1,4,16") \
            from exc
    if not steps or any(s < 1 or s > 4096 for s in steps):
        raise UsageError(f"bad concurrency {text!r}", hint="use integers from 1 to 4096")
    return steps


_SCHEME_FAMILY = {"http": "http", "https": "http", "ssh": "ssh", "git+ssh": "ssh",
                  "ssh+git": "ssh", "git": "git"}
_PROTOCOL_FAMILY = {"h1": "http", "h2": "http", "ssh": "ssh", "git": "git"}


def url_family(url: str) -> str:
    """``http`` (http:// and https://), ``ssh`` (ssh:// and scp-like ``user@host:path``),
    ``git`` (git://), or the scheme itself for anything else."""
    if "://" not in url:
        return "ssh"
    scheme = url.split("://", 1)[0].lower()
    return _SCHEME_FAMILY.get(scheme, scheme)


def parse_urls(urls: Sequence[str], protocol: str | None = None) -> tuple[str, ...]:
    """The remotes of a load run: at least one, each once, all of one protocol family
    (and of ``protocol``'s family when it is given)."""
    # A #fragment is never sent by git: a token there would only reach its command line.
    chosen = tuple(without_fragment(u.strip()) for u in urls if u.strip())
    if not chosen:
        raise UsageError("no remote to load", hint="give one or more URLs")
    for i, url in enumerate(chosen):
        if url in chosen[:i]:
            raise UsageError(f"{redact_url(url)} is given twice",
                             hint="give each remote once; operations are spread evenly")
    families = {url: url_family(url) for url in chosen}
    if len(set(families.values())) > 1:
        mixed = ", ".join(f"{redact_url(u)} is {f}" for u, f in families.items())
        raise UsageError(f"the URLs mix protocols: {mixed}",
                         hint="give remotes of one protocol family; run one load per protocol")
    family = families[chosen[0]]
    wanted = _PROTOCOL_FAMILY.get((protocol or "").lower())
    if wanted is not None and family in _PROTOCOL_FAMILY.values() and family != wanted:
        raise UsageError(f"--protocol {protocol} does not fit {redact_url(chosen[0])} ({family})",
                         hint="leave --protocol out, or give URLs of that protocol")
    return chosen


def parse_duration_s(text: str) -> float:
    """``60s``, ``2m``, ``500ms``, ``90`` (seconds) -> seconds."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|h)?\s*", text)
    if not m:
        raise UsageError(f"cannot read the duration {text!r}", hint="write it like 60s or 2m")
    scale = {"ms": 0.001, "s": 1.0, None: 1.0, "m": 60.0, "h": 3600.0}[m.group(2)]
    value = float(m.group(1)) * scale
    if value <= 0:
        raise UsageError(f"duration {text!r} must be positive", hint="e.g. 60s")
    return value


class MixPicker:
    """Smooth weighted round robin shared by all slots (thread-safe).

    Over any ``sum(weights)`` consecutive picks each operation comes up exactly
    its weight's number of times, evenly spread: the started mix matches the
    requested one however many slots run.
    """

    def __init__(self, ops: Sequence[str], weights: Sequence[int]) -> None:
        if len(ops) != len(weights) or not ops or sum(weights) <= 0:
            raise ValueError("one positive-sum weight per operation")
        self._ops = tuple(ops)
        self._weights = tuple(weights)
        self._current = [0] * len(ops)
        self._total = sum(weights)
        self._lock = threading.Lock()

    def next(self) -> str:
        with self._lock:
            for i, weight in enumerate(self._weights):
                self._current[i] += weight
            best = max(range(len(self._ops)), key=lambda i: self._current[i])
            self._current[best] -= self._total
            return self._ops[best]


class TargetPicker:
    """Which remote runs the next operation: round robin per operation type (thread-safe).

    The k-th operation of each type goes to remote ``k mod N``, so every remote
    gets the same mix (a shared counter could alias with the mix picker: with two
    remotes and a 1:1 mix all clones would hit one and all fetches the other).
    """

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError("at least one remote")
        self._count = count
        self._next: Counter[str] = Counter()
        self._lock = threading.Lock()

    def next(self, op: str) -> int:
        if self._count == 1:
            return 0
        with self._lock:
            index = self._next[op] % self._count
            self._next[op] += 1
            return index


def latency_summary(values_s: Iterable[float]) -> LatencySummary | None:
    """Percentiles and box-plot figures of latencies (linear interpolation), None if empty."""
    data = np.asarray(list(values_s), dtype=np.float64)
    if data.size == 0:
        return None
    q1, p50, p75, p90, p99 = np.percentile(data, [25, 50, 75, 90, 99])
    iqr = p75 - q1
    inside_low = data[data >= q1 - 1.5 * iqr]
    inside_high = data[data <= p75 + 1.5 * iqr]
    return LatencySummary(
        p50_s=float(p50), p75_s=float(p75), p90_s=float(p90), p99_s=float(p99),
        max_s=float(data.max()), min_s=float(data.min()), q1_s=float(q1),
        whisker_low_s=float(inside_low.min()), whisker_high_s=float(inside_high.max()),
        mean_s=float(data.mean()),
    )


def git_error_message(stderr: str) -> str:
    """git's whole error message on one line: every stderr line but progress, joined, so
    that "fatal: Could not read from remote repository. Please make sure you have the
    correct access rights and the repository exists." keeps its first sentence."""
    lines = [line.strip() for line in stderr.replace("\r", "\n").splitlines()]
    text = " ".join(line for line in lines if line and not _PROGRESS.match(line))
    text = re.sub(r"\s+", " ", text)
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS - 1] + "\u2026"


def listener_sample(samples: Sequence[Sequence[ListenerInfo]], port: int
                    ) -> ListenerSample | None:
    """The listener on ``port`` over a step's ``ss`` samples: its smallest backlog (several
    sockets may share the port) and the largest accept queue seen; None if never seen."""
    found = [item for sample in samples for item in sample
             if item.port == port and item.backlog is not None]
    if not found:
        return None
    backlogs = [item.backlog for item in found if item.backlog is not None]
    return ListenerSample(
        port=port, backlog=min(backlogs), accept_queue_max=max(i.accept_queue for i in found),
        samples=len(samples), process=next((i.process for i in found if i.process), ""),
    )


def slow_ops(wall_s: Sequence[float]) -> int:
    """Operations at least :data:`RTO_STEP_S` slower than the median of ``wall_s`` (the
    durations of one operation type in one step)."""
    if not wall_s:
        return 0
    median = float(np.median(np.asarray(wall_s, dtype=np.float64)))
    return sum(1 for value in wall_s if value >= median + RTO_STEP_S)


def error_groups(records: Iterable[OpRecord]) -> tuple[ErrorGroup, ...]:
    """Failures grouped by kind, most frequent first, with a few distinct messages each."""
    counts: Counter[str] = Counter()
    messages: dict[str, list[str]] = {}
    for rec in records:
        if rec.ok:
            continue
        kind = rec.kind or "other"
        counts[kind] += 1
        seen = messages.setdefault(kind, [])
        if rec.message and rec.message not in seen and len(seen) < MAX_MESSAGES_PER_KIND:
            seen.append(rec.message)
    return tuple(
        ErrorGroup(kind=kind, count=n, messages=tuple(messages.get(kind, ())))
        for kind, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    )


def summarize_step(
    records: Sequence[OpRecord],
    *,
    index: int,
    concurrency: int,
    elapsed_s: float,
    host_deltas: dict[str, int] | None = None,
    interrupted: bool = False,
    targets: Sequence[str] = (),
    listener: ListenerSample | None = None,
    client_deltas: dict[str, int] | None = None,
) -> StepResult:
    """The step record of a step's finished operations; with ``targets`` (the redacted
    remotes) also their breakdown per remote."""
    ok = [r for r in records if r.ok]
    ops_per_s = len(ok) / elapsed_s if elapsed_s > 0 else 0.0
    by_op: dict[str, list[float]] = {}
    for rec in ok:
        by_op.setdefault(rec.op, []).append(rec.wall_s)
    latency_by_op: dict[str, LatencySummary] = {}
    for op, values in by_op.items():
        summary = latency_summary(values)
        if summary is not None:
            latency_by_op[op] = summary
    return StepResult(
        index=index,
        concurrency=concurrency,
        elapsed_s=elapsed_s,
        ops=len(records),
        ok=len(ok),
        failed=len(records) - len(ok),
        ops_per_s=ops_per_s,
        ops_per_hour=ops_per_s * 3600.0,
        latency=latency_summary(r.wall_s for r in ok),
        latency_by_op=latency_by_op,
        ops_by_op=dict(Counter(r.op for r in records)),
        errors=error_groups(records),
        bytes_moved=sum(r.bytes_moved for r in records),
        host_deltas={k: v for k, v in (host_deltas or {}).items() if v},
        interrupted=interrupted,
        by_target=tuple(_target_step(records, i, url) for i, url in enumerate(targets)),
        slow_ops=sum(slow_ops(values) for values in by_op.values()),
        listener=listener,
        client_deltas=dict(client_deltas or {}),
    )


def _target_step(records: Sequence[OpRecord], index: int, url: str) -> TargetStep:
    mine = [r for r in records if r.target == index]
    ok = [r.wall_s for r in mine if r.ok]
    return TargetStep(
        target=index, url=url, ops=len(mine), ok=len(ok), failed=len(mine) - len(ok),
        p50_s=float(np.median(ok)) if ok else None,
        ops_by_op=dict(Counter(r.op for r in mine)), errors=error_groups(mine),
    )


def counter_deltas(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Non-zero ``after - before`` for counters present in both (a step's table shows only
    what moved)."""
    return host_counter_deltas(before, after, always=())
