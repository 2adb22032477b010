"""One measured push of the throwaway branch, captured, and its clean-up.

The push runs with git's traces on; whatever stops it (success, a failure,
the timeout, Ctrl-C or SIGTERM), the branch is then removed by
:func:`gitnetdiag.probe.cleanup.remove_probe_ref` with signals deferred, and
a :class:`~gitnetdiag.rundir.PushRecord` says what happened, also for
an interrupted push (the caller saves it, then re-raises the interrupt).

A push only measures a rate when it sent the pack it planned: when the
server already had the objects, git sends next to nothing, and
``bytes / seconds`` would be a fiction. Such a push is ``no-data``.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol as TypingProtocol

from gitnetdiag.errors import GitnetdiagError, NetworkError
from gitnetdiag.outcomes import MEASURED_OUTCOMES, PushOutcome
from gitnetdiag.probe.budget import MonitoredPush, StopReason, run_monitored_push
from gitnetdiag.probe.capture import (
    HEADERS_SNAPLEN,
    Capture,
    create_private_file,
    inject_secrets,
)
from gitnetdiag.probe.cleanup import (
    CleanupResult,
    GitRunner,
    RefCleanup,
    interrupts_deferred,
    push_aftermath,
    remove_probe_ref,
)
from gitnetdiag.probe.cleanupnotice import CleanupNotice, CleanupStopped
from gitnetdiag.probe.gitpush import (
    FailureKind,
    GitInterrupted,
    GitRun,
    Protocol,
    Transport,
    error_for_failure,
    failure_line,
    parse_pack_progress,
    push_argv,
    run_git,
)
from gitnetdiag.probe.options import ProbeOptions, Reporter
from gitnetdiag.probe.repo import new_probe_id
from gitnetdiag.probe.trace2 import parse_curl_trace, parse_trace2_events, redact_curl_trace
from gitnetdiag.proc import received_signal
from gitnetdiag.redaction import redact_text
from gitnetdiag.rundir import CaptureResult, PushRecord, redact_url
from gitnetdiag.rundir.records import HttpRequestRecord, RunStage, Trace2Phases
from gitnetdiag.safefile import replace_file

FATAL_KINDS = frozenset(
    {
        FailureKind.REFUSED, FailureKind.UNREACHABLE, FailureKind.TLS,
        FailureKind.PLAIN_HTTP, FailureKind.AUTH, FailureKind.HOST_KEY, FailureKind.REJECTED,
    }
)
"""Failure kinds after which further pushes over the same protocol are pointless."""

NO_DATA_RATIO = 0.5
"""A push that wrote less than this share of the planned pack measured no rate."""


def now_iso() -> str:
    """Current UTC time, ISO 8601 with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class PushState(TypingProtocol):
    """The parts of a probe run a push reads and reports to (``runner._Run``)."""

    options: ProbeOptions
    run_dir: Path
    reporter: Reporter
    capture_enabled: bool
    failed: set[Protocol]

    def transport(self, protocol: Protocol) -> Transport: ...
    def error(self, stage: RunStage, protocol: Protocol | None, exc: GitnetdiagError,
              kind: FailureKind | None = None) -> None: ...
    def warn(self, message: str) -> None: ...


def sent_too_little(objects: int | None, written_bytes: int | None, pack_bytes: int) -> bool:
    """True when a successful push did not send the pack it planned (pure)."""
    if objects == 0:
        return True
    if written_bytes is None:
        return objects is None
    return written_bytes < NO_DATA_RATIO * pack_bytes


