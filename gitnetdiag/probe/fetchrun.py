"""``gitnetdiag probe --direction fetch``: the same clone over each protocol, read-only.

Order of a run: collect versions, write the isolated git config, measure each
endpoint's path (connects only), then for each repeat clone once per protocol
(interleaved, as pushes are) with :func:`gitnetdiag.probe.fetchonce.fetch_once`, then
the native downloads (beside them, after a clone that asked for its pack and heard
nothing, the idle probe, :mod:`gitnetdiag.probe.idleprobe`) and, with ``--burst N``, each
protocol's burst of ls-remotes.
``fetch.json`` is rewritten after every step; secrets are removed from every
file of the run directory at the end. Nothing is ever written on the server:
no push, no ref update, only upload-pack's reads.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from gitnetdiag import __version__
from gitnetdiag.errors import AnsweredError, GitnetdiagError, NetworkError, UsageError
from gitnetdiag.hops import leg_endpoint, native_ssh_note, unplaced_text
from gitnetdiag.outcomes import MEASURED_OUTCOMES, FailureKind
from gitnetdiag.probe.budget import native_download_budget
from gitnetdiag.probe.burst import run_burst
from gitnetdiag.probe.capture import capture_support
from gitnetdiag.probe.deadpath import dead_by_protocol, path_label, path_line, skipped_clone
from gitnetdiag.probe.fetchonce import fetch_once
from gitnetdiag.probe.fetchseed import remove_seed, seed_branch, seed_errors, seed_repository
from gitnetdiag.probe.firsthop import first_hop
from gitnetdiag.probe.gitconfig import IsolatedConfig, write_isolated_config
from gitnetdiag.probe.gitpush import GitInterrupted, Transport
from gitnetdiag.probe.options import ProbeOptions, Reporter, SilentReporter
from gitnetdiag.probe.pathinfo import Endpoint, measure_paths, path_rtt, with_first_hops
from gitnetdiag.probe.pushonce import now_iso
from gitnetdiag.probe.repo import GeneratedRepo, new_probe_id
from gitnetdiag.probe.runner import PATH_ATTEMPTS
from gitnetdiag.probe.safety import RedactingReporter, prepare_run, redact_run_files
from gitnetdiag.probe.versions import collect_versions
from gitnetdiag.proc import scratch_dir, sigterm_interrupts
from gitnetdiag.redaction import SecretSet, redact_error, redact_text, redact_tree
from gitnetdiag.remoteurl import endpoint_of
from gitnetdiag.rundir import PathMeasurement, RunError, ToolVersions, redact_url
from gitnetdiag.rundir.failures import failure_hint
from gitnetdiag.rundir.files import FETCH_FILE
from gitnetdiag.rundir.ledgers import H2CreditLedger, SshCreditLedger
from gitnetdiag.rundir.manifest import (
    FETCH_SCHEMA,
    CloneProtocolRun,
    FetchManifest,
    write_manifest,
)
from gitnetdiag.rundir.records import CloneRecord, RunStage, RunStatus, SeedBranch
from gitnetdiag.safefile import full_disk_warning
from gitnetdiag.steps import step
from gitnetdiag.vocabulary import TransportKind


@dataclass(frozen=True, kw_only=True)
class FetchOutcome:
    """A finished (or failed) fetch run."""

    run_dir: Path
    """The run directory."""
    manifest: FetchManifest
    """``fetch.json`` as last written."""
    error: GitnetdiagError | None
    """The first error that should make the command fail, after the summary."""
    disk_full: bool = False
    """The run directory's filesystem filled up: ``fetch.json`` holds an earlier state than
    :attr:`manifest`."""


@dataclass(frozen=True, kw_only=True)
class FetchHooks:
    """What the caller runs at a fetch run's turns, beside what moves nothing measured."""

    before_clones: Callable[[], object] | None = None
    """Called once the paths are measured, before the seed push and the first clone
    (the lab's host snapshot, taken meanwhile, is awaited there)."""
    beside_clones: Callable[[], object] | None = None
    """Called in a thread as the first clone starts: work that moves nothing on the path
    (CPU and disk: the next repository, the report's libraries), beside git's clones; awaited
    after the last clone, before the native downloads (this process's own reads)."""
    after_clones: Callable[[], object] | None = None
    """Called once the last byte was measured (clones, native downloads, bursts): in a
    thread beside the seed's clean-up, else at the end (:func:`_after_clones`)."""


