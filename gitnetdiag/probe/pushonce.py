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
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol as TypingProtocol

from gitnetdiag.errors import GitnetdiagError, NetworkError
from gitnetdiag.outcomes import TransferOutcome
from gitnetdiag.probe.budget import MonitoredPush, PushLimits, StopReason, run_monitored_push
from gitnetdiag.probe.capture import (
    HEADERS_SNAPLEN,
    Capture,
    create_private_file,
    inject_secrets,
)
from gitnetdiag.probe.cleanup import (
    Aftermath,
    CleanupResult,
    GitRunner,
    RefCleanup,
    interrupts_deferred,
    push_aftermath,
    remove_probe_ref,
)
from gitnetdiag.probe.cleanupnotice import CleanupNotice, CleanupStopped
from gitnetdiag.probe.delivery import ACKED_SHARE, PackDelivery, cut_short
from gitnetdiag.probe.gitpush import (
    FailureKind,
    GitInterrupted,
    GitRun,
    PackProgress,
    Transport,
    error_for_failure,
    failure_line,
    parse_pack_progress,
    push_argv,
    run_git,
)
from gitnetdiag.probe.options import ProbeOptions, Reporter
from gitnetdiag.probe.repo import new_probe_id
from gitnetdiag.probe.trace2 import (
    last_answer,
    parse_curl_trace,
    redact_curl_trace,
    request_endings,
)
from gitnetdiag.proc import received_signal
from gitnetdiag.redaction import redact_text
from gitnetdiag.rundir import CaptureResult, PushRecord, redact_url
from gitnetdiag.rundir.failures import not_git_protocol
from gitnetdiag.rundir.records import HttpRequestRecord, RunStage, Trace2Record
from gitnetdiag.rundir.trace2 import push_phases
from gitnetdiag.safefile import replace_file
from gitnetdiag.vocabulary import TransportKind

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
    failed: set[TransportKind]

    def transport(self, protocol: TransportKind) -> Transport: ...
    def error(self, stage: RunStage, protocol: TransportKind | None, exc: GitnetdiagError,
              kind: FailureKind | None = None) -> None: ...
    def warn(self, message: str) -> None: ...


def sent_too_little(objects: int | None, written_bytes: int | None, pack_bytes: int) -> bool:
    """True when a successful push did not send the pack it planned (pure)."""
    if objects == 0:
        return True
    if written_bytes is None:
        return objects is None
    return written_bytes < NO_DATA_RATIO * pack_bytes


@dataclass(kw_only=True)
class _Attempt:
    """One push as it goes: what it is, where its artifacts go, what came of it."""

    protocol: TransportKind
    repeat: int
    branch: str
    """The throwaway branch ``gitnetdiag/probe-<id>``."""
    transport: Transport
    oid: str
    pack_bytes: int
    started_at: str
    stem: str
    """File name stem of the artifacts, ``<protocol>-<repeat>``."""
    artifacts: dict[str, str]
    """Artifact role -> file name in the run directory."""
    git_run: GitRun | None = None
    watched: MonitoredPush | None = None
    capture: CaptureResult | None = None
    interrupted: bool = False
    """Ctrl-C or SIGTERM arrived during the push."""

    @property
    def label(self) -> str:
        return f"push {self.protocol.value} #{self.repeat}"


def push_once(
    state: PushState, protocol: TransportKind, repeat: int, repo_path: Path, oid: str,
    pack_bytes: int, endpoint: tuple[str, int] | None,
) -> tuple[PushRecord, bool]:
    """Push ``oid`` to a fresh throwaway branch, clean up; return the record and whether
    Ctrl-C or SIGTERM arrived (the caller saves the record, then stops the run).

    An interrupt ends the push early: the record then has outcome ``interrupted``."""
    stem = f"{protocol.value}-{repeat}"
    attempt = _Attempt(
        protocol=protocol, repeat=repeat, branch=f"gitnetdiag/probe-{new_probe_id()}",
        transport=state.transport(protocol), oid=oid, pack_bytes=pack_bytes, started_at="",
        stem=stem, artifacts={"trace2": f"{stem}.trace2.json", "stderr": f"{stem}.stderr.txt"})
    extra_env = _trace_env(state, attempt)
    state.reporter.begin(attempt.label)
    attempt.started_at = now_iso()
    try:
        _captured_push(state, attempt, repo_path, endpoint, extra_env)
    except GitInterrupted as exc:
        attempt.git_run, attempt.interrupted = exc.run, True
    except KeyboardInterrupt:
        attempt.interrupted = True
    return _clean_up(state, attempt, repo_path)


