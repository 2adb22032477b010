"""One probe cycle, in its own process: ``python -m gitnetdiag.watch.cycle``.

Reads a JSON job from stdin (the target, its run directory, the start time and
the deadline; stdin rather than argv because URLs may carry tokens and argv is
public in ``ps``), runs the probe and the diagnosis of each direction of the target with
the library calls (the pushes: ``run_probe``, ``diagnose_run``; the clones, read-only:
``run_fetch_probe``, ``diagnose_clones``, as ``diagnose --direction fetch``), and
writes one :class:`ProbeSample` as JSON to stdout. Everything else it would
print goes to stderr. It exits 0 whenever it wrote a sample, failed cycles
included, and :data:`~gitnetdiag.watch.scheduler.DEADLINE_EXIT` after the sample
of a cycle that reached its deadline.

The deadline covers the clean-up (:class:`CycleDeadline`)::

    start ........ end - reserve: a push or clone still running is stopped
                   (SIGTERM, the Ctrl-C path), a push's clean-up bounded by
                   end - 1 s (``ProbeOptions.cleanup_until``): whatever is
                   unconfirmed then is reported (``unconfirmed``, counted), not
                   waited for; a clone has no branch, its scratch copy is removed
    end - 0.5 s    whatever still runs (the diagnosis) is stopped
    end            the sample: ``deadline``, with the branches the manifest may
                   have left
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any

from gitnetdiag.diagnosis.culprits import CULPRITS
from gitnetdiag.diagnosis.model import Diagnosis
from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.model.lab.state import load_state
from gitnetdiag.pipeline import diagnose_clones, diagnose_run, joined_diagnosis, write_reports
from gitnetdiag.probe.fetchrun import run_fetch_probe
from gitnetdiag.probe.labremote import LabHttp, lab_remote, ssh_command
from gitnetdiag.probe.runner import ProbeOptions, run_probe
from gitnetdiag.proc import note_signal
from gitnetdiag.rundir.both import BOTH_OPTION
from gitnetdiag.vocabulary import TransportKind
from gitnetdiag.watch.config import Target
from gitnetdiag.watch.sample import (
    ProbeSample,
    cleanup_failures_of,
    failed_sample,
    sample_from_diagnosis,
    sample_from_fetch,
    transfer_errors_of,
)
from gitnetdiag.watch.scheduler import DEADLINE_EXIT, left_by

CLEANUP_RESERVE_S = 10.0
"""A push still running this long before the deadline is stopped, so that its clean-up
runs before the deadline (a quarter of the deadline when that is shorter)."""
END_MARGIN_S = 0.5
"""What still runs this long before the deadline is stopped: the sample goes out in time."""
CLEANUP_MARGIN_S = 1.0
"""The clean-up ends this long before the deadline (the manifest is saved after it)."""


class CycleDeadline:
    """The cycle's deadline in its process: timers that stop the pushes (while they run)
    and then whatever still runs, with SIGTERM, the signal the probe turns into its
    Ctrl-C path; ``reached`` says that it was the deadline that stopped the cycle."""

    def __init__(self, end: float, reserve_s: float) -> None:
        self.end = end
        """``time.monotonic()`` of the deadline."""
        self.reached = False
        self._probing = True
        self._over = False
        self._lock = threading.Lock()
        now = time.monotonic()
        self._timers = [threading.Timer(max(0.0, end - reserve_s - now), self._stop, (True,)),
                        threading.Timer(max(0.0, end - END_MARGIN_S - now), self._stop, (False,))]
        for timer in self._timers:
            timer.daemon = True
            timer.start()

    @classmethod
    def of_job(cls, started_unix_s: float, deadline_s: float) -> CycleDeadline:
        end = time.monotonic() + (started_unix_s + deadline_s - time.time())
        return cls(end, min(CLEANUP_RESERVE_S, deadline_s / 4))

    @property
    def cleanup_until(self) -> float:
        return self.end - CLEANUP_MARGIN_S

    def _stop(self, only_probing: bool) -> None:
        with self._lock:
            if self._over or (only_probing and not self._probing):
                return
            self.reached = True
            os.kill(os.getpid(), signal.SIGTERM)

    def probed(self) -> None:
        """The pushes are over: only the end stops the cycle now."""
        with self._lock:
            self._probing = False

    def cancel(self) -> None:
        """The cycle is over: no timer fires any more."""
        with self._lock:
            self._over = True
        for timer in self._timers:
            timer.cancel()


def _target_from(data: dict[str, Any]) -> Target:
    fields = dict(data)
    fields["protocols"] = tuple(fields["protocols"])
    return Target(**fields)


def probe_options(target: Target, run_dir: Path, seed: int,
                  cleanup_until: float | None = None) -> ProbeOptions:
    """The ``ProbeOptions`` of one cycle (a lab target takes URLs and keys from the lab; its
    clones sample the server's sockets in the lab's server namespace)."""
    urls = dict(target.urls)
    ca_file, key, known_hosts = target.ca_file, target.ssh_key, target.ssh_known_hosts
    # A both cycle's pushes say so, as the probe's do: its RUN-fetch belongs to them.
    extra: dict[str, Any] = {"watch_target": target.name,
                             **(BOTH_OPTION if target.direction == "both" else {})}
    server_netns = None
    ssh_config = ""
    if target.lab is not None:
        state = load_state(target.lab)
        lab = lab_remote(state, lab_http=LabHttp(target.lab_http), ca_file=ca_file,
                         insecure=target.insecure, ssh_key=key, ssh_known_hosts=known_hosts)
        urls = {"h1": lab.https, "h2": lab.https, "ssh": lab.ssh, "git": lab.git}
        ca_file, key, known_hosts = lab.ca_file, lab.ssh_key, lab.ssh_known_hosts
        extra |= lab.recorded()
        server_netns = state.server_ns
        ssh_config = lab.ssh_config  # its jump host (ssh-jump-host), as diagnose --lab
    protocols = tuple(TransportKind(p) for p in target.protocols)
    return ProbeOptions(
        urls={TransportKind(p): u for p, u in urls.items() if TransportKind(p) in protocols},
        protocols=protocols, size_bytes=target.size_bytes, seed=seed, repo=None, repeat=1,
        ca_file=ca_file, insecure=target.insecure,
        ssh_command=ssh_command(key, known_hosts, ssh_config or None)
        if TransportKind.SSH in protocols else None,
        out_dir=run_dir, full=False, burst=0, timeout_s=target.timeout_s,
        capture=target.capture, extra_options=extra, native=target.native,
        ssh_key=key, ssh_known_hosts=known_hosts, cleanup_until=cleanup_until,
        server_netns=server_netns,
    )


CLONES_NOT_RUN = "the cycle's clones did not finish"
"""Why a both cycle's pushes' saved report has no clones until they are joined to it (the
cycle stopped by its deadline in the clones keeps this report)."""

Part = tuple[ProbeSample, Diagnosis | None]
"""One direction of a cycle: its sample, and its diagnosis when one was made."""


def _push_sample(target: Target, options: ProbeOptions, started_unix_s: float) -> Part:
    """Push over each protocol (branches created and deleted), diagnose, summarise. A both
    cycle's pushes save their report without the clones (:data:`CLONES_NOT_RUN`) until
    :func:`_save_joined` joins them."""
    try:
        # The server's sockets are sampled for the clones only, as diagnose does.
        outcome = run_probe(replace(options, server_netns=None))
    except GitnetdiagError as exc:
        return _failed(target, "push", options.out_dir, exc.reference, exc.one_line(),
                       started_unix_s), None
    errors = transfer_errors_of(outcome.manifest.protocols, outcome.manifest.errors)
    leftovers = cleanup_failures_of(outcome.manifest.errors, outcome.manifest.protocols)
    try:
        diagnosis, warnings = diagnose_run(outcome.run_dir, save_to=outcome.run_dir)
        write_reports(diagnosis if target.direction != "both"
                      else joined_diagnosis(diagnosis, None, CLONES_NOT_RUN), outcome.run_dir)
    except GitnetdiagError as exc:
        sample = _failed(target, "push", outcome.run_dir, errors.get("*", "analysis"),
                         exc.one_line(), started_unix_s)
        return replace(sample, cleanup_failures=leftovers), None
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return sample_from_diagnosis(
        diagnosis, target=target.name, protocols=target.protocols, push_errors=errors,
        catalogue=catalogue("upload"), started_unix_s=started_unix_s,
        duration_s=time.time() - started_unix_s, run_dir=str(outcome.run_dir),
        cleanup_failures=leftovers), diagnosis


def _fetch_sample(target: Target, options: ProbeOptions, started_unix_s: float) -> Part:
    """Clone over each protocol (read-only: no seed branch, nothing written on the server;
    each scratch clone removed), diagnose, summarise: a sample with the ``fetch`` direction
    and the path's RTT."""
    try:
        outcome = run_fetch_probe(replace(options, fetch_seed_bytes=None))
    except GitnetdiagError as exc:
        return _failed(target, "fetch", options.out_dir, exc.reference, exc.one_line(),
                       started_unix_s), None
    manifest = outcome.manifest
    errors = transfer_errors_of(manifest.protocols, manifest.errors)
    rtts = [p.connect_rtt_min_s for p in manifest.paths if p.connect_rtt_min_s is not None]
    for error in manifest.errors:
        if error.stage == "cleanup":  # a scratch clone left on this host, not the server
            print(f"warning: {error.reference}: {error.message}", file=sys.stderr)
    try:
        diagnosis = diagnose_clones(outcome.run_dir, manifest if outcome.disk_full else None)
    except GitnetdiagError as exc:
        return replace(_failed(target, "fetch", outcome.run_dir, errors.get("*", "analysis"),
                               exc.one_line(), started_unix_s), rtt_s=min(rtts, default=None)), None
    if diagnosis is None:
        return _failed(target, "fetch", outcome.run_dir, errors.get("*", "fetch-failed"),
                       "the fetch run wrote no fetch.json", started_unix_s), None
    write_reports(diagnosis, outcome.run_dir,  # the one set of renderers: clones too
                  warn=lambda message: print(f"warning: {message}", file=sys.stderr))
    part = sample_from_fetch(
        verdict=diagnosis.verdict, findings=diagnosis.findings, runs=manifest.protocols,
        protocols=target.protocols, fetch_errors=errors, catalogue=catalogue("download"),
        run_dir=str(outcome.run_dir))
    return ProbeSample(target=target.name, started_unix_s=started_unix_s,
                       duration_s=time.time() - started_unix_s, directions=(part,),
                       rtt_s=min(rtts, default=None)), diagnosis


