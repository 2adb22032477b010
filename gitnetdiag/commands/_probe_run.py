"""What ``gitnetdiag probe`` and ``diagnose`` do once their options are read.

:class:`ProbeArgs` is the command line as one value; :func:`run_probe_command` turns it
into :class:`~gitnetdiag.probe.options.ProbeOptions`, runs the pushes (and, against the
lab, the server's evidence in the background), prints the summary and, with
``--diagnose``, the ranked diagnosis.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from gitnetdiag.commands._bundle import bundle_run, check_new_bundle
from gitnetdiag.commands._diagnosis import print_diagnosis
from gitnetdiag.commands._options import ReportFormat
from gitnetdiag.commands._output import is_stdout, write_output
from gitnetdiag.commands._preflight import (
    check_private_key,
    existing,
    parse_protocols,
    preflight,
)
from gitnetdiag.commands._reporter import RichReporter
from gitnetdiag.commands.fetch import (
    MeasuredRun,
    TransferDirection,
    fetch_exit_error,
    fetch_seed_bytes,
    measure_fetch,
    print_fetch_report,
    render_fetch,
)
from gitnetdiag.errors import GitnetdiagError, UsageError
from gitnetdiag.lab.cgroups import in_cgroup
from gitnetdiag.lab.netns import enter_lab_client
from gitnetdiag.model.lab.state import LabState
from gitnetdiag.probe.gitremote import (
    DEFAULT_REMOTE,
    ResolvedRemote,
    in_checkout,
    push_refused,
    resolve_remote,
)
from gitnetdiag.probe.labremote import LabHttp, lab_remote, ssh_command
from gitnetdiag.probe.options import ProbeOptions
from gitnetdiag.probe.repo import DATA_KINDS, check_generated_size
from gitnetdiag.probe.runner import (
    SWEEP_ARTIFACT,
    Prepared,
    PreparedRepo,
    ProbeOutcome,
    prepare_repository,
    run_probe,
)
from gitnetdiag.proc import run, scratch_dir
from gitnetdiag.remoteurl import check_url
from gitnetdiag.report.probe import render_clone_summary, render_probe_summary, render_sweep
from gitnetdiag.rundir import HOST_REPORT_FILE, STORAGE_REPORT_FILE, to_jsonable
from gitnetdiag.rundir.both import BOTH_OPTION, fetch_run_dir
from gitnetdiag.safefile import write_new_file
from gitnetdiag.steps import started, step
from gitnetdiag.vocabulary import TransportKind, parse_size


@dataclass(frozen=True, kw_only=True)
class ProbeArgs:
    """The options of ``probe``/``diagnose`` as given (names as the command's parameters;
    see ``gitnetdiag probe --help`` for each)."""

    remote: str | None = None
    """``diagnose [REMOTE]``: a remote name of the checkout in the working directory, or
    a URL; None: ``origin`` when in a checkout and no URL option was given."""
    http: str | None
    ssh: str | None
    git: str | None
    protocols: str | None
    size: str
    seed: int | None
    data: str
    repo: Path | None
    repeat: int
    ca_file: Path | None
    insecure: bool
    ssh_key: Path | None
    ssh_known_hosts: Path | None
    out: Path | None
    json_out: Path | None
    full: bool
    burst: int
    timeout: float
    budget: float
    complete: bool
    stall_timeout: float
    cleanup_wait: float
    no_capture: bool
    lab: bool
    lab_instance: str
    lab_http: LabHttp
    native: bool
    h2_sweep: bool
    then_diagnose: bool
    host_report: Path | None
    report_format: ReportFormat
    direction: TransferDirection | None
    """None: push, or fetch for a checkout's remote that refuses pushes (:meth:`way`)."""
    fetch_seed: str | None
    host_netns: str | None = None
    host_local: bool = False
    bundle: Path | None = None
    """``--bundle FILE``: the ticket's one attachment, written after the diagnosis."""

    def way(self) -> TransferDirection:
        """The direction the run measures (push unless asked or decided otherwise)."""
        return self.direction or TransferDirection.PUSH


