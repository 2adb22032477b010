"""Predicted against measured gain: each fault's first culprit, before and after its fix.

    .venv/bin/python benchmarks/fix_gain.py                       # every fault with a fix
    .venv/bin/python benchmarks/fix_gain.py --fault tcp-rmem-clamp --size 8MiB
    .venv/bin/python benchmarks/fix_gain.py --fault syn-drop --fault tiny-backlog
    .venv/bin/python benchmarks/fix_gain.py --fault client-rmem-clamp   # a fetch fault
    .venv/bin/python benchmarks/fix_gain.py --fault loss --out runs/fg   # keep the runs

For each lab fault whose fix shortens a push, in a private lab instance
(needs root): ``gitnetdiag diagnose --lab --repeat 3`` (per protocol the
median of three pushes; bounded pushes report the whole pack at their
measured rate), then the fault's fix (``gitnetdiag lab fix`` when this
version has it, else the same lab brought up again without the fault), then
the same diagnosis again. It prints per fault the slow push, the first
culprit's predicted cost (``cost_s``), the gain measured on the protocol the
cost is priced on (``cost_protocol``; the median over protocols when the
culprit is not a protocol's), the error, and whether the culprit is gone.

The faults whose fix buys connection time or working pushes (``tiny-backlog``,
``syn-drop``, ``firewall-reset``) run the probe of their lab case (a burst of
ls-remote, one 3 MiB push a protocol) and read the gain from ``gitnetdiag
compare``: a burst culprit's predicted and measured seconds are per burst
connection; a reset's pushes have no duration before the fix.

The fetch faults (``FETCH_FIXABLE``, every fault of
:data:`gitnetdiag.lab.fetchlab.FETCH_FAULT_FIXED_SETTINGS`) run ``diagnose --direction
fetch --complete`` over the protocols of ``benchmarks/fix_compare.py``'s
``FETCH_PROTOCOLS`` (whole clones of the history the fault serves: ``--size`` does not
apply) and read the gain from ``gitnetdiag compare``, as the connection faults do: the
clone's seconds on the protocol the culprit's cost is priced on, predicted beside measured,
in the one table after the push faults.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from fix_compare import FETCH_PROTOCOLS  # benchmarks/ is this script's own directory

from gitnetdiag.lab.fetchlab import FETCH_FAULT_FIXED_SETTINGS
from gitnetdiag.lab.spec import FAULT_PROBE_ARGS

PUSH_FIXABLE = ("h2-small-window", "tcp-rmem-clamp", "window-scaling-off", "loss",
                "slow-hook", "slow-auth")
"""Lab faults whose fix shortens a push."""
CONNECTION_FIXABLE = ("tiny-backlog", "syn-drop", "firewall-reset")
"""Lab faults whose fix buys connection seconds (a burst) or working pushes."""
FETCH_FIXABLE = tuple(FETCH_FAULT_FIXED_SETTINGS)
"""Lab fetch faults whose fix shortens a clone (``lab fix`` applies each)."""
FIXABLE = PUSH_FIXABLE + CONNECTION_FIXABLE + FETCH_FIXABLE
PROTOCOLS = "h1,h2,ssh"
COMPLETE = ("slow-hook", "slow-auth")
"""Faults measured with complete pushes: their cost is outside the upload (a few seconds
at any size), and a bounded push's time budget would count the slow authentication's
wait as transfer time (its projection is then far too long)."""
CLI = [sys.executable, "-m", "gitnetdiag"]


def lab_has_fix() -> bool:
    """Whether this gitnetdiag can fix a running lab in place (``lab fix``)."""
    proc = subprocess.run([*CLI, "lab", "fix", "--help"], capture_output=True, text=True,
                          timeout=120)
    return proc.returncode == 0


def diagnose(instance: str, size: str, repeat: int, out: Path,
             *extra: str) -> dict[str, Any]:
    """The JSON report of one ``diagnose --lab`` run (``extra`` after the defaults: a
    later ``--protocols`` wins)."""
    proc = subprocess.run(
        [*CLI, "diagnose", "--lab", "--lab-instance", instance, "--size", size,
         "--repeat", str(repeat), "--protocols", PROTOCOLS, "--format", "json",
         "--out", str(out), *extra],
        capture_output=True, text=True, timeout=3600)
    try:
        report: dict[str, Any] = json.loads(proc.stdout)
    except ValueError:
        raise SystemExit(f"diagnose failed: {proc.stderr.strip()[-400:]}") from None
    return report


def durations(report: dict[str, Any]) -> dict[str, float]:
    """Median push duration per protocol (projected for bounded pushes)."""
    return {name: p["duration_s"] for name, p in report["protocols"].items()
            if p.get("duration_s") is not None and p.get("pushes_ok")}


def gain(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The first culprit of ``before``: predicted cost, measured gain, error."""
    slow, fixed = durations(before), durations(after)
    if not before["culprits"]:
        return {"culprit": None}
    top = before["culprits"][0]
    protocol = top.get("cost_protocol")
    if protocol in slow and protocol in fixed:
        measured = slow[protocol] - fixed[protocol]
        slow_s = slow[protocol]
    else:
        both = [name for name in slow if name in fixed]
        measured = statistics.median(slow[n] - fixed[n] for n in both) if both else None
        slow_s = statistics.median(slow[n] for n in both) if both else None
        protocol = "median"
    return {
        "culprit": top["id"], "protocol": protocol, "slow_s": slow_s, "fixed": fixed,
        "predicted_s": top["cost_s"], "measured_s": measured,
        "error": (top["cost_s"] - measured) / measured if measured else None,
        "gone": all(c["id"] != top["id"] for c in after["culprits"]),
        "after": [c["id"] for c in after["culprits"]],
        "others": [(c["id"], c["cost_s"], c.get("shares_with")) for c in before["culprits"][1:]],
        "note": upload_note(before, after, protocol, top["cost_s"], measured),
    }