class _FetchRun:
    """Mutable state of one fetch run; ``save()`` writes ``fetch.json``."""

    def __init__(self, options: ProbeOptions, reporter: Reporter, secrets: SecretSet) -> None:
        self.options = options
        self.secrets = secrets
        self.reporter: Reporter = RedactingReporter(reporter, secrets)
        self.run_dir = options.out_dir
        self.run_id = new_probe_id()
        self.started_at = now_iso()
        self.finished_at: str | None = None
        self.status: RunStatus = "running"
        self.environment: ToolVersions | None = None
        self.git_config: IsolatedConfig | None = None
        self.protocols: dict[TransportKind, CloneProtocolRun] = {}
        self.paths: list[PathMeasurement] = []
        self.errors: list[RunError] = []
        self.warnings: list[str] = []
        self.first_error: GitnetdiagError | None = None
        self.client_tcp_rmem: tuple[int, ...] | None = None
        self.seed: SeedBranch | None = None
        self.h2_downloads: list[H2CreditLedger] = []
        self.ssh_downloads: list[SshCreditLedger] = []
        self.branch: str | None = None
        self.capture_enabled = False
        self.disk_full = False
        """A write of ``fetch.json`` met a full filesystem (warned once)."""
        self.before_clones: Callable[[], object] | None = None
        """:attr:`FetchHooks.before_clones`."""
        self.after_clones: Callable[[], object] | None = None
        """:attr:`FetchHooks.after_clones` (called once, then None)."""
        self.beside_clones: Callable[[], object] | None = None
        """:attr:`FetchHooks.beside_clones` (started once, then None)."""
        self.beside_running: _Beside | None = None
        """:attr:`beside_clones` started, until :func:`_after_clones` awaits it."""

    def transport(self, protocol: TransportKind) -> Transport:
        return replace(self.options.transport(protocol),
                       global_config=str(self.git_config.path) if self.git_config else None,
                       secret_config=self.git_config.secret_entries if self.git_config else ())

    def manifest(self) -> FetchManifest:
        return redact_tree(FetchManifest(
            schema=FETCH_SCHEMA, direction="fetch", tool_version=__version__,
            run_id=self.run_id, started_at=self.started_at, finished_at=self.finished_at,
            status=self.status,
            options={**self.options.manifest_options(), "direction": "fetch",
                     **_server_vantage(self.options)},
            environment=self.environment, protocols=tuple(self.protocols.values()),
            paths=tuple(self.paths), errors=tuple(self.errors), warnings=tuple(self.warnings),
            client_tcp_rmem=self.client_tcp_rmem, seed=self.seed,
            h2_downloads=tuple(self.h2_downloads), ssh_downloads=tuple(self.ssh_downloads),
        ), self.secrets)

    def save(self) -> FetchManifest:
        """Write ``fetch.json``; on a full filesystem warn once and go on: the file keeps the
        run as of its last write (as the push's manifest does)."""
        manifest = self.manifest()
        try:
            write_manifest(self.run_dir, manifest)
        except (OSError, GitnetdiagError) as exc:
            warning = full_disk_warning(exc, self.run_dir, self.run_dir / FETCH_FILE)
            if not self.disk_full:
                self.disk_full = True
                self.warn(warning)
        return manifest

    def warn(self, message: str) -> None:
        self.warnings.append(redact_text(message, self.secrets))
        self.reporter.warn(message)

    def error(self, stage: RunStage, protocol: TransportKind | None, exc: GitnetdiagError,
              kind: FailureKind | None = None) -> None:
        redact_error(exc, self.secrets)
        self.errors.append(RunError(stage=stage, protocol=protocol.value if protocol else None,
                                    reference=exc.reference, kind=kind, message=exc.message,
                                    page=exc.page if isinstance(exc, AnsweredError) else ""))
        if self.first_error is None:
            self.first_error = exc

    def append(self, protocol: TransportKind, record: CloneRecord) -> None:
        run = self.protocols[protocol]
        self.protocols[protocol] = replace(run, fetches=(*run.fetches, record))
        if record.outcome not in MEASURED_OUTCOMES:
            self.error("fetch", protocol, _fetch_error(run.url, record), record.failure_kind)
        if not record.clone_removed:
            self.error("cleanup", protocol, NetworkError(
                f"the partial clone of {run.url} could not be removed",
                hint="remove the gitnetdiag-clone-* directory under the temporary directory",
                reference="clone-left"))