def _trace_env(state: PushState, attempt: _Attempt) -> dict[str, str]:
    """git's trace2 (and for HTTP curl's trace, with --full the TLS keylog) into the run."""
    run_dir, stem, artifacts = state.run_dir, attempt.stem, attempt.artifacts
    extra_env = {
        "GIT_TRACE2_EVENT": str((run_dir / artifacts["trace2"]).resolve()),
        "GIT_TRACE2_EVENT_NESTING": "10",
    }
    if attempt.protocol.is_http:
        artifacts["curl_trace"] = f"{stem}.curl.txt"
        extra_env["GIT_TRACE_CURL"] = str((run_dir / artifacts["curl_trace"]).resolve())
        extra_env["GIT_TRACE_CURL_NO_DATA"] = "1"
        if state.options.full:
            artifacts["keylog"] = f"{stem}.keylog"
            keylog = run_dir / artifacts["keylog"]
            create_private_file(keylog)
            extra_env["SSLKEYLOGFILE"] = str(keylog.resolve())
    return extra_env


def _captured_push(state: PushState, attempt: _Attempt, repo_path: Path,
                   endpoint: tuple[str, int] | None, extra_env: dict[str, str]) -> None:
    """The push, watched (budget, stalls, TCP_INFO) and captured when it may be (``endpoint``
    None: its first hop is not known, so no capture, and TCP_INFO of any port)."""
    options, run_dir, artifacts = state.options, state.run_dir, attempt.artifacts
    label, transport = attempt.label, attempt.transport
    capture: Capture | None = None
    try:
        if state.capture_enabled and endpoint is not None:
            host, port = endpoint
            artifacts["capture"] = f"{attempt.stem}.pcap"
            capture = Capture(
                run_dir / artifacts["capture"], host=host, port=port,
                snaplen=0 if options.full else HEADERS_SNAPLEN,
            )
            try:
                capture.start()
            except GitnetdiagError as exc:
                state.error("capture", attempt.protocol, exc)
                artifacts.pop("capture")
                capture = None
        artifacts["tcpinfo"] = f"{attempt.stem}.tcpinfo.jsonl"
        attempt.watched = run_monitored_push(
            push_argv(transport, attempt.oid, attempt.branch), env=transport.env(extra_env),
            cwd=repo_path,
            limits=PushLimits(timeout_s=options.timeout_s, budget_s=options.budget_s,
                              stall_timeout_s=options.stall_timeout_s),
            port=endpoint[1] if endpoint else 0,
            stderr_path=run_dir / artifacts["stderr"],
            tcpinfo_path=run_dir / artifacts["tcpinfo"],
            on_progress=lambda moved, rate: state.reporter.moved(label, moved, rate),
            on_phase=lambda text: _phase(state.reporter, label, text),
        )
        attempt.git_run = attempt.watched.run
    finally:
        if capture is not None:
            with interrupts_deferred() as held:
                result = capture.stop()
            attempt.interrupted = attempt.interrupted or held.signalled
            attempt.capture = replace(result, path=artifacts["capture"])
            if result.packets_dropped:
                state.warn(
                    f"{attempt.stem}: tcpdump lost {result.packets_dropped} packets "
                    "(the capture is incomplete; the machine is busy)"
                )


def _clean_up(state: PushState, attempt: _Attempt, repo_path: Path) -> tuple[PushRecord, bool]:
    """Remove the branch with signals deferred, then the record of the push."""
    options = state.options
    attempt.artifacts["cleanup_stderr"] = f"{attempt.stem}.cleanup.stderr.txt"
    aftermath = push_aftermath(attempt.git_run)
    aftermath, why = cut_short(aftermath, attempt.git_run, _delivery(state.run_dir, attempt))
    wait_s = options.cleanup_wait_s
    if options.cleanup_until is not None:  # watch's deadline: the wait promised is what is left
        wait_s = min(wait_s, max(0.0, options.cleanup_until - time.monotonic()))
    notice = CleanupNotice(state.reporter, attempt.transport, attempt.branch, attempt.oid,
                           aftermath, wait_s, label=attempt.label)
    if attempt.interrupted:
        notice.interrupted(ctrl_c=received_signal() in (None, signal.SIGINT))
    elif aftermath is Aftermath.MAY_LAND:  # a wait follows: the progress line says so
        notice.show_phase()
    with interrupts_deferred(notice.on_signal) as deferred:
        try:
            with notice.waiting():
                cleanup = remove_probe_ref(
                    attempt.transport, attempt.branch, attempt.oid, aftermath,
                    runner=_logged_runner(state.run_dir / attempt.artifacts["cleanup_stderr"],
                                          options.cleanup_git_timeout_s),
                    cwd=repo_path, wait_s=options.cleanup_wait_s, until=options.cleanup_until,
                )
        except CleanupStopped:
            cleanup = notice.stopped()
        if why and cleanup.status is RefCleanup.NEVER_CREATED:
            cleanup = replace(cleanup, detail=why)  # the figures of the pack cut short
        record = _record(state, attempt, cleanup)
        record = _with_watch(record, attempt.watched, attempt.interrupted)
        state.reporter.done(attempt.label, _detail(record, options.timeout_s),
                            ok=record.outcome in ("ok", "bounded"))
    return record, attempt.interrupted or deferred.signalled


