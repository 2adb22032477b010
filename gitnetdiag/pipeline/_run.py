"""From a run directory to a Diagnosis: the glue between probes, analysis and diagnosis.

    run directory (manifest.json, captures, native-*.json)
        -> capture analysis (gitnetdiag.capture) per push and per burst
        -> Observations (gitnetdiag.diagnosis.observations)
        -> Diagnosis (gitnetdiag.diagnosis.engine)

It reads files only; it runs no probe. ``gitnetdiag analyze RUNDIR --diagnose``,
``gitnetdiag diagnose`` and ``gitnetdiag report`` all go through
:func:`diagnose_run`, so a support engineer who receives a run directory gets
the same answer offline.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from gitnetdiag.analysis.capture_analysis import CaptureAnalysis, analyze_capture
from gitnetdiag.analysis.tcp import ConnectionAnalysis
from gitnetdiag.analysis.trace2 import push_phases
from gitnetdiag.diagnosis import observations as obs
from gitnetdiag.diagnosis.comparison import Comparison, compare
from gitnetdiag.diagnosis.engine import diagnose, summarize_protocol
from gitnetdiag.diagnosis.model import Diagnosis, ProtocolSummary
from gitnetdiag.errors import GitnetdiagError, InputError, UsageError
from gitnetdiag.outcomes import UNCLASSIFIED_KINDS, FailureKind
from gitnetdiag.pipeline._clones import artifact_text, clone_run_diagnosis
from gitnetdiag.pipeline._connections import analysis_order, burst_result
from gitnetdiag.pipeline._h2stall import h2_client_stall, h2_spoiled_bodies
from gitnetdiag.pipeline._host import load_host_report, load_storage_report
from gitnetdiag.pipeline._metrics import (
    capture_metrics,
    flight_series,
    tcpinfo_metrics,
    tcpinfo_rows,
)
from gitnetdiag.pipeline._native import (
    body_limit,
    idle_path,
    native_fingerprint,
    native_ledgers,
)
from gitnetdiag.pipeline._noted import Noted, Notes
from gitnetdiag.pipeline._paths import dead_paths
from gitnetdiag.pipeline._remote import first_hops_of, remote_of
from gitnetdiag.rundir import (
    HOST_REPORT_FILE,
    OBSERVATIONS_FILE,
    REPORT_FILES,
    STORAGE_REPORT_FILE,
    ProtocolRun,
    PushRecord,
    RunError,
    RunManifest,
    load_run,
    read_json_object,
)
from gitnetdiag.rundir.failures import failure_hint, unfinished
from gitnetdiag.safefile import replace_file

__all__ = ["HOST_REPORT_FILE", "OBSERVATIONS_FILE", "REPORT_FILES", "compare_runs", "diagnose_run",
           "diagnosis_from_saved", "observations_from_run", "summarize_run", "write_reports"]

Progress = Callable[[str], None]


def _quiet(_msg: str) -> None:
    return None


# --- one capture -> CaptureMetrics / FlightSeries ------------------------------------


def upload_connection(analysis: CaptureAnalysis) -> ConnectionAnalysis | None:
    """The connection that carried the push: most payload from the initiator (client)."""
    if not analysis.connections:
        return None
    best = max(analysis.connections, key=lambda c: c.a_to_b.payload_bytes)
    return best if best.a_to_b.payload_bytes > 0 or len(analysis.connections) == 1 else None


# --- pushes, trace2, bursts ----------------------------------------------------------


_UNMEASURED_OUTCOMES = {
    "no-data": "the push sent (almost) nothing: the server had the objects, no rate",
    "interrupted": "interrupted before the push ended",
}
"""Pushes that are no measurement at all: never a rate, never a stall."""


def push_result(record: PushRecord) -> obs.PushObservation:
    if record.outcome == "bounded" and record.rate_bytes_per_s:
        # The pack at the rate its bytes moved: what the whole push would have taken.
        return obs.PushObservation(duration_s=record.pack_bytes / record.rate_bytes_per_s,
                              bytes=record.pack_bytes, projected=True,
                              moved_bytes=record.moved_bytes)
    ok = record.outcome == "ok"
    kind = None if ok else (record.failure_kind
                            or UNCLASSIFIED_KINDS.get(record.outcome, FailureKind.OTHER))
    message = "" if ok else record.last_line or _UNMEASURED_OUTCOMES.get(record.outcome, "")
    if kind == FailureKind.HTTP_STATUS:
        message = _answered(record) + message
    return obs.PushObservation(duration_s=record.wall_s, bytes=record.pack_bytes, ok=ok,
                          error_kind=kind, error_message=message,
                          moved_bytes=record.moved_bytes)


def _answered(record: PushRecord) -> str:
    """Which request got the failure status and which server sent it (the curl trace)."""
    failed = [r for r in record.http_requests
              if r.status is not None and r.status >= 300 and r.status not in (401, 407)]
    if not failed:
        return ""
    last = failed[-1]
    server = f"server: {last.server}" if last.server else "no server header"
    return f"{last.method} {last.path} answered {last.status} ({server}): "


def http_exchanges(records: Sequence[PushRecord]) -> tuple[obs.HttpExchange, ...]:
    """Every HTTP request of the pushes, each with the push it belongs to."""
    return tuple(
        obs.HttpExchange(method=r.method, path=r.path, status=r.status, server=r.server,
                         push=record.repeat, content_length_bytes=r.content_length_bytes,
                         streamed=r.streamed, silence_before_close_s=r.silence_before_close_s,
                         ending=r.ending)
        for record in records for r in record.http_requests
    )


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def server_wait_s(record: PushRecord, run_dir: Path | None) -> Noted[float | None]:
    """trace2's wait for the server, less any part of it the pack was still on the wire.

    Over SSH and git:// pack-objects exits once the pack is in the kernel's send buffer;
    on a slow path (a clamped window, loss) draining that buffer takes seconds that
    trace2 counts as waiting for the server. The kernel's TCP_INFO samples of the push
    bound when the last pack byte was still unacknowledged; only the time after it is
    the server's.
    """
    from gitnetdiag.analysis.tcpinfo import last_undelivered_s

    wait = record.phases.server_wait_s if record.phases is not None else None
    if wait is None or run_dir is None:
        return Noted(value=wait)
    read = tcpinfo_rows(run_dir, record.artifacts.get("tcpinfo"))
    if not read.value:
        return Noted(value=wait, notes=read.notes)
    try:
        undelivered = last_undelivered_s(read.value, record.pack_bytes)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return Noted(value=wait, notes=(
            f"{record.artifacts.get('tcpinfo')}: unreadable TCP_INFO samples ({exc})",))
    if undelivered is None:
        return Noted(value=wait)
    return Noted(value=max(0.0, min(wait, record.wall_s - undelivered)))


def _upload_s(record: PushRecord, server_wait: float | None) -> float | None:
    """The POST's time over HTTP; otherwise pack-objects' write plus the send-buffer drain
    that :func:`server_wait_s` took off the server's wait (the pack was still moving)."""
    if record.post_s is not None:
        return record.post_s
    phases = record.phases
    if phases is None or phases.pack_write_s is None:
        return None
    drained = (phases.server_wait_s - server_wait
               if phases.server_wait_s is not None and server_wait is not None else 0.0)
    return phases.pack_write_s + max(0.0, drained)