@dataclass(frozen=True, kw_only=True)
class _Remotes:
    """The remotes of a run and how to reach them, the lab's filled in."""

    urls: dict[TransportKind, str]
    ssh_command: str | None
    ca_file: Path | None
    ssh_key: Path | None
    ssh_known_hosts: Path | None
    lab_state: LabState | None = None
    extra: dict[str, object] = field(default_factory=dict)
    direction: TransferDirection | None = None
    """Decided from the remote (fetch when it refuses pushes), None: as asked."""


def _remotes(args: ProbeArgs) -> _Remotes:
    """The URLs and credentials of the command line, with ``--lab`` those of the lab (this
    process then runs in the lab's client namespace)."""
    http, ssh, git = args.http, args.ssh, args.git
    ca_file, ssh_key, ssh_known_hosts = args.ca_file, args.ssh_key, args.ssh_known_hosts
    lab_state: LabState | None = None
    extra: dict[str, object] = {}
    ssh_config: str | None = None
    if args.lab and args.remote is not None:
        raise UsageError(f"a remote ({args.remote!r}) and --lab name two targets",
                         hint="give one: the remote, or --lab")
    direction: TransferDirection | None = None
    if not args.lab:
        resolved, direction = _checkout_remote(args)
        if resolved is not None:
            http = http or resolved.urls.get("--http")
            ssh = ssh or resolved.urls.get("--ssh")
            git = git or resolved.urls.get("--git")
            extra = {"remote": {"name": resolved.name, "notes": list(resolved.notes)}}
    if args.lab:
        lab_state = enter_lab_client(args.lab_instance, "probe")
        lab = lab_remote(lab_state, lab_http=args.lab_http, insecure=args.insecure,
                         ca_file=ca_file, ssh_key=ssh_key, ssh_known_hosts=ssh_known_hosts)
        http, ssh, git = http or lab.https, ssh or lab.ssh, git or lab.git
        ca_file = Path(lab.ca_file) if lab.ca_file else None
        ssh_key, ssh_known_hosts = Path(lab.ssh_key), Path(lab.ssh_known_hosts)
        extra = lab.recorded()
        ssh_config = lab.ssh_config or None
    urls: dict[TransportKind, str] = {}
    command: str | None = None
    if http:
        urls[TransportKind.H1] = urls[TransportKind.H2] = check_url("--http", http)
    if ssh:
        urls[TransportKind.SSH] = check_url("--ssh", ssh)
        key = check_private_key(ssh_key)
        known_hosts = existing(ssh_known_hosts, "known_hosts file")
        command = ssh_command(str(key) if key else None,
                              str(known_hosts) if known_hosts else None, ssh_config)
    if git:
        urls[TransportKind.GIT] = check_url("--git", git)
    if not urls:
        raise UsageError("no remote to probe", hint="run in your checkout (gitnetdiag diagnose "
                         "origin), or give --http, --ssh and/or --git (or --lab)")
    return _Remotes(urls=urls, ssh_command=command, ca_file=ca_file, ssh_key=ssh_key,
                    ssh_known_hosts=ssh_known_hosts, lab_state=lab_state, extra=extra,
                    direction=direction)


def _checkout_remote(args: ProbeArgs
                     ) -> tuple[ResolvedRemote | None, TransferDirection | None]:
    """The URLs of ``args.remote``, or of ``origin`` when no URL option was given and the
    working directory is a checkout that has one; each note said on the terminal. With no
    ``--direction``, a remote that refuses pushes is diagnosed as clones (the direction
    returned), saying why."""
    cwd = Path.cwd()
    name = args.remote
    if name is None:
        if args.http or args.ssh or args.git or not in_checkout(cwd):
            return None, None
        name = DEFAULT_REMOTE
    resolved = resolve_remote(name, push=args.way() is not TransferDirection.FETCH,
                              cwd=cwd)
    direction: TransferDirection | None = None
    if args.direction is None:
        refused = push_refused(next(iter(resolved.urls.values())))
        if refused is not None:
            direction = TransferDirection.FETCH
            again = resolve_remote(name, push=False, cwd=cwd)
            resolved = replace(again, notes=(
                f"pushes refused ({refused}): diagnosing clones instead (--direction fetch; "
                "read-only, nothing is written)", *again.notes))
    console = Console(stderr=True, highlight=False)
    for note in resolved.notes:
        console.print(f"remote: {note}", markup=False, soft_wrap=True)
    return resolved, direction


