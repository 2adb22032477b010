"""The native probes of a push run: the HTTP/2 and SSH flow-control ledgers (both at once),
the body probe after an HTTP push failed at a body limit, and the ``--h2-sweep`` of client
SETTINGS variants. Each writes its raw events into the run directory and records its errors
and warnings in the run's state (:class:`NativeState`); the runner calls
them in its steps."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any
from typing import Protocol as TypingProtocol

from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.hops import native_ssh_note
from gitnetdiag.probe.budget import native_pack_bytes
from gitnetdiag.probe.nativecleanup import GitBranchCleanup
from gitnetdiag.probe.options import NativeSummary
from gitnetdiag.probe.pathinfo import path_rtt
from gitnetdiag.probe.pushonce import PushState
from gitnetdiag.probe.repo import new_probe_id, pack_for_commit
from gitnetdiag.probe.tcpinfo import TcpInfoSample, append_samples
from gitnetdiag.rundir import NATIVE_FILES, PathMeasurement, ProtocolRun, redact_url
from gitnetdiag.rundir.files import NATIVE_BODY_FILE, sweep_variant_file
from gitnetdiag.rundir.manifest import write_json_once
from gitnetdiag.rundir.native import ReportStatus
from gitnetdiag.vocabulary import TransportKind


class NativeState(PushState, TypingProtocol):
    """The parts of a probe run the native probes read and report to (``runner._Run``)."""

    protocols: dict[TransportKind, ProtocolRun]
    paths: list[PathMeasurement]
    pack: bytes | None
    native_summary: NativeSummary

    def save(self) -> object: ...


def native_ledgers(state: NativeState, repo_path: Path, oid: str) -> None:
    """The native HTTP/2 and SSH pushes: flow-control ledgers with every window update.

    Both run at once: the HTTP/2 ledger is bound by its window (one window per round trip,
    about 1.3 MB/s at 64 KiB and 50 ms), far below what the path carries beside it, and
    neither ledger's evidence (SETTINGS, credit, window adjusts) depends on the rate the
    other leaves. That saves the shorter probe's time (about 2 s of the demo)."""
    options = state.options
    wanted = [p for p in (TransportKind.H2, TransportKind.SSH)
              if p in options.protocols and p not in state.failed]
    if not wanted:
        return
    pack = state.pack if state.pack is not None else pack_for_commit(repo_path, oid)
    side: list[BaseException | bool] = []
    stop = threading.Event()  # the worker's HTTP/2 push gets no signal: told by this

    def beside() -> None:
        try:
            side.append(native_one(state, wanted[0], pack, repo_path, oid, stop))
        except BaseException as exc:  # re-raised in the main thread below
            side.append(exc)

    worker = threading.Thread(target=beside, name="gitnetdiag-native", daemon=True)
    if len(wanted) > 1:
        worker.start()
    signalled = False
    try:
        signalled = native_one(state, wanted[-1], pack, repo_path, oid, stop)
    except BaseException:
        stop.set()  # Ctrl-C or SIGTERM: the worker stops within a second and cleans up
        raise
    finally:
        if worker.is_alive() or side:
            worker.join()
    if side and isinstance(side[0], BaseException):
        raise side[0]
    if signalled or (side and side[0] is True):
        raise KeyboardInterrupt


