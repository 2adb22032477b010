"""``gitnetdiag probe``: the same push over each protocol, captured, cleaned up.

Order of a run: check capture support, collect versions, make (or read) the
repository, measure each endpoint's path, then for each repeat push once per
protocol (interleaved, so drift hits all protocols alike), then the bursts.
The manifest is rewritten after every step. Every push's throwaway branch is
deleted in a ``finally``, with Ctrl-C ignored while that runs.
"""

from __future__ import annotations

import json
import re
import signal
import statistics
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from typing import Protocol as TypingProtocol
from urllib.parse import urlsplit

from gitnetdiag import __version__
from gitnetdiag.errors import GitnetdiagError, NetworkError, UsageError
from gitnetdiag.probe.burst import BurstResult, run_connect_burst, run_ls_remote_burst
from gitnetdiag.probe.capture import (
    HEADERS_SNAPLEN,
    Capture,
    CaptureResult,
    capture_support,
    create_private_file,
    inject_secrets,
)
from gitnetdiag.probe.gitpush import (
    FailureKind,
    Protocol,
    Transport,
    classify_git_stderr,
    delete_argv,
    delete_outcome,
    error_for_failure,
    last_stderr_line,
    push_argv,
    run_git,
)
from gitnetdiag.probe.pathinfo import PathMeasurement, measure_path
from gitnetdiag.probe.repo import generate_repo, head_oid, new_probe_id, pack_for_commit
from gitnetdiag.probe.rundir import (
    SCHEMA,
    ProtocolRun,
    PushRecord,
    RepoInfo,
    RunError,
    RunManifest,
    redact_url,
    write_manifest,
)
from gitnetdiag.probe.trace2 import parse_curl_trace, parse_trace2_events, redact_curl_trace
from gitnetdiag.probe.versions import ToolVersions, collect_versions
from gitnetdiag.proc import sigterm_interrupts

DEFAULT_PORTS = {"https": 443, "http": 80, "ssh": 22, "git": 9418}
CLEANUP_TIMEOUT_S = 60.0
FATAL_KINDS = frozenset(
    {
        FailureKind.REFUSED, FailureKind.UNREACHABLE, FailureKind.TLS, FailureKind.AUTH,
        FailureKind.HOST_KEY, FailureKind.REJECTED,
    }
)
"""Failure kinds after which further pushes over the same protocol are pointless."""

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "B": 1, "K": 1000, "M": 1000**2, "G": 1000**3, "T": 1000**4,
          "KI": 1024, "MI": 1024**2, "GI": 1024**3, "TI": 1024**4}


def parse_size(text: str) -> int:
    """``4MiB`` -> 4194304, ``1GiB``, ``500KB`` (decimal), ``1024`` (bytes)."""
    match = _SIZE_RE.match(text)
    if match is None:
        raise UsageError(f"cannot read the size {text!r}", hint="write it like 4MiB, 32MiB, 1GiB")
    number, unit = match.groups()
    unit_key = (unit or "").upper().removesuffix("B") if (unit or "").upper() != "B" else "B"
    size = int(float(number) * _UNITS[unit_key])
    if size <= 0:
        raise UsageError(f"the size {text!r} is not positive", hint="write it like 4MiB")
    return size


def endpoint_of(url: str) -> tuple[str, int]:
    """(host, port) a URL connects to; scp-like ``user@host:path`` is SSH on port 22."""
    if "://" not in url:
        match = re.fullmatch(r"(?:[^@/:]+@)?([^/:]+):.*", url)
        if match is None:
            raise UsageError(f"cannot read the remote URL {redact_url(url)!r}")
        return match.group(1), 22
    parts = urlsplit(url)
    if not parts.hostname or parts.scheme not in DEFAULT_PORTS:
        raise UsageError(
            f"cannot read the remote URL {redact_url(url)!r}",
            hint="use https://host/path, ssh://user@host/path or git://host/path",
        )
    try:
        port = parts.port or DEFAULT_PORTS[parts.scheme]
    except ValueError as exc:
        raise UsageError(f"bad port in {redact_url(url)!r}") from exc
    return parts.hostname, port


