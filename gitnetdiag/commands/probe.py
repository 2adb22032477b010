"""``gitnetdiag probe`` and ``gitnetdiag diagnose``: the command lines.

The work is :func:`gitnetdiag.commands._probe_run.run_probe_command`; here are the options
(shared ones from :mod:`gitnetdiag.commands._options`) and the help.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from gitnetdiag.commands._options import (
    DEFAULT_TIMEOUT_S,
    BundleFile,
    CaFile,
    CleanupWait,
    FetchSeed,
    FetchServerLocal,
    FetchServerNetns,
    GitTimeout,
    Insecure,
    JsonSummary,
    Lab,
    LabInstance,
    LabWayIn,
    RemoteArg,
    ReportFormat,
    RunDir,
    SshKey,
    SshKnownHosts,
)
from gitnetdiag.commands._probe_run import ProbeArgs, run_probe_command
from gitnetdiag.commands._reporter import RichReporter
from gitnetdiag.commands.fetch import TransferDirection
from gitnetdiag.model.lab.state import DEFAULT_INSTANCE
from gitnetdiag.probe.budget import DEFAULT_BUDGET_S, DEFAULT_STALL_TIMEOUT_S
from gitnetdiag.probe.cleanup import DEFAULT_CLEANUP_WAIT_S
from gitnetdiag.probe.labremote import LabHttp
from gitnetdiag.probe.options import MAX_REPEAT
from gitnetdiag.vocabulary import SIZE_RULE

__all__ = ["ReportFormat", "RichReporter", "probe_command", "register"]


# Typer reads every option from the command function's parameters: that is the reason this
# function has 35 of them. Its body only packs them into ProbeArgs and hands that on.
def probe_command(
    remote: RemoteArg = None,
    http: Annotated[str | None, typer.Option("--http", help="HTTPS smart-HTTP remote URL.")]
    = None,
    ssh: Annotated[str | None, typer.Option("--ssh", help="SSH remote URL.")] = None,
    git: Annotated[str | None, typer.Option("--git", help="git:// remote URL.")] = None,
    protocols: Annotated[str | None, typer.Option(
        "--protocols", help="Comma list of h1,h2,ssh,git (default: those with URLs).")] = None,
    size: Annotated[str, typer.Option(
        "--size", help=f"Generated repository size, {SIZE_RULE}; at most 4GiB.")] = "32MiB",
    seed: Annotated[int | None, typer.Option(
        "--seed", min=0, max=2**32 - 1, help="Seed of the generated data (0 to 4294967295).")]
    = None,
    data: Annotated[str, typer.Option(
        "--data", help="Generated data: random (incompressible, measures the network) "
        "or text (source-like fresh commits: the client's pack-objects CPU counts too).")]
    = "random",
    repo: Annotated[Path | None, typer.Option(
        "--repo", help="Push this repository's HEAD instead.")] = None,
    repeat: Annotated[int, typer.Option(
        "--repeat", min=1, max=MAX_REPEAT, help=f"Pushes/clones a protocol, 1-{MAX_REPEAT}.")] = 1,
    ca_file: CaFile = None,
    insecure: Insecure = False,
    ssh_key: SshKey = None,
    ssh_known_hosts: SshKnownHosts = None,
    out: RunDir = None,
    json_out: JsonSummary = None,
    full: Annotated[bool, typer.Option(
        "--full", help="Whole packets + TLS keylog (0600) + decryptable pcapng.")] = False,
    burst: Annotated[int, typer.Option(
        "--burst", min=0, help="N concurrent ls-remotes + N raw connects per protocol, after "
        "the pushes or the clones (fetch too; read-only).")] = 0,
    timeout: GitTimeout = DEFAULT_TIMEOUT_S,
    budget: Annotated[float, typer.Option(
        "--budget", min=1.0,
        help="Time budget of each git push, seconds: it is stopped mid-pack (nothing is "
        "created) once its rate is stable or the budget is spent.")] = DEFAULT_BUDGET_S,
    complete: Annotated[bool, typer.Option(
        "--complete", help="Push the whole --size pack (no time budget).")] = False,
    stall_timeout: Annotated[float, typer.Option(
        "--stall-timeout", min=0.0,
        help="A push that moves no byte for this long ends as stalled (0: only --timeout).")]
    = DEFAULT_STALL_TIMEOUT_S,
    cleanup_wait: CleanupWait = DEFAULT_CLEANUP_WAIT_S,
    no_capture: Annotated[bool, typer.Option("--no-capture", help="No tcpdump.")] = False,
    lab: Lab = False,
    lab_instance: LabInstance = DEFAULT_INSTANCE,
    lab_http: LabWayIn = LabHttp.EDGE,
    native: Annotated[bool, typer.Option(
        "--native/--no-native",
        help="Also push with the native HTTP/2 and SSH probes to record the flow-control "
        "ledgers (server window, every WINDOW_UPDATE / window adjust).")] = True,
    h2_sweep: Annotated[bool, typer.Option(
        "--h2-sweep", help="Repeat the native HTTP/2 upload advertising different "
        "client SETTINGS and show how the rate follows the server's window.")] = False,
    then_diagnose: Annotated[bool, typer.Option(
        "--diagnose", help="Analyse the run and print the ranked diagnosis "
        "(what 'gitnetdiag diagnose' does).")] = False,
    host_report: Annotated[Path | None, typer.Option(
        "--host-report", help="Server-side evidence from 'gitnetdiag host --json' "
        "to add to the diagnosis.")] = None,
    report_format: Annotated[ReportFormat, typer.Option(
        "--format", help="How to print the diagnosis.")] = ReportFormat.TERMINAL,
    direction: Annotated[TransferDirection | None, typer.Option(
        "--direction",
        help="push (to a throwaway branch), fetch (read-only bounded clones of what the URL "
        "serves) or both (fetches land in RUN-fetch). Default: push; fetch for a checkout's "
        "remote that refuses pushes (git's words said).", show_default=False)] = None,
    fetch_seed: FetchSeed = None,
    host_netns: FetchServerNetns = None,
    host_local: FetchServerLocal = False,
    bundle: BundleFile = None,
) -> None:
    """Push or clone the same repository over HTTP/1.1, HTTP/2, SSH and git://, captured.

    Each push goes to a throwaway branch gitnetdiag/probe-<id> deleted right after, also
    on Ctrl-C or error; a clone writes nothing on the server. Results: a run directory.
    """
    run_probe_command(ProbeArgs(**locals()))  # the parameters are ProbeArgs's fields


DIAGNOSE_HELP = """Probe, capture, analyse and rank the culprits: the main job.