def catalogue(transfer: str) -> list[str]:
    """Every culprit id that judges ``upload`` (pushes) or ``download`` (clones)."""
    return [c.id for c in CULPRITS if transfer in c.directions]


def _failed(target: Target, direction: str, run_dir: Path, kind: str, message: str,
            started_unix_s: float) -> ProbeSample:
    return failed_sample(target.name, target.protocols, kind, message,
                         started_unix_s=started_unix_s,
                         duration_s=time.time() - started_unix_s,
                         run_dirs={direction: str(run_dir) if run_dir.is_dir() else ""})


def merge_samples(first: ProbeSample, *more: ProbeSample) -> ProbeSample:
    """One cycle's sample from its directions' (in order): the push's windows, the first
    RTT measured, every branch left, the first error."""
    merged = first
    for sample in more:
        merged = replace(
            merged, directions=(*merged.directions, *sample.directions),
            duration_s=max(merged.duration_s, sample.duration_s),
            rtt_s=merged.rtt_s if merged.rtt_s is not None else sample.rtt_s,
            cleanup_failures=(*merged.cleanup_failures, *sample.cleanup_failures),
            error=merged.error or sample.error)
    return merged


def run_cycle(target: Target, run_dir: Path, started_unix_s: float,
              deadline: CycleDeadline | None = None) -> ProbeSample:
    """Probe and diagnose each direction of ``target`` (pushes, then clones), summarise; a
    failure of any step is a failed direction, not an exception (KeyboardInterrupt:
    SIGTERM, from the exporter or ``deadline``, propagates)."""
    seed = int(started_unix_s) & 0xFFFFFF
    cleanup_until = deadline.cleanup_until if deadline is not None else None
    runners = {"push": _push_sample, "fetch": _fetch_sample}
    directories = target.run_dirs(run_dir)
    parts = {direction: runners[direction](
        target, probe_options(target, directory, seed, cleanup_until), started_unix_s)
        for direction, directory in directories.items()}
    if deadline is not None:
        deadline.probed()
    if target.direction == "both":
        _save_joined(parts, directories["push"])
    sample = merge_samples(*(part[0] for part in parts.values()))
    return replace(sample, duration_s=time.time() - started_unix_s)


