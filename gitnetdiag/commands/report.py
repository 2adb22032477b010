"""``gitnetdiag report RUNDIR``: render a run's diagnosis again, in any format."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from gitnetdiag.commands._output import emit
from gitnetdiag.commands.probe import ReportFormat
from gitnetdiag.errors import UsageError
from gitnetdiag.inputfile import unusable_reason
from gitnetdiag.rundir import MANIFEST_NAME


def report_command(
    run_dir: Path = typer.Argument(..., help="A run directory written by probe or diagnose."),
    report_format: ReportFormat = typer.Option(
        ReportFormat.TERMINAL, "--format", "-f", help="terminal, md (for tickets), html "
        "(self-contained, with plots) or json (schema in docs/report-schema.md)."),
    out: Path | None = typer.Option(None, "--out", "-o",
                                    help="Write here instead of stdout ('-' = stdout)."),
    reanalyze: bool = typer.Option(
        False, "--reanalyze", help="Parse the captures again instead of reusing "
        "observations.json."),
) -> None:
    """Render the ranked diagnosis of a run directory (offline; no network, no root).

    Exits 8 when the diagnosis is inconclusive and 9 when nothing was measured,
    after writing the report (the README lists every exit code).
    """
    from gitnetdiag.diagnosis.verdict import verdict_error
    from gitnetdiag.pipeline import diagnose_run, diagnosis_from_saved
    from gitnetdiag.report import RENDERERS

    if unusable_reason(run_dir / MANIFEST_NAME) == "does not exist":  # else load_run says
        raise UsageError(f"{run_dir} is not a run directory (no {MANIFEST_NAME})",
                         hint="give a directory written by 'gitnetdiag probe' or 'diagnose'")
    err = Console(stderr=True, highlight=False)

    def warn(message: str) -> None:
        err.print(f"warning: {message}", style="yellow", markup=False)

    if reanalyze:
        diagnosis, warnings = diagnose_run(run_dir)
        for warning in warnings:
            warn(warning)
    else:
        diagnosis = diagnosis_from_saved(run_dir, warn)
    if report_format is ReportFormat.TERMINAL and out is None:
        from gitnetdiag.report.terminal import render_terminal

        console = Console(highlight=False)
        text = render_terminal(diagnosis, width=console.width if console.is_terminal else 100,
                               color=console.is_terminal)
    else:
        text = RENDERERS[report_format.value](diagnosis)
    emit(text, out)
    failure = verdict_error(diagnosis.verdict, diagnosis.measurement_failures)
    if failure is not None:
        raise failure


def register(app: typer.Typer) -> None:
    app.command("report", epilog=(
        "Examples:\n\n"
        "  gitnetdiag report captures/h2-small-window\n\n"
        "  gitnetdiag report runs/20261122T010000Z --format md > ticket.md\n\n"
        "  gitnetdiag report runs/20261122T010000Z --format html -o report.html"
    ))(report_command)
