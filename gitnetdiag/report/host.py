"""Terminal view of the server's own evidence (:class:`gitnetdiag.model.host.report.HostReport`)."""

from __future__ import annotations

from rich.table import Table

from gitnetdiag.model.host.report import HostReport
from gitnetdiag.model.host.sysctl import SYSCTLS
from gitnetdiag.report.console import console_output, text_console


def render_host_report(report: HostReport, *, width: int = 100, color: bool = False) -> str:
    """Terminal view: listeners, counters that moved, kernel log, findings, unreadable."""
    console = text_console(width=width, color=color, soft_wrap=True)
    console.print(
        f"[bold]host evidence[/bold] {report.hostname or '?'} via {report.via}, "
        + (f"interval {report.during_s:g} s" if report.during_s else "single snapshot")
        + ("" if report.is_root else " (not root)")
    )
    table = Table(title="Listening TCP sockets", title_justify="left")
    table.add_column("address:port", no_wrap=True)
    for column in ("backlog", "accept queue (peak)", "process", "pid", ""):
        table.add_column(column)
    somaxconn = report.sysctls.get("net.core.somaxconn")
    for item in sorted(report.listeners, key=lambda x: (x.port, x.address)):
        flag = "[red]SMALL BACKLOG[/red]" if item.small_backlog else ""
        table.add_row(
            f"{item.address}:{item.port}",
            "?" if item.backlog is None else str(item.backlog),
            f"{item.accept_queue} ({item.accept_queue_max})",
            item.process or "?",
            "" if item.pid is None else str(item.pid),
            flag,
        )
    console.print(table)
    if somaxconn:
        console.print(f"net.core.somaxconn {somaxconn} caps every backlog")
    if report.counters:
        moved = {k: v for k, v in report.counters.items() if v}
        counters = Table(
            title=f"Kernel counters, delta over {report.during_s:g} s", title_justify="left"
        )
        counters.add_column("counter")
        counters.add_column("delta", justify="right")
        for key, value in moved.items():
            if key[0].isupper() and "." not in key:
                counters.add_row(key, str(value))
        console.print(counters if moved else "kernel counters: no change over the interval")
    elif report.during_s == 0:
        console.print("kernel counters: single snapshot (use --during or --since for deltas)")
    if report.kernel_log:
        console.print("[bold]kernel log[/bold]")
        for line in report.kernel_log:
            console.print(f"  {line}", markup=False)
    console.print(
        "sysctls: "
        + ", ".join(
            f"{k.split('.')[-1]}={report.sysctls[k]}" for k in SYSCTLS if k in report.sysctls
        ),
        markup=False,
    )
    for finding in report.config_findings:
        where = f"{finding.file}:{finding.line}" if finding.line else f"{finding.file} (default)"
        console.print(
            f"[yellow]{finding.setting} {finding.value}[/yellow] ({where}): {finding.effect}",
            highlight=False,
        )
    if not report.config_findings:
        console.print(f"config lint: nothing limiting in {len(report.configs_checked)} file(s)")
    for missing in report.unreadable:
        console.print(f"[dim]could not read {missing.what}: {missing.why}[/dim]", highlight=False)
    return console_output(console)
