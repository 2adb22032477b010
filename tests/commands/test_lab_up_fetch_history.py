"""``lab up --fetch-history``: a push fault's lab with a pack to clone (the fetch fault matrix's
shared faults, as the shared lab test's ``fetch_history="random"``)."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from gitnetdiag.commands import lab as lab_command
from gitnetdiag.commands._app import build_app
from gitnetdiag.lab.spec import LabSpec


class _Built(Exception):
    """Stops ``lab up`` once the spec is built (no namespaces in a unit test)."""


def _spec_of(monkeypatch: pytest.MonkeyPatch, *args: str) -> LabSpec:
    seen: list[LabSpec] = []

    def up(spec: LabSpec, **_: Any) -> None:
        seen.append(spec)
        raise _Built

    monkeypatch.setattr(lab_command.manager, "up", up)
    result = CliRunner().invoke(build_app(), ["lab", "up", "--name", "t", *args])
    assert isinstance(result.exception, _Built), result.output
    return seen[0]


def test_fetch_history_reaches_the_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _spec_of(monkeypatch, "--fault", "loss").fetch_history is None
    assert _spec_of(monkeypatch, "--fault", "loss", "--fetch-history", "random"
                    ).fetch_history == "random"
    # A download fault keeps its own history without the option.
    assert _spec_of(monkeypatch, "--fault", "client-index-cpu").fetch_history == "similar"


def test_an_unknown_history_is_one_clear_error() -> None:
    result = CliRunner().invoke(build_app(), ["lab", "up", "--fetch-history", "huge"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "random" in result.output and "similar" in result.output