def phased(run_dir: Path, record: PushRecord) -> PushRecord:
    """The push with its phases read now from its trace2 file, as a clone's are
    (:func:`gitnetdiag.analysis.trace2.push_phases`); without the file (a run directory
    trimmed, or too large a file) it keeps the phases the probe recorded from it."""
    text = artifact_text(run_dir, record.artifacts.get("trace2"))
    if text is None:
        return record
    # Lines as the probe read them: a text file's universal newlines.
    return replace(record, phases=push_phases(
        text.replace("\r\n", "\n").replace("\r", "\n").split("\n")))


def trace2_phases(records: Sequence[PushRecord],
                  run_dir: Path | None = None) -> Noted[obs.Trace2Phases | None]:
    """The median phases of the successful pushes (server wait less the send-buffer drain)."""
    ok = [r for r in records if r.phases is not None and r.outcome == "ok"]
    phases = [r.phases for r in ok if r.phases is not None]
    if not phases:
        return Noted(value=None)
    gathered = Notes()
    waits = [gathered.take(server_wait_s(r, run_dir)) for r in ok]
    return Noted(notes=tuple(gathered.notes), value=obs.Trace2Phases(
        pack_objects_s=_median([p.pack_prepare_s for p in phases]),
        upload_s=_median([_upload_s(r, wait) for r, wait in zip(ok, waits, strict=True)]),
        server_wait_s=_median(waits),
        ref_advertisement_s=_median([p.ref_advertisement_s for p in phases]),
    ))


# --- the whole run ---------------------------------------------------------------------


