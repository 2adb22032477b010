"""``gitnetdiag probe``: the measured pushes and their artifacts (a run directory)."""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import re
import shlex
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from gitnetdiag.commands._output import is_stdout, write_output
from gitnetdiag.commands._preflight import (
    check_ca_file,
    check_native_https,
    check_regular,
    check_repo_has_commits,
    check_ssh_key_usable,
    check_url_text,
    check_zone_id,
)
from gitnetdiag.commands.fetch import (
    TransferDirection,
    fetch_run_dir,
    fetch_seed_bytes,
    run_fetch_command,
)
from gitnetdiag.diagnosis.observations import HostEvidence
from gitnetdiag.diagnosis.verdict import verdict_error
from gitnetdiag.errors import GitnetdiagError, UsageError
from gitnetdiag.lab.cgroups import in_cgroup
from gitnetdiag.lab.netns import enter_lab_client
from gitnetdiag.lab.state import LabState
from gitnetdiag.pipeline_host import load_host_report
from gitnetdiag.pipeline_probe import NativeProgress, sweep_records, sweep_rows
from gitnetdiag.probe.budget import DEFAULT_BUDGET_S, DEFAULT_STALL_TIMEOUT_S
from gitnetdiag.probe.cleanup import DEFAULT_CLEANUP_WAIT_S
from gitnetdiag.probe.gitpush import Protocol
from gitnetdiag.probe.repo import DATA_KINDS
from gitnetdiag.probe.runner import SWEEP_ARTIFACT, ProbeOptions, parse_size, run_probe
from gitnetdiag.proc import run
from gitnetdiag.report.probe import render_probe_summary, render_sweep
from gitnetdiag.rundir import HOST_REPORT_FILE, STORAGE_REPORT_FILE, to_jsonable
from gitnetdiag.safefile import write_new_file

if TYPE_CHECKING:
    from gitnetdiag.diagnosis.model import Diagnosis

DEFAULT_TIMEOUT_S = 300.0


class LabHttp(StrEnum):
    """Which HTTPS way into the lab --lab uses."""

    EDGE = "edge"
    DIRECT = "direct"


class RichReporter:
    """Progress of each step: a spinner while it runs, its result when done. On a stderr
    that is not a terminal (a log, CI) a line per step and per phase instead, as they
    happen. A terminal that went away (SIGHUP) ends the output, never the clean-up."""

    def __init__(self, progress: Progress, console: Console) -> None:
        self.progress = progress
        self.console = console
        self.live = console.is_terminal
        self.tasks: dict[str, TaskID] = {}
        self.phases: dict[str, str] = {}

    def _line(self, text: str) -> None:
        with contextlib.suppress(OSError):  # a log keeps each line whole
            self.progress.console.print(text, highlight=False, soft_wrap=not self.live)

    def begin(self, label: str) -> None:
        if not self.live:
            self._line(f"{label} ...")
            return
        self.tasks[label] = self.progress.add_task(label, total=1)

    def done(self, label: str, detail: str, *, ok: bool) -> None:
        task = self.tasks.pop(label, None)
        mark = "[green]ok[/green]" if ok else "[red]!![/red]"
        text = f"{mark} {label}: {detail}"
        if task is None:
            self._line(text)
            return
        self.progress.update(task, description=text, completed=1)

    def warn(self, message: str) -> None:
        self._line(f"[yellow]warning:[/yellow] {message}")

    def phase(self, label: str, text: str) -> None:
        if not self.live:
            self._line(f"{label}: {text}")
        else:
            self.phases[label] = text

    def moved(self, label: str, moved_bytes: int, rate_bytes_per_s: float | None) -> None:
        task = self.tasks.get(label)
        if task is None:
            return
        rate = "" if rate_bytes_per_s is None else f", {rate_bytes_per_s / 2**20:.2f} MiB/s"
        phase = self.phases.get(label)
        self.progress.update(task, description=f"{label}: {moved_bytes / 2**20:.1f} MiB{rate}"
                             + (f"; {phase}" if phase else ""))


