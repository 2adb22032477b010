"""Bursts: N concurrent short git operations (``git ls-remote``) and raw TCP connects.

They show what a single push cannot: SYN drops, accept-queue overflows and
MaxStartups refusals under concurrency. Each operation has its own timeout.
"""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gitnetdiag.probe.gitpush import (
    FailureKind,
    Transport,
    last_stderr_line,
    ls_remote_argv,
    run_git,
)


@dataclass(frozen=True, kw_only=True)
class BurstOp:
    """One operation of a burst."""

    index: int
    """Position in the burst (0-based)."""
    wall_s: float
    """Start to end (or to the timeout)."""
    ok: bool
    """True when it succeeded."""
    failure_kind: str | None
    """A :class:`~gitnetdiag.probe.gitpush.FailureKind` value, None on success."""
    last_line: str
    """git's last stderr line (empty on success)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class ConnectOp:
    """One raw TCP connect of a burst."""

    index: int
    """Position in the burst."""
    connect_s: float | None
    """Connect duration (a retransmitted SYN shows as about 1 s or more), None on failure."""
    error: str | None
    """``refused``, ``timeout``, ``reset`` or another short reason."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class BurstResult:
    """A burst against one protocol's endpoint."""

    protocol: str
    """Protocol id (``h1``, ``h2``, ``ssh``, ``git``)."""
    concurrency: int
    """Operations started at once."""
    timeout_s: float
    """Per-operation timeout."""
    ops: tuple[BurstOp, ...]
    """git ls-remote runs."""
    connects: tuple[ConnectOp, ...]
    """Raw TCP connects run at the same concurrency."""
    capture: str | None
    """Capture file relative to the run directory, when captured."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def failures_by_kind(self) -> dict[str, int]:
        return dict(Counter(op.failure_kind for op in self.ops if op.failure_kind))

    @property
    def ok_count(self) -> int:
        return sum(op.ok for op in self.ops)

    @property
    def median_wall_s(self) -> float | None:
        return statistics.median(op.wall_s for op in self.ops) if self.ops else None


def run_ls_remote_burst(
    transport: Transport, count: int, *, timeout_s: float, cwd: Path
) -> tuple[BurstOp, ...]:
    """Start ``count`` ``git ls-remote`` at once (a barrier aligns their start)."""
    barrier = threading.Barrier(count)

    def one(index: int) -> BurstOp:
        barrier.wait(timeout=30.0)
        result = run_git(
            ls_remote_argv(transport, "HEAD"), env=transport.env(), cwd=cwd, timeout_s=timeout_s
        )
        kind = result.failure_kind()
        if kind is FailureKind.HUNG:
            kind = FailureKind.TIMEOUT
        return BurstOp(
            index=index, wall_s=result.wall_s, ok=result.ok,
            failure_kind=kind.value if kind else None,
            last_line="" if result.ok else last_stderr_line(result.stderr),
        )

    with ThreadPoolExecutor(max_workers=count) as pool:
        return tuple(pool.map(one, range(count)))


def run_connect_burst(
    host: str, port: int, count: int, *, timeout_s: float
) -> tuple[ConnectOp, ...]:
    """Open ``count`` TCP connections at once, hold them briefly, close them."""
    barrier = threading.Barrier(count)

    def one(index: int) -> ConnectOp:
        barrier.wait(timeout=30.0)
        started = time.perf_counter()
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                elapsed = time.perf_counter() - started
                time.sleep(0.05)
            return ConnectOp(index=index, connect_s=elapsed, error=None)
        except ConnectionRefusedError:
            return ConnectOp(index=index, connect_s=None, error="refused")
        except ConnectionResetError:
            return ConnectOp(index=index, connect_s=None, error="reset")
        except TimeoutError:
            return ConnectOp(index=index, connect_s=None, error="timeout")
        except OSError as exc:
            return ConnectOp(index=index, connect_s=None, error=f"other: {exc.strerror or exc}")

    with ThreadPoolExecutor(max_workers=count) as pool:
        return tuple(pool.map(one, range(count)))
