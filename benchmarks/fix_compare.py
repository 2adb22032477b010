"""Predicted against measured gain of a fix, per lab fault (needs root).

    .venv/bin/python benchmarks/fix_compare.py                          # h2-small-window
    .venv/bin/python benchmarks/fix_compare.py tcp-rmem-clamp loss --size 8MiB --repeat 3
    .venv/bin/python benchmarks/fix_compare.py --direction fetch        # every fetch fault
    .venv/bin/python benchmarks/fix_compare.py --direction fetch client-rmem-clamp

For each fault: a lab instance with the fault, ``diagnose --repeat N``,
``lab fix``, ``diagnose`` again, ``compare`` the two runs. It prints, per
fault, the slow push (median), the top culprit's predicted gain (its
``cost_s``) beside the reference, the gain measured once the fault is fixed,
the prediction error, whether the culprit is gone, and the noise test.
Every run directory is kept under ``--out``.

``--direction fetch`` does the same for the fetch faults (issue 36 item 1): whole
clones (``--complete``, a bounded clone keeps partial bytes) of the history the fault
serves, over the protocols of :data:`FETCH_PROTOCOLS` (the one the culprit's cost is
priced on and, where the culprit compares two, the other); ``--size`` does not apply.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from gitnetdiag.lab.fetchlab import FETCH_FAULT_FIXED_SETTINGS
from gitnetdiag.lab.spec import FAULT_FIXED_SETTINGS, FAULT_PROBE_ARGS

FETCH_PROTOCOLS: dict[str, str] = {
    "client-rmem-clamp": "h1",  # priced on the clamped clone's own protocol
    "server-sndbuf-clamp": "h1",
    "slow-pack-generation": "h1,git",  # the same wait on two transports
    "client-index-cpu": "h1,git",
    "client-h2-window": "h1,h2",  # HTTP/2 priced against HTTP/1.1 through the same edge
    "edge-response-buffering": "h1,git",  # the edge's clone against git:// to the server
}
"""The protocols a fetch fault's clones use (as tests/acceptance/test_fetch_lab.py's)."""


def _gitnetdiag(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitnetdiag", *args], capture_output=True,
                          text=True, timeout=1800)


def _diagnose(instance: str, fault: str, out: Path, size: str, repeat: int) -> None:
    if fault in FETCH_PROTOCOLS:
        probe: tuple[str, ...] = ("--direction", "fetch", "--complete",
                                  "--protocols", FETCH_PROTOCOLS[fault])
    else:
        protocols = (("--protocols", "h2") if fault == "h2-small-window"
                     else FAULT_PROBE_ARGS[fault])
        probe = (*protocols, "--size", size, "--stall-timeout", "8", "--cleanup-wait", "5")
    _gitnetdiag("diagnose", "--lab", "--lab-instance", instance, *probe,
                "--repeat", str(repeat), "--timeout", "60", "--format", "json", "--out", str(out))


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
        print(f"{fault}: {fixed.stdout.strip()}", file=sys.stderr, flush=True)
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
    parser.add_argument("faults", nargs="*", choices=sorted(FAULT_FIXED_SETTINGS),
                        metavar="FAULT", help="default: h2-small-window, or with --direction "
                        "fetch every fetch fault")
    parser.add_argument("--direction", choices=("push", "fetch"), default="push")
    parser.add_argument("--size", default="3MiB")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("runs/fix-gain"))
    args = parser.parse_args()
    fetch = args.direction == "fetch"
    faults = args.faults or (list(FETCH_FAULT_FIXED_SETTINGS) if fetch else ["h2-small-window"])
    if any((fault in FETCH_PROTOCOLS) != fetch for fault in faults):
        parser.error(f"--direction {args.direction} takes these faults: " + ", ".join(
            f for f in FAULT_FIXED_SETTINGS if (f in FETCH_PROTOCOLS) == fetch))
    print(f"| fault | top culprit | slow {'clone' if fetch else 'push'} | predicted gain (ours) "
          "| measured gain (reference) | error | culprit gone | noise |")
    print("|---|---|---|---|---|---|---|---|")
    for fault in faults:
        pair = measure(fault, args.out, args.size, args.repeat)
        gain = pair["gain"] or {}
        row = next((r for r in pair["protocols"] if r["protocol"] == gain.get("protocol")), None)
        # the compared median: a whole one projected when the runs moved different amounts
        slow = row["before_median_s"] if row else None
        error = gain.get("error_share")
        noise = {True: "beyond", False: "within", None: "not tested"}[gain.get("beyond_noise")]
        print(f"| {fault} | {gain.get('culprit_id', '-')} | {_s(slow)} | "
              f"{_s(gain.get('predicted_gain_s'))} | {_s(gain.get('measured_gain_s'))} | "
              f"{'-' if error is None else f'{error:+.0%}'} | {gain.get('culprit_gone', '-')} | "
              f"{noise} |", flush=True)


if __name__ == "__main__":
    main()