class ReportFormat(StrEnum):
    """--format of the diagnosis."""

    TERMINAL = "terminal"
    MD = "md"
    HTML = "html"
    JSON = "json"


def _ssh_command(key: Path | None, known_hosts: Path | None) -> str:
    parts = ["ssh", "-o", "BatchMode=yes"]
    if key is not None:
        parts += ["-i", str(key), "-o", "IdentitiesOnly=yes"]
    if known_hosts is not None:
        parts += ["-o", f"UserKnownHostsFile={known_hosts}", "-o", "StrictHostKeyChecking=yes"]
    return " ".join(shlex.quote(p) for p in parts)


def _parse_protocols(text: str | None, urls: dict[Protocol, str]) -> tuple[Protocol, ...]:
    if text is None:
        return tuple(p for p in Protocol if p in urls)
    chosen: list[Protocol] = []
    for name in (part.strip().lower() for part in text.split(",") if part.strip()):
        try:
            protocol = Protocol(name)
        except ValueError as exc:
            raise UsageError(f"unknown protocol {name!r}", hint="use h1, h2, ssh, git") from exc
        if protocol not in urls:
            need = "--http" if protocol.is_http else f"--{protocol.value}"
            raise UsageError(f"protocol {name} needs a URL", hint=f"give {need} URL (or --lab)")
        if protocol not in chosen:
            chosen.append(protocol)
    return tuple(chosen)


_SCHEMES = {"--http": ("http", "https"), "--ssh": ("ssh",), "--git": ("git",)}
_USERINFO = re.compile(r"//[^/@]*@")


def check_url(option: str, url: str) -> str:
    """A remote URL git can push to over ``option``'s protocol, or one usage error.

    Checked before anything runs: a malformed or foreign URL would otherwise
    fail deep in a probe (or, worse, be measured as nothing and called healthy).
    """
    check_url_text(option, url)
    shown = _USERINFO.sub("//***@", url)  # the URL may not parse: redact by hand
    schemes = _SCHEMES[option]
    if option == "--ssh" and "://" not in url and re.fullmatch(r"[^\s/:]+:\S*", url.split("@")[-1]):
        return url  # scp-like user@host:path
    try:
        parts = urlsplit(url)
        port = parts.port
        host = parts.hostname
    except ValueError as exc:
        raise UsageError(f"{option} {shown} is not a valid URL: {exc}",
                         hint=f"give a URL such as {_EXAMPLE_URL[option]}",
                         reference="bad-url") from exc
    if parts.scheme.lower() not in schemes:
        found = f"scheme {parts.scheme!r}" if parts.scheme else "no scheme"
        raise UsageError(f"{option} {shown} has {found}; {option} takes "
                         + " or ".join(f"{s}://" for s in schemes) + " URLs",
                         hint=f"give a URL such as {_EXAMPLE_URL[option]}",
                         reference="unsupported-url")
    if not host or port == 0:
        raise UsageError(f"{option} {shown} names no host", reference="bad-url",
                         hint=f"give a URL such as {_EXAMPLE_URL[option]}")
    return url


_EXAMPLE_URL = {"--http": "https://git.example.com/team/repo.git",
                "--ssh": "ssh://git@git.example.com/team/repo.git",
                "--git": "git://git.example.com/team/repo.git"}

_PUBLIC_KEY_PREFIXES = ("ssh-", "ecdsa-", "sk-ssh-", "sk-ecdsa-")


