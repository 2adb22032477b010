"""``gitnetdiag report RUNDIR``: render a run's diagnosis again, in any format."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer
from rich.console import Console

from gitnetdiag.commands._options import ReportFormat, ReportOut
from gitnetdiag.commands._output import emit
from gitnetdiag.diagnosis.model import Diagnosis
from gitnetdiag.errors import GitnetdiagError, InputError, UsageError
from gitnetdiag.inputfile import read_json_input, unusable_reason
from gitnetdiag.rundir import FETCH_FILE, MANIFEST_NAME
from gitnetdiag.rundir.both import fetch_half_of, missing_half, unreadable_half

LOAD_FILE = "load.json"
"""The report of a ``gitnetdiag load --out`` run directory."""


def _load_diagnosis(path: Path) -> Diagnosis:
    """The diagnosis of a load run, derived again from its ``load.json`` (pure, so the same
    culprits as the run printed and saved)."""
    from gitnetdiag.model.load.records import LoadReport
    from gitnetdiag.pipeline import diagnose_load

    try:
        report = LoadReport.from_dict(read_json_input(path))
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"cannot read the load report {path}: {exc}", reference="bad-load-report",
                         hint="give a run directory written by 'gitnetdiag load --out'") from exc
    return diagnose_load(report)


def _run_diagnosis(run_dir: Path, reanalyze: bool, warn: Callable[[str], None]) -> Diagnosis:
    """A run directory's diagnosis: its captures parsed again with ``reanalyze``, else from
    its saved observations."""
    from gitnetdiag.pipeline import diagnose_run, diagnosis_from_saved

    if not reanalyze:
        return diagnosis_from_saved(run_dir, warn)
    diagnosis, warnings = diagnose_run(run_dir)
    for warning in warnings:
        warn(warning)
    return diagnosis


def _joined(run_dir: Path, pushes: Diagnosis, diagnose: Callable[[Path], Diagnosis]
            ) -> tuple[Diagnosis, Diagnosis | None]:
    """A ``--direction both`` run's one diagnosis of both directions and its clones'; a
    both run whose ``RUN-fetch`` is missing or cannot be read: the pushes' judged without
    the clones (:func:`~gitnetdiag.diagnosis.combined.without_clones`); any other run: its
    own, and None."""
    from gitnetdiag.diagnosis.combined import combine, without_clones

    half = fetch_half_of(run_dir)
    if half is None:
        reason = missing_half(run_dir)
        return (pushes if reason is None else without_clones(pushes, reason)), None
    try:
        clones = diagnose(half)
    except GitnetdiagError as exc:
        return without_clones(pushes, unreadable_half(half, exc.message)), None
    return combine(pushes, clones), clones


def report_command(
    run_dir: Path = typer.Argument(
        ..., help="A run directory written by probe, diagnose or load --out."),
    report_format: ReportFormat = typer.Option(
        ReportFormat.TERMINAL, "--format", "-f", help="terminal, md (for tickets), html "
        "(self-contained, with plots) or json (schema in docs/report-schema.md)."),
    out: ReportOut = None,
    reanalyze: bool = typer.Option(
        False, "--reanalyze", help="Parse the captures again instead of reusing "
        "observations.json."),
    bundle: Path | None = typer.Option(
        None, "--bundle", metavar="FILE", help="Also write FILE, one .tgz to attach to a "
        "ticket: the reports, the records to re-render offline, headers-only captures, an "
        "index (no TLS keys unless --full; at most 20 MiB)."),
    full: bool = typer.Option(
        False, "--full", help="With --bundle: include the TLS key logs and decryptable "
        "captures of a --full run (they decrypt the whole transfer)."),
) -> None:
    """Render the ranked diagnosis of a run directory (offline; no network, no root).

    Exits 8 when the diagnosis is inconclusive and 9 when nothing was measured,
    after writing the report (the README lists every exit code).
    """
    from gitnetdiag.diagnosis.verdict import verdict_error
    from gitnetdiag.report import RENDERERS

    if bundle is not None:
        from gitnetdiag.commands._bundle import check_new_bundle

        check_new_bundle(bundle)
    clones: Diagnosis | None = None
    if (run_dir / LOAD_FILE).is_file() and not (run_dir / MANIFEST_NAME).is_file():
        diagnosis = _load_diagnosis(run_dir / LOAD_FILE)
    elif unusable_reason(run_dir / MANIFEST_NAME) == "does not exist" and not (
            run_dir / FETCH_FILE).exists():  # else load_run (or the fetch run's reader) says
        raise UsageError(f"{run_dir} is not a run directory (no {MANIFEST_NAME})",
                         hint="give a directory written by 'gitnetdiag probe', 'diagnose' or "
                         "'load --out'")
    else:
        err = Console(stderr=True, highlight=False)

        def warn(message: str) -> None:
            err.print(f"warning: {message}", style="yellow", markup=False)

        diagnosis, clones = _joined(run_dir, _run_diagnosis(run_dir, reanalyze, warn),
                                    lambda half: _run_diagnosis(half, reanalyze, warn))
    if report_format is ReportFormat.TERMINAL and out is None:
        from gitnetdiag.report.terminal import render_terminal

        console = Console(highlight=False)
        text = render_terminal(diagnosis, width=console.width if console.is_terminal else 100,
                               color=console.is_terminal)
    else:
        text = RENDERERS[report_format.value](diagnosis)
    emit(text, out)
    if bundle is not None:
        from gitnetdiag.commands._bundle import bundle_run

        bundle_run(run_dir, diagnosis, bundle, full=full, fetch=clones)
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
