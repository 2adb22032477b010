"""The command line: a thin shell around library calls.

Each command lives in ``gitnetdiag/commands/<name>.py`` and exposes
``register(app)``; :data:`COMMAND_MODULES` lists them in help order.
Errors are rendered in exactly one place, :func:`main`.
"""

from __future__ import annotations

import importlib
import sys

import typer
from rich.console import Console

from gitnetdiag import __version__
from gitnetdiag.errors import ExitCode, GitnetdiagError

COMMAND_MODULES: tuple[str, ...] = ("probe", "analyze", "report", "lab", "storage", "host", "load")

err_console = Console(stderr=True, highlight=False, soft_wrap=True)

app = typer.Typer(
    name="gitnetdiag",
    help=(
        "Why is git push slow? Push the same repository over HTTP/1.1, HTTP/2 and SSH, "
        "capture the packets, and rank the culprits with evidence.\n\n"
        "Start with:  [bold]gitnetdiag lab up --fault h2-small-window[/bold]  (as root)"
    ),
    rich_markup_mode="rich",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"gitnetdiag {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", callback=_version_callback,
        is_eager=True,
    ),
) -> None:
    """gitnetdiag: network-layer diagnosis of slow Git transfers."""


for _name in COMMAND_MODULES:
    importlib.import_module(f"gitnetdiag.commands.{_name}").register(app)


def render_error(exc: GitnetdiagError) -> None:
    """Print an error as one line: reference, message and hint."""
    line = f"error [{exc.reference}]: {exc.message}"
    if exc.hint:
        line += f" (hint: {exc.hint})"
    err_console.print(line, markup=False, style="red")


def main() -> None:
    """Entry point of the ``gitnetdiag`` console script.

    typer runs in standalone mode (it prints usage errors itself and exits 2);
    everything of ours arrives here as a GitnetdiagError.
    """
    try:
        app()
    except GitnetdiagError as exc:
        render_error(exc)
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt:
        err_console.print("interrupted: partial results were kept", markup=False, style="yellow")
        sys.exit(int(ExitCode.INTERRUPTED))