def check_private_key(key: Path | None) -> Path | None:
    """``--ssh-key`` must be a private key: a ``.pub`` file only fails later, obscurely."""
    if key is None:
        return None
    _existing(key, "SSH key")
    try:
        with key.open("rb") as handle:
            head = handle.read(64)
    except OSError as exc:
        raise UsageError(f"cannot read SSH key {key}: {exc.strerror}",
                         hint="give a readable private key file") from exc
    if key.suffix == ".pub" or head.lstrip().startswith(
            tuple(prefix.encode() for prefix in _PUBLIC_KEY_PREFIXES)):
        private = key.with_suffix("") if key.suffix == ".pub" else None
        example = f" ({private})" if private is not None and private.is_file() else ""
        raise UsageError(
            f"--ssh-key {key} is a public key",
            hint=f"give the private key{example} or leave --ssh-key out to use ssh-agent",
            reference="ssh-public-key")
    check_ssh_key_usable(key)
    return key


def _existing(path: Path | None, what: str) -> Path | None:
    if path is not None:
        check_regular(path, what)
    return path


_URL_OPTIONS = {Protocol.H1: "--http", Protocol.H2: "--http", Protocol.SSH: "--ssh",
                Protocol.GIT: "--git"}


def _preflight(urls: dict[Protocol, str], chosen: tuple[Protocol, ...], *, native: bool,
               capture: bool, full: bool, ca_file: Path | None, repo: Path | None) -> None:
    """What would fail only after the pushes, or obscurely, refused before them (``--full``
    over http:// is refused by the run itself, for the credentials: that error first)."""
    for protocol, url in urls.items():
        check_zone_id(_URL_OPTIONS[protocol], url, capture)
    if Protocol.H2 in urls and not full:
        check_native_https(urls[Protocol.H2], Protocol.H2 in chosen, native)
    if ca_file is not None:
        check_regular(ca_file, "CA file")
        check_ca_file(ca_file)
    if repo is not None:
        if not (repo / ".git").exists() and not (repo / "HEAD").is_file():
            raise UsageError(f"{repo} is not a git repository",
                             hint="give --repo a repository path")
        check_repo_has_commits(repo)


