"""The command line: a thin shell around library calls.

Each command lives in ``gitnetdiag/commands/<name>.py`` and exposes
``register(app)``; :data:`COMMAND_MODULES` lists them in help
order. Errors are rendered in exactly one place, :func:`run` (called by
:func:`gitnetdiag.cli.main` once it knows typer is needed).

Importing this module costs next to nothing: typer and rich (about 70 ms
together, measured) are imported by the functions that use them, so that
``gitnetdiag --help`` prints :func:`top_level_help` without them.
"""

from __future__ import annotations

import contextlib
import importlib
import re
import sys
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, NoReturn

from gitnetdiag import __version__
from gitnetdiag.errors import ExitCode, GitnetdiagError, UsageError

if TYPE_CHECKING:
    import typer
    from rich.console import Console

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
    ("probe", "Push or clone the same repository over HTTP/1.1, HTTP/2, SSH and git://, "
              "captured."),
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

ROOT_OPTIONS: tuple[tuple[str, str], ...] = (
    ("--version", "Print the version and exit."),
    ("--help", "Show this message and exit."),
)
"""The top-level options with their help, as :func:`top_level_help` lists them (the
version option is declared from this table; ``--help`` is click's own)."""

APP_HELP = (
    "Why is git push or clone slow, or failing? Push and clone the same repository over "
    "HTTP/1.1, HTTP/2 and SSH, capture the packets, and rank the culprits with evidence.\n\n"
    "Start with:  [bold]sudo gitnetdiag lab up --fault h2-small-window[/bold]  then  "
    "[bold]sudo gitnetdiag diagnose --lab[/bold]  (add [bold]--direction fetch[/bold] for "
    "clones, [bold]both[/bold] for both)\n\n"
    "Offline, no root:  [bold]gitnetdiag analyze captures/h2-small-window --diagnose[/bold]"
)


def top_level_help(width: int = 80) -> str:
    """``gitnetdiag --help`` as plain text, from :data:`APP_HELP`, :data:`ROOT_OPTIONS` and
    :data:`COMMAND_SUMMARIES`: no typer, no rich, no command module.

    ``tests/commands/test_startup.py`` checks it says what typer's own help says.
    """
    from functools import partial
    from textwrap import wrap as plain_wrap

    wrap = partial(plain_wrap, break_on_hyphens=False, break_long_words=False)
    width = max(width, 40)
    lines = [f"Usage: {PROG} [OPTIONS] COMMAND [ARGS]...", ""]
    for paragraph in re.sub(r"\[/?bold\]", "", APP_HELP).split("\n\n"):
        lines += [*wrap(paragraph, width - 1), ""]
    for title, rows in (("Options", ROOT_OPTIONS), ("Commands", COMMAND_SUMMARIES)):
        lines.append(f"{title}:")
        name_width = max(len(name) for name, _ in rows) + 4
        for name, text in rows:
            wrapped = wrap(text, max(width - 1 - name_width, 20))
            lines.append(f"  {name:<{name_width - 2}}{wrapped[0]}")
            lines += [" " * name_width + more for more in wrapped[1:]]
        lines.append("")
    return "\n".join(lines)


def print_top_level_help() -> None:
    """Write :func:`top_level_help` to stdout, as wide as the terminal."""
    import shutil

    sys.stdout.write(top_level_help(shutil.get_terminal_size().columns))


def err_console() -> Console:
    """The console errors are printed on (stderr)."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def _version_callback(value: bool) -> None:
    import typer

    if value:
        typer.echo(f"gitnetdiag {__version__}")
        raise typer.Exit()


def _bare_app() -> typer.Typer:
    import typer

    def root(
        version: bool = typer.Option(
            False, "--version", help=dict(ROOT_OPTIONS)["--version"],
            callback=_version_callback, is_eager=True,
        ),
    ) -> None:
        """gitnetdiag: network-layer diagnosis of slow Git transfers."""

    application = typer.Typer(
        name="gitnetdiag", help=APP_HELP, rich_markup_mode="rich", no_args_is_help=True,
        add_completion=False, pretty_exceptions_enable=False,
    )
    application.callback()(root)
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
    err_console().print(line, markup=False, style="red")


def _click_exceptions() -> ModuleType:
    """typer >= 0.20 carries its own copy of click; older ones use the click package."""
    try:
        return importlib.import_module("typer._click.exceptions")
    except ImportError:
        return importlib.import_module("click.exceptions")


def usage_error(exc: Exception) -> UsageError:
    """click's own complaint (unknown option, missing argument, bad value) as one line."""
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else PROG
    text = exc.format_message().replace("Value error, ", "")  # type: ignore[attr-defined]
    message = " ".join(text.split())
    error = UsageError(message, hint=f"see '{command} --help'")
    if not isinstance(exc, _click_exceptions().UsageError):
        error.exit_code = ExitCode.FAILURE
    return error