def _analyze(path: Path, progress: Progress, protocol: str) -> Noted[CaptureAnalysis | None]:
    """One capture; one that cannot be read at all is a missing measurement (a problem)."""
    progress(f"analysing {path.name}")
    try:
        result = analyze_capture(path, own_capture=True)  # a probe capture of the manifest
    except GitnetdiagError as exc:
        return Noted(value=None, notes=(f"{path.name}: {exc.message}",), problems=(obs.RunProblem(
            stage="capture", protocol=protocol, reference=exc.reference,
            message=f"{path.name}: {exc.message}",
            hint="the packet evidence of this push is missing; keep the run directory whole "
            "or run the probe again"),))
    return Noted(value=result, notes=tuple(f"{path.name}: {w}" for w in result.warnings))


def _protocol_observation(run_dir: Path, run: ProtocolRun,
                          progress: Progress) -> Noted[obs.ProtocolObservation]:
    """One protocol's pushes as the engine sees them: the analysed push's capture (or its
    TCP_INFO), the native ledgers, trace2's phases, the HTTP exchanges."""
    records = tuple(phased(run_dir, record) for record in run.pushes)
    gathered = Notes()
    capture_m: obs.CaptureMetrics | None = None
    flight: obs.FlightSeries | None = None
    # The analysed push: the slowest successful one (what the user complains about),
    # or the first failed one when none succeeded.
    chosen = analysis_order(r for r in records if r.capture is not None)
    if chosen:
        record = chosen[0]
        assert record.capture is not None
        analysis = gathered.take(_analyze(run_dir / record.capture.path, progress, run.protocol))
        conn = upload_connection(analysis) if analysis else None
        if conn is not None:
            capture_m = capture_metrics(conn, f"{run.protocol} push {record.repeat}")
            flight = flight_series(conn)
    if capture_m is None:
        capture_m = gathered.take(tcpinfo_metrics(run_dir, run.protocol, records))
    h2_ledger, ssh_ledger = native_ledgers(run_dir, run.protocol)
    stall = gathered.take(h2_client_stall(run_dir, records)) if run.protocol == "h2" else None
    spoiled = gathered.take(h2_spoiled_bodies(run_dir, records)) if run.protocol == "h2" else ()
    spoiled_pushes = {body.push for body in spoiled}
    observation = obs.ProtocolObservation(
        pushes=tuple(replace(push_result(r), body_spoiled=r.repeat in spoiled_pushes)
                     for r in records),
        trace2=gathered.take(trace2_phases(records, run_dir)),
        capture=capture_m,
        h2_ledger=h2_ledger,
        ssh_ledger=ssh_ledger,
        h2_client_stall=stall,
        h2_spoiled_body=spoiled[0] if spoiled else None,
        flight=flight,
        http_requests=http_exchanges(records),
        body_limit=gathered.take(body_limit(run_dir, run.protocol)),
        idle_path=gathered.take(idle_path(run_dir, run.protocol)),
    )
    return Noted(value=observation, notes=tuple(gathered.notes),
                 problems=tuple(gathered.problems))


def observations_from_run(run_dir: Path, manifest: RunManifest | None = None, *,
                          host: obs.HostEvidence | None = None,
                          progress: Progress = _quiet) -> tuple[obs.Observations, list[str]]:
    """Build the engine's input from a run directory; returns it with analysis warnings."""
    manifest = manifest or load_run(run_dir)
    gathered = Notes()
    if host is None and (run_dir / HOST_REPORT_FILE).is_file():
        host = load_host_report(run_dir / HOST_REPORT_FILE)
    storage_file = run_dir / STORAGE_REPORT_FILE
    storage = load_storage_report(storage_file) if storage_file.is_file() else None
    protocols: dict[str, obs.ProtocolObservation] = {}
    bursts: list[obs.BurstResult] = []
    for run in manifest.protocols:
        protocols[run.protocol] = gathered.take(_protocol_observation(run_dir, run, progress))
        if run.burst is not None:
            bursts.append(gathered.take(_burst(run_dir, run.burst, run.endpoint, progress)))
    rtts = [p.connect_rtt_min_s for p in manifest.paths if p.connect_rtt_min_s]
    env = manifest.environment
    pack = manifest.repo.pack_bytes if manifest.repo else None
    run_info = obs.RunInfo(
        requested_protocols=requested_protocols(manifest),
        started=manifest.started_at,
        target_url=", ".join(sorted({r.url for r in manifest.protocols})),
        rtt_s=min(rtts) if rtts else None,
        git_version=env.git if env else None,
        libcurl_version=env.libcurl if env else None,
        nghttp2_version=env.nghttp2 if env else None,
        openssh_version=env.openssh if env else None,
        repo_bytes=pack,
        **remote_of(manifest.options),
        **first_hops_of(manifest),
        **native_fingerprint(run_dir),
        measured_by=(
            f"gitnetdiag {manifest.tool_version} probe {manifest.run_id}: "
            f"{manifest.options.get('repeat', 1)} push(es) per protocol of a "
            f"{(pack or 0) / 2**20:.1f} MiB pack with git, "
            + ("captured with tcpdump" if manifest.capture_enabled
               else "no capture (TCP evidence from the kernel's TCP_INFO)")
            + _bounded_note(manifest)
            + (", native HTTP/2 and SSH ledgers" if manifest.options.get("native") else "")
            + (f", burst of {manifest.options.get('burst')}" if manifest.options.get("burst")
               else "")
        ),
    )
    return obs.Observations(run=run_info, protocols=protocols, bursts=tuple(bursts),
                            host=host, storage=storage,
                            problems=run_problems(manifest) + tuple(gathered.problems),
                            dead_paths=dead_paths(
                                ((r.protocol, r.endpoint) for r in manifest.protocols),
                                manifest.paths)), \
        gathered.notes


