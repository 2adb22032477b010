"""Predicted against measured gain of a fix, per lab fault (needs root).

    .venv/bin/python benchmarks/fix_compare.py                          # h2-small-window
    .venv/bin/python benchmarks/fix_compare.py tcp-rmem-clamp loss --size 8MiB --repeat 3

For each fault: a lab instance with the fault, ``diagnose --repeat N``,
``lab fix``, ``diagnose`` again, ``compare`` the two runs. It prints, per
fault, the slow push (median), the top culprit's predicted gain (its
``cost_s``) beside the reference, the gain measured once the fault is fixed,
the prediction error, whether the culprit is gone, and the noise test.
Every run directory is kept under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from gitnetdiag.lab.spec import FAULT_FIXED_SETTINGS, FAULT_PROBE_ARGS


def _gitnetdiag(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitnetdiag", *args], capture_output=True,
                          text=True, timeout=1800)


def _diagnose(instance: str, fault: str, out: Path, size: str, repeat: int) -> None:
    protocols = ("--protocols", "h2") if fault == "h2-small-window" else FAULT_PROBE_ARGS[fault]
    _gitnetdiag("diagnose", "--lab", "--lab-instance", instance, *protocols, "--size", size,
                "--repeat", str(repeat), "--timeout", "60", "--stall-timeout", "8",
                "--cleanup-wait", "5", "--format", "json", "--out", str(out))


def measure(fault: str, out: Path, size: str, repeat: int) -> dict[str, Any]:
    """One fault: the comparison's first pair, as JSON."""
    instance = "b" + uuid.uuid4().hex[:6]
    up = _gitnetdiag("lab", "up", "--name", instance, "--fault", fault)
    if up.returncode != 0:
        raise SystemExit(f"lab up failed: {up.stderr.strip()}")
    try:
        _diagnose(instance, fault, out / f"{fault}-before", size, repeat)
        fixed = _gitnetdiag("lab", "fix", "--name", instance)
        if fixed.returncode != 0:
            raise SystemExit(f"lab fix failed: {fixed.stderr.strip()}")
        _diagnose(instance, fault, out / f"{fault}-after", size, repeat)
    finally:
        _gitnetdiag("lab", "down", "--name", instance)
    compared = _gitnetdiag("compare", str(out / f"{fault}-before"), str(out / f"{fault}-after"),
                           "--format", "json")
    if compared.returncode != 0:
        raise SystemExit(f"compare failed: {compared.stderr.strip()}")
    pair: dict[str, Any] = json.loads(compared.stdout)["pairs"][0]
    return pair


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("faults", nargs="*", default=["h2-small-window"],
                        choices=sorted(FAULT_FIXED_SETTINGS), metavar="FAULT")
    parser.add_argument("--size", default="3MiB")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("runs/fix-gain"))
    args = parser.parse_args()
    print("| fault | top culprit | slow push | predicted gain (ours) | measured gain "
          "(reference) | error | culprit gone | noise |")
    print("|---|---|---|---|---|---|---|---|")
    for fault in args.faults:
        pair = measure(fault, args.out, args.size, args.repeat)
        gain = pair["gain"] or {}
        row = next((r for r in pair["protocols"] if r["protocol"] == gain.get("protocol")), None)
        slow = row["before"]["duration_median_s"] if row else None
        error = gain.get("error_share")
        noise = {True: "beyond", False: "within", None: "not tested"}[gain.get("beyond_noise")]
        print(f"| {fault} | {gain.get('culprit_id', '-')} | {_s(slow)} | "
              f"{_s(gain.get('predicted_gain_s'))} | {_s(gain.get('measured_gain_s'))} | "
              f"{'-' if error is None else f'{error:+.0%}'} | {gain.get('culprit_gone', '-')} | "
              f"{noise} |", flush=True)


if __name__ == "__main__":
    main()
