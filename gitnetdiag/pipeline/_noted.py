"""What a pipeline step returns: its value, and what it noted on the way.

A step that reads a file of the run directory may find it damaged or missing. It says
so in its result instead of appending to a list it was handed:

    rows = tcpinfo_rows(run_dir, name)       # Noted[list[dict] | None]
    notes.extend(rows.notes)                 # the caller gathers, at one place
    if rows.value is None: ...

``notes`` are the warnings a command prints under the diagnosis; ``problems`` are
missing measurements the diagnosis itself reports (a capture that could not be read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from gitnetdiag.diagnosis import observations as obs

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class Noted(Generic[T]):
    """A step's result with its notes."""

    value: T
    """What the step derived (None when it could not)."""
    notes: tuple[str, ...] = ()
    """Warnings for the user, each naming the file it is about."""
    problems: tuple[obs.RunProblem, ...] = ()
    """Measurements the step found missing, for the diagnosis's problem list."""


class Notes:
    """The notes and problems of several steps, gathered where their values are used."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.problems: list[obs.RunProblem] = []

    def take(self, step: Noted[T]) -> T:
        """``step``'s value; its notes and problems join the gathered ones."""
        self.notes.extend(step.notes)
        self.problems.extend(step.problems)
        return step.value