def _save_joined(parts: dict[str, Part], push_run_dir: Path) -> None:
    """A both cycle's saved ``report.*`` in RUN: the one report of both directions, as
    ``diagnose --direction both`` writes it (the clones' own stay in RUN-fetch); clones
    that failed or were not diagnosed are said and judged (``without_clones``). Nothing
    when the pushes have no diagnosis (their failed sample says why)."""
    pushes, clones = parts["push"][1], parts["fetch"][1]
    if pushes is None:
        return
    error = parts["fetch"][0].error
    joined = joined_diagnosis(pushes, clones,
                              f"the clones failed: {error}" if error else CLONES_NOT_RUN)
    write_reports(joined, push_run_dir,
                  warn=lambda message: print(f"warning: {message}", file=sys.stderr))


def deadline_sample(target: Target, run_dir: Path, started_unix_s: float,
                    deadline_s: float) -> ProbeSample:
    """The sample of a cycle its deadline stopped: what its manifest says it may have left
    on the server (unconfirmed branches included) is counted (a clone leaves nothing)."""
    sample = failed_sample(
        target.name, target.protocols, "deadline",
        f"the cycle reached its deadline of {deadline_s:g} s and was stopped (its clean-up "
        "within it: the run's manifest says what became of each branch)",
        started_unix_s=started_unix_s, duration_s=time.time() - started_unix_s,
        run_dirs={d: str(p) if p.is_dir() else "" for d, p in target.run_dirs(run_dir).items()})
    return replace(sample, cleanup_failures=left_by(run_dir))


