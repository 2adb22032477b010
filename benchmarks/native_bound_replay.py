"""Native downloads' pack budget, replayed on recorded ledgers: how soon the rate is known.

    .venv/bin/python benchmarks/time_to_diagnosis.py --demo --rtt 50ms --keep /tmp/keep
    .venv/bin/python benchmarks/native_bound_replay.py /tmp/keep/*/fetch
    .venv/bin/python benchmarks/native_bound_replay.py --rtts 12,20,30 RUN_DIR ...

Each run directory's ``fetch.json`` holds the native downloads' ledgers (HTTP/2: every
DATA frame; SSH: every read) with their times. Each ledger is fed again, frame by frame,
to the same :class:`~gitnetdiag.probe.budget.RateMonitor` the probes use: once under the
fixed 2.1 s of pack of before (the reference, ``NATIVE_DOWNLOAD_BUDGET_S``) and once per
candidate, N round trips of the run's path (its least connect RTT) plus 0.1 s
(:func:`~gitnetdiag.probe.budget.native_download_budget`; ``NATIVE_PACK_RTTS`` is the
chosen N). The ledgers must have been recorded under the reference or a longer budget.
One row per ledger and rule: the seconds of pack it took, the rate, its difference from
the reference's; the summary gives the seconds saved and the largest difference.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gitnetdiag.probe.budget import (
    NATIVE_DOWNLOAD_BUDGET_S,
    NATIVE_PACK_RTTS,
    Progress,
    RateMonitor,
    native_download_budget,
)
from gitnetdiag.probe.pathinfo import path_rtt
from gitnetdiag.rundir.manifest import load_fetch_manifest


@dataclass(frozen=True)
class Ledger:
    """One native download: its name, the path's RTT, its (seconds, cumulative bytes)."""

    name: str
    rtt_s: float | None
    points: tuple[tuple[float, int], ...]


@dataclass(frozen=True)
class Replay:
    ended_s: float
    rate: float | None
    stopped: str | None


def replay(points: Sequence[tuple[float, int]], budget_s: float) -> Replay:
    """The ledger's points through a monitor under ``budget_s``: where it stops, its rate."""
    monitor = RateMonitor(budget_s=budget_s, stall_timeout_s=None)
    ended, stopped = 0.0, None
    for t_s, moved in points:
        monitor.add(Progress(t_s=t_s, moved_bytes=moved))
        ended = t_s
        reason = monitor.stop_reason(t_s, pack_finished=False)
        if reason is not None:
            stopped = reason.value
            break
    start = monitor.first_data_s() or 0.0
    return Replay(ended_s=ended - start, rate=monitor.rate_bytes_per_s(), stopped=stopped)


def _cumulative(times: Sequence[float], sizes: Sequence[int], origin: float
                ) -> tuple[tuple[float, int], ...]:
    total, out = 0, []
    for t_s, size in zip(times, sizes, strict=False):
        total += size
        out.append((t_s - origin, total))
    return tuple(out)


def ledgers(run_dir: Path) -> list[Ledger]:
    """The native downloads of one run directory, each with its path's least connect RTT
    (:func:`~gitnetdiag.probe.pathinfo.path_rtt`, as the probe bounded it)."""
    manifest = load_fetch_manifest(run_dir)
    if manifest is None:
        print(f"{run_dir}: no fetch.json (hint: a --direction fetch or both run's directory)",
              file=sys.stderr)
        return []
    urls = {run.protocol: run.url for run in manifest.protocols}

    def rtt(protocol: str) -> float | None:  # as the probe reads it
        return path_rtt(manifest.paths, urls[protocol]) if protocol in urls else None

    found = [Ledger(f"{run_dir.parent.name[-8:]} h2 {h2.label}", rtt("h2"),
                    _cumulative(h2.data_t_s, h2.data_bytes, h2.request_t_s))
             for h2 in manifest.h2_downloads if h2.data_t_s]
    found += [Ledger(f"{run_dir.parent.name[-8:]} ssh", rtt("ssh"),
                     _cumulative(ssh.read_t_s, ssh.read_bytes, ssh.request_t_s or 0.0))
              for ssh in manifest.ssh_downloads if ssh.read_t_s]
    return found


def _row(name: str, rule: str, got: Replay, reference: Replay) -> str:
    rate = f"{got.rate / 1e6:8.3f}" if got.rate else "       -"
    diff = (f"{100 * (got.rate - reference.rate) / reference.rate:+6.1f}%"
            if got.rate and reference.rate else "      -")
    return f"{name:32} {rule:28} {got.ended_s:6.2f} {rate} {diff}  {got.stopped or 'end'}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="+", type=Path)
    parser.add_argument("--rtts", default=str(NATIVE_PACK_RTTS),
                        help="candidate budgets, in round trips of the path")
    args = parser.parse_args(argv)
    try:
        candidates = [int(n) for n in args.rtts.split(",")]
    except ValueError:
        print(f"--rtts {args.rtts!r}: not a list of integers (hint: --rtts 12,20,30)",
              file=sys.stderr)
        return 2
    found = [ledger for run_dir in args.run_dirs for ledger in ledgers(run_dir)]
    if not found:
        print("no native download ledgers found (hint: time_to_diagnosis.py --keep DIR)",
              file=sys.stderr)
        return 1
    print(f"{'ledger':32} {'rule':28} {'pack s':>6} {'MB/s':>8} {'vs ref':>7}  stopped")
    saved = {n: 0.0 for n in candidates}
    worst = {n: 0.0 for n in candidates}
    for ledger in found:
        reference = replay(ledger.points, NATIVE_DOWNLOAD_BUDGET_S)
        rtt = f"RTT {1000 * ledger.rtt_s:.0f} ms" if ledger.rtt_s else "RTT unknown"
        print(_row(ledger.name, f"reference 2.1 s, {rtt}", reference, reference))
        for rtts in candidates:
            budget = native_download_budget(NATIVE_DOWNLOAD_BUDGET_S, ledger.rtt_s, rtts=rtts)
            assert budget is not None
            got = replay(ledger.points, budget)
            print(_row("", f"{rtts} RTT: {budget:.2f} s", got, reference))
            saved[rtts] += reference.ended_s - got.ended_s
            if got.rate and reference.rate:
                worst[rtts] = max(worst[rtts], abs(got.rate - reference.rate) / reference.rate)
    for rtts in candidates:
        print(f"{rtts} RTT: {saved[rtts]:.2f} s of pack fewer over {len(found)} ledgers, "
              f"largest rate difference {100 * worst[rtts]:.1f}% (reference: 2.1 s of pack)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