def _delivery(run_dir: Path, attempt: _Attempt) -> PackDelivery:
    """What the client saw of the pack's delivery: the server's TCP acknowledgements of a
    push the monitor stopped for making no progress (the count was final then), and
    git's curl trace."""
    watched = attempt.watched
    acked = None
    if (watched is not None and watched.tcpinfo_samples
            and watched.stopped in (StopReason.STALL, StopReason.SERVER_STALL)):
        acked = watched.moved_bytes
    trace = run_dir / attempt.artifacts.get("curl_trace", "-")
    curl = None
    if attempt.protocol.is_http and trace.is_file():
        curl = parse_curl_trace(trace.read_text(errors="replace"))
    return PackDelivery(acked_bytes=acked, curl=curl)


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


def exact_wall_s(git_run: GitRun | None, phases: Trace2Record | None) -> float:
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


@dataclass(frozen=True, kw_only=True)
class _CurlFacts:
    """What git's curl trace says of an HTTP push (all None/empty without one)."""

    http_version: str | None = None
    alpn: str | None = None
    last_info: str | None = None
    post_s: float | None = None
    """From the last POST's request sent to its response."""
    requests: tuple[HttpRequestRecord, ...] = ()
    last_answer: str | None = None
    """The last answered request with its status and Content-Type (:func:`last_answer`)."""


FINISHED_EARLY = ("the response ended (curl: connection left intact) before git had its "
                  "status report")
"""How a failed push's last request ended when curl saw nothing wrong with it: an HTTP/2
edge that ends the stream at its timeout (HAProxy's ``timeout server`` during a silent
hook) leaves curl content and git saying ``unexpected disconnect while reading sideband
packet``."""


def _curl_facts(attempt: _Attempt, run_dir: Path) -> _CurlFacts:
    """The curl trace, redacted in place, and what it says (the last request of a failed
    push ended early as :func:`~gitnetdiag.probe.trace2.request_endings` tells)."""
    failed = attempt.git_run is None or not attempt.git_run.ok or attempt.interrupted
    curl_path = run_dir / attempt.artifacts.get("curl_trace", "-")
    if not (attempt.protocol.is_http and curl_path.is_file()):
        return _CurlFacts()
    text = redact_curl_trace(curl_path.read_text(errors="replace"))
    replace_file(curl_path, text.encode())
    curl = parse_curl_trace(text)
    posts = [r for r in curl.requests if r.method == "POST" and r.response_s is not None]
    post_s = None
    if posts and posts[-1].response_s is not None:
        post_s = posts[-1].response_s - posts[-1].sent_s
    return _CurlFacts(
        http_version=curl.http_version, alpn=curl.alpn, last_info=curl.last_info, post_s=post_s,
        requests=tuple(HttpRequestRecord(
            method=r.method, path=r.path, status=r.status, server=r.server,
            content_length_bytes=r.content_length_bytes, streamed=r.streamed,
            silence_before_close_s=silence, ending=ending)
            for r, (silence, ending) in zip(curl.requests, request_endings(
                curl.requests, failed=failed, early=FINISHED_EARLY, headers_first=True),
                strict=True)),
        last_answer=last_answer(curl))


def _trace2_phases(attempt: _Attempt, run_dir: Path) -> Trace2Record | None:
    trace2_path = run_dir / attempt.artifacts["trace2"]
    if not trace2_path.is_file():
        return None
    with trace2_path.open(errors="replace") as handle:
        return push_phases(handle)


