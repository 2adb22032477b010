"""``gitnetdiag probe``: the same push over each protocol, captured, cleaned up.

Order of a run: check capture support, collect versions, make (or read) the
repository, measure each endpoint's path, then for each repeat push once per
protocol (interleaved, so drift hits all protocols alike), then the bursts.
The manifest is rewritten after every step. Every push's throwaway branch is
removed right after it (:mod:`gitnetdiag.probe.pushonce`), also on Ctrl-C or
SIGTERM, which stop the run once that push is recorded. Every git run reads
one isolated config (:mod:`gitnetdiag.probe.gitconfig`). The native ledgers, body probe and
HTTP/2 sweep that follow the pushes are :mod:`gitnetdiag.probe.nativesteps`.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from gitnetdiag import __version__
from gitnetdiag.errors import AnsweredError, GitnetdiagError, NetworkError, UsageError
from gitnetdiag.hops import FirstHop, leg_endpoint, unplaced_text
from gitnetdiag.probe.budget import stall_detail, swallowed_full_size
from gitnetdiag.probe.burst import run_burst
from gitnetdiag.probe.capture import capture_support
from gitnetdiag.probe.deadpath import (
    dead_by_protocol,
    dead_error,
    path_label,
    path_line,
    skipped_push,
)
from gitnetdiag.probe.firsthop import first_hop
from gitnetdiag.probe.gitconfig import IsolatedConfig, write_isolated_config
from gitnetdiag.probe.gitpush import FailureKind, Transport
from gitnetdiag.probe.h2stop import with_http2_frames, with_pack_check
from gitnetdiag.probe.nativesteps import body_step, native_ledgers, sweep_step
from gitnetdiag.probe.options import NativeSummary, RawSummary, Reporter, SilentReporter

# ProbeOptions is re-exported: the probe command and its tests take it from the runner.
from gitnetdiag.probe.options import ProbeOptions as ProbeOptions
from gitnetdiag.probe.pathinfo import Endpoint, measure_paths, with_first_hops
from gitnetdiag.probe.pushonce import now_iso, push_once
from gitnetdiag.probe.repo import generate_repo, new_probe_id, pack_for_commit, salted_copy
from gitnetdiag.probe.safety import RedactingReporter, prepare_run, redact_run_files
from gitnetdiag.probe.tcpinfo import read_samples
from gitnetdiag.probe.versions import collect_versions
from gitnetdiag.proc import received_signal, scratch_dir, sigterm_interrupts
from gitnetdiag.redaction import SecretSet, redact_error, redact_text, redact_tree
from gitnetdiag.remoteurl import endpoint_of as endpoint_of
from gitnetdiag.rundir import (
    MANIFEST_NAME,
    SCHEMA,
    SWEEP_FILE,
    PathMeasurement,
    ProtocolRun,
    PushRecord,
    RepoInfo,
    RunError,
    RunManifest,
    ToolVersions,
    redact_url,
    write_manifest,
)
from gitnetdiag.rundir.records import ENDED_BY, EndedBy, RunStage, RunStatus
from gitnetdiag.safefile import full_disk_warning
from gitnetdiag.steps import step
from gitnetdiag.vocabulary import TransportKind


@dataclass(frozen=True, kw_only=True)
class ProbeOutcome:
    """A finished (or failed) probe run."""

    run_dir: Path
    """The run directory."""
    manifest: RunManifest
    """The manifest as last written."""
    error: GitnetdiagError | None
    """The first error that should make the command fail, after the summary."""


class _Run:
    """Mutable state of one run; ``save()`` writes the manifest."""

    def __init__(self, options: ProbeOptions, reporter: Reporter, secrets: SecretSet) -> None:
        self.options = options
        self.secrets = secrets  # a probe that obtains a credential adds it here
        self.reporter: Reporter = RedactingReporter(reporter, secrets)
        self.run_dir = options.out_dir
        self.run_id = new_probe_id()
        self.started_at = now_iso()
        self.finished_at: str | None = None
        self.status: RunStatus = "running"
        self.ended_by: EndedBy | None = None
        self.environment: ToolVersions | None = None
        self.repo_info: RepoInfo | None = None
        self.capture_enabled = False
        self.protocols: dict[TransportKind, ProtocolRun] = {}
        self.paths: list[PathMeasurement] = []
        self.errors: list[RunError] = []
        self.warnings: list[str] = []
        self.first_error: GitnetdiagError | None = None
        self.failed: set[TransportKind] = set()
        self.git_config: IsolatedConfig | None = None
        self.before_pushes: Callable[[], object] | None = None
        self.pack: bytes | None = None
        """The pack of the probe commit, made once (the native probes send it too)."""
        self.native_summary: NativeSummary = RawSummary()
        self.black_hole: str | None = None
        """The push whose kernel counters showed a path-MTU black hole (``h1 #1``): the
        pushes after it only confirm it (:func:`_confirming`)."""
        self.confirmed: set[TransportKind] = set()
        """Protocols pushed on the short confirming budget."""
        self.disk_full = False
        """A write of ``manifest.json`` met a full filesystem (warned once)."""
        self.prepared = Prepared()
        """What was made or measured before the run (:class:`Prepared`)."""

    def transport(self, protocol: TransportKind) -> Transport:
        """The protocol's transport, reading the run's isolated git config."""
        return replace(self.options.transport(protocol),
                       global_config=str(self.git_config.path) if self.git_config else None,
                       secret_config=self.git_config.secret_entries if self.git_config else ())

    def manifest(self) -> RunManifest:
        return redact_tree(RunManifest(
            schema=SCHEMA, tool_version=__version__, run_id=self.run_id,
            started_at=self.started_at, finished_at=self.finished_at, status=self.status,
            options=self.options.manifest_options(), environment=self.environment,
            repo=self.repo_info, capture_enabled=self.capture_enabled,
            protocols=tuple(self.protocols.values()), paths=tuple(self.paths),
            errors=tuple(self.errors), warnings=tuple(self.warnings), ended_by=self.ended_by,
        ), self.secrets)

    def save(self) -> RunManifest:
        """Write ``manifest.json``; on a full filesystem warn once and go on: the file keeps
        the run as of its last write."""
        manifest = self.manifest()
        try:
            write_manifest(self.run_dir, manifest)
        except (OSError, GitnetdiagError) as exc:
            warning = full_disk_warning(exc, self.run_dir, self.run_dir / MANIFEST_NAME)
            if not self.disk_full:
                self.disk_full = True
                self.warn(warning)
        return manifest

    def error(self, stage: RunStage, protocol: TransportKind | None, exc: GitnetdiagError,
              kind: FailureKind | None = None) -> None:
        redact_error(exc, self.secrets)
        self.errors.append(
            RunError(stage=stage, protocol=protocol.value if protocol else None,
                     reference=exc.reference, kind=kind, message=exc.message,
                     page=exc.page if isinstance(exc, AnsweredError) else "")
        )
        if self.first_error is None:
            self.first_error = exc

    def warn(self, message: str) -> None:
        self.warnings.append(redact_text(message, self.secrets))
        self.reporter.warn(message)


def run_probe(options: ProbeOptions, reporter: Reporter | None = None, *,
              before_pushes: Callable[[], object] | None = None,
              native_summary: NativeSummary | None = None,
              prepared: Prepared | None = None) -> ProbeOutcome:
    """Run the probe; returns the outcome (errors of single steps are inside it).

    ``before_pushes`` is called once the repository and paths are ready, right before
    the first push (the lab's host snapshot, taken meanwhile, is awaited there).
    ``native_summary`` words the progress line of the native pushes from their raw
    events (the command passes the pure side's replay; default: :class:`RawSummary`).
    ``prepared``: the repository and paths made and measured before (:class:`Prepared`).

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
    state = _Run(options, reporter or SilentReporter(), prepare_run(options))
    state.before_pushes = before_pushes
    state.native_summary = native_summary or RawSummary()
    state.prepared = prepared or Prepared()
    state.save()
    with scratch_dir("gitnetdiag-repo-") as scratch, sigterm_interrupts():
        try:
            _run_steps(state, Path(scratch))
            state.status = _final_status(state)
        except KeyboardInterrupt:
            state.status = "interrupted"
            state.ended_by = ENDED_BY.get((received_signal() or signal.SIGINT).name)
            state.finished_at = now_iso()
            state.save()
            raise
        except GitnetdiagError as exc:
            state.error("setup", None, exc)
            state.status = "failed"
        except OSError as exc:  # a full run directory stops the run, what it wrote stays
            state.warn(full_disk_warning(exc, state.run_dir))
            state.status = "failed"
        finally:
            if state.finished_at is None:
                state.finished_at = now_iso()
                state.save()
            failed = redact_run_files(state.run_dir, state.secrets)
            if failed:  # the manifest itself is redacted when built
                state.warn("could not remove secrets from: " + "; ".join(failed))
                state.save()
    return ProbeOutcome(run_dir=run_dir, manifest=state.manifest(), error=state.first_error)


def _final_status(state: _Run) -> RunStatus:
    """``failed`` on any error, else ``stalled`` when a push hung, else ``complete``.

    A hung push is measured (the stall is the evidence), yet the run did not
    complete: each such protocol gets a ``push-stalled`` error so that ``probe``
    exits non-zero and says why.
    """
    failed_before = bool(state.errors)
    for run in state.protocols.values():
        hung = [push for push in run.pushes if push.outcome in ("hung", "stalled")]
        if hung:
            stalled = any(push.outcome == "stalled" for push in hung)
            within = (state.options.stall_timeout_s if stalled and state.options.stall_timeout_s
                      else state.options.timeout_s)
            if stalled and TransportKind(run.protocol) in state.confirmed:
                within = _confirm_options(state).stall_timeout_s or within
            state.error("push", TransportKind(run.protocol), NetworkError(
                f"{run.url}: {len(hung)} of {len(run.pushes)} push(es) made no progress "
                f"{'for' if stalled else 'within'} {within:g} s"
                + stall_detail(hung[0], state.environment),
                hint="the stall is evidence, not noise: see it ranked with "
                "'gitnetdiag analyze RUN --diagnose'", reference="push-stalled",
            ), kind=FailureKind.HUNG)
    if failed_before:
        return "failed"
    return "stalled" if state.errors else "complete"


def _leg(state: _Run, protocol: TransportKind, repeat: int) -> tuple[str, int] | None:
    """Where the protocol's connection goes first; None (said once) when its first hop is an
    unrecognised proxy command: nothing to capture at, TCP_INFO of the push's own sockets."""
    hop = state.protocols[protocol].first_hop
    leg = leg_endpoint(hop, endpoint_of(state.options.urls[protocol]))
    if leg is None and repeat == 1 and hop is not None:
        state.warn(f"{protocol.value}: {unplaced_text(hop)}")
    return leg


def _run_steps(state: _Run, scratch: Path) -> None:
    options = state.options
    with step("pushes: versions, capture support, git config"):
        support = capture_support()
        state.capture_enabled = options.capture and support.available
        if options.capture and not support.available:
            state.warn(support.reason)
        state.environment = collect_versions()
        state.git_config = write_isolated_config(scratch / "gitconfig", options.repo)
    # The paths are measured while the repository is made: network waits beside CPU work.
    paths = _PathThread(state)
    paths.start()
    try:
        repo_path, oid = _repository(state, scratch)
    finally:
        paths.join()
    paths.report()
    pack_bytes = len(state.pack or b"")
    _skip_dead_ports(state, pack_bytes)
    if state.before_pushes is not None:
        state.before_pushes()

    for repeat in range(1, options.repeat + 1):
        for protocol in options.protocols:
            if protocol in state.failed:
                continue
            with _confirming(state, protocol):
                leg = _leg(state, protocol, repeat)  # the proxy's, else the server's
                record, interrupted = push_once(state, protocol, repeat, repo_path, oid,
                                                pack_bytes, leg)
            record = with_http2_frames(state.run_dir, protocol.value, record, state.warn)
            record = with_pack_check(state.run_dir, protocol.value, record, state.warn)
            _append_push(state, protocol, record)
            _look_for_black_hole(state, protocol, record)
            state.save()
            if interrupted:
                raise KeyboardInterrupt

    from gitnetdiag.probe.idleprobe import start_idle_probes
    idle_probes = start_idle_probes(list(state.protocols.values()) if options.native else [],
                                    options, state.run_dir, endpoint_of)
    if options.native and state.black_hole is None:
        native_ledgers(state, repo_path, oid)
        state.save()
    if options.native:
        body_step(state)
    if options.h2_sweep and state.black_hole is None and TransportKind.H2 not in state.failed:
        sweep_step(state, repo_path, oid)
        state.save()
    idle_probes(state.reporter)  # silent connections held beside the probes above

    if options.burst > 0:
        for protocol in options.protocols:
            if protocol in state.failed:
                continue
            _burst(state, protocol, repo_path)
            state.save()


def _skip_dead_ports(state: _Run, pack_bytes: int) -> None:
    """Each protocol whose port the path check found dead: one failed push recorded, its
    error, and no git run (:mod:`gitnetdiag.probe.deadpath`)."""
    endpoints = {p.value: run.endpoint for p, run in state.protocols.items()}
    for name, path in dead_by_protocol(endpoints, state.paths).items():
        protocol = TransportKind(name)
        record = skipped_push(name, path, now_iso(), pack_bytes)
        _append_push(state, protocol, record)
        state.failed.add(protocol)
        state.error("push", protocol, dead_error(state.protocols[protocol].url, path),
                    kind=record.failure_kind)
    state.save()


def _look_for_black_hole(state: _Run, protocol: TransportKind, record: PushRecord) -> None:
    """After a stalled push: do its connections' counters show a path-MTU black hole?"""
    if state.black_hole is not None or record.outcome != "stalled":
        return
    tcpinfo = record.artifacts.get("tcpinfo")
    if tcpinfo is None or not swallowed_full_size(read_samples(state.run_dir / tcpinfo)):
        return
    state.black_hole = f"{protocol.value} #{record.repeat}"
    skipped = ", the native ledgers skipped" if state.options.native else ""
    state.warn(
        f"push {state.black_hole}: full-size segments were resent and never acknowledged "
        "after smaller ones got through (a path-MTU black hole): the next pushes only "
        f"confirm it, each ended after {_confirm_options(state).stall_timeout_s:g} s without "
        f"progress{skipped}"
    )


def _confirm_options(state: _Run) -> ProbeOptions:
    rtt = max((p.connect_rtt_min_s or 0.0 for p in state.paths), default=0.0)
    return state.options.confirming(rtt)


@contextlib.contextmanager
def _confirming(state: _Run, protocol: TransportKind) -> Iterator[None]:
    """Run the block with the confirming options once a black hole is known."""
    if state.black_hole is None:
        yield
        return
    asked = state.options
    state.options = _confirm_options(state)
    state.confirmed.add(protocol)
    try:
        yield
    finally:
        state.options = asked


@dataclass(frozen=True, kw_only=True)
class PreparedRepo:
    """The probe repository, made before the run (:func:`prepare_repository`)."""

    path: Path
    oid: str
    pack: bytes
    info: RepoInfo


@dataclass(frozen=True, kw_only=True)
class Prepared:
    """What a run may take as made or measured before it (``--direction both``: while the
    clones' evidence was collected, and their paths): the pushes start at once."""

    repo: Callable[[], PreparedRepo] | None = None
    """The repository (awaited where the run would make it)."""
    paths: tuple[PathMeasurement, ...] = ()
    """Paths measured just before, by endpoint (each endpoint not among them is measured)."""


def prepare_repository(options: ProbeOptions, scratch: Path) -> PreparedRepo:
    """Make (or salt) the probe repository under ``scratch`` and its pack (CPU and disk
    only, nothing on the path)."""
    if options.repo is not None:
        # The server may hold this history already (the usual case): pushing it would
        # send nothing. Its HEAD tree, every blob salted, sends what it really weighs.
        salted = salted_copy(options.repo, scratch / "salted")
        repo_path, oid, source_oid = salted.path, salted.head_oid, salted.source_oid
        generated = False
    else:
        generated_repo = generate_repo(scratch / "repo", options.size_bytes, options.seed,
                                       options.data)
        repo_path, oid, generated = generated_repo.path, generated_repo.head_oid, True
        source_oid = None
    pack = pack_for_commit(repo_path, oid)
    return PreparedRepo(path=repo_path, oid=oid, pack=pack, info=RepoInfo(
        generated=generated, seed=options.seed if generated else None,
        size_bytes=options.size_bytes if generated else None, head_oid=oid,
        pack_bytes=len(pack), source_oid=source_oid,
    ))


def _repository(state: _Run, scratch: Path) -> tuple[Path, str]:
    """Make (or salt) the probe repository and its pack, or take the one prepared; the
    path and commit pushed."""
    state.reporter.begin("repository")
    made = state.prepared.repo() if state.prepared.repo is not None \
        else prepare_repository(state.options, scratch)
    state.pack, state.repo_info = made.pack, made.info
    state.reporter.done("repository", f"{made.oid[:12]}, pack {len(made.pack) / 2**20:.1f} MiB",
                        ok=True)
    state.save()
    return made.path, made.oid


PATH_ATTEMPTS = 10
"""Connects per path: beside the repository's CPU work single connects come out a few ms
late (52.7 ms against 50.5 ms measured alone, of 5); the RTT is their minimum, so twice
as many keep it honest, at no cost (the repository takes longer)."""


class _PathThread(threading.Thread):
    """Measures each endpoint's path once (connects only); :meth:`report` records them in
    the main thread, in the protocols' order."""

    def __init__(self, state: _Run) -> None:
        super().__init__(name="gitnetdiag-paths", daemon=True)
        self.state = state
        self.endpoints: list[tuple[str, int, str]] = []
        self.servers: dict[str, tuple[str, int]] = {}
        for protocol in state.options.protocols:
            url = state.options.urls[protocol]
            host, port = endpoint_of(url)
            self.servers[protocol.value] = (host, port)
            state.protocols[protocol] = ProtocolRun(
                protocol=protocol.value, url=redact_url(url), endpoint=f"{host}:{port}"
            )
            if all((host, port) != (h, p) for h, p, _ in self.endpoints):
                self.endpoints.append((host, port, url))
        self.measured: list[PathMeasurement] = []
        self.hops: list[FirstHop] = []

    def run(self) -> None:
        known = {p.endpoint: p for p in self.state.prepared.paths}
        if self.endpoints and all(f"{h}:{p}" in known for h, p, _ in self.endpoints):
            # Measured just before on the same endpoints (the clones of a both run).
            self.hops = self._hops()
            self.measured = [known[f"{h}:{p}"] for h, p, _ in self.endpoints] + [
                p for p in self.state.prepared.paths if p.first_hop_of]
        else:
            with step("paths (beside the repository)"):
                self._measure()
        if self.state.options.native:  # their libraries (paramiko) load here, not between
            import gitnetdiag.probe.sshnative  # noqa: F401  # the probes

    def _hops(self) -> list[FirstHop]:
        options = self.state.options
        return [first_hop(protocol.value, options.urls[protocol], options.ssh_command)
                for protocol in options.protocols]

    def _measure(self) -> None:
        options = self.state.options
        self.hops = self._hops()
        # A proxied protocol's leg to its proxy too: its connections go there.
        self.measured = measure_paths(with_first_hops(
            [Endpoint(host=host, port=port, tls=url.startswith("https://"))
             for host, port, url in self.endpoints], self.hops, self.servers),
            ca_file=options.ca_file, insecure=options.insecure, attempts=PATH_ATTEMPTS)

    def report(self) -> None:
        for protocol, hop in zip(self.state.options.protocols, self.hops, strict=False):
            self.state.protocols[protocol] = replace(self.state.protocols[protocol],
                                                     first_hop=hop)
        tls = {f"{h}:{p}" for h, p, url in self.endpoints if url.startswith("https://")}
        for path in self.measured:
            label = path_label(path.endpoint, path.first_hop_of)
            self.state.reporter.begin(label)
            self.state.paths.append(path)
            detail = (path_line(path) if path.reach not in (None, "open") else path.error) or (
                f"rtt {1000 * (path.connect_rtt_min_s or 0):.1f} ms, mss {path.mss_bytes}"
                + (f", alpn {path.alpn}" if path.endpoint in tls and not path.first_hop_of
                   else "")
            )
            self.state.reporter.done(label, detail, ok=path.error is None)
        self.state.save()


def _append_push(state: _Run, protocol: TransportKind, record: PushRecord) -> None:
    run = state.protocols[protocol]
    state.protocols[protocol] = replace(run, pushes=(*run.pushes, record))


SWEEP_ARTIFACT = SWEEP_FILE


def _burst(state: _Run, protocol: TransportKind, repo_path: Path) -> None:
    options = state.options
    transport = state.transport(protocol)
    result = run_burst(transport, endpoint_of(transport.url), protocol.value, options.burst,
                       timeout_s=options.timeout_s, run_dir=state.run_dir,
                       capture=state.capture_enabled, reporter=state.reporter,
                       on_capture_error=lambda exc: state.error("capture", protocol, exc))
    state.protocols[protocol] = replace(state.protocols[protocol], burst=result)