def probe_command(
    http: str | None = typer.Option(None, "--http", help="HTTPS smart-HTTP remote URL."),
    ssh: str | None = typer.Option(None, "--ssh", help="SSH remote URL."),
    git: str | None = typer.Option(None, "--git", help="git:// remote URL."),
    protocols: str | None = typer.Option(
        None, "--protocols", help="Comma list of h1,h2,ssh,git (default: those with URLs)."),
    size: str = typer.Option("32MiB", "--size", help="Generated repository size (4MiB, 1GiB)."),
    seed: int | None = typer.Option(None, "--seed", min=0, max=2**32 - 1,
                                    help="Seed of the generated data (0 to 4294967295)."),
    data: str = typer.Option(
        "random", "--data", help="Generated data: random (incompressible, measures the network) "
        "or text (source-like fresh commits: the client's pack-objects CPU counts too)."),
    repo: Path | None = typer.Option(None, "--repo", help="Push this repository's HEAD instead."),
    repeat: int = typer.Option(1, "--repeat", min=1, help="Pushes per protocol."),
    ca_file: Path | None = typer.Option(None, "--ca-file", help="CA bundle for HTTPS."),
    insecure: bool = typer.Option(False, "--insecure", help="Do not verify HTTPS certificates."),
    ssh_key: Path | None = typer.Option(None, "--ssh-key", help="SSH private key."),
    ssh_known_hosts: Path | None = typer.Option(
        None, "--ssh-known-hosts", help="known_hosts file for the SSH remote."),
    out: Path | None = typer.Option(None, "--out", help="Run directory (default runs/<time>)."),
    json_out: Path | None = typer.Option(
        None, "--json", help="Write the summary as JSON here ('-' = stdout, the tables then go "
        "to stderr)."),
    full: bool = typer.Option(
        False, "--full", help="Whole packets + TLS keylog (0600) + decryptable pcapng."),
    burst: int = typer.Option(0, "--burst", min=0, help="Concurrent ls-remote per protocol."),
    timeout: float = typer.Option(
        DEFAULT_TIMEOUT_S, "--timeout", min=1.0, help="Timeout of each git run, seconds."),
    budget: float = typer.Option(
        DEFAULT_BUDGET_S, "--budget", min=1.0,
        help="Time budget of each git push, seconds: it is stopped mid-pack (nothing is "
        "created) once its rate is stable or the budget is spent."),
    complete: bool = typer.Option(
        False, "--complete", help="Push the whole --size pack (no time budget)."),
    stall_timeout: float = typer.Option(
        DEFAULT_STALL_TIMEOUT_S, "--stall-timeout", min=0.0,
        help="A push that moves no byte for this long ends as stalled (0: only --timeout)."),
    cleanup_wait: float = typer.Option(
        DEFAULT_CLEANUP_WAIT_S, "--cleanup-wait", min=0.0,
        help="Seconds the clean-up of a push cut short (timeout, Ctrl-C) waits for the "
        "server to finish applying it (a slow pre-receive hook) before deleting the "
        "throwaway branch; past it the branch is reported 'unconfirmed' with its remove "
        "command."),
    no_capture: bool = typer.Option(False, "--no-capture", help="Do not run tcpdump."),
    lab: bool = typer.Option(False, "--lab", help="Probe the local lab (runs in its client ns)."),
    lab_instance: str = typer.Option("default", "--lab-instance", help="Lab instance name."),
    lab_http: LabHttp = typer.Option(
        LabHttp.EDGE, "--lab-http", help="Lab HTTPS way in: edge (HAProxy) or direct (Apache)."),
    native: bool = typer.Option(
        True, "--native/--no-native",
        help="Also push with the native HTTP/2 and SSH probes to record the flow-control "
        "ledgers (server window, every WINDOW_UPDATE / window adjust)."),
    h2_sweep: bool = typer.Option(
        False, "--h2-sweep", help="Repeat the native HTTP/2 upload advertising different "
        "client SETTINGS and show how the rate follows the server's window."),
    then_diagnose: bool = typer.Option(
        False, "--diagnose", help="Analyse the run and print the ranked diagnosis "
        "(what 'gitnetdiag diagnose' does)."),
    host_report: Path | None = typer.Option(
        None, "--host-report", help="Server-side evidence from 'gitnetdiag host --json' "
        "to add to the diagnosis."),
    report_format: ReportFormat = typer.Option(
        ReportFormat.TERMINAL, "--format", help="How to print the diagnosis."),
    direction: TransferDirection = typer.Option(
        TransferDirection.PUSH, "--direction",
        help="push (to a throwaway branch), fetch (read-only bounded clones of what the URL "
        "serves) or both (fetches land in RUN-fetch)."),
    fetch_seed: str | None = typer.Option(
        None, "--fetch-seed", metavar="SIZE",
        help="With --direction fetch|both, for a repository too small to measure or empty: "
        "push SIZE of generated data to a throwaway branch, fetch that branch, delete it. "
        "Without it a fetch writes nothing on the server."),
) -> None:
    """Push the same repository over HTTP/1.1, HTTP/2, SSH and git://, captured.

    Each push goes to a throwaway branch gitnetdiag/probe-<id> that is deleted
    right after, also on Ctrl-C or error. Results land in a run directory.
    """
    if data not in DATA_KINDS:
        raise UsageError(f"unknown --data {data!r}", hint="choose " + " or ".join(DATA_KINDS))
    extra: dict[str, object] = {}
    ssh_command: str | None = None
    lab_state: LabState | None = None
    if lab:
        state = lab_state = enter_lab_client(lab_instance, "probe")
        http = http or (
            state.endpoints.https_edge if lab_http is LabHttp.EDGE else state.endpoints.https_direct
        )
        ssh = ssh or state.endpoints.ssh
        git = git or state.endpoints.git
        if ca_file is None and not insecure:
            ca_file = Path(state.ca_file)
        ssh_key = ssh_key or Path(state.ssh_key)
        ssh_known_hosts = ssh_known_hosts or Path(state.ssh_known_hosts)
        extra = {"lab_instance": lab_instance, "lab_http": lab_http.value,
                 "lab_faults": list(state.faults), "lab_rtt_ms": state.rtt_ms}
    urls: dict[Protocol, str] = {}
    if http:
        urls[Protocol.H1] = urls[Protocol.H2] = check_url("--http", http)
    if ssh:
        urls[Protocol.SSH] = check_url("--ssh", ssh)
        ssh_command = _ssh_command(
            check_private_key(ssh_key), _existing(ssh_known_hosts, "known_hosts file"))
    if git:
        urls[Protocol.GIT] = check_url("--git", git)
    if not urls:
        raise UsageError("no remote to probe", hint="give --http, --ssh and/or --git (or --lab)")
    chosen = _parse_protocols(protocols, urls)
    _preflight(urls, chosen, native=native, capture=not no_capture, full=full, ca_file=ca_file,
               repo=repo)
    options = ProbeOptions(
        urls=urls,
        protocols=chosen,
        size_bytes=parse_size(size),
        seed=seed if seed is not None else int(datetime.now(UTC).timestamp()) & 0xFFFFFF,
        data=data,
        repo=repo,
        repeat=repeat,
        ca_file=str(_existing(ca_file, "CA file")) if ca_file else None,
        insecure=insecure,
        ssh_command=ssh_command,
        out_dir=out or Path("runs") / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        full=full,
        burst=burst,
        timeout_s=timeout,
        budget_s=None if complete else budget,
        stall_timeout_s=stall_timeout or None,
        cleanup_wait_s=cleanup_wait,
        capture=not no_capture,
        extra_options=extra,
        native=native,
        h2_sweep=h2_sweep,
        ssh_key=str(ssh_key) if ssh_key else None,
        ssh_known_hosts=str(ssh_known_hosts) if ssh_known_hosts else None,
        fetch_seed_bytes=fetch_seed_bytes(fetch_seed, direction),
    )
    host = load_host_report(host_report) if host_report else None
    console = Console(stderr=True, highlight=False)
    progress = Progress(
        SpinnerColumn(finished_text=" "), TextColumn("{task.description}"), TimeElapsedColumn(),
        console=console, transient=False,
    )
    if direction is TransferDirection.FETCH:
        run_fetch_command(options, RichReporter(progress, console), progress,
                          fmt=report_format.value, json_out=json_out,
                          console=Console(highlight=False))
        return
    if direction is TransferDirection.BOTH:
        fetch_options = replace(options, out_dir=fetch_run_dir(options.out_dir))
        run_fetch_command(fetch_options, RichReporter(progress, console), progress,
                          fmt=report_format.value,
                          json_out=(json_out.with_name(f"{json_out.stem}-fetch{json_out.suffix}")
                                    if json_out else None),
                          console=Console(highlight=False))
    with tempfile.TemporaryDirectory(prefix="gitnetdiag-host-") as scratch:
        before = Path(scratch) / "host-before.json"
        # The lab's host snapshot is taken while the repository is made and the paths
        # measured; the first push waits for it, so the counter deltas cover every push.
        snapshot = (_InBackground(lambda: _lab_host_report(lab_state, before, None, console))
                    if lab_state is not None else None)
        with progress:
            outcome = run_probe(options, RichReporter(progress, console),
                                before_pushes=snapshot.result if snapshot else None,
                                native_summary=NativeProgress())
        if snapshot is not None and snapshot.result() and lab_state is not None:
            state = lab_state
            after = _InBackground(lambda: _lab_host_report(
                state, outcome.run_dir / HOST_REPORT_FILE, before, console)
                and _lab_storage_report(state, outcome.run_dir / STORAGE_REPORT_FILE, console))
            if then_diagnose:  # the HTML report's plotting library loads meanwhile
                from gitnetdiag.report.plots import warm_up

                warm_up()
            after.result()
    from gitnetdiag.pipeline import summarize_run  # numpy: after the lab re-exec

    # With --diagnose the report is the product on stdout, with --json - the JSON: the
    # summary then goes to stderr.
    json_to_stdout = is_stdout(json_out)
    summary_console = console if then_diagnose or json_to_stdout else Console(highlight=False)
    summary_console.file.write(render_probe_summary(
        outcome.manifest, summaries=summarize_run(outcome.manifest),
        width=summary_console.width, color=summary_console.is_terminal))
    # The sweep's rows are derived from its raw variant files, and kept next to them.
    records = sweep_records(outcome.run_dir)
    if records:
        rows = sweep_rows(records)
        write_new_file(outcome.run_dir / SWEEP_ARTIFACT,
                       (json.dumps(to_jsonable(rows), indent=1) + "\n").encode())
        summary_console.print("HTTP/2 sweep: the upload rate follows the server's window, "
                              "not the client's settings", markup=False)
        summary_console.print(render_sweep(rows), markup=False, highlight=False)
    summary_console.print(f"run directory: {outcome.run_dir}", markup=False)
    if json_out is not None:
        summary = {
            "run_dir": str(outcome.run_dir),
            "run_id": outcome.manifest.run_id,
            "status": outcome.manifest.status,
            "protocols": to_jsonable(summarize_run(outcome.manifest)),
            "errors": to_jsonable(outcome.manifest.errors),
        }
        write_output(json_out, json.dumps(summary, indent=2) + "\n")
    if not then_diagnose:
        if outcome.error is not None:
            raise outcome.error
        return
    for error in outcome.manifest.errors:
        if error.stage == "cleanup":  # no measurement, but the user must hear of it
            console.print(f"warning: {error.reference}: {error.message}", style="yellow",
                          markup=False)
    diagnosis = print_diagnosis(outcome.run_dir, host, report_format, out_dir=outcome.run_dir,
                                to_stderr=json_to_stdout)
    failure = verdict_error(diagnosis.verdict, diagnosis.measurement_failures)
    if failure is not None:
        raise failure