def _decrypted_capture(state: PushState, attempt: _Attempt) -> None:
    """With --full: the capture with the TLS secrets injected, a pcapng Wireshark reads."""
    run_dir, artifacts = state.run_dir, attempt.artifacts
    if not (state.options.full and attempt.capture is not None and "keylog" in artifacts):
        return
    keylog = run_dir / artifacts["keylog"]
    if keylog.stat().st_size > 0:
        decrypted = f"{artifacts['stderr'].removesuffix('.stderr.txt')}.pcapng"
        try:
            create_private_file(run_dir / decrypted)
            inject_secrets(run_dir / artifacts["capture"], keylog, run_dir / decrypted)
            artifacts["capture_decrypted"] = decrypted
        except GitnetdiagError as exc:
            state.error("capture", attempt.protocol, exc)


def _outcome(state: PushState, attempt: _Attempt, url: str, progress: PackProgress,
             answered: str | None = None) -> tuple[TransferOutcome, FailureKind | None, str]:
    """The push's outcome, failure kind and git's last line; failures told to ``state``.
    ``answered``: the curl trace's last answer, told beside an answer that is not git's."""
    git_run, interrupted, protocol = attempt.git_run, attempt.interrupted, attempt.protocol
    stderr = git_run.stderr if git_run is not None else ""
    ok = git_run is not None and git_run.ok and not interrupted
    kind = None if git_run is None or interrupted else git_run.failure_kind()
    line = "" if ok else redact_text(failure_line(stderr))
    if answered and not_git_protocol(line):
        line = f"{line} ({answered})"  # what answered in git's place, from the curl trace
    pack_bytes = attempt.pack_bytes
    outcome: TransferOutcome
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
    return outcome, kind, line


def _tell_cleanup(state: PushState, attempt: _Attempt, url: str, cleanup: CleanupResult) -> None:
    """A branch left on the server is an error with its remove command; one unconfirmed a
    warning with the command that checks."""
    branch = attempt.branch
    if cleanup.status is RefCleanup.LEFTOVER:
        state.error("cleanup", attempt.protocol, NetworkError(
            f"{branch} is still on {url}: {cleanup.detail}",
            hint=f"delete it by hand: {cleanup.remove_command}", reference="probe-ref-leftover",
        ))
        state.reporter.warn(f"{branch} is still on {url}; remove it with: "
                            f"{cleanup.remove_command}")
    elif cleanup.status is RefCleanup.UNCONFIRMED:
        state.warn(f"{branch} on {url} unconfirmed: {cleanup.detail}; check with: "
                   f"{cleanup.check_command}; if it is there, remove it with: "
                   f"{cleanup.remove_command}")


def _record(state: PushState, attempt: _Attempt, cleanup: CleanupResult) -> PushRecord:
    run_dir = state.run_dir
    curl = _curl_facts(attempt, run_dir)
    phases = _trace2_phases(attempt, run_dir)
    _decrypted_capture(state, attempt)
    url = redact_url(attempt.transport.url)
    progress = parse_pack_progress(attempt.git_run.stderr if attempt.git_run is not None else "")
    outcome, kind, line = _outcome(state, attempt, url, progress, curl.last_answer)
    _tell_cleanup(state, attempt, url, cleanup)
    wall_s = exact_wall_s(attempt.git_run, phases)
    pack_bytes = attempt.pack_bytes
    rate = pack_bytes / wall_s if outcome == "ok" and wall_s > 0 else None
    return PushRecord(
        protocol=attempt.protocol.value, repeat=attempt.repeat, branch=attempt.branch,
        started_at=attempt.started_at,
        outcome=outcome, failure_kind=kind, last_line=line,
        wall_s=wall_s, pack_bytes=pack_bytes, rate_bytes_per_s=rate,
        http_version=curl.http_version, alpn=curl.alpn, post_s=curl.post_s,
        curl_last_info=curl.last_info, phases=phases, capture=attempt.capture,
        artifacts={k: v for k, v in attempt.artifacts.items() if (run_dir / v).exists()},
        cleanup=cleanup.status, cleanup_detail=cleanup.detail,
        cleanup_s=cleanup.waited_s, cleanup_command=cleanup.remove_command,
        cleanup_check_command=cleanup.check_command, pack_objects=progress.objects,
        pack_written_bytes=progress.written_bytes,
        http_requests=curl.requests,
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
    elif (record.outcome == "stalled" and record.stopped == StopReason.SERVER_STALL
          and record.moved_bytes is not None and record.pack_written_bytes
          and record.moved_bytes < ACKED_SHARE * record.pack_written_bytes):
        detail = (f"stalled: git handed over its whole pack "
                  f"({record.pack_written_bytes / 2**20:.1f} MiB) but the server acknowledged only "
                  f"{record.moved_bytes / 2**20:.1f} MiB of it, then nothing for the stall "
                  "timeout")
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