@dataclass(frozen=True, kw_only=True)
class ProbeOptions:
    """Everything ``gitnetdiag probe`` was asked to do."""

    urls: dict[Protocol, str]
    """Remote URL per protocol (h1 and h2 share the HTTPS URL)."""
    protocols: tuple[Protocol, ...]
    """Protocols to probe, in order."""
    size_bytes: int
    """Size of the generated repository."""
    seed: int
    """Seed of the generated data."""
    repo: Path | None
    """Push this repository's HEAD instead of a generated one."""
    repeat: int
    """Pushes per protocol."""
    ca_file: str | None
    """CA bundle for HTTPS."""
    insecure: bool
    """Skip HTTPS certificate verification."""
    ssh_command: str | None
    """GIT_SSH_COMMAND."""
    out_dir: Path
    """Run directory to create."""
    full: bool
    """Whole packets plus TLS keylog and a pcapng with the secrets injected."""
    burst: int
    """Concurrent ls-remote operations per protocol (0 = no burst)."""
    timeout_s: float
    """Timeout of each git run."""
    capture: bool
    """Capture packets (when root and tcpdump allow)."""
    extra_options: dict[str, Any] = field(default_factory=dict)
    """More options to record in the manifest (e.g. the lab instance)."""
    native: bool = False
    """After the git pushes, push the same pack with the native HTTP/2 (h2) and SSH
    (paramiko) probes to record the flow-control ledgers (``native-h2.json``,
    ``native-ssh.json``)."""
    ssh_key: str | None = None
    """SSH private key file (the native SSH probe needs it)."""
    ssh_known_hosts: str | None = None
    """known_hosts file (the native SSH probe verifies the host key with it)."""
    h2_sweep: bool = False
    """Repeat the native HTTP/2 upload while advertising different client SETTINGS
    (``native-h2-sweep.json``): shows the rate follows the server's window."""

    def transport(self, protocol: Protocol) -> Transport:
        return Transport(
            protocol=protocol, url=self.urls[protocol], ca_file=self.ca_file,
            insecure=self.insecure, ssh_command=self.ssh_command,
        )

    def manifest_options(self) -> dict[str, Any]:
        return {
            "protocols": [p.value for p in self.protocols],
            "urls": {p.value: redact_url(u) for p, u in self.urls.items()},
            "size_bytes": self.size_bytes, "seed": self.seed,
            "repo": str(self.repo) if self.repo else None, "repeat": self.repeat,
            "ca_file": self.ca_file, "insecure": self.insecure, "full": self.full,
            "burst": self.burst, "timeout_s": self.timeout_s, "capture": self.capture,
            "native": self.native, "h2_sweep": self.h2_sweep,
            **self.extra_options,
        }


class Reporter(TypingProtocol):
    """Where the runner reports progress (the command renders it with rich)."""

    def begin(self, label: str) -> None: ...
    def done(self, label: str, detail: str, *, ok: bool) -> None: ...
    def warn(self, message: str) -> None: ...


class SilentReporter:
    """A Reporter that shows nothing (library use, tests)."""

    def begin(self, label: str) -> None:
        return None

    def done(self, label: str, detail: str, *, ok: bool) -> None:
        return None

    def warn(self, message: str) -> None:
        return None


@dataclass(frozen=True, kw_only=True)
class ProbeOutcome:
    """A finished (or failed) probe run."""

    run_dir: Path
    """The run directory."""
    manifest: RunManifest
    """The manifest as last written."""
    error: GitnetdiagError | None
    """The first error that should make the command fail, after the summary."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@contextmanager
def _no_interrupts() -> Iterator[None]:
    """Ignore Ctrl-C (in the main thread) while the throwaway branch is being removed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)