def probe_options(args: ProbeArgs, remotes: _Remotes) -> ProbeOptions:
    """The library's options of the command line, checked before anything runs."""
    chosen = parse_protocols(args.protocols, remotes.urls)
    preflight(remotes.urls, chosen, native=args.native, capture=not args.no_capture,
              full=args.full, ca_file=remotes.ca_file, repo=args.repo)
    ca_file = existing(remotes.ca_file, "CA file")
    size_bytes = parse_size(args.size)
    seed_bytes = fetch_seed_bytes(args.fetch_seed, args.way())
    if args.way() is not TransferDirection.FETCH and args.repo is None:
        check_generated_size("--size", args.size, size_bytes)
    if seed_bytes is not None and args.fetch_seed is not None:
        check_generated_size("--fetch-seed", args.fetch_seed, seed_bytes)
    return ProbeOptions(
        urls=remotes.urls,
        protocols=chosen,
        size_bytes=size_bytes,
        seed=(args.seed if args.seed is not None
              else int(datetime.now(UTC).timestamp()) & 0xFFFFFF),
        data=args.data,
        repo=args.repo,
        repeat=args.repeat,
        ca_file=str(ca_file) if ca_file else None,
        insecure=args.insecure,
        ssh_command=remotes.ssh_command,
        out_dir=args.out or Path("runs") / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        full=args.full,
        burst=args.burst,
        timeout_s=args.timeout,
        budget_s=None if args.complete else args.budget,
        stall_timeout_s=args.stall_timeout or None,
        cleanup_wait_s=args.cleanup_wait,
        capture=not args.no_capture,
        # A both run's pushes say so: its RUN-fetch belongs to it (report RUN joins them).
        extra_options={**remotes.extra,
                       **(BOTH_OPTION if args.way() is TransferDirection.BOTH else {})},
        native=args.native,
        h2_sweep=args.h2_sweep,
        ssh_key=str(remotes.ssh_key) if remotes.ssh_key else None,
        ssh_known_hosts=str(remotes.ssh_known_hosts) if remotes.ssh_known_hosts else None,
        fetch_seed_bytes=seed_bytes,
        server_netns=args.host_netns or (remotes.lab_state.server_ns if remotes.lab_state
                                         else None),
        server_local=args.host_local,
    )