def push_once(
    state: PushState, protocol: Protocol, repeat: int, repo_path: Path, oid: str,
    pack_bytes: int, endpoint: tuple[str, int],
) -> tuple[PushRecord, bool]:
    """Push ``oid`` to a fresh throwaway branch, clean up; return the record and whether
    Ctrl-C or SIGTERM arrived (the caller saves the record, then stops the run).

    An interrupt ends the push early: the record then has outcome ``interrupted``."""
    options = state.options
    transport = state.transport(protocol)
    branch = f"gitnetdiag/probe-{new_probe_id()}"
    stem = f"{protocol.value}-{repeat}"
    run_dir = state.run_dir
    artifacts: dict[str, str] = {"trace2": f"{stem}.trace2.json", "stderr": f"{stem}.stderr.txt"}
    extra_env = {
        "GIT_TRACE2_EVENT": str((run_dir / artifacts["trace2"]).resolve()),
        "GIT_TRACE2_EVENT_NESTING": "10",
    }
    if protocol.is_http:
        artifacts["curl_trace"] = f"{stem}.curl.txt"
        extra_env["GIT_TRACE_CURL"] = str((run_dir / artifacts["curl_trace"]).resolve())
        extra_env["GIT_TRACE_CURL_NO_DATA"] = "1"
        if options.full:
            artifacts["keylog"] = f"{stem}.keylog"
            keylog = run_dir / artifacts["keylog"]
            create_private_file(keylog)
            extra_env["SSLKEYLOGFILE"] = str(keylog.resolve())
    label = f"push {protocol.value} #{repeat}"
    state.reporter.begin(label)
    started_at = now_iso()
    capture: Capture | None = None
    capture_result: CaptureResult | None = None
    git_run: GitRun | None = None
    watched: MonitoredPush | None = None
    interrupted = False
    try:
        try:
            if state.capture_enabled:
                host, port = endpoint
                artifacts["capture"] = f"{stem}.pcap"
                capture = Capture(
                    run_dir / artifacts["capture"], host=host, port=port,
                    snaplen=0 if options.full else HEADERS_SNAPLEN,
                )
                try:
                    capture.start()
                except GitnetdiagError as exc:
                    state.error("capture", protocol, exc)
                    artifacts.pop("capture")
                    capture = None
            artifacts["tcpinfo"] = f"{stem}.tcpinfo.jsonl"
            watched = run_monitored_push(
                push_argv(transport, oid, branch), env=transport.env(extra_env), cwd=repo_path,
                timeout_s=options.timeout_s, budget_s=options.budget_s,
                stall_timeout_s=options.stall_timeout_s, port=endpoint[1],
                stderr_path=run_dir / artifacts["stderr"],
                tcpinfo_path=run_dir / artifacts["tcpinfo"],
                on_progress=lambda moved, rate: state.reporter.moved(label, moved, rate),
                on_phase=lambda text: _phase(state.reporter, label, text),
            )
            git_run = watched.run
        finally:
            if capture is not None:
                with interrupts_deferred() as held:
                    result = capture.stop()
                interrupted = interrupted or held.signalled
                capture_result = replace(result, path=artifacts["capture"])
                if result.packets_dropped:
                    state.warn(
                        f"{stem}: tcpdump lost {result.packets_dropped} packets "
                        "(the capture is incomplete; the machine is busy)"
                    )
    except GitInterrupted as exc:
        git_run, interrupted = exc.run, True
    except KeyboardInterrupt:
        interrupted = True
    artifacts["cleanup_stderr"] = f"{stem}.cleanup.stderr.txt"
    aftermath = push_aftermath(git_run)
    notice = CleanupNotice(state.reporter, transport, branch, oid, aftermath,
                           options.cleanup_wait_s)
    if interrupted:
        notice.interrupted(ctrl_c=received_signal() in (None, signal.SIGINT))
    with interrupts_deferred(notice.on_signal) as deferred:
        try:
            with notice.waiting():
                cleanup = remove_probe_ref(
                    transport, branch, oid, aftermath,
                    runner=_logged_runner(run_dir / artifacts["cleanup_stderr"],
                                          options.cleanup_git_timeout_s),
                    cwd=repo_path, wait_s=options.cleanup_wait_s,
                )
        except CleanupStopped:
            cleanup = notice.stopped()
        record = _record(state, protocol, repeat, branch, started_at, transport, git_run,
                         interrupted, pack_bytes, capture_result, artifacts, cleanup)
        record = _with_watch(record, watched, interrupted)
        state.reporter.done(label, _detail(record, options.timeout_s),
                            ok=record.outcome in MEASURED_OUTCOMES)
    return record, interrupted or deferred.signalled


