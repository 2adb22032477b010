"""Files the commands write on request (``--json FILE``, ``--out FILE``).

One rule for every command: ``-`` is stdout; missing parent directories are
created (as ``probe --out`` always did for its run directory); anything else
that stops the write is one usage error naming the path.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from gitnetdiag.errors import UsageError


def _cannot_write(path: Path, why: str) -> UsageError:
    return UsageError(f"cannot write {path}: {why}",
                      hint="choose a writable file path (missing directories are created)",
                      reference="cannot-write")


STDOUT = "-"
"""The file name that means standard output, for every ``--json`` and ``--out``/``-o``."""


def is_stdout(path: Path | str | None) -> bool:
    """Whether an output option names standard output (``-``)."""
    return path is not None and str(path) == STDOUT


def stdout_gone() -> None:
    """The reader of stdout went away (``--json - | head -c 10``): what is left to print
    there goes nowhere, quietly, and the command ends as it would have (its error line on
    stderr, its exit code), not with click's silent exit 1."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


def write_stdout(text: str) -> None:
    """``text`` to stdout, flushed; a reader that went away is :func:`stdout_gone`."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_gone()


def write_output(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (``-``: stdout), creating missing parent directories."""
    if is_stdout(path):
        write_stdout(text)
        return
    existing = next((p for p in (path.parent, *path.parent.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise _cannot_write(path, f"{existing} is not a directory")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as exc:
        raise _cannot_write(path, exc.strerror or str(exc)) from exc


def emit(text: str, out: Path | None) -> None:
    """A rendered report to stdout, or to ``out`` with one line saying where."""
    import typer  # here: ``analyze FILE --json OUT`` writes with this module, without typer

    if out is None or is_stdout(out):
        try:
            typer.echo(text, nl=False)
        except BrokenPipeError:
            stdout_gone()
    else:
        write_output(out, text)
        typer.echo(f"wrote {out}")
