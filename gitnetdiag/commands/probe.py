"""``gitnetdiag probe``: the measured pushes and their artifacts (a run directory)."""

from __future__ import annotations

import json
import shlex
import sys
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from gitnetdiag.errors import UsageError
from gitnetdiag.probe.gitpush import Protocol
from gitnetdiag.probe.rundir import RunManifest
from gitnetdiag.probe.runner import ProbeOptions, parse_size, run_probe, summarize

DEFAULT_TIMEOUT_S = 300.0


class LabHttp(StrEnum):
    """Which HTTPS way into the lab --lab uses."""

    EDGE = "edge"
    DIRECT = "direct"


class RichReporter:
    """Progress of each step: a spinner while it runs, its result when done."""

    def __init__(self, progress: Progress, console: Console) -> None:
        self.progress = progress
        self.console = console
        self.tasks: dict[str, TaskID] = {}

    def begin(self, label: str) -> None:
        self.tasks[label] = self.progress.add_task(label, total=1)

    def done(self, label: str, detail: str, *, ok: bool) -> None:
        task = self.tasks.pop(label, None)
        mark = "[green]ok[/green]" if ok else "[red]!![/red]"
        text = f"{mark} {label}: {detail}"
        if task is None:
            self.progress.console.print(text, highlight=False)
            return
        self.progress.update(task, description=text, completed=1)

    def warn(self, message: str) -> None:
        self.progress.console.print(f"[yellow]warning:[/yellow] {message}", highlight=False)


def _mib_s(value: float | None) -> str:
    return "-" if value is None else f"{value / 2**20:.2f}"


def render_summary(manifest: RunManifest, console: Console) -> None:
    """The summary table: rate per protocol (median, min, max), HTTP version, failures."""
    table = Table(
        title=f"gitnetdiag probe {manifest.run_id} ({manifest.status})",
        caption="MiB/s: median rate of the pushes (min, max); s: median wall time",
    )
    for column in ("proto", "ok", "MiB/s", "min", "max", "s", "http", "failures", "burst"):
        table.add_column(column, justify="left" if column in ("proto", "http") else "right")
    for row in summarize(manifest):
        failures = ", ".join(f"{kind} {count}" for kind, count in sorted(row.failures.items()))
        burst = "-" if row.burst_ok is None else str(row.burst_ok)
        if row.burst_failures:
            burst += " (" + ", ".join(
                f"{k} {n}" for k, n in sorted(row.burst_failures.items())) + ")"
        table.add_row(
            row.protocol, f"{row.ok}/{row.pushes}", _mib_s(row.rate_median_bytes_per_s),
            _mib_s(row.rate_min_bytes_per_s), _mib_s(row.rate_max_bytes_per_s),
            "-" if row.wall_median_s is None else f"{row.wall_median_s:.2f}",
            row.http_version or "-", failures or "-", burst,
        )
    console.print(table)


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


def _existing(path: Path | None, what: str) -> Path | None:
    if path is not None and not path.is_file():
        raise UsageError(f"{what} {path} does not exist", hint=f"give an existing {what}")
    return path


