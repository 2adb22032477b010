"""The command line's entry point: as little as possible before the command runs.

``gitnetdiag --version`` is answered here, before typer, rich or any command
module is imported. Everything else goes to :mod:`gitnetdiag.commands._app`,
which imports only the module of the command being run (see
:data:`COMMAND_MODULE_OF`); ``--help`` and unknown words get the command list
from :data:`COMMAND_SUMMARIES` without importing any command module.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from gitnetdiag import __version__

if TYPE_CHECKING:
    import typer

    from gitnetdiag.errors import GitnetdiagError

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
    if sys.argv[1:] == ["--version"]:
        sys.stdout.write(f"{PROG} {__version__}\n")
        return
    from gitnetdiag.commands._app import run

    run()
