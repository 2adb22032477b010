"""``gitnetdiag compare RUN_A RUN_B [RUN_C ...]``: runs side by side."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from gitnetdiag.commands._options import ReportFormat, ReportOut
from gitnetdiag.commands._output import emit
from gitnetdiag.diagnosis.comparison import Comparison
from gitnetdiag.diagnosis.observations import PROTOCOL_LABELS
from gitnetdiag.errors import VerdictError


def nothing_compared(comparison: Comparison) -> VerdictError | None:
    """The error for a pair of runs that share no measured protocol (and no burst): the
    comparison printed says so, and the exit code must too."""
    for pair in comparison.pairs:
        if pair.protocols or pair.bursts:
            continue

        def names(protocols: tuple[str, ...]) -> str:
            return ", ".join(PROTOCOL_LABELS.get(p, p) for p in protocols) or "nothing"
        return VerdictError(
            f"runs {pair.before} and {pair.after} share no measured protocol ({pair.before}: "
            f"{names(pair.only_before)}; {pair.after}: {names(pair.only_after)})",
            reference="nothing-to-compare",
            hint="compare runs that each completed a push over the same protocol "
            "(--protocols)")
    return None


def compare_command(
    run_dirs: list[Path] = typer.Argument(
        ..., help="Run directories (from diagnose or probe); the first is the baseline."),
    report_format: ReportFormat = typer.Option(
        ReportFormat.TERMINAL, "--format", "-f", help="terminal, md (for tickets), html "
        "(self-contained, with before/after plots) or json (docs/report-schema.md)."),
    out: ReportOut = None,
) -> None:
    """Compare runs: before and after a fix, or one remote from several places.

    Per protocol: push duration and rate with their spread over the repeats and
    whether the change is beyond the noise (Welch's t-test, 3 or more pushes a
    side); the culprits that went away, stayed or appeared; and for the first
    run's top culprit, its predicted gain (cost) against the measured gain.
    Offline; no network, no root.
    """
    from gitnetdiag.pipeline import compare_runs
    from gitnetdiag.report import COMPARE_RENDERERS, render_compare_terminal

    err = Console(stderr=True, highlight=False)
    comparison = compare_runs(run_dirs, warn=lambda message: err.print(
        f"warning: {message}", style="yellow", markup=False))
    if report_format is ReportFormat.TERMINAL and out is None:
        console = Console(highlight=False)
        text = render_compare_terminal(
            comparison, width=console.width if console.is_terminal else 110,
            color=console.is_terminal)
    else:
        text = COMPARE_RENDERERS[report_format.value](comparison)
    emit(text, out)
    empty = nothing_compared(comparison)
    if empty is not None:
        raise empty


def register(app: typer.Typer) -> None:
    app.command("compare", epilog=(
        "Examples:\n\n"
        "  gitnetdiag compare runs/before runs/after\n\n"
        "  gitnetdiag compare runs/before runs/after --format md > ticket.md\n\n"
        "  gitnetdiag compare runs/office runs/home runs/cloud --format html -o where.html"
    ))(compare_command)
