"""One probe cycle, in its own process: ``python -m gitnetdiag.watch.cycle``.

Reads a JSON job from stdin (the target, its run directory, the start time;
stdin rather than argv because URLs may carry tokens and argv is public in
``ps``), runs the probe and the diagnosis with the library calls, and writes
one :class:`ProbeSample` as JSON to stdout. Everything else it would print goes
to stderr. It exits 0 whenever it wrote a sample, failed cycles included.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from gitnetdiag.diagnosis.culprits import CULPRITS
from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.model.lab.state import load_state
from gitnetdiag.pipeline import diagnose_run, write_reports
from gitnetdiag.probe.labremote import LabHttp, lab_remote, ssh_command
from gitnetdiag.probe.runner import ProbeOptions, run_probe
from gitnetdiag.vocabulary import TransportKind
from gitnetdiag.watch.config import Target
from gitnetdiag.watch.sample import (
    ProbeSample,
    cleanup_failures_of,
    failed_sample,
    push_errors_of,
    sample_from_diagnosis,
)


def _target_from(data: dict[str, Any]) -> Target:
    fields = dict(data)
    fields["protocols"] = tuple(fields["protocols"])
    return Target(**fields)


def probe_options(target: Target, run_dir: Path, seed: int) -> ProbeOptions:
    """The ``ProbeOptions`` of one cycle (a lab target takes URLs and keys from the lab)."""
    urls = dict(target.urls)
    ca_file, key, known_hosts = target.ca_file, target.ssh_key, target.ssh_known_hosts
    extra: dict[str, Any] = {"watch_target": target.name}
    if target.lab is not None:
        lab = lab_remote(load_state(target.lab), lab_http=LabHttp(target.lab_http),
                         ca_file=ca_file, insecure=target.insecure, ssh_key=key,
                         ssh_known_hosts=known_hosts)
        urls = {"h1": lab.https, "h2": lab.https, "ssh": lab.ssh, "git": lab.git}
        ca_file, key, known_hosts = lab.ca_file, lab.ssh_key, lab.ssh_known_hosts
        extra |= lab.recorded()
    protocols = tuple(TransportKind(p) for p in target.protocols)
    return ProbeOptions(
        urls={TransportKind(p): u for p, u in urls.items() if TransportKind(p) in protocols},
        protocols=protocols, size_bytes=target.size_bytes, seed=seed, repo=None, repeat=1,
        ca_file=ca_file, insecure=target.insecure,
        ssh_command=ssh_command(key, known_hosts) if TransportKind.SSH in protocols else None,
        out_dir=run_dir, full=False, burst=0, timeout_s=target.timeout_s,
        capture=target.capture, extra_options=extra, native=target.native,
        ssh_key=key, ssh_known_hosts=known_hosts,
    )


def run_cycle(target: Target, run_dir: Path, started_unix_s: float) -> ProbeSample:
    """Probe, diagnose, summarise; a failure of any step is a failed sample, not an exception."""
    def elapsed() -> float:
        return time.time() - started_unix_s

    try:
        outcome = run_probe(probe_options(target, run_dir, int(started_unix_s) & 0xFFFFFF))
    except GitnetdiagError as exc:
        return failed_sample(target.name, target.protocols, exc.reference, exc.one_line(),
                             started_unix_s=started_unix_s, duration_s=elapsed())
    errors = push_errors_of(outcome.manifest.protocols, outcome.manifest.errors)
    leftovers = cleanup_failures_of(outcome.manifest.errors, outcome.manifest.protocols)
    try:
        diagnosis, warnings = diagnose_run(outcome.run_dir, save_to=outcome.run_dir)
        write_reports(diagnosis, outcome.run_dir)
    except GitnetdiagError as exc:
        sample = failed_sample(target.name, target.protocols, errors.get("*", "analysis"),
                               exc.one_line(), started_unix_s=started_unix_s,
                               duration_s=elapsed(), run_dir=str(outcome.run_dir))
        return replace(sample, cleanup_failures=leftovers)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return sample_from_diagnosis(
        diagnosis, target=target.name, protocols=target.protocols, push_errors=errors,
        catalogue=[c.id for c in CULPRITS], started_unix_s=started_unix_s,
        duration_s=elapsed(), run_dir=str(outcome.run_dir), cleanup_failures=leftovers)


def main() -> None:
    job = json.loads(sys.stdin.read())
    try:
        sample = run_cycle(_target_from(job["target"]), Path(job["run_dir"]),
                           float(job["started_unix_s"]))
    except KeyboardInterrupt:  # the exporter stopped the cycle; the probe has cleaned up
        sys.exit(130)
    sys.stdout.write(json.dumps(sample.to_dict()) + "\n")


if __name__ == "__main__":
    main()