Pushes the same repository over HTTP/1.1, HTTP/2 and SSH (and git:// with --git)
to throwaway branches, or clones it (--direction fetch; both: both), captures
every transfer, records the HTTP/2 and SSH flow-control ledgers, then prints a
ranked diagnosis with evidence and the fix.
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
    "  gitnetdiag diagnose --lab --direction fetch                slow clones: read-only\n\n"
    "  gitnetdiag diagnose --lab --format md > ticket.md\n\n"
    "  gitnetdiag diagnose --capture customer.pcap              a bare capture, no probing"
)


def _diagnose_command() -> Callable[..., None]:
    """``probe`` with --diagnose always on: the same options, one flag fewer, plus
    ``--capture FILE`` to diagnose a bare capture instead of probing."""
    signature = inspect.signature(probe_command, eval_str=True)
    params = [p for p in signature.parameters.values() if p.name != "then_diagnose"]
    params.append(inspect.Parameter(
        "capture", inspect.Parameter.KEYWORD_ONLY, default=None,
        annotation=Annotated[Path | None, typer.Option(
            "--capture", metavar="FILE",
            help="Diagnose this bare pcap/pcapng (client or server side) instead of probing: "
            "the git transfers found in it, ranked culprits (as 'analyze FILE --diagnose').")]))
    params.append(inspect.Parameter(
        "keylog", inspect.Parameter.KEYWORD_ONLY, default=None,
        annotation=Annotated[Path | None, typer.Option(
            "--keylog", metavar="FILE",
            help="With --capture: TLS key log, adds the decrypted HTTP/2 ledger.")]))

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
    diagnose_command.__annotations__ = {p.name: p.annotation for p in params}
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