def _interrupt(signum: int, frame: FrameType | None) -> None:
    note_signal(signum)
    raise KeyboardInterrupt


def main() -> None:
    job = json.loads(sys.stdin.read())
    target, run_dir = _target_from(job["target"]), Path(job["run_dir"])
    started, deadline_s = float(job["started_unix_s"]), job.get("deadline_s")
    # SIGTERM (the exporter's, or the deadline's) anywhere in the cycle: the Ctrl-C path.
    signal.signal(signal.SIGTERM, _interrupt)
    deadline = (CycleDeadline.of_job(started, float(deadline_s)) if deadline_s is not None
                else None)
    if target.lab is not None:  # the lab client's environment, as --lab gives the probe
        from gitnetdiag.lab.netns import apply_client_env
        with contextlib.suppress(GitnetdiagError):  # the cycle's sample says what failed
            apply_client_env(load_state(target.lab))
    try:
        sample = run_cycle(target, run_dir, started, deadline)
        if deadline is not None:
            deadline.cancel()
    except KeyboardInterrupt:  # the probe has cleaned up (within the deadline)
        if deadline is None or not deadline.reached:
            sys.exit(130)  # the exporter stopped it
        deadline.cancel()
        sys.stdout.write(json.dumps(deadline_sample(target, run_dir, started,
                                                    float(deadline_s or 0)).to_dict()) + "\n")
        sys.stdout.flush()
        sys.exit(DEADLINE_EXIT)
    sys.stdout.write(json.dumps(sample.to_dict()) + "\n")


if __name__ == "__main__":
    main()