class _Run:
    """Mutable state of one run; ``save()`` writes the manifest."""

    def __init__(self, options: ProbeOptions, reporter: Reporter) -> None:
        self.options = options
        self.reporter = reporter
        self.run_dir = options.out_dir
        self.run_id = new_probe_id()
        self.started_at = _now()
        self.finished_at: str | None = None
        self.status = "running"
        self.environment: ToolVersions | None = None
        self.repo_info: RepoInfo | None = None
        self.capture_enabled = False
        self.protocols: dict[Protocol, ProtocolRun] = {}
        self.paths: list[PathMeasurement] = []
        self.errors: list[RunError] = []
        self.warnings: list[str] = []
        self.first_error: GitnetdiagError | None = None
        self.failed: set[Protocol] = set()

    def manifest(self) -> RunManifest:
        return RunManifest(
            schema=SCHEMA, tool_version=__version__, run_id=self.run_id,
            started_at=self.started_at, finished_at=self.finished_at, status=self.status,
            options=self.options.manifest_options(), environment=self.environment,
            repo=self.repo_info, capture_enabled=self.capture_enabled,
            protocols=tuple(self.protocols.values()), paths=tuple(self.paths),
            errors=tuple(self.errors), warnings=tuple(self.warnings),
        )

    def save(self) -> RunManifest:
        manifest = self.manifest()
        write_manifest(self.run_dir, manifest)
        return manifest

    def error(self, stage: str, protocol: Protocol | None, exc: GitnetdiagError,
              kind: str | None = None) -> None:
        self.errors.append(
            RunError(stage=stage, protocol=protocol.value if protocol else None,
                     reference=exc.reference, kind=kind, message=exc.message)
        )
        if self.first_error is None:
            self.first_error = exc

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        self.reporter.warn(message)


def run_probe(options: ProbeOptions, reporter: Reporter | None = None) -> ProbeOutcome:
    """Run the probe; returns the outcome (errors of single steps are inside it).

    Raises GitnetdiagError only for problems that stop the whole run (bad
    options, unwritable directory); KeyboardInterrupt propagates after the
    clean-up and a final manifest with status ``interrupted``.
    """
    if not options.protocols:
        raise UsageError("no protocol to probe", hint="give --http, --ssh or --git")
    for protocol in options.protocols:
        if protocol not in options.urls:
            raise UsageError(f"protocol {protocol.value} has no URL",
                             hint="give --http for h1/h2, --ssh for ssh, --git for git")
    run_dir = options.out_dir
    if run_dir.exists() and any(run_dir.iterdir()):
        raise UsageError(f"{run_dir} exists and is not empty", hint="choose a new --out directory")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {run_dir}: {exc.strerror}",
                         hint="choose a writable --out directory") from exc
    state = _Run(options, reporter or SilentReporter())
    state.save()
    with tempfile.TemporaryDirectory(prefix="gitnetdiag-repo-") as scratch, sigterm_interrupts():
        try:
            _run_steps(state, Path(scratch))
            state.status = _final_status(state)
        except KeyboardInterrupt:
            state.status = "interrupted"
            state.finished_at = _now()
            state.save()
            raise
        except GitnetdiagError as exc:
            state.error("setup", None, exc)
            state.status = "failed"
        finally:
            if state.finished_at is None:
                state.finished_at = _now()
                state.save()
    return ProbeOutcome(run_dir=run_dir, manifest=state.manifest(), error=state.first_error)


def _final_status(state: _Run) -> str:
    """``failed`` on any error, else ``stalled`` when a push hung, else ``complete``.

    A hung push is measured (the stall is the evidence), yet the run did not
    complete: each such protocol gets a ``push-stalled`` error so that ``probe``
    exits non-zero and says why.
    """
    failed_before = bool(state.errors)
    for run in state.protocols.values():
        hung = [push for push in run.pushes if push.outcome == "hung"]
        if hung:
            state.error("push", Protocol(run.protocol), NetworkError(
                f"{run.url}: {len(hung)} of {len(run.pushes)} push(es) made no progress within "
                f"{state.options.timeout_s:g} s",
                hint="the stall is evidence, not noise: see it ranked with "
                "'gitnetdiag analyze RUN --diagnose'", reference="push-stalled",
            ), kind=FailureKind.HUNG.value)
    if failed_before:
        return "failed"
    return "stalled" if state.errors else "complete"


