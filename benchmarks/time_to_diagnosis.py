"""Time to diagnosis: bounded transfers (the default) beside complete ones, per lab fault.

    .venv/bin/python benchmarks/time_to_diagnosis.py --fault h2-small-window
    .venv/bin/python benchmarks/time_to_diagnosis.py            # every fault (long)
    .venv/bin/python benchmarks/time_to_diagnosis.py --fault loss --size 32MiB --rtt 50ms
    .venv/bin/python benchmarks/time_to_diagnosis.py --fetch-fault client-rmem-clamp
    .venv/bin/python benchmarks/time_to_diagnosis.py --demo     # fetch and both, demo path
    .venv/bin/python benchmarks/time_to_diagnosis.py --demo --keep /tmp/keep  # runs kept
    .venv/bin/python benchmarks/time_to_diagnosis.py --failure-fault edge-no-backend

For each push fault it brings up a private lab instance (needs root), runs
``gitnetdiag diagnose --lab`` twice, bounded and with ``--complete``, and
prints the wall time of each with the culprit ranked first and the expected
one (``gitnetdiag.lab.spec.FAULT_CULPRIT``), then takes the lab down. Each
download fault (``FETCH_FAULT_CULPRIT``, and the clones an edge cuts:
``gitnetdiag.lab.clonefaults.CLONE_FAULT_CULPRIT``) the same with ``--direction fetch``:
bounded clones beside complete clones. ``--demo`` runs the demo's lab
(``h2-small-window``, HTTP/1.1, HTTP/2 and SSH) with ``--direction fetch
--fetch-seed SIZE`` (its repository is nearly empty: the seed branch gives the
clones something to measure) and ``--direction both``; issue 47's targets: 12 s for
the clones, 20 s for both (and 12 s for the bounded pushes of ``--fault h2-small-window``).
Every run prints its step table first (``GITNETDIAG_STEPS``, :mod:`gitnetdiag.steps`): each
step's start, end and length from the command's start; rows that overlap ran side by side.
Each failure fault (``EDGE_FAULT_CULPRIT`` and the dead paths'
``PATH_FAULT_CULPRIT``: transfers that fail and are named by what was seen; issue 42's
target for a dead path is 30 s) runs once with ``--direction both`` beside the healthy lab: the
time from start to the named failure, the verdict and the exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gitnetdiag.lab.clonefaults import CLONE_FAULT_CULPRIT
from gitnetdiag.lab.edgefaults import EDGE_FAULT_CULPRIT
from gitnetdiag.lab.pathfaults import PATH_FAULT_CULPRIT
from gitnetdiag.lab.spec import FAULT_CULPRIT, FAULT_PROBE_ARGS, FETCH_FAULT_CULPRIT
from gitnetdiag.steps import STEPS_ENV

DOWNLOAD_FAULT_CULPRIT = {**FETCH_FAULT_CULPRIT, **CLONE_FAULT_CULPRIT}
"""Download faults: slow clones, and clones an edge cuts (the time to a named failure)."""

DEMO_FAULT = "h2-small-window"
DEMO_PROTOCOLS = "h1,h2,ssh"
DEMO_TARGETS_S = {"fetch": 12.0, "both": 20.0}
"""Issue 47's targets for ``diagnose --direction fetch|both`` on the demo path (issue 26's
were 20 and 40 s)."""
PUSH_TARGET_S = 12.0
"""Issue 47's target for the bounded pushes (the ``bounded s`` column)."""


def _diagnose(instance: str, fault: str, size: str, out: Path,
              *extra: str) -> tuple[float, str, str]:
    """Wall seconds, first culprit (or the verdict when none) and the window evidence;
    the run's step table (:mod:`gitnetdiag.steps`) printed to stdout."""
    steps = out.with_name(out.name + ".steps.jsonl")
    argv = [sys.executable, "-m", "gitnetdiag", "diagnose", "--lab", "--lab-instance", instance,
            "--size", size, "--format", "json", "--out", str(out),
            *FAULT_PROBE_ARGS.get(fault, ()), *extra]
    started = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800,
                          env={**os.environ, STEPS_ENV: str(steps)})
    wall = time.monotonic() - started
    _step_table(" ".join(argv[3:]), steps, started, wall)
    reports = _json_documents(proc.stdout)
    if not reports:
        return wall, f"error: {proc.stderr.strip().splitlines()[-1:]}", ""
    # --direction both prints one report; each direction's own report is one of its parts
    reports = [part for report in reports
               for part in (report.get("parts") or {"": report}).values()]
    firsts, evidence = [], ""
    for report in reports:
        culprits = report.get("culprits") or []
        name = f"{report.get('direction')}: " if len(reports) > 1 else ""
        if not culprits:
            firsts.append(f"{name}({report.get('verdict', 'no culprit')})")
            continue
        firsts.append(name + culprits[0]["id"])
        evidence = evidence or _window_evidence(culprits[0]["evidence"])
    return wall, "; ".join(firsts), evidence


