"""Time to diagnosis: bounded pushes (the default) beside complete pushes, per lab fault.

    .venv/bin/python benchmarks/time_to_diagnosis.py --fault h2-small-window
    .venv/bin/python benchmarks/time_to_diagnosis.py            # every fault (long)
    .venv/bin/python benchmarks/time_to_diagnosis.py --fault loss --size 32MiB --rtt 50ms

For each fault it brings up a private lab instance (needs root), runs
``gitnetdiag diagnose --lab`` twice, bounded and with ``--complete``, and
prints the wall time of each with the culprit ranked first and the expected
one (``gitnetdiag.lab.spec.FAULT_CULPRIT``), then takes the lab down.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from gitnetdiag.lab.spec import FAULT_CULPRIT, FAULT_PROBE_ARGS


def _diagnose(instance: str, fault: str, size: str, out: Path,
              *extra: str) -> tuple[float, str, str]:
    """Wall seconds, first culprit (or the verdict when none) and the window evidence."""
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--lab", "--lab-instance", instance,
         "--size", size, "--format", "json", "--out", str(out), *FAULT_PROBE_ARGS[fault],
         *extra],
        capture_output=True, text=True, timeout=1800,
    )
    wall = time.monotonic() - started
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        return wall, f"error: {proc.stderr.strip().splitlines()[-1:]}", ""
    culprits = report.get("culprits") or []
    if not culprits:
        return wall, f"({report.get('verdict')})", ""
    return wall, culprits[0]["id"], _window_evidence(culprits[0]["evidence"])


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fault", action="append", choices=list(FAULT_CULPRIT),
                        help="lab fault (repeat; default: every fault)")
    parser.add_argument("--size", default="24MiB", help="generated repository size")
    parser.add_argument("--rtt", default="50ms", help="lab round-trip time")
    args = parser.parse_args()
    faults = args.fault or list(FAULT_CULPRIT)
    rows = []
    for fault in faults:
        instance = "tt" + uuid.uuid4().hex[:5]
        cli = [sys.executable, "-m", "gitnetdiag", "lab"]
        subprocess.run([*cli, "up", "--name", instance, "--fault", fault, "--rtt", args.rtt],
                       check=True, capture_output=True, timeout=600)
        try:
            with tempfile.TemporaryDirectory(prefix="gitnetdiag-ttd-") as scratch:
                bounded = _diagnose(instance, fault, args.size, Path(scratch) / "bounded")
                complete = _diagnose(instance, fault, args.size, Path(scratch) / "complete",
                                     "--complete")
        finally:
            subprocess.run([*cli, "down", "--name", instance], capture_output=True, timeout=600)
        rows.append((fault, FAULT_CULPRIT[fault] or "(healthy)", bounded, complete))
        print(f"{fault}: bounded {bounded[0]:.1f} s {bounded[1]}; "
              f"complete {complete[0]:.1f} s {complete[1]}", file=sys.stderr)
    print(f"time to diagnosis, --size {args.size}, RTT {args.rtt}")
    print(f"{'fault':<18} {'expected':<26} {'bounded s':>9}  {'first culprit':<26} "
          f"{'complete s':>10}  first culprit")
    for fault, expected, bounded, complete in rows:
        print(f"{fault:<18} {expected:<26} {bounded[0]:>9.1f}  {bounded[1]:<26} "
              f"{complete[0]:>10.1f}  {complete[1]}")
        for label, result in (("bounded", bounded), ("complete", complete)):
            if result[2]:
                print(f"{'':<18} {label} window evidence: {result[2]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