def run_probe_command(args: ProbeArgs) -> None:
    """Probe (and with ``then_diagnose`` diagnose) as the command line asks."""
    started()
    if args.data not in DATA_KINDS:  # before the lab re-executes this command
        raise UsageError(f"unknown --data {args.data!r}",
                         hint="choose " + " or ".join(DATA_KINDS))
    remotes = _remotes(args)
    if remotes.direction is not None:
        args = replace(args, direction=remotes.direction)
    options = probe_options(args, remotes)
    # The pipeline (numpy, the diagnosis) loads after the lab's re-exec, when first used.
    from gitnetdiag import pipeline

    host = pipeline.load_host_report(args.host_report) if args.host_report else None
    console = Console(stderr=True, highlight=False)
    progress = Progress(
        SpinnerColumn(finished_text=" "), TextColumn("{task.description}"), TimeElapsedColumn(),
        console=console, transient=False,
    )
    fetch_failed: GitnetdiagError | None = None
    clones: MeasuredRun | None = None  # with both and a diagnosis: joined to the pushes'
    if args.bundle is not None and not args.then_diagnose:
        raise UsageError("--bundle needs the diagnosis", reference="bundle-needs-diagnosis",
                         hint="use 'gitnetdiag diagnose ... --bundle FILE' (or probe "
                         "--diagnose), or 'gitnetdiag report RUN --bundle FILE' afterwards")
    if args.bundle is not None:
        check_new_bundle(args.bundle)
    if args.way() is TransferDirection.FETCH:
        fetched = _clones(args, options, progress, console, remotes.lab_state)
        try:
            _report_clones(args, fetched)
        finally:
            if args.bundle is not None:
                bundle_run(fetched.run_dir, fetched.diagnosis, args.bundle, full=args.full)
        return
    ahead = _Ahead(options) if args.way() is TransferDirection.BOTH else None
    try:
        if ahead is not None:
            clones, fetch_failed = _both_clones(args, options, progress, console,
                                                remotes.lab_state, ahead)
        outcome = _push(options, remotes.lab_state, progress, console,
                        warm_plots=args.then_diagnose,
                        snapshot=_still_holds(clones, remotes.lab_state),
                        prepared=ahead.prepared(clones) if ahead is not None else None)
    finally:
        if ahead is not None:
            ahead.close()
    json_to_stdout = is_stdout(args.json_out)
    _print_summary(outcome, args.json_out,
                   console if args.then_diagnose or json_to_stdout else Console(highlight=False),
                   clones=None if args.then_diagnose else clones)
    if not args.then_diagnose:
        first_error = outcome.error or fetch_failed
        if first_error is not None:
            raise first_error
        return
    for error in outcome.manifest.errors:
        if error.stage == "cleanup":  # no measurement, but the user must hear of it
            console.print(f"warning: {error.reference}: {error.message}", style="yellow",
                          markup=False)
    diagnosis = print_diagnosis(outcome.run_dir, host, args.report_format,
                                out_dir=outcome.run_dir, to_stderr=json_to_stdout,
                                joined=clones.diagnosis if clones else None,
                                clones_missing=None if fetch_failed is None
                                else f"the clones failed: {fetch_failed.one_line()}")
    if args.bundle is not None:
        bundle_run(outcome.run_dir, diagnosis, args.bundle, full=args.full,
                   fetch=clones.diagnosis if clones else None)
    if fetch_failed is not None and diagnosis.verdict != "failed":
        raise fetch_failed  # the report says the clones are missing; the exit says why
    from gitnetdiag.diagnosis.verdict import verdict_error

    failure = verdict_error(diagnosis.verdict, diagnosis.measurement_failures)
    if failure is None and clones is not None:  # a clone's error nothing explains
        failure = fetch_exit_error(clones.diagnosis, clones.error)
    if failure is not None:
        raise failure


def _fetch_host_report(args: ProbeArgs, lab_state: LabState | None,
                       since: Callable[[], Path | None], console: Console
                       ) -> Callable[[Path], object] | None:
    """What puts the server's ``host.json`` into a fetch run: the lab's server collected in
    its namespace (its counters and kernel log since the snapshot ``since()``, when one was
    taken, and its config lint), or a copy of ``--host-report``."""
    if lab_state is not None:
        return lambda run_dir: _lab_host_report(lab_state, run_dir / HOST_REPORT_FILE,
                                                since(), console)
    if args.host_report:
        given = Path(args.host_report)
        return lambda run_dir: shutil.copyfile(given, run_dir / HOST_REPORT_FILE)
    return None


def _both_clones(args: ProbeArgs, options: ProbeOptions, progress: Progress, console: Console,
                 lab_state: LabState | None, ahead: _Ahead
                 ) -> tuple[MeasuredRun | None, GitnetdiagError | None]:
    """A both run's clones, and what the run exits with for them: with a diagnosis their
    report joins the pushes' (printed after them), without it one summary holds both."""
    clones: MeasuredRun | None = None
    # The pushes' repository is made while the paths are measured, as a push run's, and
    # nothing moves on the path before it is: beside the first clone it cost that clone a
    # quarter of its rate (19.9 against 26.7 MB/s, the demo's lab).
    ahead.start()
    try:
        clones = _clones(args, options, progress, console, lab_state, ready=ahead.made)
        if args.then_diagnose:
            _keep_clones(args, clones, console)
            return clones, None
        return clones, fetch_exit_error(clones.diagnosis, clones.error)
    except GitnetdiagError as exc:  # the pushes still run; the exit code says it
        console.print(f"error: fetch: {exc.one_line()}", style="red", markup=False)
        return clones, exc