def _step_table(title: str, steps: Path, started: float, wall: float) -> None:
    """Each step of the run: when it began and ended (seconds from the command's start)
    and how long it took; steps that overlap ran side by side (threads, or the lab's
    server collected in its namespace while the client works)."""
    try:
        rows = [json.loads(line) for line in steps.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        rows = []
    print(f"steps of: gitnetdiag {title}")
    print(f"  {'from s':>6} {'to s':>6} {'took s':>6}  step")
    pids = list(dict.fromkeys(row["pid"] for row in rows))
    for row in sorted(rows, key=lambda r: (r["start"], r["end"])):
        start, end = row["start"] - started, row["end"] - started
        where = f" (process {pids.index(row['pid']) + 1})" if len(pids) > 1 else ""
        print(f"  {start:>6.1f} {end:>6.1f} {end - start:>6.1f}  {row['step']}{where}")
    last = max((row["end"] - started for row in rows), default=0.0)
    print(f"  {last:>6.1f} {wall:>6.1f} {wall - last:>6.1f}  exit (after the last step)")
    print(f"  {'':>6} {wall:>6.1f} {'':>6}  wall time")
    on_path = on_path_s(rows)
    print(f"  {'':>6} {'':>6} {on_path:>6.1f}  of it with bytes on the path (path checks, the "
          f"seed's push and clean-up, transfers and their clean-ups); {wall - on_path:.1f} s "
          "without")
    sys.stdout.flush()


ON_PATH = ("path", "seed branch", "seed clean-up", "fetch ", "push ", "native h2 ",
           "native ssh ")
"""Steps that move bytes on the measured path (their names start so: the path checks, one
row each or one for all, the seed's push and clean-up, the clones, the pushes with their
clean-ups, the native probes; not the native probes' library imports): the part of a run's
time no overlap can take away while transfers run one at a time (issue 47)."""


def on_path_s(rows: list[dict[str, Any]]) -> float:
    """Seconds during which at least one step of :data:`ON_PATH` ran (the union of their
    intervals: side-by-side steps count once)."""
    spans = sorted((row["start"], row["end"]) for row in rows
                   if str(row["step"]).startswith(ON_PATH) and row["end"] > row["start"])
    total, reach = 0.0, None
    for start, end in spans:
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def _json_documents(text: str) -> list[dict[str, Any]]:
    """Every JSON object printed one after the other."""
    decoder = json.JSONDecoder()
    documents, at = [], 0
    while (at := _skip_space(text, at)) < len(text):
        try:
            document, at = decoder.raw_decode(text, at)
        except ValueError:
            break
        if isinstance(document, dict):
            documents.append(document)
    return documents


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def _window_evidence(evidence: list[dict[str, object]]) -> str:
    """The window the culprit names and, for HTTP/2, the measured vs predicted rate."""
    granted = [e for e in evidence if "send window granted" in str(e["what"])]
    allows = [e for e in evidence if "what the window allows" in str(e["what"])]
    if granted or allows:
        parts = [f"granted window {e['value']} B" for e in granted]
        parts += [f"measured {float(e['value']) / 1e6:.2f} MB/s vs window/RTT "  # type: ignore[arg-type]
                  f"{float(e['threshold']) / 1e6:.2f} MB/s" for e in allows  # type: ignore[arg-type]
                  if e.get("value") is not None and e.get("threshold") is not None]
        return "; ".join(parts)
    return next((f"{e['what']}: {e['value']}" for e in evidence
                 if "window" in str(e["what"]).lower()), "")


class _Lab:
    """A private lab instance for one fault, taken down on leaving."""

    def __init__(self, fault: str, rtt: str) -> None:
        self.instance = "tt" + uuid.uuid4().hex[:5]
        self.cli = [sys.executable, "-m", "gitnetdiag", "lab"]
        self.args = ["up", "--name", self.instance, "--fault", fault, "--rtt", rtt]

    def __enter__(self) -> str:
        subprocess.run([*self.cli, *self.args], check=True, capture_output=True, timeout=600)
        return self.instance

    def __exit__(self, *exc: object) -> None:
        subprocess.run([*self.cli, "down", "--name", self.instance], capture_output=True,
                       timeout=600)


Result = tuple[float, str, str]


NOT_RUN: Result = (float("nan"), "(not run: --bounded-only)", "")
KEEP: list[Path] = []
"""``--keep DIR``: the run directories stay under it (for ``native_bound_replay.py``)."""


@contextlib.contextmanager
def _scratch() -> Iterator[str]:
    """A directory for one lab's runs: removed after, unless ``--keep`` named a parent."""
    if KEEP:
        KEEP[0].mkdir(parents=True, exist_ok=True)
        yield tempfile.mkdtemp(prefix="gitnetdiag-ttd-", dir=KEEP[0])
        return
    with tempfile.TemporaryDirectory(prefix="gitnetdiag-ttd-") as scratch:
        yield scratch


def _pushes(faults: list[str], size: str, rtt: str, *, complete_too: bool = True) -> None:
    rows = []
    for fault in faults:
        with _Lab(fault, rtt) as instance, \
                _scratch() as scratch:
            bounded = _diagnose(instance, fault, size, Path(scratch) / "bounded")
            complete = _diagnose(instance, fault, size, Path(scratch) / "complete",
                                 "--complete") if complete_too else NOT_RUN
        rows.append((fault, FAULT_CULPRIT[fault] or "(healthy)", bounded, complete))
        print(f"{fault}: bounded {bounded[0]:.1f} s {bounded[1]}; "
              f"complete {complete[0]:.1f} s {complete[1]}", file=sys.stderr)
    _table(f"time to diagnosis, pushes, --size {size}, RTT {rtt}", rows, "pushes")


def _fetches(faults: list[str], rtt: str) -> None:
    rows = []
    for fault in faults:
        with _Lab(fault, rtt) as instance, \
                _scratch() as scratch:
            fetch = ("--direction", "fetch")
            bounded = _diagnose(instance, fault, "1MiB", Path(scratch) / "bounded", *fetch)
            complete = _diagnose(instance, fault, "1MiB", Path(scratch) / "complete", *fetch,
                                 "--complete")
        rows.append((fault, DOWNLOAD_FAULT_CULPRIT[fault], bounded, complete))
        print(f"{fault}: bounded {bounded[0]:.1f} s {bounded[1]}; "
              f"complete {complete[0]:.1f} s {complete[1]}", file=sys.stderr)
    _table(f"time to diagnosis, --direction fetch (what the lab serves), RTT {rtt}", rows,
           "clones")


def _table(title: str, rows: list[tuple[str, str, Result, Result]], what: str) -> None:
    print(title)
    print(f"{'fault':<21} {'expected':<32} {'bounded s':>9}  {'first culprit':<32} "
          f"{'complete s':>10}  first culprit (complete {what})")
    for fault, expected, bounded, complete in rows:
        print(f"{fault:<21} {expected:<32} {bounded[0]:>9.1f}  {bounded[1]:<32} "
              f"{complete[0]:>10.1f}  {complete[1]}")
        if what == "pushes":
            print(f"{'':<21} bounded within {PUSH_TARGET_S:.0f} s: "
                  f"{'yes' if bounded[0] <= PUSH_TARGET_S else 'NO'}")
        for label, result in (("bounded", bounded), ("complete", complete)):
            if result[2]:
                print(f"{'':<21} {label} window evidence: {result[2]}")


FAILURE_CULPRIT = {**EDGE_FAULT_CULPRIT, **PATH_FAULT_CULPRIT}
"""Each failure fault's expected first culprit."""


def _failures(faults: list[str], rtt: str) -> None:
    """Each failure fault once, ``--direction both``, beside the healthy lab."""
    print(f"time to a named failure, --direction both, --size 1MiB, RTT {rtt}")
    print(f"{'fault':<21} {'expected':<24} {'wall s':>7}  {'exit':>4}  first culprit")
    for fault in ["healthy", *faults]:
        with _Lab(fault, rtt) as instance, \
                _scratch() as scratch:
            started = time.monotonic()
            proc = subprocess.run(
                [sys.executable, "-m", "gitnetdiag", "diagnose", "--lab", "--lab-instance",
                 instance, "--size", "1MiB", "--timeout", "30", "--direction", "both",
                 "--format", "json", "--out", str(Path(scratch) / "run"),
                 *FAULT_PROBE_ARGS.get(fault, ()),
                 # The healthy lab's main is one empty commit: a seed gives its clones
                 # something to measure (a failure fault's clones fail before any pack).
                 *(("--fetch-seed", "1MiB") if fault == "healthy" else ())],
                capture_output=True, text=True, timeout=1800)
            wall = time.monotonic() - started
        reports = _json_documents(proc.stdout)
        report = reports[0] if reports else {}
        first = "; ".join(f"{c['direction']}: {c['id']}" for c in report.get("culprits", [])[:2])
        print(f"{fault:<21} {FAILURE_CULPRIT.get(fault, '(healthy)'):<24} {wall:>7.1f}  "
              f"{proc.returncode:>4}  {report.get('verdict', '?')}: {first or '-'}")


def _demo(size: str, rtt: str) -> None:
    """``--direction fetch`` and ``both`` on the demo's lab, against their targets."""
    rows = []
    with _Lab(DEMO_FAULT, rtt) as instance, \
            _scratch() as scratch:
        for direction in ("fetch", "both"):
            result = _diagnose(instance, DEMO_FAULT, size, Path(scratch) / direction,
                               "--protocols", DEMO_PROTOCOLS, "--direction", direction,
                               "--fetch-seed", size)
            rows.append((direction, result))
            print(f"demo --direction {direction}: {result[0]:.1f} s {result[1]}",
                  file=sys.stderr)
    print(f"demo path ({DEMO_FAULT}, {DEMO_PROTOCOLS}, --size and --fetch-seed {size}, "
          f"RTT {rtt})")
    print(f"{'direction':<10} {'wall s':>7} {'target s':>9}  {'within':<7} first culprit")
    for direction, (wall, first, _) in rows:
        target = DEMO_TARGETS_S[direction]
        print(f"{direction:<10} {wall:>7.1f} {target:>9.0f}  "
              f"{'yes' if wall <= target else 'NO':<7} {first}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fault", action="append", choices=list(FAULT_CULPRIT),
                        help="push lab fault (repeat)")
    parser.add_argument("--fetch-fault", action="append", choices=list(DOWNLOAD_FAULT_CULPRIT),
                        help="download lab fault, --direction fetch (repeat)")
    parser.add_argument("--failure-fault", action="append", choices=list(FAILURE_CULPRIT),
                        help="failure lab fault, --direction both beside healthy (repeat)")
    parser.add_argument("--demo", action="store_true",
                        help="--direction fetch and both on the demo path")
    parser.add_argument("--size", default="24MiB",
                        help="generated repository size (and the demo's --fetch-seed)")
    parser.add_argument("--rtt", default="50ms", help="lab round-trip time")
    parser.add_argument("--keep", type=Path, help="keep the run directories under this one")
    parser.add_argument("--bounded-only", action="store_true",
                        help="push faults: the bounded run alone (no --complete beside it)")
    args = parser.parse_args()
    if args.keep is not None:
        KEEP.append(args.keep)
    everything = not (args.fault or args.fetch_fault or args.demo or args.failure_fault)
    if args.fault or everything:
        _pushes(args.fault or list(FAULT_CULPRIT), args.size, args.rtt,
                complete_too=not args.bounded_only)
    if args.fetch_fault or everything:
        _fetches(args.fetch_fault or list(DOWNLOAD_FAULT_CULPRIT), args.rtt)
    if args.demo or everything:
        _demo(args.size, args.rtt)
    if args.failure_fault or everything:
        _failures(args.failure_fault or list(FAILURE_CULPRIT), args.rtt)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
