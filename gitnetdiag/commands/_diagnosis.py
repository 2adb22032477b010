"""The ranked diagnosis of a run directory, printed: ``diagnose``, ``probe --diagnose``,
``analyze RUN --diagnose``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from gitnetdiag.commands._options import ReportFormat
from gitnetdiag.steps import step

if TYPE_CHECKING:
    from gitnetdiag.diagnosis.model import Diagnosis
    from gitnetdiag.diagnosis.observations import HostEvidence


def print_diagnosis(run_dir: Path, host: HostEvidence | None, fmt: ReportFormat, *,
                    out_dir: Path | None, to_stderr: bool = False,
                    joined: Diagnosis | None = None,
                    clones_missing: str | None = None) -> Diagnosis:
    """Analyse ``run_dir``, print the diagnosis in ``fmt`` (to stderr with ``to_stderr``);
    return it. ``observations.json`` and the reports go to ``out_dir`` (the run directory
    for the run just probed), nowhere when None. ``joined``: the clones' diagnosis of a
    ``--direction both`` run, joined to the pushes' into the one diagnosis printed;
    ``clones_missing``: why a both run has none (one clause), said and judged
    (:func:`~gitnetdiag.diagnosis.combined.without_clones`).

    A directory the user cannot write (someone else's, read-only) does not stop the
    diagnosis: the saved files are skipped with a warning.
    """
    from gitnetdiag.pipeline import diagnose_run, write_reports
    from gitnetdiag.report import RENDERERS

    console = Console(stderr=True, highlight=False)
    with console.status("analysing captures") as status, step("analysis and diagnosis"):
        diagnosis, warnings = diagnose_run(
            run_dir, host=host, progress=lambda msg: status.update(msg), save_to=out_dir)
    for warning in warnings:
        console.print(f"warning: {warning}", style="yellow", markup=False)
    if joined is not None:
        from gitnetdiag.diagnosis.combined import combine

        diagnosis = combine(diagnosis, joined)
    elif clones_missing is not None:
        from gitnetdiag.diagnosis.combined import without_clones

        diagnosis = without_clones(diagnosis, clones_missing)
    with step("reports (md, html, json)"):
        written = {} if out_dir is None else write_reports(
            diagnosis, out_dir, warn=lambda message: console.print(
                f"warning: {message}", style="yellow", markup=False))
    with step(f"report printed ({fmt.value})"):
        if fmt is ReportFormat.TERMINAL:
            from gitnetdiag.report.terminal import render_terminal

            out = Console(highlight=False, stderr=to_stderr)
            width = out.width if out.is_terminal else 100  # files and pipes: the full table
            typer.echo(render_terminal(diagnosis, width=width, color=out.is_terminal),
                       nl=False, err=to_stderr)
        else:
            typer.echo(RENDERERS[fmt.value](diagnosis), nl=False, err=to_stderr)
    if written:
        console.print("reports: " + ", ".join(str(p) for p in written.values()), markup=False)
    return diagnosis
