"""The progress a probe shows: a phase reaches a running step's spinner at once."""

from __future__ import annotations

import io

from rich.console import Console
from rich.progress import Progress, TextColumn

from gitnetdiag.commands._reporter import RichReporter


def _reporter(terminal: bool) -> tuple[RichReporter, Progress, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=200)
    progress = Progress(TextColumn("{task.description}"), console=console)
    return RichReporter(progress, console), progress, out


def test_a_phase_or_status_shows_at_once_without_bytes_moving() -> None:
    """A clean-up moves no bytes: before, the spinner kept the phase of the last progress
    update ("waiting for the server's status") until the step ended."""
    reporter, progress, _ = _reporter(terminal=True)
    reporter.begin("push h1 #1")
    reporter.moved("push h1 #1", 2**20, 2 * 2**20)
    reporter.phase("push h1 #1", "pack sent: waiting for the server's status")
    (task,) = progress.tasks
    assert task.description == ("push h1 #1: 1.0 MiB, 2.00 MiB/s; pack sent: waiting for the "
                                "server's status")
    reporter.status("push h1 #1", "cleaning up: waiting up to 30 s for the branch")
    assert task.description == ("push h1 #1: 1.0 MiB, 2.00 MiB/s; cleaning up: waiting up to "
                                "30 s for the branch")
    reporter.done("push h1 #1", "interrupted", ok=False)
    assert task.description.endswith("push h1 #1: interrupted")


def test_a_log_gets_phases_as_lines_and_no_status_line() -> None:
    reporter, _, out = _reporter(terminal=False)
    reporter.begin("push h1 #1")
    reporter.phase("push h1 #1", "pack sent")
    reporter.status("push h1 #1", "cleaning up")
    assert out.getvalue().splitlines() == ["push h1 #1 ...", "push h1 #1: pack sent"]