def _server_vantage(options: ProbeOptions) -> dict[str, str]:
    """Where the server's sockets were sampled, when it runs on this machine."""
    if options.server_netns:
        return {"server_tcpinfo": f"netns {options.server_netns}"}
    return {"server_tcpinfo": "this host"} if options.server_local else {}


def _fetch_error(url: str, record: CloneRecord) -> GitnetdiagError:
    what = record.last_line or record.last_progress or record.outcome
    hint = failure_hint(record.failure_kind or "other", what, transfer="download") \
        if record.outcome == "failed" else ""
    return NetworkError(f"{url}: fetch {record.outcome}: {what}",
                        hint=hint or "see the fetch's stderr file in the run directory",
                        reference=f"fetch-{record.outcome}")


def run_fetch_probe(options: ProbeOptions, reporter: Reporter | None = None,
                    hooks: FetchHooks | None = None) -> FetchOutcome:
    """Clone over each protocol, bounded, and remove each clone (see the module doc).
    ``hooks``: what the caller runs at the run's turns (:class:`FetchHooks`).

    Raises GitnetdiagError only for problems that stop the whole run; Ctrl-C
    propagates after a final ``fetch.json`` with status ``interrupted``.
    """
    if not options.protocols:
        raise UsageError("no protocol to fetch over", hint="give --http, --ssh or --git")
    state = _FetchRun(options, reporter or SilentReporter(), prepare_run(options))
    hooks = hooks or FetchHooks()
    state.before_clones = hooks.before_clones
    state.after_clones = hooks.after_clones
    state.beside_clones = hooks.beside_clones
    state.save()
    with scratch_dir("gitnetdiag-fetch-") as scratch, \
            sigterm_interrupts():
        try:
            _steps(state, Path(scratch))
            state.status = "failed" if state.errors else "complete"
        except KeyboardInterrupt:
            state.status = "interrupted"
            raise
        except GitnetdiagError as exc:
            state.error("setup", None, exc)
            state.status = "failed"
        except OSError as exc:  # a full run directory stops the run, what it wrote stays
            state.warn(full_disk_warning(exc, state.run_dir))
            state.status = "failed"
        finally:
            state.finished_at = now_iso()
            state.save()
            failed = redact_run_files(state.run_dir, state.secrets)
            if failed:
                state.warnings.append(redact_text(
                    "could not remove secrets from: " + "; ".join(failed), state.secrets))
                state.save()
    return FetchOutcome(run_dir=state.run_dir, manifest=state.manifest(),
                        error=state.first_error, disk_full=state.disk_full)


TCP_RMEM = Path("/proc/sys/net/ipv4/tcp_rmem")


def read_tcp_rmem(path: Path = TCP_RMEM) -> tuple[int, ...] | None:
    """This host's (this namespace's) ``net.ipv4.tcp_rmem``; any user may read it."""
    try:
        values = tuple(int(part) for part in path.read_text().split())
    except (OSError, ValueError):
        return None
    return values if len(values) == 3 else None


def _steps(state: _FetchRun, scratch: Path) -> None:
    options = state.options
    # The seed's repository is made while the paths are measured: CPU beside network waits
    # (as the push's repository), before anything moves on the path.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="gitnetdiag-seed") as beside:
        repo = beside.submit(_seed_repository, options, scratch) \
            if options.fetch_seed_bytes else None
        dead = _setup(state, scratch)
    if state.before_clones is not None:
        state.before_clones()
    if repo is not None and options.fetch_seed_bytes:
        _seeded(state, scratch, options.fetch_seed_bytes, dead, repo)
    else:
        _fetch_all(state, dead)
    _after_clones(state).join()


class _Beside(threading.Thread):
    """:attr:`_FetchRun.after_clones` run once, in a thread; :meth:`join` re-raises its
    error."""

    def __init__(self, work: Callable[[], object] | None,
                 name: str = "gitnetdiag-after-clones") -> None:
        super().__init__(name=name, daemon=True)
        self.work = work
        self.failed: BaseException | None = None

    def run(self) -> None:
        try:
            if self.work is not None:
                self.work()
        except BaseException as exc:  # re-raised in the caller's thread by join()
            self.failed = exc

    def join(self, timeout: float | None = None) -> None:
        if self.ident is not None:  # started
            super().join(timeout)
        if self.failed is not None:
            failed, self.failed = self.failed, None
            raise failed


