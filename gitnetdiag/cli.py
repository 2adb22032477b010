"""The command line's entry point: as little as possible before the command runs.

``gitnetdiag --version`` is answered here, before typer, rich or any command
module is imported; ``gitnetdiag --help`` (and ``gitnetdiag`` alone) print the
plain command list of :func:`gitnetdiag.commands._app.top_level_help`, still
without typer or rich. Everything else goes to :mod:`gitnetdiag.commands._app`,
which imports only the module of the command being run; unknown words get the
command list without importing any command module.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from gitnetdiag import __version__

if TYPE_CHECKING:
    import typer

    from gitnetdiag.errors import GitnetdiagError

PROG = "gitnetdiag"


def __getattr__(name: str) -> typer.Typer:
    """``gitnetdiag.cli.app``: the full application, built on first use (tests, tools)."""
    if name == "app":
        from gitnetdiag.commands._app import build_app

        return build_app()
    raise AttributeError(name)


def render_error(exc: GitnetdiagError) -> None:
    """Print an error as one line (:func:`gitnetdiag.commands._app.render_error`)."""
    from gitnetdiag.commands._app import render_error as render

    render(exc)


def main() -> None:
    """Entry point of the ``gitnetdiag`` console script."""
    args = sys.argv[1:]
    # gitnetdiag multiplies no large matrices: OpenBLAS's worker threads would only
    # cost CPU at numpy's import (about 80 ms, measured) beside a forked capture reader.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if args == ["--version"]:
        sys.stdout.write(f"{PROG} {__version__}\n")
        return
    from gitnetdiag.commands import _app
    from gitnetdiag.errors import ExitCode

    if args in (["--help"], []):
        _app.print_top_level_help()
        if not args:  # as click's no_args_is_help: the help, and a usage exit code
            sys.exit(int(ExitCode.USAGE))
        return
    _app.run()
