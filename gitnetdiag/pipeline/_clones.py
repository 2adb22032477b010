"""A fetch run directory (``fetch.json``: its clones) -> one Diagnosis.

Reads the run's record and each transfer's artifacts, derives the phases
(:mod:`gitnetdiag.analysis.trace2`), the receiving end's TCP evidence and the sending
end's socket (:mod:`gitnetdiag.analysis.tcpinfo`), the capture seen at the receiver and
the native ledgers, and diagnoses them with the one engine and verdict. The entry is
:func:`gitnetdiag.pipeline._run.diagnose_run`, whatever the direction. Offline:
``fetch.json`` and its files reproduce the same answer anywhere.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitnetdiag.analysis.h2ledger import git_h2_window
from gitnetdiag.analysis.nativeledger import h2_receiver_pacing, ssh_receiver_pacing
from gitnetdiag.analysis.tcpinfo import (
    SERVER,
    ReceiverTcpSummary,
    summarize_receiver,
    summarize_sender,
)
from gitnetdiag.analysis.trace2 import ReceiverPhases, receiver_phases
from gitnetdiag.analysis.window import receiver_window_series
from gitnetdiag.diagnosis.assembly import download_observations
from gitnetdiag.diagnosis.culprits.libcurlwin import window_for
from gitnetdiag.diagnosis.engine import diagnose
from gitnetdiag.diagnosis.failuredesc import describe_failures
from gitnetdiag.diagnosis.headline import verdict_headline
from gitnetdiag.diagnosis.model import Diagnosis, FetchDetails
from gitnetdiag.diagnosis.observations import (
    PROTOCOL_ORDER,
    BurstResult,
    CaptureMetrics,
    IdlePathProbe,
    RunProblem,
)
from gitnetdiag.diagnosis.transfers import (
    HttpExchange,
    PackWait,
    TransferObservation,
)
from gitnetdiag.diagnosis.verdict import judge
from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.inputfile import MAX_JSON_BYTES, read_input, unusable_reason
from gitnetdiag.pipeline._connections import burst_result
from gitnetdiag.pipeline._cpuquota import cpu_quota
from gitnetdiag.pipeline._host import load_host_report
from gitnetdiag.pipeline._metrics import capture_metrics
from gitnetdiag.pipeline._native import idle_path
from gitnetdiag.pipeline._paths import dead_paths
from gitnetdiag.pipeline._remote import first_hops_of, remote_of
from gitnetdiag.rundir import HOST_REPORT_FILE, MANIFEST_NAME, BurstRecord, bad_run_dir
from gitnetdiag.rundir.cgroupcpu import CpuStatSample
from gitnetdiag.rundir.failures import failure_hint, unfinished
from gitnetdiag.rundir.files import FETCH_FILE
from gitnetdiag.rundir.manifest import FetchManifest, check_numbers, load_fetch_manifest
from gitnetdiag.rundir.records import CloneRecord, TimelinePoint, reached_through
from gitnetdiag.rundir.trace2 import json_objects
from gitnetdiag.serial import Malformed, from_jsonable

if TYPE_CHECKING:
    from gitnetdiag.analysis.capture_analysis import CaptureAnalysis


def artifact_text(run_dir: Path, name: str | None) -> str | None:
    """A transfer's artifact as text: a regular file of at most :data:`MAX_JSON_BYTES`;
    anything else (missing, a directory, a FIFO, a symlink, too large, unreadable) is no
    artifact (None), and the report says less."""
    if name is None or not (run_dir / name).is_file():
        return None
    try:
        return read_input(run_dir / name, max_bytes=MAX_JSON_BYTES).decode(errors="replace")
    except (OSError, GitnetdiagError):
        return None


def _read(run_dir: Path, record: CloneRecord, kind: str) -> str:
    """A clone's artifact as text, empty when there is none (:func:`artifact_text`)."""
    return artifact_text(run_dir, record.artifacts.get(kind)) or ""


def _analysis(run_dir: Path, name: str | None) -> CaptureAnalysis | None:
    """A clone's or a burst's capture analysed; None without one (not root) or unreadable."""
    if name is None or not (run_dir / name).is_file():
        return None
    from gitnetdiag.analysis.capture_analysis import analyze_capture

    try:
        return analyze_capture(run_dir / name, own_capture=True)
    except GitnetdiagError:
        return None