def _after_clones(state: _FetchRun) -> _Beside:
    """Start :attr:`_FetchRun.after_clones` (once per run; later calls start nothing), once
    the work beside the clones is done."""
    work, running = state.after_clones, state.beside_running
    state.after_clones = state.beside_running = None

    def after() -> None:
        if running is not None:
            running.join()
        if work is not None:
            work()

    beside = _Beside(after if work is not None or running is not None else None)
    if beside.work is not None:
        beside.start()
    return beside


def _await_beside(state: _FetchRun) -> None:
    """Wait for :attr:`_FetchRun.beside_clones` (started by :func:`_beside_clones`); its
    error is raised here."""
    running, state.beside_running = state.beside_running, None
    if running is not None:
        running.join()


def _beside_clones(state: _FetchRun) -> None:
    """Start :attr:`_FetchRun.beside_clones` in a thread (once per run), and the native
    downloads' libraries (h2, paramiko: 0.2-0.3 s each) loaded there too."""
    work, options = state.beside_clones, state.options
    state.beside_clones = None
    natives = options.native and bool({TransportKind.H2, TransportKind.SSH}
                                      & set(options.protocols))
    if work is None and not natives:
        return

    def beside() -> None:
        if work is not None:
            work()
        if natives:
            with step("native downloads' libraries (beside the clones)"):
                _load_native_libraries(options.protocols)

    # At the process's own priority: at nice 10 this work starved on a busy machine and the
    # native downloads, which wait for it, started late (a 0.6 s clone's diagnosis took 41 s
    # beside six CPU-bound processes, 11 s at nice 0; 2026-12-02).
    state.beside_running = _Beside(beside, name="gitnetdiag-beside-clones")
    state.beside_running.start()


def _load_native_libraries(protocols: tuple[TransportKind, ...]) -> None:
    """Import what the native downloads run on, ahead of them."""
    if TransportKind.H2 in protocols:
        import gitnetdiag.probe.credentials
        import gitnetdiag.probe.fetchh2
    if TransportKind.SSH in protocols:
        import gitnetdiag.probe.sshfetch  # noqa: F401


def _seed_repository(options: ProbeOptions, scratch: Path) -> GeneratedRepo:
    with step("seed repository (beside the paths)"):
        return seed_repository(scratch, options.fetch_seed_bytes or 0, options.seed)


def _setup(state: _FetchRun, scratch: Path) -> set[TransportKind]:
    """Versions, the isolated config, each protocol's first hop and every endpoint's path;
    the protocols whose port is dead."""
    options = state.options
    with step("clones: versions, capture support, git config"):
        state.environment = collect_versions()
        state.client_tcp_rmem = read_tcp_rmem()
        state.capture_enabled = options.capture and capture_support().available
        state.git_config = write_isolated_config(scratch / "gitconfig", options.repo)
    endpoints: dict[tuple[str, int], Endpoint] = {}
    servers: dict[str, tuple[str, int]] = {}
    for protocol in options.protocols:
        url = options.urls[protocol]
        host, port = endpoint_of(url)
        state.protocols[protocol] = CloneProtocolRun(
            protocol=protocol.value, url=redact_url(url), endpoint=f"{host}:{port}",
            first_hop=first_hop(protocol.value, url, options.ssh_command))
        endpoints.setdefault((host, port), Endpoint(host=host, port=port,
                                                    tls=url.startswith("https://")))
        servers[protocol.value] = (host, port)
    # A proxied protocol's leg to its proxy too: its connections go there, not to the server.
    checks = with_first_hops(list(endpoints.values()), [
        run.first_hop for run in state.protocols.values() if run.first_hop is not None], servers)
    for endpoint in checks:
        state.reporter.begin(path_label(f"{endpoint.host}:{endpoint.port}", endpoint.first_hop_of))
    # Every endpoint at once: a dead port's bounded wait beside the others' connects.
    with step("paths"):
        state.paths = measure_paths(checks, ca_file=options.ca_file,
                                    insecure=options.insecure, attempts=PATH_ATTEMPTS)
    for path in state.paths:
        checked = path.reach not in (None, "open")
        state.reporter.done(path_label(path.endpoint, path.first_hop_of),
                            (path_line(path) if checked else path.error)
                            or f"rtt {1000 * (path.connect_rtt_min_s or 0):.1f} ms",
                            ok=path.error is None)
    dead = _skip_dead_ports(state)
    state.save()
    return dead


