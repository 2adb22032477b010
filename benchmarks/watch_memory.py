"""Ten `gitnetdiag watch` cycles against the lab: exporter memory and server refs.

    sudo .venv/bin/python benchmarks/watch_memory.py                  # own lab, 10 cycles
    sudo .venv/bin/python benchmarks/watch_memory.py --lab-instance demo --cycles 20

Starts the exporter (one lab target, cycles back to back), waits for each cycle
to finish (``gitnetdiag_probes_total`` goes up) and prints the exporter's
resident memory after it, read from /proc, next to the cycle's outcome. Then
prints the server repository's refs before and after side by side: every
throwaway branch must be gone. Without ``--lab-instance`` it brings up a lab
(``h2-small-window``, 20 ms) and takes it down at the end.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from gitnetdiag.lab import manager
from gitnetdiag.lab.spec import build_spec, parse_duration_ms
from gitnetdiag.model.lab.state import LabState, load_state


def server_refs(state: LabState) -> dict[str, str]:
    out = subprocess.run(
        ["git", "--git-dir", state.repo_path, "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True, text=True, check=True, timeout=30).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def scrape(port: int) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def cycles_done(metrics: dict[tuple[str, frozenset[tuple[str, str]]], float]) -> int:
    return int(sum(v for (name, _), v in metrics.items() if name == "gitnetdiag_probes_total"))


def describe(metrics: dict[tuple[str, frozenset[tuple[str, str]]], float]) -> str:
    parts = []
    for (name, labels), value in sorted(metrics.items(), key=lambda kv: sorted(kv[0][1])):
        label = dict(labels)
        if name == "gitnetdiag_probe_success":
            parts.append(f"{label['protocol']} {'ok' if value else label.get('error_kind')}")
        elif name == "gitnetdiag_culprit_score" and label["culprit"] == "h2-flow-control-window":
            parts.append(f"h2-window score {value:.2f}")
    return ", ".join(parts)


def run(state: LabState, cycles: int, size: str, timeout: str, workdir: Path) -> int:
    port = free_port()
    config = workdir / "watch.yaml"
    config.write_text(
        f"listen: 127.0.0.1:{port}\nruns_dir: {workdir / 'runs'}\nkeep_runs: 3\n"
        f"targets:\n  - name: lab\n    lab: {state.instance}\n    interval: 1s\n"
        f"    size: {size}\n    timeout: {timeout}\n")
    before = server_refs(state)
    log = (workdir / "watch.log").open("wb")
    exporter = subprocess.Popen([sys.executable, "-m", "gitnetdiag", "watch", "--config",
                                 str(config)], stdout=log, stderr=subprocess.STDOUT)
    print(f"exporter pid {exporter.pid}, {cycles} cycles of a {size} push over h1, h2, ssh "
          f"to lab {state.instance} ({', '.join(state.faults)}, {state.rtt_ms:g} ms)")
    print(f"{'cycle':>5} {'seconds':>8} {'exporter RSS MiB':>17}  outcome")
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                scrape(port)
                break
            except OSError:
                if time.monotonic() > deadline or exporter.poll() is not None:
                    raise SystemExit("the exporter did not start: see " + str(log.name)) from None
                time.sleep(0.2)
        print(f"{0:>5} {'-':>8} {rss_bytes(exporter.pid) / 2**20:>17.1f}  (started)")
        done, started = 0, time.monotonic()
        while done < cycles:
            metrics = scrape(port)
            now_done = cycles_done(metrics)
            if now_done > done:
                done = now_done
                elapsed, started = time.monotonic() - started, time.monotonic()
                print(f"{done:>5} {elapsed:>8.1f} {rss_bytes(exporter.pid) / 2**20:>17.1f}  "
                      f"{describe(metrics)}", flush=True)
            if exporter.poll() is not None:
                raise SystemExit("the exporter exited: see " + str(log.name))
            time.sleep(0.2)
    finally:
        exporter.send_signal(signal.SIGTERM)
        exporter.wait(timeout=180)
        log.close()
    after = server_refs(state)
    print("\nserver refs, before and after:")
    width = max(len(r) for r in (*before, *after))
    print(f"{'ref':<{width}}  {'before':<12}  {'after':<12}")
    for ref in sorted(set(before) | set(after)):
        print(f"{ref:<{width}}  {before.get(ref, '-')[:12]:<12}  {after.get(ref, '-')[:12]:<12}")
    same = before == after
    print("refs unchanged" if same else "REFS CHANGED")
    return 0 if same else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lab-instance", help="use this running lab instead of a new one")
    parser.add_argument("--fault", default="h2-small-window")
    parser.add_argument("--rtt", default="20ms")
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--size", default="1MiB")
    parser.add_argument("--timeout", default="20s",
                        help="each git run (the lab's HTTP/2 edge sometimes hangs: LAB-NOTES)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (the lab's namespaces)")
    own = args.lab_instance is None
    name = args.lab_instance or f"wm{os.getpid() % 100000}"
    state = (manager.up(build_spec(instance=name, faults=[args.fault],
                                   rtt_ms=parse_duration_ms(args.rtt)))
             if own else load_state(name))
    try:
        with tempfile.TemporaryDirectory(prefix="gitnetdiag-watch-bench-") as scratch:
            return run(state, args.cycles, args.size, args.timeout, Path(scratch))
    finally:
        if own:
            manager.down(name)


if __name__ == "__main__":
    sys.exit(main())