def native_one(state: NativeState, protocol: TransportKind, pack: bytes, repo_path: Path,
                oid: str, stop: threading.Event | None = None) -> bool:
    """One native probe, its ledger written; whether Ctrl-C or SIGTERM arrived in its
    clean-up (the caller stops the run then)."""
    from gitnetdiag.probe.h2native import H2ClientSide, h2_push_probe
    from gitnetdiag.probe.sshnative import ssh_push_probe

    options = state.options
    label = f"native {protocol.value} ledger"
    url = options.urls[protocol]
    state.reporter.begin(label)
    rates = [p.rate_bytes_per_s for p in state.protocols[protocol].pushes
             if p.rate_bytes_per_s]
    rtt = path_rtt(state.paths, url)
    sent = pack[:native_pack_bytes(len(pack), rates, options.budget_s, rtt)]
    samples: list[TcpInfoSample] = []
    cleanup = GitBranchCleanup(state.transport(protocol), repo_path, options.cleanup_wait_s,
                               until=options.cleanup_until)
    try:
        if protocol is TransportKind.H2:
            push: Any = h2_push_probe(url, ca_file=options.ca_file, pack=sent,
                                      new_oid=oid, probe_id=new_probe_id(),
                                      timeout_s=options.timeout_s, cleanup=cleanup,
                                      verify=False if options.insecure else None,
                                      client_side=H2ClientSide(tcpinfo_sink=samples, stop=stop))
            for warning in push.warnings:
                state.warn(warning)
        else:
            hop = state.protocols[protocol].first_hop
            if note := native_ssh_note(hop, "native SSH probe"):
                state.warn(note)
            push = ssh_push_probe(url, key_file=options.ssh_key,
                                  known_hosts=options.ssh_known_hosts, pack=sent,
                                  new_oid=oid, probe_id=new_probe_id(),
                                  timeout_s=options.timeout_s, cleanup=cleanup,
                                  tcpinfo_sink=samples, first_hop=hop)
        detail = state.native_summary.push(push.events)
    except GitnetdiagError as exc:
        if cleanup.result is not None:  # no ledger file: the error tells the branch's end
            exc.message += f" (its branch: {cleanup.result.status.value})"
        state.error("native", protocol, exc)
        state.reporter.done(label, exc.message, ok=False)
        return cleanup.signalled
    finally:
        _cleanup_problem(state, protocol, cleanup)
    if len(sent) < len(pack):
        detail += f", bounded to {len(sent) / 2**20:.1f} MiB of the pack"
    write_json_once(state.run_dir / NATIVE_FILES[protocol.value],
                    replace(push.events, **cleanup.ledger_fields()))
    append_samples(state.run_dir / NATIVE_FILES[protocol.value].replace(
        ".json", ".tcpinfo.jsonl"), samples)
    state.reporter.done(label, detail, ok=True)
    return cleanup.signalled


def _cleanup_problem(state: NativeState, protocol: TransportKind,
                            cleanup: GitBranchCleanup) -> None:
    error, warning = cleanup.problem(redact_url(state.options.urls[protocol]))
    if error is not None:
        state.error("cleanup", protocol, error)
    if warning is not None:
        state.warn(warning)


def body_step(state: NativeState) -> None:
    """The native body probe, after an HTTP push failed the way a body limit or a refused
    streamed body makes it fail (:func:`~gitnetdiag.probe.bodyprobe.body_probe_trigger`)."""
    from gitnetdiag.probe.bodyprobe import body_probe, body_probe_trigger, progress_line

    http = [p for p in (TransportKind.H1, TransportKind.H2) if p in state.protocols]
    trigger = body_probe_trigger([state.protocols[p] for p in http])
    if trigger is None:
        return
    options = state.options
    url = options.urls[http[0]]
    state.reporter.begin("native body probe")
    record = body_probe(url, protocols=[p.value for p in http if options.urls[p] == url],
                        upper_bytes=len(state.pack or b""), trigger=trigger,
                        ca_file=options.ca_file, verify=False if options.insecure else None)
    write_json_once(state.run_dir / NATIVE_BODY_FILE, record)
    state.reporter.done("native body probe", progress_line(record), ok=not record.notes)
    state.save()


def sweep_step(state: NativeState, repo_path: Path, oid: str) -> None:
    """The native HTTP/2 upload once per client SETTINGS variant."""
    from gitnetdiag.probe.h2native import h2_sweep

    options = state.options
    if TransportKind.H2 not in options.urls:
        state.warn("--h2-sweep skipped: it needs an HTTPS URL (--http)")
        return
    label = "h2 sweep of client settings"
    state.reporter.begin(label)
    cleanup = GitBranchCleanup(state.transport(TransportKind.H2), repo_path, options.cleanup_wait_s,
                               until=options.cleanup_until)
    try:
        records = h2_sweep(options.urls[TransportKind.H2], ca_file=options.ca_file,
                           pack=pack_for_commit(repo_path, oid), new_oid=oid,
                           probe_id_factory=new_probe_id, timeout_s=options.timeout_s,
                           verify=False if options.insecure else None, cleanup=cleanup)
    except GitnetdiagError as exc:
        state.error("h2-sweep", TransportKind.H2, exc)
        state.reporter.done(label, exc.message, ok=False)
        return
    finally:
        _cleanup_problem(state, TransportKind.H2, cleanup)
    # Raw events only: the rows (native-h2-sweep.json) are derived by the pure side.
    for n, record in enumerate(records, start=1):
        write_json_once(state.run_dir / sweep_variant_file(n), record)
    state.reporter.done(label, state.native_summary.sweep(records),
                        ok=all(ReportStatus.from_dict(r.report).ok_for(r.ref) for r in records))
    if cleanup.signalled:
        raise KeyboardInterrupt