def _skip_dead_ports(state: _FetchRun) -> set[TransportKind]:
    """Each protocol whose port the path check found dead: one failed clone recorded (its
    error with it) and no git run (:mod:`gitnetdiag.probe.deadpath`)."""
    endpoints = {p.value: run.endpoint for p, run in state.protocols.items()}
    dead = dead_by_protocol(endpoints, state.paths)
    for name, path in dead.items():
        state.append(TransportKind(name), skipped_clone(name, path, now_iso(), time.time()))
    return {TransportKind(name) for name in dead}


def _fetch_all(state: _FetchRun, dead: set[TransportKind]) -> None:
    options = state.options
    failed: set[TransportKind] = set(dead)
    _beside_clones(state)  # off the path: beside git's clones, before the native downloads
    for repeat in range(1, options.repeat + 1):
        for protocol in options.protocols:
            if protocol in failed:
                continue
            try:
                hop = state.protocols[protocol].first_hop
                leg = leg_endpoint(hop, endpoint_of(options.urls[protocol]))
                if leg is None and repeat == 1 and hop is not None:
                    state.warnings.append(f"{protocol.value}: {unplaced_text(hop)}")
                host, port = leg or (None, 0)  # unplaced: not captured, the clone's sockets
                record = fetch_once(state, protocol, repeat, port, host)
            except GitInterrupted:
                state.status = "interrupted"
                raise
            state.append(protocol, record)
            if record.outcome == "failed":
                failed.add(protocol)
            state.save()
    # The work beside git's clones is done before this process reads a native download.
    _await_beside(state)
    from gitnetdiag.probe.idleprobe import start_clone_idle_probes
    # A clone that asked for its pack and heard nothing: is the path still there? The
    # silent connections are held beside the native downloads.
    idle_probes = start_clone_idle_probes(list(state.protocols.values()) if options.native
                                          else [], options, state.run_dir, endpoint_of)
    if options.native and TransportKind.H2 in options.protocols and TransportKind.H2 not in failed:
        _h2_ledgers(state)
    elif options.native and TransportKind.H2 in failed - dead and _refused(state):
        _h2_refs_answer(state)
    if options.native and TransportKind.SSH in options.protocols \
            and TransportKind.SSH not in failed:
        _ssh_ledger(state)
    idle_probes(state.reporter)
    if options.burst > 0:
        _bursts(state, failed)


def _bursts(state: _FetchRun, failed: set[TransportKind]) -> None:
    """``--burst N`` after the clones: per protocol, N ls-remotes at once then N raw connects
    (what a clone's first step meets under load: a short listen backlog, MaxStartups).
    Read-only; a failed operation is a finding, not an error of the run."""
    options = state.options
    for protocol in options.protocols:
        if protocol in failed:
            continue
        transport = state.transport(protocol)

        def capture_error(exc: GitnetdiagError, protocol: TransportKind = protocol) -> None:
            state.error("capture", protocol, exc)

        record = run_burst(transport, endpoint_of(transport.url), protocol.value, options.burst,
                           timeout_s=options.timeout_s, run_dir=state.run_dir,
                           capture=state.capture_enabled, reporter=state.reporter,
                           on_capture_error=capture_error)
        state.protocols[protocol] = replace(state.protocols[protocol], burst=record)
        state.save()


def _ledger_done(state: _FetchRun, name: str, record: SshCreditLedger | H2CreditLedger,
                 what: str) -> None:
    """Report a native download's end (its error, or outcome, size and rate), warn of a
    failed one as ``what``, and save the run."""
    state.reporter.done(name, record.error or f"{record.outcome}, "
                        f"{record.received_bytes / 2**20:.1f} MiB, "
                        f"{(record.rate_bytes_per_s or 0) / 2**20:.2f} MiB/s",
                        ok=record.outcome in ("ok", "bounded"))
    if record.outcome == "failed":
        state.warnings.append(f"{what}: {record.error}")
    state.save()


def _ssh_ledger(state: _FetchRun) -> None:
    """The native SSH download: the channel window this client grants, the server's pacing."""
    from gitnetdiag.probe.sshfetch import ssh_download

    options = state.options
    name = "native ssh download"
    run = state.protocols.get(TransportKind.SSH)
    if note := native_ssh_note(run.first_hop if run else None, "native SSH download"):
        state.warnings.append(note)
    state.reporter.begin(name)
    url = options.urls[TransportKind.SSH]
    record = ssh_download(url, key_file=options.ssh_key,
                          known_hosts=options.ssh_known_hosts, branch=state.branch,
                          budget_s=native_download_budget(options.budget_s,
                                                          path_rtt(state.paths, url)),
                          stall_timeout_s=options.stall_timeout_s, timeout_s=options.timeout_s,
                          first_hop=run.first_hop if run else None)
    state.ssh_downloads.append(record)
    _ledger_done(state, name, record, "native SSH download")