class _Ahead:
    """``--direction both``: the pushes' repository made while the clones' paths are
    measured (CPU and disk, nothing on the path), and the clones' paths: the pushes then
    start at once, on one path check for both."""

    def __init__(self, options: ProbeOptions) -> None:
        self.options = options
        self.scratch = Path(tempfile.mkdtemp(prefix="gitnetdiag-repo-"))
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gitnetdiag-repo")
        self.repo: Future[PreparedRepo] | None = None

    def start(self) -> None:
        if self.repo is None:
            self.repo = self.pool.submit(self._make)

    def made(self) -> None:
        """Start the repository and wait until it is made (its error is the pushes')."""
        self.start()
        if self.repo is not None:
            wait([self.repo])

    def _make(self) -> PreparedRepo:
        with step("pushes' repository (beside the paths)"):
            return prepare_repository(self.options, self.scratch)

    def prepared(self, clones: MeasuredRun | None) -> Prepared:
        paths = clones.paths if clones is not None else ()
        return Prepared(repo=self.repo.result if self.repo is not None else None,
                        paths=paths if all(p.error is None for p in paths) else ())

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        shutil.rmtree(self.scratch, ignore_errors=True)


def _clones(args: ProbeArgs, options: ProbeOptions, progress: Progress, console: Console,
            lab_state: LabState | None = None,
            ready: Callable[[], object] | None = None) -> MeasuredRun:
    """The clones, measured and diagnosed: into the run directory with ``--direction
    fetch``, into ``RUN-fetch`` with ``both``. Against the lab, the server's counters are
    snapshot first, so that ``host.json`` holds what the clones and the burst did
    (ListenOverflows, SYN cookies, the kernel log). ``ready`` (a both run's pushes'
    repository) is awaited with the snapshot, before anything moves on the path."""
    if args.way() is TransferDirection.BOTH:
        options = replace(options, out_dir=fetch_run_dir(options.out_dir))
    with scratch_dir("gitnetdiag-host-") as scratch, \
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="gitnetdiag-host") as steps:
        snapshot = Path(scratch) / "host-before.json"
        # Taken while the run's versions and paths are measured and the seed made; the
        # seed push and the first clone wait for it (the deltas cover every byte moved).
        taken: Future[bool] | None = (
            steps.submit(_lab_host_report, lab_state, snapshot, None, console)
            if lab_state is not None else None)

        def before_clones() -> None:
            if taken is not None:
                taken.result()
            if ready is not None:
                ready()

        return measure_fetch(
            options, RichReporter(progress, console), progress,
            before_clones=before_clones if taken is not None or ready is not None else None,
            before_diagnosis=_fetch_host_report(
                args, lab_state, lambda: snapshot if taken is not None and taken.result()
                else None, console))


def _clones_json(args: ProbeArgs) -> Path | None:
    """Where ``--json F`` puts the clones' report: ``F`` itself, ``F-fetch.json`` with
    ``both`` (``F`` is the pushes' summary)."""
    json_out = args.json_out
    if json_out is None or args.way() is not TransferDirection.BOTH:
        return json_out
    return json_out.with_name(f"{json_out.stem}-fetch{json_out.suffix}")


def _keep_clones(args: ProbeArgs, clones: MeasuredRun, console: Console) -> None:
    """``both`` with a diagnosis: the clones' run directory said, ``--json F`` written;
    their report is part of the one report printed after the pushes."""
    console.print(f"run directory: {clones.run_dir}", markup=False, highlight=False)
    json_out = _clones_json(args)
    if json_out is not None:
        write_output(json_out, render_fetch(clones.diagnosis, "json"))


