"""Thin commands (issue 25): the options are read into one value and handed on, shared
options are defined once, and ``diagnose`` is ``probe --diagnose`` plus ``--capture``."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from typing import Any

import typer

from gitnetdiag.commands._app import build_app
from gitnetdiag.commands._probe_run import ProbeArgs
from gitnetdiag.commands.load import LoadArgs, load_command
from gitnetdiag.commands.probe import probe_command


def _fields(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def test_the_command_parameters_are_the_args_fields() -> None:
    """``probe_command`` passes ``locals()`` on: a parameter without its field (or a field
    without its parameter) would fail every run, so it fails here first."""
    assert list(inspect.signature(probe_command).parameters) == _fields(ProbeArgs)
    assert list(inspect.signature(load_command).parameters) == _fields(LoadArgs)


def _options(name: str) -> dict[str, Any]:
    """Option string -> its click parameter (typer >= 0.20 carries its own click)."""
    group = typer.main.get_command(build_app(("probe", "load")))
    command = group.commands[name]  # type: ignore[attr-defined]
    return {opt: param for param in command.params for opt in getattr(param, "opts", [])}


def test_shared_options_read_the_same_in_probe_diagnose_and_load() -> None:
    probe, diagnose, load = _options("probe"), _options("diagnose"), _options("load")
    for flag in ("--lab", "--lab-instance", "--lab-http", "--ca-file", "--insecure",
                 "--ssh-key", "--ssh-known-hosts", "--timeout", "--cleanup-wait", "--out",
                 "--json"):
        helps = {getattr(p[flag], "help", None) for p in (probe, diagnose, load)}
        defaults = {p[flag].default for p in (probe, diagnose, load)}
        assert len(helps) == 1 and len(defaults) == 1, flag


def test_diagnose_is_probe_with_diagnose_on_and_a_capture() -> None:
    probe, diagnose = _options("probe"), _options("diagnose")
    assert set(diagnose) == (set(probe) - {"--diagnose"}) | {"--capture", "--keylog"}
    assert diagnose["--size"].default == "32MiB" and diagnose["--native"].default is True


def test_the_command_bodies_are_one_call() -> None:
    """Typer needs the parameters on the command function; the work lives elsewhere."""
    for command in (probe_command, load_command):
        function = ast.parse(textwrap.dedent(inspect.getsource(command))).body[0]
        assert isinstance(function, ast.FunctionDef)
        statements = [s for s in function.body
                      if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        assert len(statements) == 1 and isinstance(statements[0], ast.Expr), command.__name__
