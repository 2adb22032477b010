"""Is gitnetdiag's load generator the bottleneck? ls-remote ops/s at concurrency 32,
gitnetdiag (``run_load``) vs a plain ``xargs -P 32`` loop of ``git ls-remote``, same target,
same run. Target: gitnetdiag within 10% of the shell loop.

    ip netns exec gnd-<lab>-client .venv/bin/python benchmarks/load_overhead.py \\
        git://198.18.2.2:9418/lab.git [--duration 10] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import time

from gitnetdiag.load.scheduler import LoadOptions, run_load
from gitnetdiag.probe.gitpush import Transport, ls_remote_argv
from gitnetdiag.vocabulary import TransportKind


def shell_loop_ops_per_s(url: str, concurrency: int, duration_s: float) -> tuple[float, int]:
    """xargs -P runs git ls-remote back to back until the deadline; returns (ok/s, failures)."""
    # $EPOCHREALTIME is a bash builtin: the loop itself forks nothing but git.
    script = (
        'end=$(( ${EPOCHREALTIME/./} + DUR_US )); '
        'while (( ${EPOCHREALTIME/./} < end )); do '
        'git ls-remote "$URL" >/dev/null 2>&1 && echo ok || echo fail; done'
    )
    started = time.monotonic()
    proc = subprocess.run(
        ["bash", "-c",
         f'seq {concurrency} | xargs -P {concurrency} -I{{}} bash -c '
         f'\'{script.replace("DUR_US", str(int(duration_s * 1e6)))}\''],
        env={"URL": url, "PATH": "/usr/bin:/bin", "LC_ALL": "C"},
        capture_output=True, text=True, timeout=duration_s + 120, check=True,
    )
    elapsed = time.monotonic() - started
    lines = proc.stdout.split()
    return lines.count("ok") / elapsed, lines.count("fail")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    kind = TransportKind.GIT if args.url.startswith("git://") else TransportKind.H1
    transport = Transport(protocol=kind,
                          url=args.url)
    assert ls_remote_argv(transport)[-1] == args.url
    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    outcome = run_load(LoadOptions(
        transport=transport, ops=("ls-remote",), mix=(1,), concurrency=(args.concurrency,),
        step_duration_s=args.duration, timeout_s=60.0))
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    own_cpu_s = (cpu_after.ru_utime + cpu_after.ru_stime
                 - cpu_before.ru_utime - cpu_before.ru_stime)
    step = outcome.report.steps[0]
    shell_rate, shell_failures = shell_loop_ops_per_s(args.url, args.concurrency, args.duration)
    ratio = step.ops_per_s / shell_rate if shell_rate else float("nan")
    print(f"concurrency {args.concurrency}, {args.duration:g} s, target {args.url}")
    print(f"gitnetdiag load : {step.ops_per_s:8.1f} ops/s  ({step.ok} ok, {step.failed} failed, "
          f"p50 {step.latency.p50_s if step.latency else float('nan'):.3f} s, "
          f"generator CPU {own_cpu_s / step.elapsed_s * 100:.0f}% of a core)")
    print(f"xargs -P loop   : {shell_rate:8.1f} ops/s  ({shell_failures} failed)")
    verdict = "OK" if ratio >= 0.9 else "SLOWER than target"
    print(f"ratio           : {ratio:8.3f}  (target >= 0.90: {verdict})")


if __name__ == "__main__":
    main()