def _run_steps(state: _Run, scratch: Path) -> None:
    options = state.options
    support = capture_support()
    state.capture_enabled = options.capture and support.available
    if options.capture and not support.available:
        state.warn(support.reason)
    state.environment = collect_versions()

    state.reporter.begin("repository")
    if options.repo is not None:
        repo_path = options.repo
        oid = head_oid(repo_path)
        generated = False
    else:
        generated_repo = generate_repo(scratch / "repo", options.size_bytes, options.seed)
        repo_path, oid, generated = generated_repo.path, generated_repo.head_oid, True
    pack_bytes = len(pack_for_commit(repo_path, oid))
    state.repo_info = RepoInfo(
        generated=generated, seed=options.seed if generated else None,
        size_bytes=options.size_bytes if generated else None, head_oid=oid, pack_bytes=pack_bytes,
    )
    state.reporter.done("repository", f"{oid[:12]}, pack {pack_bytes / 2**20:.1f} MiB", ok=True)
    state.save()

    measured: set[tuple[str, int]] = set()
    for protocol in options.protocols:
        url = options.urls[protocol]
        host, port = endpoint_of(url)
        state.protocols[protocol] = ProtocolRun(
            protocol=protocol.value, url=redact_url(url), endpoint=f"{host}:{port}"
        )
        if (host, port) in measured:
            continue
        measured.add((host, port))
        label = f"path {host}:{port}"
        state.reporter.begin(label)
        tls = url.startswith("https://")
        path = measure_path(host, port, tls=tls, ca_file=options.ca_file, insecure=options.insecure)
        state.paths.append(path)
        detail = path.error or (
            f"rtt {1000 * (path.connect_rtt_min_s or 0):.1f} ms, mss {path.mss_bytes}"
            + (f", alpn {path.alpn}" if tls else "")
        )
        state.reporter.done(label, detail, ok=path.error is None)
        state.save()

    for repeat in range(1, options.repeat + 1):
        for protocol in options.protocols:
            if protocol in state.failed:
                continue
            record = _push_once(state, protocol, repeat, repo_path, oid, pack_bytes)
            _append_push(state, protocol, record)
            state.save()

    if options.native:
        _native(state, repo_path, oid)
        state.save()
    if options.h2_sweep:
        _sweep(state, repo_path, oid)
        state.save()

    if options.burst > 0:
        for protocol in options.protocols:
            if protocol in state.failed:
                continue
            _burst(state, protocol, repo_path)
            state.save()


def _append_push(state: _Run, protocol: Protocol, record: PushRecord) -> None:
    run = state.protocols[protocol]
    state.protocols[protocol] = replace(run, pushes=(*run.pushes, record))


