"""Bursts: N concurrent short git operations (``git ls-remote``) and raw TCP connects.

They show what a single push cannot: SYN drops, accept-queue overflows and
MaxStartups refusals under concurrency. Each operation has its own timeout.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.probe.capture import Capture
from gitnetdiag.probe.gitpush import (
    FailureKind,
    Transport,
    last_stderr_line,
    ls_remote_argv,
    run_git,
)
from gitnetdiag.probe.options import Reporter
from gitnetdiag.rundir.records import BurstOp, BurstRecord, ConnectOp

BURST_TIMEOUT_CAP_S = 60.0
"""A burst operation's timeout is the run's ``--timeout``, at most this."""


def run_burst(transport: Transport, endpoint: tuple[str, int], protocol: str, count: int, *,
              timeout_s: float, run_dir: Path, capture: bool, reporter: Reporter,
              on_capture_error: Callable[[GitnetdiagError], None]) -> BurstRecord:
    """One protocol's burst: ``count`` ls-remotes at once, then ``count`` raw connects,
    captured to ``burst-PROTOCOL.pcap`` when ``capture``; read-only (ls-remote only reads
    the refs). Progress goes to ``reporter``; a capture that cannot start is passed to
    ``on_capture_error`` and the burst runs uncaptured."""
    host, port = endpoint
    label = f"burst {protocol} x{count}"
    reporter.begin(label)
    capturing: Capture | None = None
    capture_name: str | None = None
    if capture:
        capture_name = f"burst-{protocol}.pcap"
        capturing = Capture(run_dir / capture_name, host=host, port=port)
        try:
            capturing.start()
        except GitnetdiagError as exc:
            on_capture_error(exc)
            capturing, capture_name = None, None
    burst_timeout_s = min(timeout_s, BURST_TIMEOUT_CAP_S)
    try:
        ops = run_ls_remote_burst(transport, count, timeout_s=burst_timeout_s, cwd=run_dir)
        connects = run_connect_burst(host, port, count, timeout_s=burst_timeout_s)
    finally:
        if capturing is not None:
            capturing.stop()
    result = BurstRecord(protocol=protocol, concurrency=count, timeout_s=burst_timeout_s,
                         ops=ops, connects=connects, capture=capture_name)
    failures = result.failures_by_kind
    detail = f"{result.ok_count}/{len(ops)} ok"
    if failures:
        detail += " (" + ", ".join(f"{k} {n}" for k, n in sorted(failures.items())) + ")"
    reporter.done(label, detail, ok=not failures)
    return result


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