def _logged_runner(cleanup_log: Path, cap_s: float | None = None) -> GitRunner:
    """run_git, each run's outcome and stderr appended to the clean-up's log; each run at
    most ``cap_s`` (a path known to swallow full-size segments cannot carry it longer)."""
    def logged_git(argv: Sequence[str], *, env: Mapping[str, str], cwd: Path,
                   timeout_s: float) -> GitRun:
        run = run_git(argv, env=env, cwd=cwd,
                      timeout_s=min(timeout_s, cap_s or timeout_s))
        step = "ls-remote" if "ls-remote" in argv else "delete"
        outcome = "timed out" if run.timed_out else f"exit {run.exit_code}"
        with cleanup_log.open("a") as log:
            log.write(f"# {step}: {outcome} after {run.wall_s:.2f} s\n{run.stderr}")
        return run

    return logged_git


def exact_wall_s(git_run: GitRun | None, phases: Trace2Phases | None) -> float:
    """The push's duration: git's own (trace2's ``t_abs`` at its exit) when git ended by
    itself, else the wall time from start to exit or kill."""
    if git_run is None:
        return 0.0
    if (git_run.exit_code is not None and phases is not None and phases.total_s is not None
            and 0 < phases.total_s <= git_run.wall_s):
        return phases.total_s
    return git_run.wall_s


def _phase(reporter: Reporter, label: str, text: str) -> None:
    # Reporters written before phases (tests, library users) lack it.
    tell = getattr(reporter, "phase", None)
    if tell is not None:
        tell(label, text)


def _record(
    state: PushState, protocol: Protocol, repeat: int, branch: str, started_at: str,
    transport: Transport, git_run: GitRun | None, interrupted: bool, pack_bytes: int,
    capture_result: CaptureResult | None, artifacts: dict[str, str], cleanup: CleanupResult,
) -> PushRecord:
    options = state.options
    run_dir = state.run_dir
    curl_path = run_dir / artifacts.get("curl_trace", "-")
    http_version = alpn = curl_last_info = None
    post_s = None
    requests: tuple[HttpRequestRecord, ...] = ()
    if protocol.is_http and curl_path.is_file():
        text = redact_curl_trace(curl_path.read_text(errors="replace"))
        replace_file(curl_path, text.encode())
        curl = parse_curl_trace(text)
        http_version, alpn, curl_last_info = curl.http_version, curl.alpn, curl.last_info
        requests = tuple(HttpRequestRecord(method=r.method, path=r.path, status=r.status,
                                           server=r.server) for r in curl.requests)
        posts = [r for r in curl.requests if r.method == "POST" and r.response_s is not None]
        if posts and posts[-1].response_s is not None:
            post_s = posts[-1].response_s - posts[-1].sent_s
    trace2_path = run_dir / artifacts["trace2"]
    phases = None
    if trace2_path.is_file():
        with trace2_path.open(errors="replace") as handle:
            phases = parse_trace2_events(handle)
    if options.full and capture_result is not None and "keylog" in artifacts:
        keylog = run_dir / artifacts["keylog"]
        if keylog.stat().st_size > 0:
            decrypted = f"{artifacts['stderr'].removesuffix('.stderr.txt')}.pcapng"
            try:
                create_private_file(run_dir / decrypted)
                inject_secrets(run_dir / artifacts["capture"], keylog, run_dir / decrypted)
                artifacts["capture_decrypted"] = decrypted
            except GitnetdiagError as exc:
                state.error("capture", protocol, exc)

    url = redact_url(transport.url)
    stderr = git_run.stderr if git_run is not None else ""
    progress = parse_pack_progress(stderr)
    ok = git_run is not None and git_run.ok and not interrupted
    kind = None if git_run is None or interrupted else git_run.failure_kind()
    line = "" if ok else redact_text(failure_line(stderr))
    outcome: PushOutcome
    if interrupted:
        outcome = "interrupted"
    elif ok and sent_too_little(progress.objects, progress.written_bytes, pack_bytes):
        outcome = "no-data"
        written = progress.written_bytes or 0
        state.error("push", protocol, NetworkError(
            f"{url}: the push sent {progress.objects or 0} objects, {written} bytes of the "
            f"planned {pack_bytes}: the server already had them, no rate measured",
            hint="push content the server cannot have (gitnetdiag salts --repo content; "
                 "this one was not)",
            reference="push-sent-no-data",
        ))
    elif ok:
        outcome = "ok"
    else:
        outcome = "hung" if git_run is not None and git_run.timed_out else "failed"
    if kind is not None and kind is not FailureKind.HUNG:
        state.error("push", protocol, error_for_failure(kind, url, line), kind=kind)
        if kind in FATAL_KINDS:
            state.failed.add(protocol)
    if cleanup.status is RefCleanup.LEFTOVER:
        state.error("cleanup", protocol, NetworkError(
            f"{branch} is still on {url}: {cleanup.detail}",
            hint=f"delete it by hand: {cleanup.remove_command}", reference="probe-ref-leftover",
        ))
        state.reporter.warn(f"{branch} is still on {url}; remove it with: "
                            f"{cleanup.remove_command}")
    elif cleanup.status is RefCleanup.UNCONFIRMED:
        state.warn(f"{branch} on {url} unconfirmed: {cleanup.detail}; check with: "
                   f"{cleanup.check_command}; if it is there, remove it with: "
                   f"{cleanup.remove_command}")
    wall_s = exact_wall_s(git_run, phases)
    rate = pack_bytes / wall_s if outcome == "ok" and wall_s > 0 else None
    return PushRecord(
        protocol=protocol.value, repeat=repeat, branch=branch, started_at=started_at,
        outcome=outcome, failure_kind=kind, last_line=line,
        wall_s=wall_s, pack_bytes=pack_bytes, rate_bytes_per_s=rate,
        http_version=http_version, alpn=alpn, post_s=post_s, curl_last_info=curl_last_info,
        phases=phases, capture=capture_result,
        artifacts={k: v for k, v in artifacts.items() if (run_dir / v).exists()},
        cleanup=cleanup.status, cleanup_detail=cleanup.detail,
        cleanup_s=cleanup.waited_s, cleanup_command=cleanup.remove_command,
        cleanup_check_command=cleanup.check_command, pack_objects=progress.objects,
        pack_written_bytes=progress.written_bytes,
        http_requests=requests,
    )