def probe_command(
    http: str | None = typer.Option(None, "--http", help="HTTPS smart-HTTP remote URL."),
    ssh: str | None = typer.Option(None, "--ssh", help="SSH remote URL."),
    git: str | None = typer.Option(None, "--git", help="git:// remote URL."),
    protocols: str | None = typer.Option(
        None, "--protocols", help="Comma list of h1,h2,ssh,git (default: those with URLs)."),
    size: str = typer.Option("32MiB", "--size", help="Generated repository size (4MiB, 1GiB)."),
    seed: int | None = typer.Option(None, "--seed", help="Seed of the generated data."),
    repo: Path | None = typer.Option(None, "--repo", help="Push this repository's HEAD instead."),
    repeat: int = typer.Option(1, "--repeat", min=1, help="Pushes per protocol."),
    ca_file: Path | None = typer.Option(None, "--ca-file", help="CA bundle for HTTPS."),
    insecure: bool = typer.Option(False, "--insecure", help="Do not verify HTTPS certificates."),
    ssh_key: Path | None = typer.Option(None, "--ssh-key", help="SSH private key."),
    ssh_known_hosts: Path | None = typer.Option(
        None, "--ssh-known-hosts", help="known_hosts file for the SSH remote."),
    out: Path | None = typer.Option(None, "--out", help="Run directory (default runs/<time>)."),
    json_out: Path | None = typer.Option(None, "--json", help="Write the summary as JSON here."),
    full: bool = typer.Option(
        False, "--full", help="Whole packets + TLS keylog (0600) + decryptable pcapng."),
    burst: int = typer.Option(0, "--burst", min=0, help="Concurrent ls-remote per protocol."),
    timeout: float = typer.Option(
        DEFAULT_TIMEOUT_S, "--timeout", min=1.0, help="Timeout of each git run, seconds."),
    no_capture: bool = typer.Option(False, "--no-capture", help="Do not run tcpdump."),
    lab: bool = typer.Option(False, "--lab", help="Probe the local lab (runs in its client ns)."),
    lab_instance: str = typer.Option("default", "--lab-instance", help="Lab instance name."),
    lab_http: LabHttp = typer.Option(
        LabHttp.EDGE, "--lab-http", help="Lab HTTPS way in: edge (HAProxy) or direct (Apache)."),
) -> None:
    """Push the same repository over HTTP/1.1, HTTP/2, SSH and git://, captured.

    Each push goes to a throwaway branch gitnetdiag/probe-<id> that is deleted
    right after, also on Ctrl-C or error. Results land in a run directory.
    """
    extra: dict[str, object] = {}
    ssh_command: str | None = None
    if lab:
        from gitnetdiag.lab.state import in_namespace, load_state, reexec_in_namespace
        from gitnetdiag.proc import require_root

        state = load_state(lab_instance)
        if not in_namespace(state.client_ns):
            require_root("gitnetdiag probe --lab")
            reexec_in_namespace(
                state.client_ns, [sys.executable, "-m", "gitnetdiag", *sys.argv[1:]]
            )
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
        urls[Protocol.H1] = http
        urls[Protocol.H2] = http
    if ssh:
        urls[Protocol.SSH] = ssh
        ssh_command = _ssh_command(
            _existing(ssh_key, "SSH key"), _existing(ssh_known_hosts, "known_hosts file"))
    if git:
        urls[Protocol.GIT] = git
    if not urls:
        raise UsageError("no remote to probe", hint="give --http, --ssh and/or --git (or --lab)")
    if repo is not None and not (repo / ".git").exists() and not (repo / "HEAD").is_file():
        raise UsageError(f"{repo} is not a git repository", hint="give --repo a repository path")
    options = ProbeOptions(
        urls=urls,
        protocols=_parse_protocols(protocols, urls),
        size_bytes=parse_size(size),
        seed=seed if seed is not None else int(datetime.now(UTC).timestamp()) & 0xFFFFFF,
        repo=repo,
        repeat=repeat,
        ca_file=str(_existing(ca_file, "CA file")) if ca_file else None,
        insecure=insecure,
        ssh_command=ssh_command,
        out_dir=out or Path("runs") / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        full=full,
        burst=burst,
        timeout_s=timeout,
        capture=not no_capture,
        extra_options=extra,
    )
    console = Console(stderr=True, highlight=False)
    progress = Progress(
        SpinnerColumn(finished_text=" "), TextColumn("{task.description}"), TimeElapsedColumn(),
        console=console, transient=False,
    )
    with progress:
        outcome = run_probe(options, RichReporter(progress, console))
    render_summary(outcome.manifest, Console(highlight=False))
    typer.echo(f"run directory: {outcome.run_dir}")
    if json_out is not None:
        summary = {
            "run_dir": str(outcome.run_dir),
            "run_id": outcome.manifest.run_id,
            "status": outcome.manifest.status,
            "protocols": [row.to_dict() for row in summarize(outcome.manifest)],
            "errors": [error.to_dict() for error in outcome.manifest.errors],
        }
        json_out.write_text(json.dumps(summary, indent=2) + "\n")
    if outcome.error is not None:
        raise outcome.error


def register(app: typer.Typer) -> None:
    app.command("probe")(probe_command)
