"""``gitnetdiag lab up|fix|down|status``: the local reproduction lab."""

from __future__ import annotations

import enum
import json
from typing import Any

import typer
from rich.console import Console

from gitnetdiag.commands._options import LabJson, LabName
from gitnetdiag.lab import manager
from gitnetdiag.lab.spec import (
    FAULT_FIXED_SETTINGS,
    FAULTS,
    LARGE_WINDOW,
    build_spec,
    fixed_spec,
    parse_duration_ms,
    parse_loss,
    parse_rate,
)
from gitnetdiag.model.lab.state import DEFAULT_INSTANCE, LabState
from gitnetdiag.report.lab import render_lab_status
from gitnetdiag.vocabulary import SIZE_RULE, parse_size

console = Console(highlight=False, emoji=False)  # "MaxStartups 2:100:2" is no emoji


class FetchHistory(enum.StrEnum):
    """``lab up --fetch-history``: what ``main`` serves to a clone."""

    RANDOM = "random"
    SIMILAR = "similar"


lab_app = typer.Typer(
    help=(
        "A reproduction lab in three network namespaces, client -- router -- server, with real "
        "Apache (mod_http2), HAProxy, sshd and git daemon, and named faults. Needs root.\n\n"
        "Faults: " + "; ".join(f"[bold]{k}[/bold]: {v}" for k, v in FAULTS.items())
    ),
    no_args_is_help=True,
    rich_markup_mode="rich",
)


@lab_app.command("up", epilog=(
    "Examples:\n\n"
    "  gitnetdiag lab up                                   healthy lab, 50 ms RTT\n\n"
    "  gitnetdiag lab up --fault h2-small-window           the slow HTTP/2 edge\n\n"
    "  gitnetdiag lab up --edge nginx --fault h2-small-window   nginx's default windows\n\n"
    "  gitnetdiag lab up --fault loss --loss 1% --rtt 100ms\n\n"
    "  gitnetdiag lab up --name b --fault tiny-backlog     a second instance beside the first"
))
# Typer reads every option from the command function's parameters: that is the reason this
# function has 12 of them.
def up_command(
    fault: list[str] = typer.Option(
        ["healthy"], "--fault", "-f", help="Named fault to inject; repeat for several."
    ),
    rtt: str | None = typer.Option(
        None, "--rtt", help="Round-trip delay the router adds (50ms, 0.2s). "
        "Default 50ms, or 300ms with --fault ssh-channel-window."
    ),
    loss: str | None = typer.Option(
        None, "--loss", help="Random drop per packet in the router (2% or 0.02). "
        "Default 0, or 2% with --fault loss."
    ),
    rate: str | None = typer.Option(None, "--rate", help="Rate limit of the path (100mbit)."),
    edge: str | None = typer.Option(
        None, "--edge", help="TLS edge on port 8443: haproxy, nginx, caddy, h2o or trafficserver "
        "(default haproxy; nginx with --fault edge-buffering or edge-response-buffering)."
    ),
    edge_h2_window: int | None = typer.Option(
        None, "--edge-h2-window", help="The edge's HTTP/2 receive window (overrides faults)."
    ),
    apache_h2_window: int | None = typer.Option(
        None, "--apache-h2-window", help="Apache H2WindowSize (default 16 MiB)."
    ),
    reset_after: str | None = typer.Option(
        None, "--reset-after", help="With --fault firewall-reset: let SSH connections open "
        "and reset both ends once the client has sent this much, as an IPS cutting a "
        f"push mid-way does ({SIZE_RULE}). Default: refuse the connection."
    ),
    fixed: bool = typer.Option(
        False, "--fixed", help="Build the lab with the fix of every --fault applied (what "
        "'lab fix' does to a running lab)."),
    fetch_history: FetchHistory | None = typer.Option(
        None, "--fetch-history", help="What the repository's main serves to a clone: random "
        "(6 MiB of random data) or similar (similar text blobs). Default: what the fault "
        "needs (one empty commit for a push fault)."),
    name: LabName = DEFAULT_INSTANCE,
    as_json: LabJson = False,
) -> None:
    """Build the lab and start its servers; prints every endpoint."""
    spec = build_spec(
        instance=name, faults=fault, rtt_ms=parse_duration_ms(rtt) if rtt is not None else None,
        loss=parse_loss(loss) if loss is not None else None,
        rate=parse_rate(rate) if rate else None,
        edge_h2_window=edge_h2_window, apache_h2_window=apache_h2_window, edge=edge,
        reset_after_bytes=parse_size(reset_after) if reset_after is not None else None,
        fetch_history=fetch_history.value if fetch_history is not None else None,
    )
    if fixed:
        spec = fixed_spec(spec)
    with console.status("bringing the lab up") as status:
        state = manager.up(spec, progress=lambda msg: status.update(f"lab up: {msg}"))
    _print_state(state, {role: True for role in state.pids}, as_json)


