"""Terminal view of a running lab: endpoints, keys, CA file, faults, processes."""

from __future__ import annotations

from collections.abc import Mapping

from rich.table import Table

from gitnetdiag.diagnosis.servers import NAMES
from gitnetdiag.model.lab.state import LabState
from gitnetdiag.report.console import console_text


def render_lab_status(
    state: LabState, *, alive: Mapping[str, bool], width: int = 100, color: bool = False
) -> str:
    """The lab's state as a two-column table; ``alive``: role -> process running."""
    table = Table(title=f"gitnetdiag lab '{state.instance}'", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    table.add_row("faults", ", ".join(state.faults))
    if state.fixed:
        table.add_row("fixed", ", ".join(state.fixed))
    table.add_row("path", f"{state.rtt_ms:g} ms RTT, loss {state.loss:.1%}, "
                  f"rate {state.rate or 'unlimited'}")
    edge = NAMES.get(state.edge, state.edge)
    table.add_row("HTTPS via edge", f"{state.endpoints.https_edge}  ({edge}, "
                  f"h2 window {state.edge_h2_window})")
    table.add_row("HTTPS direct", f"{state.endpoints.https_direct}  (Apache, "
                  f"H2WindowSize {state.apache_h2_window})")
    table.add_row("SSH", state.endpoints.ssh)
    table.add_row("SSH key", state.ssh_key)
    table.add_row("known_hosts", state.ssh_known_hosts)
    table.add_row("git://", state.endpoints.git)
    table.add_row("CA file", state.ca_file)
    table.add_row("client namespace", f"{state.client_ns}  (ip netns exec {state.client_ns} ...)")
    table.add_row("processes", ", ".join(
        f"{role} {'up' if ok else '[red]DOWN[/red]'}" for role, ok in alive.items()))
    return console_text(table, width=width, color=color)