def _report_clones(args: ProbeArgs, clones: MeasuredRun) -> None:
    """``--direction fetch``: the clones' own report (saved in the run directory by
    :func:`~gitnetdiag.commands.fetch.measure_fetch` whatever ``--format`` prints)."""
    json_out = args.json_out
    # With --json - stdout holds the JSON alone, as the push's: the report goes to stderr.
    print_fetch_report(clones, fmt=args.report_format.value, json_out=json_out,
                       console=Console(stderr=is_stdout(json_out), highlight=False))


def _still_holds(clones: MeasuredRun | None, lab_state: LabState | None) -> Path | None:
    """A ``both`` run's clones' ``host.json``: the lab server's counter totals and kernel
    log mark right after the clones, with nothing moved on the path since (their analysis
    only): the pushes' snapshot, where a second one would only repeat it."""
    if clones is None or lab_state is None:
        return None
    report = clones.run_dir / HOST_REPORT_FILE
    return report if report.is_file() else None


def _push(options: ProbeOptions, lab_state: LabState | None, progress: Progress,
          console: Console, *, warm_plots: bool, snapshot: Path | None = None,
          prepared: Prepared | None = None) -> ProbeOutcome:
    """The pushes; against the lab its server's evidence before and after them, collected
    in the background while the repository is made and the report's plots load.
    ``snapshot``: a host report taken since the last byte moved (:func:`_still_holds`),
    the counters' baseline in place of a new snapshot."""
    from gitnetdiag.pipeline import NativeProgress

    with scratch_dir("gitnetdiag-host-") as scratch, \
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="gitnetdiag-host") as steps:
        before = snapshot or Path(scratch) / "host-before.json"
        # The lab's host snapshot is taken while the repository is made and the paths
        # measured; the first push waits for it, so the counter deltas cover every push.
        taken: Future[bool] | None = (
            steps.submit(_lab_host_report, lab_state, before, None, console)
            if lab_state is not None and snapshot is None else None)
        warmed: list[Future[None]] = []

        def before_pushes() -> None:
            """The snapshot awaited; then the report's plotting library loads on the same
            worker beside the pushes: this process's CPU, nothing on the path (issue 47)."""
            if taken is not None:
                taken.result()
            if warm_plots:
                warmed.append(steps.submit(_warm_plots))

        with progress:
            outcome = run_probe(options, RichReporter(progress, console),
                                before_pushes=before_pushes,
                                native_summary=NativeProgress(), prepared=prepared)
        for loading in warmed:
            loading.result()
        if (snapshot is not None or (taken is not None and taken.result())) \
                and lab_state is not None:
            steps.submit(_lab_evidence_after, lab_state, outcome.run_dir, before,
                         console).result()
    return outcome


def _warm_plots() -> None:
    """The pipeline and the HTML report's plotting library, loaded while git pushes."""
    with step("pipeline and plotting library (beside the pushes)"):
        import gitnetdiag.pipeline  # noqa: F401
        from gitnetdiag.report.plots import warm_up

        warm_up()


def _print_summary(outcome: ProbeOutcome, json_out: Path | None, console: Console, *,
                   clones: MeasuredRun | None = None) -> None:
    """The per-protocol table, the HTTP/2 sweep (kept as its artifact), the run directory
    and, with ``--json``, the summary as JSON. ``clones``: a ``--direction both`` run's,
    their table after the pushes' and their summary under ``fetch`` in the one JSON."""
    from gitnetdiag.pipeline import (  # numpy: after the lab re-exec
        summarize_run,
        sweep_records,
        sweep_rows,
    )

    summaries = summarize_run(outcome.manifest)
    console.file.write(render_probe_summary(
        outcome.manifest, summaries=summaries, width=console.width, color=console.is_terminal))
    if clones is not None:
        console.file.write(render_clone_summary(
            clones.diagnosis, clones.run_dir.name, width=console.width,
            color=console.is_terminal))
        console.print(f"clones' run directory: {clones.run_dir}", markup=False,
                      soft_wrap=True)  # a path is not broken over lines
    # The sweep's rows are derived from its raw variant files, and kept next to them.
    records = sweep_records(outcome.run_dir)
    if records:
        rows = sweep_rows(records)
        write_new_file(outcome.run_dir / SWEEP_ARTIFACT,
                       (json.dumps(to_jsonable(rows), indent=1) + "\n").encode())
        console.print("HTTP/2 sweep: the upload rate follows the server's window, "
                      "not the client's settings", markup=False)
        console.print(render_sweep(rows), markup=False, highlight=False)
    console.print(f"run directory: {outcome.run_dir}", markup=False)
    if json_out is not None:
        summary = {
            "run_dir": str(outcome.run_dir),
            "run_id": outcome.manifest.run_id,
            "status": outcome.manifest.status,
            "protocols": to_jsonable(summaries),
            "errors": to_jsonable(outcome.manifest.errors),
        }
        if clones is not None:
            summary["fetch"] = _clone_summary(clones)
        write_output(json_out, json.dumps(summary, indent=2) + "\n")