@lab_app.command("fix", epilog=(
    "Examples:\n\n"
    "  gitnetdiag lab fix                                  fix every fault of the lab\n\n"
    "  gitnetdiag lab fix --name b --fault loss            only the loss\n\n"
    "  gitnetdiag lab fix --h2-window 1048576              the edge window the report "
    "suggested"
))
def fix_command(
    fault: list[str] = typer.Option(
        [], "--fault", "-f", help="Fault to fix (repeat); default: every fault with a fix "
        "(" + ", ".join(FAULT_FIXED_SETTINGS) + ")."),
    h2_window: int = typer.Option(
        LARGE_WINDOW, "--h2-window", min=65535, max=2**31 - 1,
        help="Edge HTTP/2 window the h2-small-window fix sets: the value the report suggests."),
    name: LabName = DEFAULT_INSTANCE,
    as_json: LabJson = False,
) -> None:
    """Apply the fix the report names to the running lab, in place (same endpoints).

    Then diagnose again and 'gitnetdiag compare' the two runs.
    """
    from gitnetdiag.lab.fix import fix

    with console.status("fixing the lab") as status:
        state, done = fix(name, fault or None, h2_window=h2_window,
                          progress=lambda msg: status.update(f"lab fix: {msg}"))
    if as_json:
        _print_state(state, {role: True for role in state.pids}, as_json)
        return
    for line in done:
        console.print(f"fixed: {line}", markup=False)
    console.print(f"faults left: {', '.join(state.faults)}", markup=False)


@lab_app.command("down", epilog="Example:\n\n  gitnetdiag lab down; gitnetdiag lab down --name b")
def down_command(
    name: LabName = DEFAULT_INSTANCE,
    all_instances: bool = typer.Option(False, "--all", help="Take down every lab instance."),
) -> None:
    """Stop the lab's processes, delete its namespaces, rules and files. Safe to run twice."""
    names = manager.list_instances() if all_instances else [name]
    removed = [item for n in names for item in manager.down(n)]
    if removed:
        for item in removed:
            console.print(f"removed {item}")
    else:
        console.print("nothing to remove: no lab is up")


@lab_app.command("status", epilog="Examples:\n\n  gitnetdiag lab status\n\n"
                 "  gitnetdiag lab status --json | jq .endpoints")
def status_command(
    name: LabName = DEFAULT_INSTANCE,
    as_json: LabJson = False,
) -> None:
    """Show the endpoints (HTTPS edge and direct, SSH, git://), keys, CA file and faults."""
    state, alive = manager.status(name)
    _print_state(state, alive, as_json)


def _print_state(state: LabState, alive: dict[str, bool], as_json: bool) -> None:
    if as_json:
        data: dict[str, Any] = state.to_dict()
        data["processes_alive"] = alive
        typer.echo(json.dumps(data, indent=2))
        return
    console.file.write(render_lab_status(state, alive=alive, width=console.width,
                                         color=console.is_terminal))


def register(app: typer.Typer) -> None:
    app.add_typer(lab_app, name="lab")