def upload_note(before: dict[str, Any], after: dict[str, Any], protocol: str,
                predicted: float, measured: float | None) -> str:
    """A culprit priced outside the upload (a server's step) whose runs' uploads of the same
    bytes took different times: that change is the machine's, in the measured gain; the
    note gives the gain without it (empty when the uploads match within 0.1 s)."""
    slow, fixed = (run["protocols"].get(protocol, {}).get("upload_s") for run in (before, after))
    if slow is None or fixed is None or measured is None or abs(fixed - slow) < 0.1:
        return ""
    steady = measured + (fixed - slow)
    return (f"upload on {protocol}: {slow:.2f} s before, {fixed:.2f} s after (the same bytes): "
            f"the gain less that change {steady:.1f} s ({(predicted - steady) / steady:+.0%})")


def compare_gain(before: dict[str, Any], after: dict[str, Any], runs: tuple[Path, Path]
                 ) -> dict[str, Any]:
    """A connection fault's gain as ``gitnetdiag compare`` reads it."""
    proc = subprocess.run([*CLI, "compare", *map(str, runs), "--format", "json"],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"compare failed: {proc.stderr.strip()[-400:]}")
    check = json.loads(proc.stdout)["pairs"][0]["gain"]
    if check is None:
        return {"culprit": None}
    bursts = json.loads(proc.stdout)["pairs"][0]["bursts"]
    lost = next((b["before"]["lost_s"] for b in bursts if b["protocol"] == check["protocol"]),
                None)
    if lost is None:  # clones: the slow clone's median on the culprit's protocol
        lost = next((p["before"]["duration_median_s"] for p in
                     json.loads(proc.stdout)["pairs"][0]["protocols"]
                     if p["protocol"] == check["protocol"]), None)
    measured = check["measured_gain_s"]
    return {
        "culprit": check["culprit_id"], "protocol": check["protocol"] or "-", "slow_s": lost,
        "predicted_s": check["predicted_gain_s"], "measured_s": measured,
        "error": check["error_share"], "gone": check["culprit_gone"],
        "after": [c["id"] for c in after["culprits"]],
        "others": [(c["id"], c["cost_s"], c.get("shares_with")) for c in before["culprits"][1:]],
        "note": "" if measured is not None else check["note"],
    }


