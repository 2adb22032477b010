"""``gitnetdiag load``: capacity test of a git remote (local ramp, or collected from Locust)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.live import Live
from rich.text import Text

from gitnetdiag.commands._options import (
    DEFAULT_TIMEOUT_S,
    CaFile,
    CleanupWait,
    GitTimeout,
    Insecure,
    JsonSummary,
    Lab,
    LabInstance,
    LabWayIn,
    RunDir,
    SshKey,
    SshKnownHosts,
)
from gitnetdiag.commands._output import is_stdout, write_output
from gitnetdiag.diagnosis.model import Diagnosis
from gitnetdiag.errors import ExitCode, InputError, NetworkError, UsageError
from gitnetdiag.inputfile import read_json_input
from gitnetdiag.load.hostcounters import CounterSource
from gitnetdiag.load.scheduler import LiveStatus, LoadOptions, run_load
from gitnetdiag.load.stats import (
    parse_concurrency,
    parse_duration_s,
    parse_mix,
    parse_ops,
    parse_urls,
)
from gitnetdiag.model.lab.state import DEFAULT_INSTANCE
from gitnetdiag.model.load.records import LoadReport, OpRecord, StepResult
from gitnetdiag.probe.cleanup import DEFAULT_CLEANUP_WAIT_S
from gitnetdiag.probe.gitpush import Transport
from gitnetdiag.probe.labremote import LabHttp, lab_remote, ssh_command
from gitnetdiag.probe.safety import probe_secrets, redact_run_files, signals_deferred
from gitnetdiag.redaction import SecretSet, redact_text, redact_tree, redact_url
from gitnetdiag.report.load import render_html, render_json, render_markdown, render_terminal
from gitnetdiag.safefile import replace_file
from gitnetdiag.vocabulary import SIZE_RULE, TransportKind, parse_size


class LiveReporter:
    """One live status line while a step runs; a line per finished step."""

    def __init__(self, live: Live | None, console: Console) -> None:
        self.live = live
        self.console = console

    def tick(self, status: LiveStatus) -> None:
        if self.live is None:
            return
        rate = status.ok / status.elapsed_s if status.elapsed_s > 0 else 0.0
        errors = ", ".join(f"{k} {v}" for k, v in sorted(status.errors.items())) or "none"
        self.live.update(Text(
            f"step {status.step + 1}/{status.steps}: concurrency {status.concurrency}, "
            f"{min(status.elapsed_s, status.duration_s):.0f}/{status.duration_s:.0f} s, "
            f"{status.ok} ok ({rate:.1f} ops/s), {status.failed} failed; errors: {errors}"))

    def step_done(self, step: StepResult) -> None:
        errors = ", ".join(f"{e.kind} {e.count}" for e in step.errors) or "no errors"
        p50 = f"{step.latency.p50_s:.3f} s" if step.latency else "-"
        self.console.print(
            f"step {step.index + 1} concurrency {step.concurrency}: {step.ok}/{step.ops} ok, "
            f"{step.ops_per_s:.2f} ops/s, p50 {p50}, {errors}", highlight=False)

    def warn(self, message: str) -> None:
        self.console.print(f"[yellow]warning:[/yellow] {message}", highlight=False)


def _protocol_for(url: str, given: str | None) -> TransportKind:
    if given is not None:
        try:
            return TransportKind(given.lower())
        except ValueError as exc:
            raise UsageError(f"unknown protocol {given!r}", hint="use h1, h2, ssh, git") from exc
    scheme = url.split("://", 1)[0].lower() if "://" in url else "ssh"
    mapping = {"https": TransportKind.H1, "http": TransportKind.H1, "ssh": TransportKind.SSH,
               "git": TransportKind.GIT}
    if scheme not in mapping:
        raise UsageError(f"cannot tell the protocol of {redact_url(url)}", hint="give --protocol")
    return mapping[scheme]


def _run_files(report: LoadReport, records: tuple[OpRecord, ...],
               diagnosis: Diagnosis | None) -> list[tuple[str, str]]:
    """The run directory's files: the load report, every operation, and the diagnosis
    (``report.json``/``.md``/``.html``, as a probe run's) when one was made."""
    files = [("load.json", render_json(report)), ("load.md", render_markdown(report)),
             ("load.html", render_html(report)),
             ("ops.jsonl", "".join(json.dumps(rec.to_dict()) + "\n" for rec in records))]
    if diagnosis is not None:
        from gitnetdiag.report import RENDERERS
        from gitnetdiag.rundir import REPORT_FILES

        files += [(name, RENDERERS[fmt](diagnosis)) for fmt, name in REPORT_FILES.items()]
    return files


def _write_outputs(report: LoadReport, records: tuple[OpRecord, ...], out: Path | None,
                   json_out: Path | None, secrets: Iterable[str],
                   diagnosis: Diagnosis | None = None) -> None:
    """Write the reports, then the redaction pass over the run directory.

    git's messages in the records can repeat a credential in words no URL rule
    sees (``unable to look up user:TOKEN@host``): the known secrets of the
    remotes go too. Ctrl-C and SIGTERM wait until the files are clean.
    """
    secrets = frozenset(secrets)
    with signals_deferred():
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            for name, text in _run_files(report, records, diagnosis):
                replace_file(out / name, redact_text(text, secrets).encode())
            failed = redact_run_files(out, SecretSet(secrets))
            if failed:
                raise InputError(
                    f"could not redact {', '.join(failed)} in {out}",
                    hint="delete those files before sharing the run directory",
                    reference="redaction-failed")
            typer.echo(f"run directory: {out}", err=is_stdout(json_out))
        if json_out is not None:
            write_output(json_out, redact_text(render_json(report), secrets))


def print_load_diagnosis(report: LoadReport, *, err: bool = False) -> Diagnosis:
    """The ranked connection culprits of a load run (:func:`diagnose_load`), printed (to
    stderr when the JSON goes to stdout)."""
    from gitnetdiag.pipeline import diagnose_load
    from gitnetdiag.report.terminal import render_terminal as render_diagnosis

    diagnosis = diagnose_load(report)
    typer.echo(render_diagnosis(diagnosis, width=200), nl=False, err=err)
    return diagnosis


def _finish(report: LoadReport, records: tuple[OpRecord, ...], out: Path | None,
            json_out: Path | None, leftover: tuple[str, ...] = (),
            secrets: Iterable[str] = (), *, then_diagnose: bool = False) -> None:
    secrets = frozenset(secrets)
    report, records = redact_tree((report, records), secrets)
    # With --json - the JSON alone goes to stdout; the tables go to stderr.
    console = Console(highlight=False, width=200, stderr=is_stdout(json_out))
    console.file.write(render_terminal(report, width=console.width, color=console.is_terminal))
    diagnosis = (print_load_diagnosis(report, err=is_stdout(json_out)) if then_diagnose
                 else None)
    _write_outputs(report, records, out, json_out, secrets, diagnosis)
    if leftover:
        raise NetworkError(
            f"{len(leftover)} throwaway branch(es) may be left on the server: "
            + "; ".join(leftover),
            hint="run each command shown (with the real URL) once the server is idle",
            reference="probe-ref-leftover",
        )
    if report.interrupted:
        Console(stderr=True).print("interrupted: partial results were kept", style="yellow")
        raise typer.Exit(int(ExitCode.INTERRUPTED))
    if diagnosis is not None:
        from gitnetdiag.diagnosis.verdict import verdict_error

        failure = verdict_error(diagnosis.verdict, diagnosis.measurement_failures)
        if failure is not None:  # failed operations or drops that no culprit explains
            raise failure
    if report.passed is False:
        raise typer.Exit(int(ExitCode.FAILURE))


def _collect_locust(master: str | None, results: Path | None, wait: float, out: Path | None,
                    json_out: Path | None, min_ops_per_hour: float | None,
                    then_diagnose: bool) -> None:
    from dataclasses import replace

    from gitnetdiag.load.locust_collect import fetch_payload, report_from_payload

    payload: dict[str, Any]
    if results is not None:
        def bad(message: str) -> InputError:
            return InputError(f"cannot read {message}",
                              hint="give the file the master wrote with --git-results")

        try:
            payload = read_json_input(results, error=bad)
        except FileNotFoundError as exc:
            raise bad(f"{results}: {exc.strerror}") from exc
    else:
        assert master is not None
        console = Console(stderr=True, highlight=False)

        def show(p: dict[str, Any]) -> None:
            console.print(f"locust master: {p.get('state')}, {len(p['records'])} operations",
                          highlight=False)

        payload = fetch_payload(master, wait_s=wait, on_poll=show)
    report = replace(report_from_payload(payload), min_ops_per_hour=min_ops_per_hour)
    _finish(report, (), out, json_out, then_diagnose=then_diagnose)


@dataclass(frozen=True, kw_only=True)
class LoadArgs:
    """The options of ``load`` as given (names as the command's parameters; see
    ``gitnetdiag load --help`` for each)."""

    urls: list[str] | None
    ops: str
    mix: str | None
    concurrency: str
    duration: str
    protocol: str | None
    timeout: float
    push_size: str
    cleanup_wait: float
    min_ops_per_hour: float | None
    max_error_ratio: float
    out: Path | None
    json_out: Path | None
    ca_file: Path | None
    insecure: bool
    ssh_key: Path | None
    ssh_known_hosts: Path | None
    host_netns: str | None
    host_local: bool
    lab: bool
    lab_instance: str
    lab_http: LabHttp
    locust_master: str | None
    locust_results: Path | None
    wait: float
    no_live: bool
    then_diagnose: bool


# Typer reads every option from the command function's parameters: that is the reason this
# function has 27 of them. Its body only packs them into LoadArgs and hands that on.
def load_command(
    urls: Annotated[list[str] | None, typer.Argument(
        metavar="URL", show_default=False,
        help="One or more git remotes of one protocol (URLs, or remote names of the checkout "
             "you run in: origin); operations are spread over them round robin per operation "
             "type (none with --lab or --locust-master).")] = None,
    ops: Annotated[str, typer.Option("--ops", help="clone,fetch,push,ls-remote")]
    = "clone,fetch,push",
    mix: Annotated[str | None, typer.Option("--mix", help="Weights per op, e.g. 40:35:25.")]
    = None,
    concurrency: Annotated[str, typer.Option("--concurrency", help="Ramp steps.")]
    = "1,2,4,8,16,32",
    duration: Annotated[str, typer.Option("--duration", help="Duration of each step.")] = "60s",
    protocol: Annotated[str | None, typer.Option(
        "--protocol", help="h1, h2, ssh or git (default: from the URL; https -> h1).")] = None,
    timeout: GitTimeout = DEFAULT_TIMEOUT_S,
    push_size: Annotated[str, typer.Option(
        "--push-size", help=f"New data in each push, {SIZE_RULE}.")]
    = "64KiB",
    cleanup_wait: CleanupWait = DEFAULT_CLEANUP_WAIT_S,
    min_ops_per_hour: Annotated[float | None, typer.Option(
        "--min-ops-per-hour", help="Pass mark: some step must reach it (exit 1 if not).")]
    = None,
    max_error_ratio: Annotated[float, typer.Option(
        "--max-error-ratio", help="Highest error ratio of a passing step.")] = 0.01,
    out: RunDir = None,
    json_out: JsonSummary = None,
    ca_file: CaFile = None,
    insecure: Insecure = False,
    ssh_key: SshKey = None,
    ssh_known_hosts: SshKnownHosts = None,
    host_netns: Annotated[str | None, typer.Option(
        "--host-netns", help="Server counters from this network namespace (root).")] = None,
    host_local: Annotated[bool, typer.Option(
        "--host-local", help="The server runs here: counters from /proc/net/netstat.")]
    = False,
    lab: Lab = False,
    lab_instance: LabInstance = DEFAULT_INSTANCE,
    lab_http: LabWayIn = LabHttp.EDGE,
    locust_master: Annotated[str | None, typer.Option(
        "--locust-master", help="Collect a Locust run's results from HOST[:PORT].")] = None,
    locust_results: Annotated[Path | None, typer.Option(
        "--locust-results", help="Read the results file a Locust master wrote.")] = None,
    wait: Annotated[float, typer.Option(
        "--wait", min=0.0, help="With --locust-master: wait up to N s for the run to end.")]
    = 0.0,
    no_live: Annotated[bool, typer.Option("--no-live", help="No live display.")] = False,
    then_diagnose: Annotated[bool, typer.Option(
        "--diagnose",
        help="Also rank the connection culprits the run shows (accept queue, SYN drops, resets, "
        "sshd MaxStartups) from its failures and latency per step and the server's counters "
        "and listener; saved as report.json/md/html with --out.")] = False,
) -> None:
    """Capacity test: clones, fetches, pushes and ls-remotes at rising concurrency.

    Reports per step ops/s and ops/hour, latency percentiles, errors by kind with
    git's message, bytes moved and server counter deltas. Pushes go only to
    throwaway branches gitnetdiag/probe-<id>, removed right after (also on Ctrl-C
    or SIGTERM); clones and fetches land in a scratch directory removed at the end.
    """
    run_load_command(LoadArgs(**locals()))  # the parameters are LoadArgs's fields


def run_load_command(args: LoadArgs) -> None:
    """Collect a Locust run, or ramp the load here, as the command line asks."""
    if args.urls and (args.lab or args.locust_master is not None
                      or args.locust_results is not None):
        source = "--lab" if args.lab else "--locust-master/--locust-results"
        raise UsageError(
            f"{source} takes no URL: the remote comes from "
            + ("the lab" if args.lab else "the Locust master's --git-url"),
            hint="drop the URLs, or drop " + source.split("/")[0],
        )
    if args.locust_master is not None or args.locust_results is not None:
        _collect_locust(args.locust_master, args.locust_results, args.wait, args.out,
                        args.json_out, args.min_ops_per_hour, args.then_diagnose)
        return
    options, remotes = load_options(args)
    console = Console(stderr=True, highlight=False)
    if args.no_live or not console.is_terminal:
        outcome = run_load(options, LiveReporter(None, console))
    else:
        with Live(Text("starting"), console=console, refresh_per_second=4,
                  transient=True) as live:
            outcome = run_load(options, LiveReporter(live, console))
    # The ramp is over (or was stopped): a further Ctrl-C/SIGTERM must not lose the report.
    with signals_deferred():
        _finish(outcome.report, outcome.records, args.out, args.json_out,
                outcome.leftover_branches, secrets=probe_secrets(remotes),
                then_diagnose=args.then_diagnose)


def load_options(args: LoadArgs) -> tuple[LoadOptions, tuple[str, ...]]:
    """The ramp's options and its remotes, checked; with ``--lab`` those of the lab (this
    process then runs in the lab's client namespace)."""
    op_list = parse_ops(args.ops)
    weights = parse_mix(args.mix, len(op_list))
    steps = parse_concurrency(args.concurrency)
    step_s = parse_duration_s(args.duration)
    push_bytes = parse_size(args.push_size)
    urls, protocol, host_netns = args.urls, args.protocol, args.host_netns
    ca_file, ssh_key, ssh_known_hosts = args.ca_file, args.ssh_key, args.ssh_known_hosts
    extra: dict[str, Any] = {}
    ssh_config = ""
    if args.lab:
        from gitnetdiag.lab.netns import enter_lab_client

        state = enter_lab_client(args.lab_instance, "load")
        lab = lab_remote(state, lab_http=args.lab_http, insecure=args.insecure,
                         ca_file=ca_file, ssh_key=ssh_key, ssh_known_hosts=ssh_known_hosts)
        chosen = _protocol_for("git://x", protocol or "git")
        urls = [{TransportKind.GIT: lab.git, TransportKind.SSH: lab.ssh}.get(chosen) or lab.https]
        protocol = chosen.value
        ca_file = Path(lab.ca_file) if lab.ca_file else None
        ssh_key, ssh_known_hosts = Path(lab.ssh_key), Path(lab.ssh_known_hosts)
        host_netns = host_netns or state.server_ns
        extra = lab.recorded(with_way_in=False)
        ssh_config = lab.ssh_config  # its jump host (ssh-jump-host), as diagnose --lab
    if urls and not args.lab:  # a remote name of the checkout here, as git resolves it
        from gitnetdiag.probe.gitremote import looks_like_url, remote_url

        pushes_only = all(str(op).endswith("push") for op in op_list)
        urls = [url if looks_like_url(url) else remote_url(url, push=pushes_only, cwd=Path.cwd())
                for url in urls]
    if not urls:
        raise UsageError("no remote to load",
                         hint="give one or more URLs (or --lab, or --locust-master)")
    remotes = parse_urls(urls, protocol)
    counters = _counters(host_netns, args.host_local)
    chosen_protocol = _protocol_for(remotes[0], protocol)
    for path, what in ((ca_file, "CA file"), (ssh_key, "SSH key"),
                       (ssh_known_hosts, "known_hosts file")):
        if path is not None and not path.is_file():
            raise UsageError(f"{what} {path} does not exist", hint=f"give an existing {what}")
    transports = tuple(
        Transport(
            protocol=chosen_protocol, url=url, ca_file=str(ca_file) if ca_file else None,
            insecure=args.insecure,
            ssh_command=ssh_command(str(ssh_key) if ssh_key else None,
                                    str(ssh_known_hosts) if ssh_known_hosts else None,
                                    ssh_config or None)
            if chosen_protocol is TransportKind.SSH else None,
        )
        for url in remotes
    )
    if counters is not None:
        extra["host_counters"] = counters.description
    return LoadOptions(
        transport=transports[0], extra_transports=transports[1:],
        ops=tuple(str(op) for op in op_list), mix=weights,
        concurrency=steps, step_duration_s=step_s, timeout_s=args.timeout,
        push_bytes=push_bytes, min_ops_per_hour=args.min_ops_per_hour,
        max_error_ratio=args.max_error_ratio, counters=counters, extra=extra,
        cleanup_wait_s=args.cleanup_wait,
    ), tuple(remotes)


def _counters(host_netns: str | None, host_local: bool) -> CounterSource | None:
    """Where the server's counters come from: its namespace, this host, or nowhere."""
    from gitnetdiag.load.hostcounters import LocalNetstat, NamespaceNetstat

    if host_netns is not None:
        return NamespaceNetstat(host_netns)
    return LocalNetstat() if host_local else None


LOAD_EPILOG = (
    "Examples:\n\n"
    "  sudo gitnetdiag load --lab --protocol git --ops clone,fetch,push,ls-remote "
    "--concurrency 1,4,16 --duration 10s --out runs/lab-ramp\n\n"
    "  Vendor-style mix, clone:fetch:push 40:35:25 spread over two repositories, "
    "the default ramp 1,2,4,8,16,32 of 60 s steps, exit 1 below 32,700 ops/hour:\n\n"
    "  gitnetdiag load https://git.example.com/team/app.git https://git.example.com/team/lib.git "
    "--ops clone,fetch,push --mix 40:35:25 --min-ops-per-hour 32700 --out runs/capacity\n\n"
    "  Distributed with Locust: a master, a worker on each load generator, then collect:\n\n"
    "  LF=$(python -c 'import gitnetdiag.load.locustfile as m; print(m.__file__)')\n\n"
    "  locust -f $LF --master --autostart --autoquit 30 -u 64 -r 16 -t 120s --expect-workers 2 "
    "--git-url git://git.example.com/app.git git://git.example.com/lib.git --git-protocol git "
    "--git-ops clone,fetch,push --git-mix 40:35:25\n\n"
    "  locust -f $LF --worker --master-host MASTER\n\n"
    "  gitnetdiag load --locust-master MASTER:8089 --wait 300 --out runs/locust"
)


def register(app: typer.Typer) -> None:
    app.command("load", epilog=LOAD_EPILOG)(load_command)
