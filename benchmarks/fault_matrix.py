"""The lab's fault matrix: every named fault x RTT x repeat, scored per culprit.

    .venv/bin/python benchmarks/fault_matrix.py                      # run, score, print
    .venv/bin/python benchmarks/fault_matrix.py --fit                # ... and write the fitted table
    .venv/bin/python benchmarks/fault_matrix.py --from runs/fault-matrix-X --fit   # re-fit, no lab
    .venv/bin/python benchmarks/fault_matrix.py --fault loss --rtt 20ms --repeats 1

For every fault of ``gitnetdiag.lab.spec.FAULTS`` (read at run time, so new
faults join by themselves) and every ``--rtt`` it brings up a private lab
instance (root), runs ``gitnetdiag diagnose --lab ... --format json`` with the
fault's ``FAULT_PROBE_ARGS`` ``--repeats`` times (bounded pushes of ``--size``),
then takes the lab down. Every run directory (report.json, observations.json,
captures) stays under the results directory, with ``matrix.json`` indexing them.

Scoring (``gitnetdiag.diagnosis.matrix``): the expected culprit of a run is
``FAULT_CULPRIT[fault]`` (none for ``healthy`` and for faults without an entry,
such as ``auth``). Per culprit: TP = expected and ranked first; FN = expected and
not ranked first; FP = ranked at any place above the reporting threshold while
another fault (or none) was injected. Precision = TP / (TP + FP), recall =
TP / (TP + FN). The table is computed twice from the same saved observations,
with the hand-set weights and with the fitted confidences, side by side.

``--fit`` turns the matrix's raw detector scores into per-culprit calibrated
confidences (``gitnetdiag.diagnosis.calibration``) and writes
``gitnetdiag/diagnosis/culprits/fitted.py`` and the generated table of
``docs/culprits.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from gitnetdiag.lab.spec import FAULT_CULPRIT, FAULT_PROBE_ARGS, FAULTS

ROOT = Path(__file__).resolve().parent.parent
INDEX = "matrix.json"


def _git_commit() -> str:
    proc = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, timeout=30)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--",
                            "gitnetdiag"], capture_output=True, text=True, timeout=30)
    return proc.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _rtt_label(rtt: str) -> str:
    return rtt.replace(".", "_")


def _diagnose(instance: str, fault: str, size: str, timeout_s: float, out: Path) -> dict[str, Any]:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--lab", "--lab-instance", instance,
         "--size", size, "--timeout", f"{timeout_s:g}", "--format", "json", "--out", str(out),
         *FAULT_PROBE_ARGS.get(fault, ("--protocols", "h1,h2,ssh"))],
        capture_output=True, text=True, timeout=max(900.0, 10 * timeout_s),
    )
    wall = time.monotonic() - started
    row: dict[str, Any] = {"exit_code": proc.returncode, "wall_s": round(wall, 1)}
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        row["error"] = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return row
    row["verdict"] = report.get("verdict")
    row["ranked"] = [c["id"] for c in report.get("culprits") or []]
    return row


def run_matrix(results: Path, faults: list[str], rtts: list[str], repeats: int, size: str,
               timeout_s: float) -> None:
    """Run every (fault, RTT) lab and its repeats; append each run to the index as it ends."""
    results.mkdir(parents=True, exist_ok=True)
    index_path = results / INDEX
    index: dict[str, Any] = {
        "started": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _git_commit(), "size": size, "repeats": repeats, "rtts": rtts, "runs": [],
    }
    cli = [sys.executable, "-m", "gitnetdiag", "lab"]
    for fault in faults:
        for rtt in rtts:
            instance = "fm" + uuid.uuid4().hex[:5]
            up = subprocess.run([*cli, "up", "--name", instance, "--fault", fault, "--rtt", rtt],
                                capture_output=True, text=True, timeout=600)
            try:
                for repeat in range(1, repeats + 1):
                    name = f"{fault}-{_rtt_label(rtt)}-r{repeat}"
                    row: dict[str, Any] = {"fault": fault, "rtt": rtt, "repeat": repeat,
                                           "expected": FAULT_CULPRIT.get(fault), "run_dir": name}
                    if up.returncode != 0:
                        row["error"] = "lab up failed: " + (up.stderr.strip().splitlines()
                                                           or ["?"])[-1]
                    else:
                        row.update(_diagnose(instance, fault, size, timeout_s, results / name))
                    index["runs"].append(row)
                    index_path.write_text(json.dumps(index, indent=1) + "\n")
                    print(f"{name}: {row.get('wall_s', 0):.0f} s, expected "
                          f"{row['expected']}, ranked {row.get('ranked', row.get('error'))}",
                          file=sys.stderr, flush=True)
            finally:
                subprocess.run([*cli, "down", "--name", instance], capture_output=True,
                               timeout=600)
    index["finished"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    index_path.write_text(json.dumps(index, indent=1) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fault", action="append", choices=list(FAULTS),
                        help="lab fault (repeat; default: every fault in FAULTS)")
    parser.add_argument("--rtt", action="append", help="lab RTT (repeat; default 20ms and 80ms)")
    parser.add_argument("--repeats", type=int, default=2, help="diagnoses per fault and RTT")
    parser.add_argument("--size", default="3MiB", help="generated repository size (bounded pushes)")
    parser.add_argument("--timeout", type=float, default=90.0, help="timeout of each git run, s")
    parser.add_argument("--results", type=Path, help="results directory "
                        "(default runs/fault-matrix-<UTC time>)")
    parser.add_argument("--from", dest="from_dir", type=Path,
                        help="score (and --fit) an existing results directory; runs no lab")
    parser.add_argument("--fit", action="store_true",
                        help="write the fitted confidences and the docs/culprits.md table")
    args = parser.parse_args()
    # A terminated matrix still takes its lab down (the finally clauses run).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.from_dir is not None:
        results = args.from_dir
        if not (results / INDEX).is_file():
            print(f"error: no {INDEX} in {results} (hint: pass a directory this script wrote)",
                  file=sys.stderr)
            return 2
    else:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        results = args.results or ROOT / "runs" / f"fault-matrix-{stamp}"
        run_matrix(results, args.fault or list(FAULTS), args.rtt or ["20ms", "80ms"],
                   args.repeats, args.size, args.timeout)
        print(f"results: {results}", file=sys.stderr)
    from benchmarks.fault_matrix_fit import report_and_fit

    return report_and_fit(results, write=args.fit)


if __name__ == "__main__":
    raise SystemExit(main())
