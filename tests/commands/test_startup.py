"""Start-up: ``--version`` and ``--help`` import only what they print (issue 25).

``--help`` lists the commands from :data:`gitnetdiag.commands._app.COMMAND_SUMMARIES`
instead of importing every command module (and prints them as plain text, without
typer or rich); these tests keep that table and text equal to the commands' own
help and check what each path imports. ``analyze FILE [--json OUT]`` skips typer's
parsing (:func:`gitnetdiag.commands._app.direct_analyze`): it must print and write
what the typer path does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gitnetdiag.commands._app import (
    COMMAND_MODULE_OF,
    COMMAND_SUMMARIES,
    build_app,
    build_listing_app,
    direct_analyze,
    top_level_help,
)

ROOT = Path(__file__).resolve().parents[2]
_BOX = set("╭╮╰╯─│")

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


def _words(text: str) -> list[str]:
    """The words of a help text, without typer's boxes, ``<bool>`` metavars and colons
    after the section titles."""
    words = [w for w in text.split() if not set(w) <= _BOX and w != "<bool>"]
    return [w[:-1] if w in ("Options:", "Commands:") else w for w in words]


def test_plain_top_level_help_says_what_typer_says() -> None:
    """Same usage line, description, options and commands, in the same order."""
    plain = top_level_help(100)
    assert _words(plain) == _words(_help(build_app(), ["--help"]))
    assert max(len(line) for line in plain.splitlines()) < 100
    narrow = top_level_help(60)
    assert _words(narrow) == _words(plain)
    assert max(len(line) for line in narrow.splitlines()) < 60


@pytest.mark.parametrize("args", [["--help"], []])
def test_top_level_help_imports_neither_typer_nor_rich(args: list[str]) -> None:
    out, modules = _modules_after(*args)
    assert out.startswith("Usage: gitnetdiag [OPTIONS] COMMAND [ARGS]...")
    assert not {m for m in modules if m.split(".")[0] in {"typer", "rich", "numpy", "click"}}


def test_bare_command_prints_help_with_the_usage_exit_code() -> None:
    done = subprocess.run([sys.executable, "-m", "gitnetdiag"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert "Commands:" in done.stdout and "analyze" in done.stdout


@pytest.mark.parametrize("args, direct", [
    (["analyze", "x.pcap"], True),
    (["analyze", "x.pcap", "--json", "o.json"], True),
    (["analyze", "--json", "-", "x.pcap"], True),
    (["analyze", "--json=o.json", "x.pcap"], True),
    (["analyze", "x.pcap", "--diagnose"], False),
    (["analyze", "x.pcap", "--json"], False),
    (["analyze", "--json", "o.json"], False),
    (["analyze", "--help"], False),
    (["analyze", "x.pcap", "y.pcap"], False),
    (["analyze", "x.pcap", "--json="], False),
    (["report", "x"], False),
])
def test_only_the_everyday_analyze_forms_skip_typer(args: list[str], direct: bool) -> None:
    assert (direct_analyze(args) is not None) == direct


def _gitnetdiag(*args: str, parse: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a subprocess; ``parse="typer"`` turns the direct path off."""
    code = ("import sys\nfrom gitnetdiag.commands import _app\n"
            + ("_app.direct_analyze = lambda args: None\n" if parse == "typer" else "")
            + "sys.argv = ['gitnetdiag', *sys.argv[1:]]\n_app.run()\n")
    env = {**os.environ, "COLUMNS": "120"}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120, env=env, cwd=ROOT)


@pytest.mark.parametrize("capture", ["captures/healthy/h2-1.pcap", "no-such.pcap",
                                     "captures/healthy"])
def test_direct_analyze_prints_and_writes_what_typer_does(tmp_path: Path, capture: str) -> None:
    outputs = []
    for parse in ("typer", "direct"):
        out = tmp_path / f"{parse}.json"
        done = _gitnetdiag("analyze", capture, "--json", str(out), parse=parse)
        outputs.append((done.returncode, done.stdout, done.stderr,
                        out.read_text() if out.exists() else None))
    assert outputs[0] == outputs[1]
    stdout_json = [_gitnetdiag("analyze", capture, "--json", "-", parse=parse).stdout
                   for parse in ("typer", "direct")]
    assert stdout_json[0] == stdout_json[1]


def test_direct_analyze_skips_typers_parsing(tmp_path: Path) -> None:
    """The point of the direct path: pydantic (typer's validators) is never imported."""
    _, modules = _modules_after("analyze", str(ROOT / "captures/healthy/h1-1.pcap"), "--json",
                                str(tmp_path / "out.json"))
    assert "gitnetdiag.commands.analyze" in modules
    assert not {m for m in modules if m.split(".")[0] == "pydantic" or m == "typer._adapters"}
    assert json.loads((tmp_path / "out.json").read_text())["tcp_segments"] > 0


def test_the_front_door_says_push_and_clone() -> None:
    """Issue 36: the top-level help, the README's first lines and ``make demo`` present
    clones beside pushes, and the demo ends with the download diagnosis of the same lab."""
    root = Path(__file__).resolve().parents[2]
    help_text = top_level_help(100)
    assert "push or clone" in help_text and "--direction fetch" in help_text
    first = root.joinpath("README.md").read_text().split("\n\n")[1]
    assert "git push" in first and "git clone" in first and "--direction fetch" in first
    demo = [line for line in root.joinpath("scripts/demo.sh").read_text().splitlines()
            if line.startswith("$GND diagnose")]
    assert len(demo) == 2 and "--direction fetch" in demo[-1], demo