def _refused(state: _FetchRun) -> bool:
    """The HTTP/2 clone failed with an HTTP status (git's words keep no page)."""
    run = state.protocols.get(TransportKind.H2)
    return run is not None and any(r.failure_kind == "http-status" for r in run.fetches)


def _h2_refs_answer(state: _FetchRun) -> None:
    """The native download's first request alone, once, when the HTTP/2 clones failed with
    an HTTP status: its answer's status and page (who answered) become a native error of
    the run; the ledgers are not tried."""
    from gitnetdiag.probe.credentials import http_access
    from gitnetdiag.probe.fetchh2 import refs_answer

    options = state.options
    url = options.urls[TransportKind.H2]
    name = "native h2 GET info/refs"
    state.reporter.begin(name)
    try:
        refs_answer(url, access=http_access(url, ca_file=options.ca_file,
                                            verify=False if options.insecure else None),
                    timeout_s=options.timeout_s)
    except GitnetdiagError as exc:
        state.error("native", TransportKind.H2, exc)
        state.reporter.done(name, exc.message, ok=False)
    else:
        state.reporter.done(name, "answered 200", ok=True)
    state.save()


def _h2_ledgers(state: _FetchRun) -> None:
    """The native HTTP/2 download under each window of ``DOWNLOAD_WINDOWS``, side by side."""
    from gitnetdiag.probe.credentials import http_access
    from gitnetdiag.probe.fetchh2 import DOWNLOAD_WINDOWS, h2_download

    options = state.options
    url = options.urls[TransportKind.H2]
    access = http_access(url, ca_file=options.ca_file,
                         verify=False if options.insecure else None)
    budget = native_download_budget(options.budget_s, path_rtt(state.paths, url))
    for label, window in DOWNLOAD_WINDOWS:
        name = f"native h2 download, {label} window"
        state.reporter.begin(name)
        record = h2_download(url, access=access, label=label, window_bytes=window,
                             branch=state.branch, budget_s=budget,
                             stall_timeout_s=options.stall_timeout_s,
                             timeout_s=options.timeout_s)
        state.h2_downloads.append(record)
        _ledger_done(state, name, record, f"native HTTP/2 download ({label} window)")


def _seeded(state: _FetchRun, scratch: Path, size_bytes: int, dead: set[TransportKind],
            repo: Future[GeneratedRepo]) -> None:
    """Push the seed branch (its repository ``repo``, made beside the paths) over a live
    protocol, fetch it over each, delete it whatever happened (no live protocol: nothing
    is pushed)."""
    options = state.options
    transports = {protocol: state.transport(protocol) for protocol in options.protocols
                  if protocol not in dead}
    if not transports:
        return

    def note(record: SeedBranch) -> None:
        state.seed = record
        state.save()

    try:
        state.reporter.begin("seed branch")
        seed = seed_branch(tuple(transports.values()), scratch, probe_id=state.run_id,
                           size_bytes=size_bytes, seed=options.seed,
                           timeout_s=options.timeout_s, note=note, repo=repo.result())
        state.reporter.done("seed branch", f"{seed.branch} over {seed.protocol}, "
                            f"{seed.push_wall_s or 0:.1f} s" if seed.pushed else
                            f"push failed: {seed.push_error}", ok=seed.pushed)
        if seed.pushed:
            state.branch = seed.branch
            _fetch_all(state, dead)
    finally:
        # Nothing is measured any more: the server's evidence is collected meanwhile.
        beside = _after_clones(state) if state.seed is not None \
            and sys.exc_info()[0] is None else None
        if state.seed is not None:
            state.reporter.begin("seed clean-up")
            state.seed = remove_seed(state.seed, transports, scratch,
                                     wait_s=options.cleanup_wait_s)
            problems = seed_errors(state.seed)
            for stage, exc in problems:
                state.error(stage, None, exc)
            state.reporter.done("seed clean-up", f"{state.seed.cleanup}, gone on the server: "
                                f"{state.seed.gone_on_server}", ok=not problems)
            state.save()
        if beside is not None:
            beside.join()