def _with_watch(record: PushRecord, watched: MonitoredPush | None,
                interrupted: bool) -> PushRecord:
    """What the monitor saw: a push it stopped at a stable rate or its budget is
    ``bounded`` (its rate from the bytes moved), one it stopped for no progress ``stalled``."""
    if watched is None:
        return record
    seen = replace(record, moved_bytes=watched.moved_bytes, measured_s=watched.measured_s,
                   last_progress=watched.last_progress, stopped=watched.stopped)
    if interrupted or watched.stopped is None:
        return seen
    if watched.stopped in (StopReason.STALL, StopReason.SERVER_STALL):
        return replace(seen, outcome="stalled", failure_kind=FailureKind.HUNG)
    return replace(seen, outcome="bounded", failure_kind=None, last_line="",
                   rate_bytes_per_s=watched.rate_bytes_per_s)


def _detail(record: PushRecord, timeout_s: float) -> str:
    if record.outcome == "bounded":
        detail = (f"bounded ({record.stopped}) after {record.wall_s:.1f} s: "
                  f"{(record.moved_bytes or 0) / 2**20:.1f} MiB moved, "
                  f"{(record.rate_bytes_per_s or 0) / 2**20:.2f} MiB/s")
    elif record.outcome == "stalled" and record.stopped == StopReason.SERVER_STALL:
        detail = (f"stalled at the server: the whole pack sent "
                  f"({(record.moved_bytes or 0) / 2**20:.1f} MiB), then no answer for the "
                  "stall timeout")
    elif record.outcome == "stalled":
        detail = (f"stalled: no progress for the stall timeout after "
                  f"{(record.moved_bytes or 0) / 2**20:.1f} MiB")
    elif record.outcome == "ok":
        detail = f"{record.wall_s:.2f} s, {(record.rate_bytes_per_s or 0) / 2**20:.2f} MiB/s"
        if record.http_version:
            detail += f", {record.http_version}"
    elif record.outcome == "hung":
        detail = f"hung: no progress within {timeout_s:.0f} s"
    elif record.outcome == "no-data":
        detail = f"no data: {record.pack_objects or 0} objects sent, no rate"
    elif record.outcome == "interrupted":
        detail = "interrupted"
    else:
        detail = f"{record.failure_kind or 'failed'}: {record.last_line}"
    return f"{detail}; branch {record.cleanup}"
