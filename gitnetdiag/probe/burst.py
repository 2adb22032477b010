"""Bursts: N concurrent short git operations (``git ls-remote``) and raw TCP connects.

They show what a single push cannot: SYN drops, accept-queue overflows and
MaxStartups refusals under concurrency. Each operation has its own timeout.
"""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gitnetdiag.probe.gitpush import (
    FailureKind,
    Transport,
    last_stderr_line,
    ls_remote_argv,
    run_git,
)
from gitnetdiag.rundir.records import BurstOp, ConnectOp


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
            failure_kind=kind,
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
