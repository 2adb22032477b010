"""How much the lab's user-space delay element carries.

Brings up two lab instances (root): one with the router's NFQUEUE delay at
50 ms RTT, one with no delay (plain kernel forwarding, the reference), runs
iperf3 from client to server through each, and prints both side by side.
Target: the delay element carries at least 200 Mbit/s at 50 ms RTT.

    .venv/bin/python benchmarks/lab_throughput.py [--seconds 8] [--rtt 50ms]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time

from gitnetdiag.lab import manager
from gitnetdiag.lab.spec import build_spec, parse_duration_ms
from gitnetdiag.model.lab.state import LabState

TARGET_MBIT = 200.0


def iperf(state: LabState, seconds: int, streams: int) -> tuple[float, float]:
    """Receiver-side Mbit/s and the ping-like RTT seen by TCP (ms)."""
    server = subprocess.Popen(["ip", "netns", "exec", state.server_ns, "iperf3", "-s", "-1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        out = subprocess.run(
            ["ip", "netns", "exec", state.client_ns, "iperf3", "-c", state.server_ip,
             "-t", str(seconds), "-P", str(streams), "-J"],
            capture_output=True, text=True, timeout=seconds + 60, check=True).stdout
    finally:
        server.wait(timeout=30)
    data = json.loads(out)
    rate = data["end"]["sum_received"]["bits_per_second"] / 1e6
    rtts = [s["sender"]["mean_rtt"] for s in data["end"]["streams"] if "mean_rtt" in s["sender"]]
    return rate, (sum(rtts) / len(rtts) / 1000.0) if rtts else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--rtt", default="50ms")
    parser.add_argument("--streams", type=int, default=1)
    args = parser.parse_args()
    rtt_ms = parse_duration_ms(args.rtt)
    rows = []
    for name, rtt in (("bdelay", rtt_ms), ("bref", 0.0)):
        state = manager.up(build_spec(instance=name, faults=["healthy"], rtt_ms=rtt))
        try:
            rate, mean_rtt = iperf(state, args.seconds, args.streams)
        finally:
            manager.down(name)
        rows.append((name, rtt, rate, mean_rtt))
    print(f"{'path':<38} {'RTT set':>8} {'TCP mean RTT':>13} {'iperf3 Mbit/s':>14}")
    labels = {"bdelay": "gitnetdiag NFQUEUE delay element",
              "bref": "kernel forwarding, no delay (ref)"}
    for name, rtt, rate, mean_rtt in rows:
        print(f"{labels[name]:<38} {rtt:>6.0f}ms {mean_rtt:>11.1f}ms {rate:>14.1f}")
    delayed = rows[0][2]
    verdict = "meets" if delayed >= TARGET_MBIT else "MISSES"
    print(f"delay element: {delayed:.1f} Mbit/s at {rtt_ms:g} ms RTT: {verdict} the "
          f"{TARGET_MBIT:.0f} Mbit/s target")
    return 0 if delayed >= TARGET_MBIT else 1


if __name__ == "__main__":
    raise SystemExit(main())