def _push_once(
    state: _Run, protocol: Protocol, repeat: int, repo_path: Path, oid: str, pack_bytes: int
) -> PushRecord:
    options = state.options
    transport = options.transport(protocol)
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
    started_at = _now()
    capture: Capture | None = None
    capture_result: CaptureResult | None = None
    git_run = None
    outcome = "interrupted"
    cleanup, cleanup_detail = "not-run", ""
    try:
        try:
            if state.capture_enabled:
                host, port = endpoint_of(transport.url)
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
            git_run = run_git(
                push_argv(transport, oid, branch), env=transport.env(extra_env), cwd=repo_path,
                timeout_s=options.timeout_s, stderr_path=run_dir / artifacts["stderr"],
            )
            outcome = "ok" if git_run.ok else ("hung" if git_run.timed_out else "failed")
        finally:
            if capture is not None:
                result = capture.stop()
                capture_result = replace(result, path=artifacts["capture"])
                if result.packets_dropped:
                    state.warn(
                        f"{stem}: tcpdump lost {result.packets_dropped} packets "
                        "(the capture is incomplete; the machine is busy)"
                    )
    finally:
        with _no_interrupts():
            if git_run is not None and not git_run.ok and not git_run.timed_out and (
                classify_git_stderr(git_run.stderr) in NEVER_CONNECTED
            ):
                # The push never reached receive-pack: there is no branch to delete,
                # and a delete would only fail the same way.
                cleanup, cleanup_detail = "absent", "the push never reached the server"
            else:
                cleanup, cleanup_detail = _delete_branch(
                    state, transport, branch, stem, repo_path)
                if cleanup != "not-run":
                    artifacts["cleanup_stderr"] = f"{stem}.cleanup.stderr.txt"

    curl_path = run_dir / artifacts.get("curl_trace", "-")
    http_version = alpn = curl_last_info = None
    post_s = None
    if protocol.is_http and curl_path.is_file():
        text = redact_curl_trace(curl_path.read_text(errors="replace"))
        curl_path.write_text(text)
        curl = parse_curl_trace(text)
        http_version, alpn, curl_last_info = curl.http_version, curl.alpn, curl.last_info
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
            decrypted = f"{stem}.pcapng"
            try:
                create_private_file(run_dir / decrypted)
                inject_secrets(run_dir / artifacts["capture"], keylog, run_dir / decrypted)
                artifacts["capture_decrypted"] = decrypted
            except GitnetdiagError as exc:
                state.error("capture", protocol, exc)

    assert git_run is not None
    kind = git_run.failure_kind()
    line = "" if git_run.ok else last_stderr_line(git_run.stderr)
    if kind is not None and kind is not FailureKind.HUNG:
        push_error = error_for_failure(kind, redact_url(transport.url), line)
        state.error("push", protocol, push_error, kind=kind.value)
        if kind in FATAL_KINDS:
            state.failed.add(protocol)
    if cleanup == "failed":
        state.error(
            "cleanup", protocol,
            NetworkError(
                f"could not delete {branch} on {redact_url(transport.url)}: {cleanup_detail}",
                hint=f"delete it by hand: git push <remote> :refs/heads/{branch}",
                reference="cleanup-failed",
            ),
        )
    rate = pack_bytes / git_run.wall_s if git_run.ok and git_run.wall_s > 0 else None
    if outcome == "ok":
        detail = f"{git_run.wall_s:.2f} s, {(rate or 0) / 2**20:.2f} MiB/s"
        if http_version:
            detail += f", {http_version}"
    elif outcome == "hung":
        detail = f"hung: no progress within {options.timeout_s:.0f} s"
    else:
        detail = f"{kind.value if kind else 'failed'}: {line}"
    state.reporter.done(label, detail, ok=outcome == "ok")
    return PushRecord(
        protocol=protocol.value, repeat=repeat, branch=branch, started_at=started_at,
        outcome=outcome, failure_kind=kind.value if kind else None, last_line=line,
        wall_s=git_run.wall_s, pack_bytes=pack_bytes, rate_bytes_per_s=rate,
        http_version=http_version, alpn=alpn, post_s=post_s, curl_last_info=curl_last_info,
        phases=phases, capture=capture_result,
        artifacts={k: v for k, v in artifacts.items() if (run_dir / v).exists()},
        cleanup=cleanup, cleanup_detail=cleanup_detail,
    )


def _delete_branch(
    state: _Run, transport: Transport, branch: str, stem: str, repo_path: Path
) -> tuple[str, str]:
    """Delete the throwaway branch; over HTTP fall back to the other HTTP version."""
    attempts = [transport]
    if transport.protocol is Protocol.H2:
        attempts.append(replace(transport, protocol=Protocol.H1))
    elif transport.protocol is Protocol.H1:
        attempts.append(replace(transport, protocol=Protocol.H2))
    detail = ""
    stderr_path = state.run_dir / f"{stem}.cleanup.stderr.txt"
    timeout_s = min(CLEANUP_TIMEOUT_S, state.options.timeout_s)
    for attempt in attempts:
        result = run_git(
            delete_argv(attempt, branch), env=attempt.env(), cwd=repo_path,
            timeout_s=timeout_s, stderr_path=stderr_path,
        )
        outcome = delete_outcome(result)
        if outcome != "failed":
            return outcome, ""
        detail = "timed out" if result.timed_out else last_stderr_line(result.stderr)
    return "failed", detail