def _bounded_note(manifest: RunManifest) -> str:
    """Say so when rates come from pushes stopped mid-pack rather than whole pushes."""
    bounded = sum(p.outcome == "bounded" for run in manifest.protocols for p in run.pushes)
    if not bounded:
        return ""
    budget = manifest.options.get("budget_s")
    return (f"; {bounded} push(es) bounded (stopped mid-pack at a stable rate or the "
            f"{budget:g} s budget; rate from the bytes moved, nothing created)"
            if isinstance(budget, int | float) else f"; {bounded} push(es) bounded")


def summarize_run(manifest: RunManifest) -> tuple[ProtocolSummary, ...]:
    """Per-protocol outcome and rates of a run's pushes, without analysing any capture
    (the probe's summary table and ``--json``)."""
    return tuple(
        summarize_protocol(run.protocol, obs.ProtocolObservation(
            pushes=tuple(push_result(record) for record in run.pushes)))
        for run in manifest.protocols
    )


def requested_protocols(manifest: RunManifest) -> tuple[str, ...]:
    """What the run was asked to measure: ``options.protocols``, else the protocols run."""
    asked = manifest.options.get("protocols")
    if isinstance(asked, list) and all(isinstance(name, str) for name in asked):
        names = set(asked)
    else:
        names = {run.protocol for run in manifest.protocols}
    return tuple(name for name in obs.PROTOCOL_ORDER if name in names)


_STAGE_HINTS = {
    "native": "the flow-control ledger is missing; the git pushes were still measured. "
              "Check the native probe's credentials and --ca-file / --ssh-key",
    "capture": "run as root with tcpdump installed for packet evidence, or use --no-capture",
    "h2-sweep": "the HTTP/2 sweep is optional; run it again with --h2-sweep",
    "setup": "fix the cause above and run the probe again",
}

_REFERENCE_HINTS = {
    "no-h2": "the server did not offer h2 in ALPN (HTTP/2 is off on it or on its edge), so "
             "there is no HTTP/2 ledger; the git pushes were still measured",
}
"""Hints of native-probe errors whose cause the reference already names."""


def _hint(error: RunError, remove_commands: dict[str, str]) -> str:
    if error.stage == "cleanup":
        command = next((c for branch, c in remove_commands.items() if branch in error.message),
                       None)
        return f"delete it by hand: {command}" if command else ""
    if error.stage == "push" and error.kind:
        return failure_hint(error.kind, error.message)
    return _REFERENCE_HINTS.get(error.reference) or _STAGE_HINTS.get(error.stage, "")


def run_problems(manifest: RunManifest) -> tuple[obs.RunProblem, ...]:
    """The manifest's errors as the engine sees them, each with what to do about it."""
    remove_commands = {push.branch: push.cleanup_command for run in manifest.protocols
                       for push in run.pushes if push.cleanup_command}
    return tuple(
        obs.RunProblem(stage=e.stage, protocol=e.protocol, reference=e.reference, kind=e.kind,
                       message=e.message, hint=_hint(e, remove_commands), page=e.page)
        for e in manifest.errors
    ) + ((obs.RunProblem(**unfinished("manifest.json")),) if manifest.status == "running" else ())


