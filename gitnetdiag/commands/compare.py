"""``gitnetdiag compare RUN_A RUN_B [RUN_C ...]``: runs side by side."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import typer
from rich.console import Console

from gitnetdiag.commands._options import ReportFormat, ReportOut
from gitnetdiag.commands._output import emit
from gitnetdiag.diagnosis.comparison import Comparison
from gitnetdiag.diagnosis.observations import PROTOCOL_LABELS
from gitnetdiag.errors import UsageError, VerdictError
from gitnetdiag.rundir.both import fetch_run_dir
from gitnetdiag.rundir.files import FETCH_FILE, MANIFEST_NAME

FETCH_SUFFIX = fetch_run_dir(Path("RUN")).name.removeprefix("RUN")
"""What ``--direction both`` appends to the push run directory's name for its clones."""


def is_fetch_run(run_dir: Path) -> bool:
    """A run directory of clones (``fetch.json``, no ``manifest.json``)."""
    return (run_dir / FETCH_FILE).is_file() and not (run_dir / MANIFEST_NAME).exists()


def other_half(run_dir: Path) -> Path | None:
    """The other half of a ``--direction both`` run: ``RUN-fetch`` beside ``RUN``, or
    ``RUN`` beside ``RUN-fetch``; None when ``run_dir`` is not half of one."""
    if is_fetch_run(run_dir):
        name = run_dir.name.removesuffix(FETCH_SUFFIX)
        push = run_dir.with_name(name)
        return push if name != run_dir.name and (push / MANIFEST_NAME).is_file() else None
    fetch = fetch_run_dir(run_dir)
    return fetch if (run_dir / MANIFEST_NAME).is_file() and is_fetch_run(fetch) else None


def matching_halves(run_dirs: Sequence[Path],
                    say: Callable[[str], None] = lambda _m: None) -> list[Path]:
    """The run directories to compare: a ``--direction both`` run given against runs of the
    other direction is replaced by its matching half (said to ``say``). Runs of different
    directions with no such half are left as given: the comparison refuses them."""
    fetches = [is_fetch_run(d) for d in run_dirs]
    if len(set(fetches)) < 2:
        return list(run_dirs)
    halves = [other_half(d) for d in run_dirs]
    fixed = {fetch for fetch, half in zip(fetches, halves, strict=True) if half is None}
    if len(fixed) > 1:
        return list(run_dirs)
    want = fixed.pop() if fixed else fetches[0]
    chosen = []
    for run_dir, fetch, half in zip(run_dirs, fetches, halves, strict=True):
        if fetch != want and half is not None:
            say(f"{run_dir} is half of a --direction both run: comparing its "
                f"{'clones' if want else 'pushes'}, {half}")
            run_dir = half
        chosen.append(run_dir)
    return chosen


def refuse_own_halves(run_dirs: Sequence[Path]) -> None:
    """Refuse a ``--direction both`` run given with its own other half: its pushes and its
    clones are one run, not a before and an after."""
    given = {d.resolve() for d in run_dirs}
    for run_dir in run_dirs:
        half = other_half(run_dir)
        if half is not None and half.resolve() in given and not is_fetch_run(run_dir):
            raise UsageError(
                f"{run_dir} and {half} are the two halves of one --direction both run (its "
                "pushes and its clones): nothing to compare them by",
                hint=f"compare {run_dir} with another run (its matching half is taken), or "
                f"'gitnetdiag report {run_dir}' for both directions in one report",
                reference="same-run")


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
            hint=f"compare runs that each completed a {comparison.words.one} over the same "
            "protocol (--protocols)")
    return None


def compare_command(
    run_dirs: list[Path] = typer.Argument(
        ..., help="Run directories (from diagnose or probe) of one direction, pushes or "
        "clones; the first is the baseline."),
    report_format: ReportFormat = typer.Option(
        ReportFormat.TERMINAL, "--format", "-f", help="terminal, md (for tickets), html "
        "(self-contained, with before/after plots) or json (docs/report-schema.md)."),
    out: ReportOut = None,
) -> None:
    """Compare runs: before and after a fix, or one remote from several places.

    Runs of one direction: pushes with pushes, clones with clones (a --direction
    both run compares by its matching half, RUN or RUN-fetch). Per protocol:
    push (clone) duration and rate with their spread over the repeats and
    whether the change is beyond the noise (Welch's t-test, 3 or more a side);
    the culprits that went away, stayed or appeared; and for the first run's
    top culprit, its predicted gain (cost) against the measured gain.
    Offline; no network, no root.
    """
    from gitnetdiag.pipeline import compare_runs
    from gitnetdiag.report import COMPARE_RENDERERS, render_compare_terminal

    refuse_own_halves(run_dirs)
    err = Console(stderr=True, highlight=False)
    comparison = compare_runs(
        matching_halves(run_dirs, say=lambda message: err.print(message, markup=False)),
        warn=lambda message: err.print(f"warning: {message}", style="yellow", markup=False))
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
        "  gitnetdiag compare runs/clone-before runs/clone-after   (--direction fetch runs)\n\n"
        "  gitnetdiag compare runs/office runs/home runs/cloud --format html -o where.html"
    ))(compare_command)