NEVER_CONNECTED = frozenset({
    FailureKind.REFUSED, FailureKind.UNREACHABLE, FailureKind.TLS, FailureKind.AUTH,
    FailureKind.HOST_KEY,
})
"""Failures that happen before receive-pack runs, so no ref can have been created."""

NATIVE_ARTIFACTS = {Protocol.H2: "native-h2.json", Protocol.SSH: "native-ssh.json"}
"""Where the native probes' ledgers land in the run directory."""


def _native(state: _Run, repo_path: Path, oid: str) -> None:
    """The native HTTP/2 and SSH pushes: flow-control ledgers with every window update."""
    from gitnetdiag.probe.h2native import h2_push_probe
    from gitnetdiag.probe.sshnative import ssh_push_probe

    options = state.options
    wanted = [p for p in (Protocol.H2, Protocol.SSH)
              if p in options.protocols and p not in state.failed]
    if not wanted:
        return
    pack = pack_for_commit(repo_path, oid)
    for protocol in wanted:
        label = f"native {protocol.value} ledger"
        url = options.urls[protocol]
        if protocol is Protocol.H2 and options.ca_file is None:
            state.warn("native HTTP/2 probe skipped: it verifies TLS with --ca-file only")
            continue
        if protocol is Protocol.SSH and not (options.ssh_key and options.ssh_known_hosts):
            state.warn("native SSH probe skipped: it needs --ssh-key and --ssh-known-hosts")
            continue
        state.reporter.begin(label)
        try:
            if protocol is Protocol.H2:
                ledger: Any = h2_push_probe(url, ca_file=options.ca_file or "", pack=pack,
                                            new_oid=oid, probe_id=new_probe_id(),
                                            timeout_s=options.timeout_s)
                detail = (f"server window {ledger.server_initial_window_bytes}, "
                          f"{ledger.stream.stall_count} stalls")
            else:
                ledger = ssh_push_probe(url, key_file=options.ssh_key or "",
                                        known_hosts=options.ssh_known_hosts or "", pack=pack,
                                        new_oid=oid, probe_id=new_probe_id(),
                                        timeout_s=options.timeout_s)
                detail = (f"channel window {ledger.server_window_bytes}, "
                          f"{ledger.window_adjusts} adjusts")
        except GitnetdiagError as exc:
            state.error("native", protocol, exc)
            state.reporter.done(label, exc.message, ok=False)
            continue
        path = state.run_dir / NATIVE_ARTIFACTS[protocol]
        path.write_text(json.dumps(ledger.to_dict(), indent=1) + "\n")
        state.reporter.done(label, detail, ok=True)


SWEEP_ARTIFACT = "native-h2-sweep.json"


def _sweep(state: _Run, repo_path: Path, oid: str) -> None:
    """The native HTTP/2 upload once per client SETTINGS variant."""
    from gitnetdiag.probe.h2native import h2_sweep

    options = state.options
    if Protocol.H2 not in options.urls or options.ca_file is None:
        state.warn("--h2-sweep skipped: it needs an HTTPS URL (--http) and --ca-file")
        return
    label = "h2 sweep of client settings"
    state.reporter.begin(label)
    try:
        rows = h2_sweep(options.urls[Protocol.H2], ca_file=options.ca_file,
                        pack=pack_for_commit(repo_path, oid), new_oid=oid,
                        probe_id_factory=new_probe_id, timeout_s=options.timeout_s)
    except GitnetdiagError as exc:
        state.error("h2-sweep", Protocol.H2, exc)
        state.reporter.done(label, exc.message, ok=False)
        return
    (state.run_dir / SWEEP_ARTIFACT).write_text(
        json.dumps([row.to_dict() for row in rows], indent=1) + "\n")
    rates = [row.upload_rate_bytes_per_s or 0.0 for row in rows]
    state.reporter.done(label, f"{len(rows)} variants, {min(rates) / 1e6:.2f}-"
                        f"{max(rates) / 1e6:.2f} MB/s", ok=all(r.push_ok for r in rows))