def _samples(text: str) -> list[dict[str, Any]]:
    """The TCP_INFO lines of a clone that have the shape the analysis reads."""
    rows = json_objects(text.splitlines())
    return [row for row in rows if isinstance(row.get("counters"), dict)
            and isinstance(row.get("t_s"), int | float)]


def _captured(run_dir: Path, record: CloneRecord, tcp: ReceiverTcpSummary | None
              ) -> CaptureMetrics | None:
    """The clone's capture as the sender's view (the connection the server sent most on;
    a clone refused at its SYN has only that), None without one (not root) or empty."""
    analysis = _analysis(run_dir, record.artifacts.get("capture"))
    if analysis is None or not analysis.connections:
        return None
    download = max(analysis.connections, key=lambda c: c.b_to_a.payload_bytes)
    return capture_metrics(download, f"fetch {record.protocol} #{record.repeat}", receiver="a",
                           tcp=tcp)


def observe_transfer(run_dir: Path, record: CloneRecord, rtt_s: float | None,
                  rmem: tuple[int, ...] | None = None,
                  libcurl: str | None = None) -> TransferObservation:
    """One clone's observation from its record and artifacts."""
    timeline = _timeline(run_dir, record)
    phases: ReceiverPhases = receiver_phases(
        trace2=_read(run_dir, record, "trace2").splitlines(),
        stderr=_read(run_dir, record, "stderr"), timeline=timeline,
        packet_trace=_read(run_dir, record, "packet_trace"),
        started_epoch_s=record.started_epoch_s)
    tcp = summarize_receiver(_samples(_read(run_dir, record, "tcpinfo")))
    return TransferObservation(
        protocol=record.protocol, repeat=record.repeat, outcome=record.outcome,
        moved_bytes=record.moved_bytes, measured_s=record.measured_s,
        rate_bytes_per_s=record.rate_bytes_per_s, wall_s=record.wall_s, phases=phases,
        tcp=tcp, path_rtt_s=rtt_s,
        client_rmem_max_bytes=rmem[-1] if rmem else None, stopped=record.stopped,
        libcurl=libcurl, failure_kind=record.failure_kind, last_line=record.last_line,
        capture=_captured(run_dir, record, tcp),
        sender=summarize_sender(_samples(_read(run_dir, record, "server_tcpinfo")), SERVER),
        http_requests=tuple(HttpExchange(
            method=r.method, path=r.path, status=r.status, server=r.server, push=record.repeat,
            content_length_bytes=r.content_length_bytes, streamed=r.streamed,
            silence_before_close_s=r.silence_before_close_s, ending=r.ending,
            silence_before_status_s=r.silence_before_status_s) for r in record.http_requests),
        git_said=git_error_lines(_read(run_dir, record, "stderr")) if record.failure_kind else (),
        pack_wait=_pack_wait(record),
        cpu_quota=cpu_quota(record.cgroup_cpu, _cpu_samples(run_dir, record),
                            until_s=_checkout_start_s(record, phases),
                            server_wait=_server_wait_span(record, phases)),
        **_h2_windows(run_dir, record, libcurl),
    )


def _checkout_start_s(record: CloneRecord, phases: ReceiverPhases) -> float | None:
    """When the clone's checkout began on the probe's clock (the clone's end less its
    checkout, the last phase); None without a checkout (the whole clone counts)."""
    if phases.checkout_s is None:
        return None
    return max(0.0, record.wall_s - phases.checkout_s)


def _server_wait_span(record: CloneRecord, phases: ReceiverPhases
                      ) -> tuple[float, float] | None:
    """The fetch request sent to the first pack byte on the probe's clock (git's trace2
    times placed by its end, as the checkout's start is); None when either is unknown."""
    sent, first, total = phases.request_sent_s, phases.first_pack_byte_s, phases.total_s
    if sent is None or first is None or total is None:
        return None
    offset = record.wall_s - total
    return sent + offset, first + offset


def _cpu_samples(run_dir: Path, record: CloneRecord) -> list[CpuStatSample]:
    """The cgroup counters read while the clone ran; a line that is not such a reading is
    skipped (the before and after readings in the record are what the price needs)."""
    samples = []
    for row in json_objects(_read(run_dir, record, "cgroup_cpu").splitlines()):
        try:
            samples.append(from_jsonable(CpuStatSample, row, where="cgroup_cpu",
                                         unknown="ignore"))
        except Malformed:
            continue
    return samples


def _pack_wait(record: CloneRecord) -> PackWait | None:
    """A clone stopped in the server's pack phase: its wait, as the probe measured it."""
    w = record.pack_wait
    if w is None:
        return None
    return PackWait(wait_s=w.wait_s, server_words=w.server_words, words_only=w.words_only,
                    bound_s=w.bound_s)


