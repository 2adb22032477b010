"""The progress a probe shows while it runs (``probe``, ``diagnose``, their fetches)."""

from __future__ import annotations

import contextlib
import time

from rich.console import Console
from rich.progress import Progress, TaskID

from gitnetdiag.steps import record_step


class RichReporter:
    """Progress of each step: a spinner while it runs, its result when done. On a stderr
    that is not a terminal (a log, CI) a line per step and per phase instead, as they
    happen. A terminal that went away (SIGHUP) ends the output, never the clean-up."""

    def __init__(self, progress: Progress, console: Console) -> None:
        self.progress = progress
        self.console = console
        self.live = console.is_terminal
        self.tasks: dict[str, TaskID] = {}
        self.phases: dict[str, str] = {}
        self.moves: dict[str, str] = {}
        """The last bytes-moved text of each running step (``1.0 MiB, 2.00 MiB/s``)."""
        self.begun: dict[str, float] = {}
        """When each running step began (:mod:`gitnetdiag.steps` records it when done)."""

    def _line(self, text: str) -> None:
        with contextlib.suppress(OSError):  # a log keeps each line whole
            self.progress.console.print(text, highlight=False, soft_wrap=not self.live)

    def begin(self, label: str) -> None:
        self.begun[label] = time.monotonic()
        if not self.live:
            self._line(f"{label} ...")
            return
        self.tasks[label] = self.progress.add_task(label, total=1)

    def done(self, label: str, detail: str, *, ok: bool) -> None:
        task = self.tasks.pop(label, None)
        record_step(label, self.begun.pop(label, time.monotonic()))
        self.moves.pop(label, None)
        self.phases.pop(label, None)
        mark = "[green]ok[/green]" if ok else "[red]!![/red]"
        text = f"{mark} {label}: {detail}"
        if task is None:
            self._line(text)
            return
        self.progress.update(task, description=text, completed=1)

    def warn(self, message: str) -> None:
        self._line(f"[yellow]warning:[/yellow] {message}")

    def phase(self, label: str, text: str) -> None:
        """What a step is doing now: a line in a log; on a terminal its spinner says it at
        once (a wait with no bytes moving, a clean-up, must not read as the phase before)."""
        if not self.live:
            self._line(f"{label}: {text}")
            return
        self.phases[label] = text
        self._describe(label)

    def status(self, label: str, text: str) -> None:
        """What a step is doing now, on its spinner only: a log already has it as a line."""
        if self.live:
            self.phases[label] = text
            self._describe(label)

    def moved(self, label: str, moved_bytes: int, rate_bytes_per_s: float | None) -> None:
        rate = "" if rate_bytes_per_s is None else f", {rate_bytes_per_s / 2**20:.2f} MiB/s"
        self.moves[label] = f"{moved_bytes / 2**20:.1f} MiB{rate}"
        self._describe(label)

    def _describe(self, label: str) -> None:
        task = self.tasks.get(label)
        if task is None:
            return
        parts = [part for part in (self.moves.get(label), self.phases.get(label)) if part]
        self.progress.update(task, description=f"{label}: " + "; ".join(parts) if parts
                             else label)