def _burst(run_dir: Path, burst: Any, endpoint: str,
           progress: Progress) -> Noted[obs.BurstResult]:
    read: Noted[CaptureAnalysis | None] = Noted(value=None)
    if burst.capture:
        read = _analyze(run_dir / burst.capture, progress, burst.protocol)
    connections = read.value.connections if read.value else None
    return Noted(notes=read.notes, problems=read.problems,
                 value=burst_result(burst, endpoint, connections))


def _save(path: Path, text: str) -> str | None:
    """Write ``text`` to ``path`` without following a symlink planted there (the
    run directory may have been received from someone else); why it failed, or None."""
    try:
        replace_file(path, text.encode())
    except OSError as exc:
        return exc.strerror or str(exc)
    except GitnetdiagError as exc:
        cause = exc.__cause__
        return cause.strerror if isinstance(cause, OSError) and cause.strerror else exc.message
    return None


def diagnose_run(run_dir: Path, *, host: obs.HostEvidence | None = None,
                 progress: Progress = _quiet,
                 save_to: Path | None = None) -> tuple[Diagnosis, list[str]]:
    """Analyse a run directory and diagnose it; saves ``observations.json`` in ``save_to``
    (the run directory, for the probe that made it), nowhere when None: a directory the
    command did not create (a checkout, a ticket attachment) is only read.

    A directory the user may not write (another user's run) is diagnosed all
    the same; the unsaved file becomes a warning. A fetch run (``fetch.json``) is
    diagnosed alike, by :mod:`gitnetdiag.pipeline._clones`.
    """
    if (sampled := clone_run_diagnosis(run_dir)) is not None:
        return sampled, []
    observations, warnings = observations_from_run(run_dir, host=host, progress=progress)
    if save_to is not None:
        text = json.dumps(observations.to_dict(), indent=1) + "\n"
        why = _save(save_to / OBSERVATIONS_FILE, text)
        if why is not None:
            warnings.append(f"{OBSERVATIONS_FILE} not saved in {save_to}: {why} (the "
                            "diagnosis below is complete; copy the run directory to keep it)")
    return diagnose(observations), warnings


def diagnosis_from_saved(run_dir: Path, warn: Progress = _quiet) -> Diagnosis:
    """The diagnosis of a run already analysed (``observations.json``), without re-parsing.

    The manifest is read (and validated) first: a damaged manifest must not
    hide behind a saved diagnosis. Observations saved before the verdict knew
    what was requested get it from the manifest.
    """
    if (sampled := clone_run_diagnosis(run_dir)) is not None:
        return sampled
    manifest = load_run(run_dir)
    data = read_json_object(run_dir / OBSERVATIONS_FILE)
    if data is None:
        diagnosis, warnings = diagnose_run(run_dir)
        for warning in warnings:
            warn(warning)
        return diagnosis
    saved = obs.Observations.from_dict(data)
    if not saved.run.requested_protocols:
        saved = replace(saved, problems=saved.problems or run_problems(manifest),
                        run=replace(saved.run, requested_protocols=requested_protocols(manifest)))
    return diagnose(saved)


def compare_runs(run_dirs: Sequence[Path], warn: Progress = _quiet) -> Comparison:
    """Compare run directories, the first as the baseline (``gitnetdiag compare``).

    Each run's diagnosis is rebuilt the way ``report`` does it (from
    ``observations.json`` when present). A damaged run is named in the error.
    """
    if len(run_dirs) < 2:
        raise UsageError("compare needs at least two run directories",
                         hint="give the run before and the run after: gitnetdiag compare A B")
    diagnoses = []
    for run_dir in run_dirs:
        if not run_dir.is_dir():
            raise InputError(f"{run_dir} is not a directory", reference="no-manifest",
                             hint="give run directories written by 'gitnetdiag diagnose' "
                             "or 'probe'")
        diagnoses.append(diagnosis_from_saved(run_dir, warn))
    return compare(diagnoses, [str(run_dir) for run_dir in run_dirs])


def write_reports(diagnosis: Diagnosis, run_dir: Path,
                  warn: Callable[[str], None] = _quiet) -> dict[str, Path]:
    """Markdown, HTML and JSON reports into the run directory; the ones written.

    A report that cannot be written (read-only directory) is reported to
    ``warn`` and skipped: the diagnosis itself is still printed.
    """
    from gitnetdiag.report import RENDERERS

    written = {}
    for fmt, name in REPORT_FILES.items():
        path = run_dir / name
        why = _save(path, RENDERERS[fmt](diagnosis))
        if why is not None:
            warn(f"reports not saved in {run_dir}: {why} (hint: 'gitnetdiag report "
                 f"{run_dir} --format md --out FILE' writes one elsewhere)")
            break
        written[fmt] = path
    return written