GIT_ERROR_PREFIXES = ("error:", "fatal:", "fetch-pack:")
"""How git starts the lines that say why it failed (``remote:`` lines are the server's;
fetch-pack prefixes a few of its own, ``unexpected disconnect while reading sideband
packet``)."""


def git_error_lines(stderr: str) -> tuple[str, ...]:
    """git's own error lines in a clone's stderr, in order, each once (progress carriage
    returns resolved)."""
    lines = (line.strip() for line in stderr.replace("\r", "\n").splitlines())
    return tuple(dict.fromkeys(line for line in lines if line.startswith(GIT_ERROR_PREFIXES)))


def _timeline(run_dir: Path, record: CloneRecord) -> list[TimelinePoint]:
    """A clone's progress timeline; a line that is not JSON (cut by a crash) is skipped, one
    with a field missing, of the wrong type or with a number that is negative, NaN or
    absurdly large is a ``bad-run-dir`` naming the file and the line."""
    name = record.artifacts.get("timeline", "timeline")
    points = []
    lines = _read(run_dir, record, "timeline").splitlines()
    for number, row in enumerate(json_objects(lines), start=1):
        where = f"{name} line {number}"
        try:
            point = from_jsonable(TimelinePoint, row, where=where, unknown="ignore")
            check_numbers(point, where)
        except Malformed as exc:
            raise bad_run_dir(f"{run_dir}: {exc}") from exc
        points.append(point)
    return points


def _h2_windows(run_dir: Path, record: CloneRecord, libcurl: str | None) -> dict[str, Any]:
    """An HTTP/2 clone's windows: git's own (decrypted frames, ``--full``) beside the one its
    libcurl release is documented to advertise."""
    if record.protocol != "h2":
        return {}
    documented = window_for(libcurl)
    frames = _read(run_dir, record, "http2_frames")
    return {"git_h2_window": git_h2_window(frames) if frames else None,
            "libcurl_window_bytes": documented.steady_window or documented.initial_window
            if documented else None}


def _burst(run_dir: Path, burst: BurstRecord, endpoint: str) -> BurstResult:
    """A fetch's burst as the push's: its failures, connect times and, from its capture when
    there is one (root), the handshakes' SYN and SYN-ACK retransmissions and resets (not
    counted when it is unreadable)."""
    analysis = _analysis(run_dir, burst.capture)
    return burst_result(burst, endpoint, tuple(analysis.connections) if analysis else None)


def clone_run_diagnosis(run_dir: Path) -> Diagnosis | None:
    """The diagnosis of a fetch run directory (``fetch.json`` and no ``manifest.json``),
    derived again from its files (it keeps no ``observations.json``); None for another."""
    if (run_dir / MANIFEST_NAME).exists() or not (run_dir / FETCH_FILE).exists():
        return None
    diagnosis = diagnose_clones(run_dir)
    if diagnosis is None:
        raise bad_run_dir(f"{run_dir}: no {FETCH_FILE}")
    return diagnosis