def run_fault(fault: str, args: argparse.Namespace, in_place: bool,
              scratch: Path) -> dict[str, Any]:
    instance = "fg" + uuid.uuid4().hex[:5]
    up = [*CLI, "lab", "up", "--name", instance, "--rtt", args.rtt]
    faulty = [*up, "--fault", fault] + (["--loss", args.loss] if fault == "loss" else [])
    subprocess.run(faulty, check=True, capture_output=True, timeout=600)
    extra: tuple[str, ...] = ("--complete",) if fault in COMPLETE else ()
    size, repeat = args.size, args.repeat
    if fault in CONNECTION_FIXABLE:  # the lab case's own probe: a burst, a small push
        extra, size, repeat = FAULT_PROBE_ARGS[fault], "3MiB", 1
    if fault in FETCH_FIXABLE:  # whole clones of the fault's history (a later --protocols wins)
        extra = ("--direction", "fetch", "--complete", "--protocols", FETCH_PROTOCOLS[fault],
                 "--timeout", "60")
    runs = (scratch / f"{fault}-before", scratch / f"{fault}-after")
    try:
        before = diagnose(instance, size, repeat, runs[0], *extra)
        if in_place:
            subprocess.run([*CLI, "lab", "fix", "--name", instance], check=True,
                           capture_output=True, timeout=600)
        else:
            subprocess.run([*CLI, "lab", "down", "--name", instance], check=True,
                           capture_output=True, timeout=600)
            subprocess.run(up, check=True, capture_output=True, timeout=600)
        after = diagnose(instance, size, repeat, runs[1], *extra)
        if fault in CONNECTION_FIXABLE or fault in FETCH_FIXABLE:
            return compare_gain(before, after, runs)
    finally:
        subprocess.run([*CLI, "lab", "down", "--name", instance], capture_output=True,
                       timeout=600)
    row = gain(before, after)
    if fault not in COMPLETE:  # a push culprit's gain is the upload's: nothing to take out
        row["note"] = ""
    return row


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fault", action="append", choices=FIXABLE,
                        help="lab fault (repeat; default: every fault with a fix)")
    parser.add_argument("--size", default="32MiB", help="generated repository size")
    parser.add_argument("--rtt", default="50ms", help="lab round-trip time")
    parser.add_argument("--loss", default="1%", help="drop rate of the loss fault")
    parser.add_argument("--repeat", type=int, default=3, help="pushes per protocol and run")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="keep each fault's runs in DIR (FAULT-before, FAULT-after)")
    args = parser.parse_args()
    in_place = lab_has_fix()
    rows = []
    with tempfile.TemporaryDirectory(prefix="gitnetdiag-fixgain-") as scratch:
        where = Path(scratch) if args.out is None else args.out
        where.mkdir(parents=True, exist_ok=True)
        for fault in args.fault or FIXABLE:
            row = run_fault(fault, args, in_place, where)
            print(f"{fault}: {row}", file=sys.stderr)
            rows.append((fault, row))
    how = "gitnetdiag lab fix" if in_place else "the lab brought up again without the fault"
    print(f"predicted vs measured gain, --size {args.size}, RTT {args.rtt}, loss fault "
          f"{args.loss}, median of {args.repeat} pushes per protocol (complete for "
          f"{', '.join(COMPLETE)}, bounded otherwise); fixed by {how}")
    print(f"{', '.join(CONNECTION_FIXABLE)}: their lab case's burst and one 3 MiB push a "
          "protocol; 'slow push' is then the seconds a burst connection lost, the gain "
          "per connection (gitnetdiag compare)")
    print(f"{', '.join(FETCH_FIXABLE)}: whole clones (--complete) of the history each serves; "
          "'slow push' is then the slow clone (median), the gain a clone (gitnetdiag compare)")
    print(f"{'fault':<24} {'first culprit':<32} {'on':<6} {'slow push':>9} {'predicted':>9} "
          f"{'measured':>9} {'error':>7}  gone after fix")
    for fault, row in rows:
        if row["culprit"] is None:
            print(f"{fault:<24} (no culprit ranked)")
            continue
        error = "-" if row["error"] is None else f"{row['error'] * 100:+.0f}%"
        print(f"{fault:<24} {row['culprit']:<32} {row['protocol']:<6} {_s(row['slow_s']):>9} "
              f"{_s(row['predicted_s']):>9} {_s(row['measured_s']):>9} {error:>7}  "
              f"{'yes' if row['gone'] else 'NO: ' + ', '.join(row['after'])}")
        if row.get("note"):
            print(f"{'':<24}   {row['note']}")
        for other, cost, shares in row["others"]:
            note = f" (amplifies, shares with {shares})" if shares else ""
            print(f"{'':<24}   also ranked: {other} {_s(cost)}{note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