def _interrupted() -> NoReturn:
    with contextlib.suppress(OSError):  # no terminal left after SIGHUP
        err_console().print("interrupted: partial results were kept", markup=False,
                            style="yellow")
    sys.exit(int(ExitCode.INTERRUPTED))


def _typer_main(args: list[str]) -> object:
    """Run ``args`` through typer (importing only the module of the command named);
    click's own complaints come back as :class:`UsageError`."""
    import typer

    click = _click_exceptions()
    first = next((arg for arg in args if not arg.startswith("-")), None)
    module = COMMAND_MODULE_OF.get(first or "")
    command = typer.main.get_command(build_app((module,)) if module else build_listing_app())
    try:
        return command.main(args=args, prog_name=PROG, standalone_mode=False)
    except click.NoArgsIsHelpError as exc:
        exc.show()  # the help text, as the user asked for nothing in particular
        sys.exit(exc.exit_code)
    except typer.Abort:
        _interrupted()
    except click.ClickException as exc:
        raise usage_error(exc) from exc


def _plain_default(value: object) -> object:
    """A parameter's default: typer's ``Option(...)``/``Argument(...)`` keeps it in ``.default``."""
    return getattr(value, "default", value)


def direct_analyze(args: list[str]) -> Callable[[], object] | None:
    """``analyze FILE`` and ``analyze FILE --json OUT`` as a plain call of the command's
    own function, without typer's parsing; None for any other command line.

    typer 0.29 validates every parameter through pydantic: importing it and building
    the validators cost about 150 ms of CPU (measured), more than reading a million
    packets takes. This everyday form has nothing to validate beyond two strings;
    every other form (options, ``--help``, mistakes) goes through typer as before.
    ``tests/commands/test_startup.py`` checks both paths print and write the same.
    """
    if not args or args[0] != "analyze":
        return None
    rest = list(args[1:])
    json_out: str | None = None
    for at, word in enumerate(rest):
        if word == "--json" and at + 1 < len(rest):
            json_out = rest.pop(at + 1)
            rest.pop(at)
            break
        if word.startswith("--json="):
            json_out = rest.pop(at).partition("=")[2]
            break
    if len(rest) != 1 or not rest[0] or rest[0].startswith("-") or json_out == "":
        return None
    file = rest[0]

    def call() -> object:
        from pathlib import Path

        from gitnetdiag.analysis import TCP_FIELDS
        from gitnetdiag.capture.reader import read_ahead

        # A large capture is read from now on, beside the imports.
        read_ahead(Path(file), TCP_FIELDS)
        from gitnetdiag.commands.analyze import analyze

        given: dict[str, object] = {"file": Path(file), "json_out": json_out}
        # The parameters and their defaults, read off the function itself (inspect's
        # import alone costs a few ms).
        code = analyze.__code__
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        defaults = dict(zip(reversed(names[: code.co_argcount]),
                            reversed(analyze.__defaults__ or ()), strict=False))
        defaults.update(analyze.__kwdefaults__ or {})
        if not set(given) <= set(names) or set(names) - set(given) - set(defaults):
            return _typer_main(args)  # the command changed: typer knows it better
        kwargs = {name: given[name] if name in given else _plain_default(defaults[name])
                  for name in names}
        analyze(**kwargs)  # type: ignore[arg-type]
        return None

    return call


def run() -> None:
    """Run the command line of ``sys.argv``.

    click runs outside its standalone mode so that its usage errors arrive
    here too and are printed like ours: one line, reference and hint, never
    a multi-line box or a traceback.
    """
    # Startup time matters (analyze reads a million packets in a fraction of a second):
    # import only the module of the command being run; --help and unknown words get the
    # command list without any command module.
    args = sys.argv[1:]
    direct = direct_analyze(args)
    try:
        code = direct() if direct is not None else _typer_main(args)
    except GitnetdiagError as exc:
        render_error(exc)
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt:
        _interrupted()
    except OSError:
        import signal

        from gitnetdiag.proc import received_signal

        if received_signal() is not signal.SIGHUP:
            raise
        # The terminal went away (SIGHUP): the clean-up ran and the manifest says so;
        # there is nothing left to print to.
        sys.exit(int(ExitCode.INTERRUPTED))
    if isinstance(code, int) and code == ExitCode.INTERRUPTED:
        _interrupted()
    if isinstance(code, int) and code:
        sys.exit(code)