class _InBackground:
    """A step run in a thread while the caller goes on; :meth:`result` waits for it."""

    def __init__(self, step: Callable[[], bool]) -> None:
        self._step = step
        self._result = False
        self._thread = threading.Thread(target=self._run, name="gitnetdiag-host", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self._result = self._step()

    def result(self) -> bool:
        self._thread.join()
        return self._result


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
    return _lab_step(storage, "no storage check of the lab's repositories", console)


def print_diagnosis(run_dir: Path, host: HostEvidence | None, fmt: ReportFormat, *,
                    out_dir: Path | None, to_stderr: bool = False) -> Diagnosis:
    """Analyse ``run_dir``, print the diagnosis in ``fmt`` (to stderr with ``to_stderr``);
    return it. ``observations.json`` and the reports go to ``out_dir`` (the run directory
    for the run just probed), nowhere when None.

    A directory the user cannot write (someone else's, read-only) does not stop the
    diagnosis: the saved files are skipped with a warning.
    """
    from gitnetdiag.pipeline import diagnose_run, write_reports
    from gitnetdiag.report import RENDERERS

    console = Console(stderr=True, highlight=False)
    with console.status("analysing captures") as status:
        diagnosis, warnings = diagnose_run(
            run_dir, host=host, progress=lambda msg: status.update(msg), save_to=out_dir)
    for warning in warnings:
        console.print(f"warning: {warning}", style="yellow", markup=False)
    written = {} if out_dir is None else write_reports(
        diagnosis, out_dir, warn=lambda message: console.print(
            f"warning: {message}", style="yellow", markup=False))
    if fmt is ReportFormat.TERMINAL:
        from gitnetdiag.report.terminal import render_terminal

        out = Console(highlight=False, stderr=to_stderr)
        width = out.width if out.is_terminal else 100  # files and pipes get the full table
        typer.echo(render_terminal(diagnosis, width=width, color=out.is_terminal), nl=False,
                   err=to_stderr)
    else:
        typer.echo(RENDERERS[fmt.value](diagnosis), nl=False, err=to_stderr)
    if written:
        console.print("reports: " + ", ".join(str(p) for p in written.values()), markup=False)
    return diagnosis


DIAGNOSE_HELP = """Probe, capture, analyse and rank the culprits: the main job.

Pushes the same repository over HTTP/1.1, HTTP/2 and SSH (and git:// with --git)
to throwaway branches, captures every push, records the HTTP/2 and SSH
flow-control ledgers, then prints a ranked diagnosis with evidence and the fix.
The run directory keeps everything; 'gitnetdiag report RUNDIR' re-renders it.
"""

DIAGNOSE_EPILOG = (
    "Examples:\n\n"
    "  gitnetdiag diagnose --lab                                  against the local lab\n\n"
    "  gitnetdiag diagnose --http https://git.example.com/team/repo.git "
    "--ssh ssh://git@git.example.com/team/repo.git --ca-file ca.pem --ssh-key ~/.ssh/id_ed25519"
    "\n\n"
    "  gitnetdiag diagnose --lab --burst 150 --git git://198.18.2.2/lab.git --host-report "
    "host.json\n\n"
    "  gitnetdiag diagnose --lab --format md > ticket.md\n\n"
    "  gitnetdiag diagnose --capture customer.pcap              a bare capture, no probing"
)


def _diagnose_command() -> Callable[..., None]:
    """``probe`` with --diagnose always on: the same options, one flag fewer, plus
    ``--capture FILE`` to diagnose a bare capture instead of probing."""
    signature = inspect.signature(probe_command)
    params = [p for p in signature.parameters.values() if p.name != "then_diagnose"]
    params.append(inspect.Parameter(
        "capture", inspect.Parameter.KEYWORD_ONLY, annotation="Path | None",
        default=typer.Option(
            None, "--capture", metavar="FILE",
            help="Diagnose this bare pcap/pcapng (client or server side) instead of probing: "
            "the git transfers found in it, ranked culprits (as 'analyze FILE --diagnose').")))
    params.append(inspect.Parameter(
        "keylog", inspect.Parameter.KEYWORD_ONLY, annotation="Path | None",
        default=typer.Option(
            None, "--keylog", metavar="FILE",
            help="With --capture: TLS key log, adds the decrypted HTTP/2 ledger.")))

    @functools.wraps(probe_command)
    def diagnose_command(capture: Path | None = None, keylog: Path | None = None,
                         **kwargs: Any) -> None:
        if capture is not None:
            from gitnetdiag.commands._capture import print_capture_diagnosis

            json_out = kwargs.get("json_out")
            print_capture_diagnosis(capture, keylog,
                                    str(json_out) if json_out is not None else None)
            return
        probe_command(then_diagnose=True, **kwargs)

    diagnose_command.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    diagnose_command.__annotations__ = {**probe_command.__annotations__,
                                        "capture": "Path | None", "keylog": "Path | None"}
    diagnose_command.__doc__ = DIAGNOSE_HELP
    return diagnose_command


def register(app: typer.Typer) -> None:
    app.command("diagnose", epilog=DIAGNOSE_EPILOG)(_diagnose_command())
    app.command("probe", epilog=PROBE_EPILOG)(probe_command)


PROBE_EPILOG = (
    "Examples:\n\n"
    "  gitnetdiag probe --lab --size 8MiB --repeat 3\n\n"
    "  gitnetdiag probe --http https://git.example.com/team/repo.git --ca-file ca.pem "
    "--protocols h1,h2 --out runs/edge\n\n"
    "  gitnetdiag probe --lab --full                keylog + decryptable pcapng\n\n"
    "  gitnetdiag analyze runs/edge --diagnose      the diagnosis, offline"
)