def _clone_summary(clones: MeasuredRun) -> dict[str, object]:
    """The clones of a ``--direction both`` probe in its one ``--json`` summary: their run
    directory, verdict, per-protocol summaries and measurement failures (their whole report
    is ``report.json`` in that directory)."""
    diagnosis = clones.diagnosis
    return {"run_dir": str(clones.run_dir), "verdict": diagnosis.verdict,
            "headline": diagnosis.headline, "protocols": to_jsonable(diagnosis.protocols),
            "errors": to_jsonable(diagnosis.measurement_failures)}


def _lab_evidence_after(state: LabState, run_dir: Path, before: Path, console: Console) -> bool:
    """The lab server's counters since ``before``, then its storage check, into the run."""
    return (_lab_host_report(state, run_dir / HOST_REPORT_FILE, before, console)
            and _lab_storage_report(state, run_dir / STORAGE_REPORT_FILE, console))


def _lab_host_report(state: LabState, out: Path, since: Path | None, console: Console) -> bool:
    """The lab's server is on this machine: collect its host evidence in its namespace.

    Called before the probe (a snapshot) and after it (counter deltas since the
    snapshot, written into the run directory as ``host.json``), so ListenOverflows
    and friends of exactly this run reach the diagnosis, also offline.
    """
    root = Path(state.state_dir)
    argv = ["ip", "netns", "exec", state.server_ns, sys.executable, "-m", "gitnetdiag", "host",
            "--json", str(out), "--no-standard-configs"]
    for name in ("haproxy.cfg", "nginx.conf", "Caddyfile", "h2o.conf", "apache2.conf",
                 "sshd_config"):
        if (root / name).is_file():  # the lab runs one of the edges
            argv += ["--config", str(root / name)]
    if since is not None:
        argv += ["--since", str(since)]
    with step("host evidence since the snapshot" if since else "host snapshot"):
        return _lab_step(argv, "no host evidence from the lab server", console)


def _lab_step(argv: list[str], failed: str, console: Console) -> bool:
    """Run one evidence-collecting step of the lab; on failure warn and go on without it."""
    try:
        run(argv, timeout_s=120)
    except GitnetdiagError as exc:
        console.print(f"warning: {failed}: {exc.message}", style="yellow", markup=False)
        return False
    return True


def _lab_storage_report(state: LabState, out: Path, console: Console) -> bool:
    """Under ``slow-storage`` the lab's repositories sit on their own throttled device: check
    it the way ``gitnetdiag storage`` checks a server's git data, inside the servers' blkio
    cgroup (the throttle applies per cgroup), and keep the result in the run directory."""
    if not state.storage_cgroup:
        return True
    storage = in_cgroup(state.storage_cgroup, [
        sys.executable, "-m", "gitnetdiag", "storage", str(Path(state.repo_path).parent),
        "--size", "4M", "--runtime", "2s", "--small-files", "10", "--json", str(out)])
    with step("storage check"):
        return _lab_step(storage, "no storage check of the lab's repositories", console)
