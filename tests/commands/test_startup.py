"""Start-up: ``--version`` and ``--help`` import only what they print (issue 25).

``--help`` lists the commands from :data:`gitnetdiag.commands._app.COMMAND_SUMMARIES`
instead of importing every command module; these tests keep that table equal
to the commands' own help and check what each path imports.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from gitnetdiag.commands._app import (
    COMMAND_MODULE_OF,
    COMMAND_SUMMARIES,
    build_app,
    build_listing_app,
)

_PROBE = (
    "import json, sys\n"
    "sys.argv = ['gitnetdiag', *sys.argv[1:]]\n"
    "from gitnetdiag.cli import main\n"
    "try:\n"
    "    main()\n"
    "except SystemExit:\n"
    "    pass\n"
    "sys.stderr.write('\\n' + json.dumps(sorted(sys.modules)))\n"
)


def _modules_after(*args: str) -> tuple[str, set[str]]:
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout, set(json.loads(done.stderr.splitlines()[-1]))


def _help(app: object, args: list[str]) -> str:
    result = CliRunner().invoke(app, args, env={"COLUMNS": "100", "NO_COLOR": "1"},  # type: ignore[arg-type]
                                terminal_width=100)
    assert result.exit_code == 0, result.output
    return result.output


def test_help_listing_equals_the_commands_own_help() -> None:
    assert _help(build_listing_app(), ["--help"]) == _help(build_app(), ["--help"])


def test_every_command_has_a_summary_and_a_module() -> None:
    assert {name for name, _ in COMMAND_SUMMARIES} == set(COMMAND_MODULE_OF)


def test_version_imports_neither_typer_nor_numpy() -> None:
    out, modules = _modules_after("--version")
    assert out.startswith("gitnetdiag ")
    assert not {m for m in modules if m.split(".")[0] in {"typer", "rich", "numpy", "click"}}
    assert not {m for m in modules if m.startswith("gitnetdiag.commands")}


@pytest.mark.parametrize("args", [["--help"], [], ["no-such-command"]])
def test_help_imports_no_command_module(args: list[str]) -> None:
    _, modules = _modules_after(*args)
    commands = {m for m in modules if m.startswith("gitnetdiag.commands.")}
    assert commands == {"gitnetdiag.commands._app"}
    assert "numpy" not in modules


def test_a_command_imports_only_its_own_module() -> None:
    _, modules = _modules_after("report", "--help")
    commands = {m for m in modules if m.startswith("gitnetdiag.commands.")}
    assert "gitnetdiag.commands.report" in commands
    assert not commands & {"gitnetdiag.commands.load", "gitnetdiag.commands.lab",
                           "gitnetdiag.commands.watch", "gitnetdiag.commands.storage"}