def _burst(state: _Run, protocol: Protocol, repo_path: Path) -> None:
    options = state.options
    transport = options.transport(protocol)
    host, port = endpoint_of(transport.url)
    label = f"burst {protocol.value} x{options.burst}"
    state.reporter.begin(label)
    capture: Capture | None = None
    capture_name: str | None = None
    if state.capture_enabled:
        capture_name = f"burst-{protocol.value}.pcap"
        capture = Capture(state.run_dir / capture_name, host=host, port=port)
        try:
            capture.start()
        except GitnetdiagError as exc:
            state.error("capture", protocol, exc)
            capture, capture_name = None, None
    burst_timeout_s = min(options.timeout_s, 60.0)
    try:
        ops = run_ls_remote_burst(transport, options.burst, timeout_s=burst_timeout_s,
                                  cwd=state.run_dir)
        connects = run_connect_burst(host, port, options.burst, timeout_s=burst_timeout_s)
    finally:
        if capture is not None:
            capture.stop()
    result = BurstResult(
        protocol=protocol.value, concurrency=options.burst, timeout_s=burst_timeout_s, ops=ops,
        connects=connects, capture=capture_name,
    )
    state.protocols[protocol] = replace(state.protocols[protocol], burst=result)
    failures = result.failures_by_kind
    detail = f"{result.ok_count}/{len(ops)} ok"
    if failures:
        detail += " (" + ", ".join(f"{k} {n}" for k, n in sorted(failures.items())) + ")"
    state.reporter.done(label, detail, ok=not failures)


@dataclass(frozen=True, kw_only=True)
class ProtocolSummary:
    """One line of the summary table."""

    protocol: str
    """Protocol id."""
    pushes: int
    """Pushes attempted."""
    ok: int
    """Pushes that succeeded."""
    hung: int
    """Pushes killed at the timeout."""
    rate_median_bytes_per_s: float | None
    """Median rate of the successful pushes."""
    rate_min_bytes_per_s: float | None
    """Slowest successful push."""
    rate_max_bytes_per_s: float | None
    """Fastest successful push."""
    wall_median_s: float | None
    """Median wall time of the successful pushes."""
    http_version: str | None
    """Most common negotiated HTTP version."""
    failures: dict[str, int]
    """Failure kind -> count (hung included)."""
    burst_ok: int | None
    """Successful burst operations, None without a burst."""
    burst_failures: dict[str, int]
    """Burst failure kind -> count."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(manifest: RunManifest) -> tuple[ProtocolSummary, ...]:
    """Per-protocol summary of a run (pure)."""
    rows: list[ProtocolSummary] = []
    for run in manifest.protocols:
        rates = [p.rate_bytes_per_s for p in run.pushes if p.rate_bytes_per_s is not None]
        walls = [p.wall_s for p in run.pushes if p.outcome == "ok"]
        versions = Counter(p.http_version for p in run.pushes if p.http_version)
        failures = Counter(p.failure_kind for p in run.pushes if p.failure_kind)
        rows.append(
            ProtocolSummary(
                protocol=run.protocol,
                pushes=len(run.pushes),
                ok=sum(p.outcome == "ok" for p in run.pushes),
                hung=sum(p.outcome == "hung" for p in run.pushes),
                rate_median_bytes_per_s=statistics.median(rates) if rates else None,
                rate_min_bytes_per_s=min(rates) if rates else None,
                rate_max_bytes_per_s=max(rates) if rates else None,
                wall_median_s=statistics.median(walls) if walls else None,
                http_version=versions.most_common(1)[0][0] if versions else None,
                failures=dict(failures),
                burst_ok=run.burst.ok_count if run.burst else None,
                burst_failures=run.burst.failures_by_kind if run.burst else {},
            )
        )
    return tuple(rows)