def diagnose_clones(run_dir: Path, manifest: FetchManifest | None = None
                     ) -> Diagnosis | None:
    """The diagnosis of the clones in ``run_dir`` (``fetch.json``); None when
    it has none. ``manifest``: the run's record as the probe holds it, when ``fetch.json``
    could not be brought up to date (a full filesystem); else it is read from ``run_dir``."""
    manifest = manifest or load_fetch_manifest(run_dir)
    if manifest is None:
        return None
    rtts = {path.endpoint: path.connect_rtt_min_s for path in manifest.paths}
    # A proxied protocol's connections end at its first hop: its leg's RTT, when checked.
    leg = {run.protocol: reached_through(run.protocol, run.endpoint, manifest.paths)
           for run in manifest.protocols}
    libcurl = manifest.environment.libcurl if manifest.environment else None
    observations = tuple(observe_transfer(run_dir, record, rtts.get(leg[run.protocol]),
                                          manifest.client_tcp_rmem, libcurl)
                         for run in manifest.protocols for record in run.fetches)
    windows = tuple(receiver_window_series(_samples(_read(run_dir, record, "tcpinfo")))
                    for run in manifest.protocols for record in run.fetches)
    # The server's evidence, when it was collected: its config lint, and its counters, kernel
    # log and listeners over the run (read with the bursts by listen-backlog-overflow).
    host_file = run_dir / HOST_REPORT_FILE
    host = load_host_report(host_file) if host_file.is_file() else None
    bursts = tuple(_burst(run_dir, run.burst, run.endpoint)
                   for run in manifest.protocols if run.burst is not None)
    obs = download_observations(
        observations, bursts=bursts, host=host, requested=_requested(manifest),
        problems=fetch_problems(manifest) + capture_problems(run_dir, manifest),
        started=manifest.started_at,
        target_url=", ".join(sorted({run.url for run in manifest.protocols})),
        dead_paths=dead_paths(((r.protocol, r.endpoint) for r in manifest.protocols),
                              manifest.paths),
        idle_paths=_idle_paths(run_dir, manifest))
    obs = replace(obs, run=replace(obs.run, **remote_of(manifest.options),
                                   **first_hops_of(manifest)))
    ranked = diagnose(obs)
    # The failures' hints speak of the transfer's direction (a clone's words, not a push's).
    judged = judge(obs, ranked.findings, hint_of=lambda kind, message: failure_hint(
        kind or "other", message, transfer="download"))
    return replace(
        ranked, verdict=judged.verdict, headline=verdict_headline(judged, ranked.findings, obs),
        measurement_failures=describe_failures(obs, judged.failures),
        direction=manifest.direction,
        fetch_details=FetchDetails(
            record=manifest, windows=windows,
            h2_pacing=tuple(h2_receiver_pacing(r) for r in manifest.h2_downloads),
            ssh_pacing=tuple(ssh_receiver_pacing(r) for r in manifest.ssh_downloads)))


def _idle_paths(run_dir: Path, manifest: FetchManifest) -> dict[str, IdlePathProbe]:
    """What the idle probe saw of each protocol's endpoint, where it ran (after a clone
    that asked for its pack and heard nothing: ``native-idle-<n>.json``)."""
    probes = {run.protocol: idle_path(run_dir, run.protocol).value
              for run in manifest.protocols}
    return {name: probe for name, probe in probes.items() if probe is not None}


_STAGE_HINTS = {
    "seed": "--fetch-seed needs write access; without it a fetch measures what the URL serves",
    "capture": "run as root with tcpdump installed for packet evidence, or use --no-capture",
    "setup": "fix the cause above and run the probe again",
}
"""What to do about a fetch run's error of each step (the push's are in ``_run``)."""


def fetch_problems(manifest: FetchManifest) -> tuple[RunProblem, ...]:
    """fetch.json's errors as the verdict reads them, each with what to do about it, and
    a run that never finished (``status`` still ``running``), as for pushes."""
    seed = manifest.seed
    remove = (seed.remove_command or seed.check_command or "") if seed else ""
    problems = [RunProblem(stage=e.stage, protocol=e.protocol, reference=e.reference,
                           kind=e.kind, message=e.message, page=e.page,
                           hint=f"delete it by hand: {remove}" if e.stage == "cleanup" and remove
                           else _STAGE_HINTS.get(e.stage, ""))
                for e in manifest.errors]
    if manifest.status == "running":
        problems.append(RunProblem(**unfinished(FETCH_FILE)))
    return tuple(problems)


def capture_problems(run_dir: Path, manifest: FetchManifest) -> tuple[RunProblem, ...]:
    """A clone's capture the run lists but that is not a regular file (lost, a directory, a
    FIFO): its packet evidence is missing, a problem of the run as a push's capture is."""
    problems = []
    for run in manifest.protocols:
        for record in run.fetches:
            name = record.artifacts.get("capture")
            why = unusable_reason(run_dir / name) if name else None
            if name and why:  # in the words the push's capture reader has for it
                why = "is a directory, not a regular file" if why == "is a directory" else why
                problems.append(RunProblem(
                    stage="capture", protocol=record.protocol, reference="not-a-regular-file",
                    message=f"{name}: {run_dir / name} {why}",
                    hint="the packet evidence of this clone is missing; keep the run directory "
                    "whole or run the probe again"))
    return tuple(problems)


def _requested(manifest: FetchManifest) -> tuple[str, ...]:
    """The protocols the run was asked to fetch over: its options' (a run that stopped
    before a protocol's first clone still asked for it), else those it has records of."""
    asked = manifest.options.get("protocols")
    names = tuple(name for name in asked if name in PROTOCOL_ORDER) \
        if isinstance(asked, list) and all(isinstance(name, str) for name in asked) else ()
    return names or tuple(run.protocol for run in manifest.protocols)
