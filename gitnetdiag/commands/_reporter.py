"""The progress a probe shows while it runs (``probe``, ``diagnose``, their fetches)."""

from __future__ import annotations

import contextlib

from rich.console import Console
from rich.progress import Progress, TaskID


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

    def _line(self, text: str) -> None:
        with contextlib.suppress(OSError):  # a log keeps each line whole
            self.progress.console.print(text, highlight=False, soft_wrap=not self.live)

    def begin(self, label: str) -> None:
        if not self.live:
            self._line(f"{label} ...")
            return
        self.tasks[label] = self.progress.add_task(label, total=1)

    def done(self, label: str, detail: str, *, ok: bool) -> None:
        task = self.tasks.pop(label, None)
        mark = "[green]ok[/green]" if ok else "[red]!![/red]"
        text = f"{mark} {label}: {detail}"
        if task is None:
            self._line(text)
            return
        self.progress.update(task, description=text, completed=1)

    def warn(self, message: str) -> None:
        self._line(f"[yellow]warning:[/yellow] {message}")

    def phase(self, label: str, text: str) -> None:
        if not self.live:
            self._line(f"{label}: {text}")
        else:
            self.phases[label] = text

    def moved(self, label: str, moved_bytes: int, rate_bytes_per_s: float | None) -> None:
        task = self.tasks.get(label)
        if task is None:
            return
        rate = "" if rate_bytes_per_s is None else f", {rate_bytes_per_s / 2**20:.2f} MiB/s"
        phase = self.phases.get(label)
        self.progress.update(task, description=f"{label}: {moved_bytes / 2**20:.1f} MiB{rate}"
                             + (f"; {phase}" if phase else ""))

