"""``probe|diagnose --direction fetch|both``: the download direction, read-only.

A thin shell: :func:`gitnetdiag.probe.fetchrun.run_fetch_probe` clones over each
protocol into the run directory, :mod:`gitnetdiag.pipeline` derives the
phases, the TCP evidence and the culprits, :data:`gitnetdiag.report.RENDERERS`
word them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import Progress

from gitnetdiag.commands._output import write_output
from gitnetdiag.errors import GitnetdiagError, NetworkError, UsageError
from gitnetdiag.probe.fetchrun import FetchHooks, run_fetch_probe
from gitnetdiag.probe.options import ProbeOptions, Reporter
from gitnetdiag.rundir import PathMeasurement
from gitnetdiag.steps import step
from gitnetdiag.vocabulary import parse_size

if TYPE_CHECKING:
    from gitnetdiag.diagnosis.model import Diagnosis


class TransferDirection(StrEnum):
    """--direction: which way a run measures."""

    PUSH = "push"
    FETCH = "fetch"
    BOTH = "both"


def fetch_seed_bytes(size: str | None, direction: TransferDirection) -> int | None:
    """``--fetch-seed SIZE`` in bytes; a usage error with ``--direction push``."""
    if size is None:
        return None
    if direction is TransferDirection.PUSH:
        raise UsageError("--fetch-seed goes with --direction fetch or both",
                         hint="add --direction fetch")
    return parse_size(size)


@dataclass(frozen=True, kw_only=True)
class MeasuredRun:
    """A run of clones measured and diagnosed, before anything is printed."""

    run_dir: Path
    """Its run directory."""
    diagnosis: Diagnosis
    """Its diagnosis (direction ``fetch``)."""
    error: GitnetdiagError | None
    """The run's first error, if any (:func:`fetch_exit_error` weighs it)."""
    paths: tuple[PathMeasurement, ...] = ()
    """Its endpoints' paths (a both run's pushes take them)."""


def measure_fetch(options: ProbeOptions, reporter: Reporter, progress: Progress, *,
                  before_clones: Callable[[], object] | None = None,
                  before_diagnosis: Callable[[Path], object] | None = None) -> MeasuredRun:
    """Fetch over each protocol and diagnose the clones. ``before_clones`` is awaited
    before the first byte moves (:func:`~gitnetdiag.probe.fetchrun.run_fetch_probe`); the
    report's plotting library and the pipeline load as the first clone starts (this
    process's CPU, nothing on the path); ``before_diagnosis`` gets the run directory once
    the last byte was measured (the server's ``host.json`` goes in)."""
    ran: list[str] = []

    def beside() -> None:
        """Beside git's clones: what moves nothing on the path (issue 47)."""
        ran.append("beside")
        _load_report_libraries()

    def after_clones() -> None:
        """The server's evidence: beside the seed's clean-up once the last byte was
        measured."""
        if before_diagnosis is not None:
            before_diagnosis(options.out_dir)
        ran.append("after")

    # Not beside the seed push: its time is in the report ("pushed over h1 in 1.4 s").
    with progress:
        outcome = run_fetch_probe(options, reporter, FetchHooks(
            before_clones=before_clones, beside_clones=beside, after_clones=after_clones))
    if "beside" not in ran:  # the run stopped before any clone (an error of its setup)
        beside()
    if "after" not in ran:
        after_clones()
    from gitnetdiag.pipeline import diagnose_clones

    # A full run directory kept fetch.json at an earlier state: diagnose what was measured.
    with step("clones: analysis and diagnosis"):
        diagnosis = diagnose_clones(outcome.run_dir,
                                    outcome.manifest if outcome.disk_full else None)
    if diagnosis is None:
        raise NetworkError("the fetch run wrote no fetch.json", hint="run it again",
                           reference="fetch-failed")
    # Whatever --format prints: report.md, .html and .json in the run directory, as a
    # diagnosed push run saves them (a read-only or full directory: a warning, no error).
    from gitnetdiag.pipeline import write_reports

    err = Console(stderr=True, highlight=False)
    with step("clones: reports (md, html, json)"):
        write_reports(diagnosis, outcome.run_dir, warn=lambda message: err.print(
            f"warning: {message}", style="yellow", markup=False))
    return MeasuredRun(run_dir=outcome.run_dir, diagnosis=diagnosis, error=outcome.error,
                       paths=outcome.manifest.paths)


def _load_report_libraries() -> None:
    """The pipeline and the report's plotting library loaded (about a second of CPU) beside
    git's clones: this process's CPU, nothing on the path."""
    with step("pipeline and plotting library loaded (beside the clones)"):
        from gitnetdiag.pipeline import diagnose_clones  # noqa: F401
        from gitnetdiag.report.plots import warm_up

        warm_up()


def print_fetch_report(measured: MeasuredRun, *, fmt: str, json_out: Path | None,
                       console: Console) -> None:
    """Print the clones' own report, write ``--json``; raise the run's error (after the
    report) so that the exit code says a clone failed. The run directory keeps its
    ``report.*`` whatever ``fmt`` (:func:`measure_fetch`)."""
    diagnosis = measured.diagnosis
    with step(f"report printed ({fmt})"):
        console.file.write(render_fetch(diagnosis, fmt))
    # A JSON report on stdout stays parseable: the run directory goes to stderr then.
    where = Console(stderr=True, highlight=False) if fmt == "json" else console
    where.print(f"run directory: {measured.run_dir}", markup=False, highlight=False)
    if json_out is not None:
        write_output(json_out, render_fetch(diagnosis, "json"))
    error = fetch_exit_error(diagnosis, measured.error)
    if error is not None:
        raise error


def fetch_exit_error(diagnosis: Diagnosis, run_error: GitnetdiagError | None
                     ) -> GitnetdiagError | None:
    """What a fetch run exits with after its report: the verdict's error when it is
    inconclusive or failed (a failed clone no culprit explains); else the run's first error,
    unless every error of the run is a clone that a ranked culprit explains (a filter's
    resets are the diagnosis, not a failure of it)."""
    from gitnetdiag.diagnosis.verdict import verdict_error

    error = verdict_error(diagnosis.verdict, diagnosis.measurement_failures)
    if error is not None or run_error is None:
        return error
    explained = {f.protocol for f in diagnosis.measurement_failures if f.explained_by}
    errors = diagnosis.fetch_details.record.errors if diagnosis.fetch_details else ()
    if all(e.stage == "fetch" and e.protocol in explained for e in errors):
        return None
    return run_error


def render_fetch(diagnosis: Diagnosis, fmt: str) -> str:
    """The report in ``fmt`` (``terminal``, ``md``, ``html`` or ``json``), by the one set of
    renderers."""
    from gitnetdiag.report import RENDERERS

    return RENDERERS[fmt](diagnosis)
