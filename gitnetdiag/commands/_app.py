"""The command line: a thin shell around library calls.

Each command lives in ``gitnetdiag/commands/<name>.py`` and exposes
``register(app)``; :data:`COMMAND_MODULES` lists them in help
order. Errors are rendered in exactly one place, :func:`run` (called by
:func:`gitnetdiag.cli.main` once it knows typer is needed).
"""

from __future__ import annotations

import contextlib
import importlib
import signal
import sys
from types import ModuleType
from typing import NoReturn

import typer
from rich.console import Console

from gitnetdiag import __version__
from gitnetdiag.errors import ExitCode, GitnetdiagError, UsageError
from gitnetdiag.proc import received_signal

PROG = "gitnetdiag"

COMMAND_MODULES: tuple[str, ...] = (
    "probe", "analyze", "report", "compare", "lab", "storage", "host", "load", "watch")

COMMAND_MODULE_OF: dict[str, str] = {
    "diagnose": "probe", "probe": "probe", "analyze": "analyze", "report": "report",
    "compare": "compare", "lab": "lab", "storage": "storage", "host": "host", "load": "load",
    "watch": "watch",
}
"""Which module registers each command, so a run imports only what it needs."""

COMMAND_SUMMARIES: tuple[tuple[str, str], ...] = (
    ("diagnose", "Probe, capture, analyse and rank the culprits: the main job."),
    ("probe", "Push the same repository over HTTP/1.1, HTTP/2, SSH and git://, captured."),
    ("analyze", "Read a pcap/pcapng capture and show, per TCP connection, what limited it."),
    ("report", "Render the ranked diagnosis of a run directory (offline; no network, no root)."),
    ("compare", "Compare runs: before and after a fix, or one remote from several places."),
    ("storage", "Benchmark the storage under the git data before blaming the network."),
    ("host", "Collect the server's own evidence: listen backlogs, queue overflows, kernel log, "
             "configs."),
    ("load", "Capacity test: clones, fetches, pushes and ls-remotes at rising concurrency."),
    ("watch", "Probe each configured target on its interval and serve /metrics for Prometheus."),
    ("lab", "A reproduction lab in three network namespaces, client -- router -- server, with "
            "real Apache (mod_http2), HAProxy, sshd and git daemon, and named faults. Needs root."),
)
"""Each command's one-line help in the order ``--help`` lists them: the top-level help is
printed from these without importing the command modules.
``tests/commands/test_startup.py`` checks they match the commands' own help."""


err_console = Console(stderr=True, highlight=False, soft_wrap=True)

APP_HELP = (
    "Why is git push slow? Push the same repository over HTTP/1.1, HTTP/2 and SSH, "
    "capture the packets, and rank the culprits with evidence.\n\n"
    "Start with:  [bold]sudo gitnetdiag lab up --fault h2-small-window[/bold]  then  "
    "[bold]sudo gitnetdiag diagnose --lab[/bold]\n\n"
    "Offline, no root:  [bold]gitnetdiag analyze captures/h2-small-window --diagnose[/bold]"
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"gitnetdiag {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", callback=_version_callback,
        is_eager=True,
    ),
) -> None:
    """gitnetdiag: network-layer diagnosis of slow Git transfers."""


def _bare_app() -> typer.Typer:
    application = typer.Typer(
        name="gitnetdiag", help=APP_HELP, rich_markup_mode="rich", no_args_is_help=True,
        add_completion=False, pretty_exceptions_enable=False,
    )
    application.callback()(_root)
    return application


def build_app(modules: tuple[str, ...] = COMMAND_MODULES) -> typer.Typer:
    """The typer application with the commands of ``modules`` registered."""
    application = _bare_app()
    for name in modules:
        importlib.import_module(f"gitnetdiag.commands.{name}").register(application)
    return application


def _not_loaded() -> None:
    """Never runs: a command word on the command line loads the real command."""
    raise AssertionError("a listed command ran without its module")  # pragma: no cover


def build_listing_app() -> typer.Typer:
    """The application as ``--help`` shows it: every command listed with its one-line
    help (:data:`COMMAND_SUMMARIES`), no command module imported."""
    application = _bare_app()
    for name, summary in COMMAND_SUMMARIES:
        application.command(name, help=summary)(_not_loaded)
    return application


def render_error(exc: GitnetdiagError) -> None:
    """Print an error as one line: reference, message and hint.

    The last line of defence for secrets: whatever raised the error, the
    URLs of the command line (and anything shaped like a credential) are
    masked before the line is shown.
    """
    from gitnetdiag.redaction import redact_error, secrets_from_argv

    redact_error(exc, secrets_from_argv(sys.argv))
    line = f"error [{exc.reference}]: {exc.message}"
    if exc.hint:
        line += f" (hint: {exc.hint})"
    err_console.print(line, markup=False, style="red")


def _click_exceptions() -> ModuleType:
    """typer >= 0.20 carries its own copy of click; older ones use the click package."""
    try:
        return importlib.import_module("typer._click.exceptions")
    except ImportError:
        return importlib.import_module("click.exceptions")


CLICK = _click_exceptions()


def usage_error(exc: Exception) -> UsageError:
    """click's own complaint (unknown option, missing argument, bad value) as one line."""
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else PROG
    text = exc.format_message().replace("Value error, ", "")  # type: ignore[attr-defined]
    message = " ".join(text.split())
    error = UsageError(message, hint=f"see '{command} --help'")
    if not isinstance(exc, CLICK.UsageError):
        error.exit_code = ExitCode.FAILURE
    return error


def _interrupted() -> NoReturn:
    with contextlib.suppress(OSError):  # no terminal left after SIGHUP
        err_console.print("interrupted: partial results were kept", markup=False,
                          style="yellow")
    sys.exit(int(ExitCode.INTERRUPTED))


def run() -> None:
    """Run the command line of ``sys.argv``.

    click runs outside its standalone mode so that its usage errors arrive
    here too and are printed like ours: one line, reference and hint, never
    a multi-line box or a traceback.
    """
    # Startup time matters (analyze reads a million packets in a fraction of a second):
    # import only the module of the command being run; --help and unknown words get the
    # command list without any command module.
    first = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
    module = COMMAND_MODULE_OF.get(first or "")
    command = typer.main.get_command(build_app((module,)) if module else build_listing_app())
    try:
        code = command.main(args=sys.argv[1:], prog_name=PROG, standalone_mode=False)
    except CLICK.NoArgsIsHelpError as exc:
        exc.show()  # the help text, as the user asked for nothing in particular
        sys.exit(exc.exit_code)
    except CLICK.ClickException as exc:
        error = usage_error(exc)
        render_error(error)
        sys.exit(int(error.exit_code))
    except typer.Abort:
        _interrupted()
    except GitnetdiagError as exc:
        render_error(exc)
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt:
        _interrupted()
    except OSError:
        if received_signal() is not signal.SIGHUP:
            raise
        # The terminal went away (SIGHUP): the clean-up ran and the manifest says so;
        # there is nothing left to print to.
        sys.exit(int(ExitCode.INTERRUPTED))
    if isinstance(code, int) and code == ExitCode.INTERRUPTED:
        _interrupted()
    if isinstance(code, int) and code:
        sys.exit(code)
