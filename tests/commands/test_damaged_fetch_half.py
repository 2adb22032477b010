"""A run directory whose ``fetch.json`` is damaged (truncated JSON, wrong types, missing
keys): ``analyze`` and ``report [--reanalyze]`` say it in one line with a hint and exit
non-zero, never a traceback; a ``--direction both`` run keeps its pushes' report, the
damaged half said and judged (inconclusive). Offline: the recorded runs of
``test_report_both`` (pushes degraded by ``h2-flow-control-window``; healthy clones)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.commands.test_bad_input import gitnetdiag
from tests.commands.test_report_both import INCONCLUSIVE_EXIT, both_run

BAD_RUN_EXIT = 3


def _truncated(text: str) -> str:
    return text[: len(text) // 2]


def _edit(change: Callable[[dict[str, Any]], None]) -> Callable[[str], str]:
    def edited(text: str) -> str:
        data = json.loads(text)
        change(data)
        return json.dumps(data)
    return edited


def _first_clone(data: dict[str, Any]) -> dict[str, Any]:
    clone: dict[str, Any] = data["protocols"][0]["fetches"][0]
    return clone


DAMAGES: dict[str, tuple[Callable[[str], str], str]] = {
    # damage: (what it does to fetch.json's text, what the one line says)
    "truncated": (_truncated, "is not JSON"),
    "not-an-object": (lambda _: "[1, 2]", "has schema None"),
    "protocols-missing": (_edit(lambda d: d.pop("protocols")), "missing field(s) protocols"),
    "protocols-a-string": (_edit(lambda d: d.update(protocols="h1")),
                           "fetch.protocols must be a list, got str"),
    "clone-not-an-object": (_edit(lambda d: d["protocols"][0].update(fetches=[7])),
                            "fetches[0] must be an object, got int"),
    "wall-a-string": (_edit(lambda d: _first_clone(d).update(wall_s="slow")),
                      "fetches[0].wall_s must be"),
    # once loaded as None and compared with an int in the verdict (a TypeError traceback)
    "moved-bytes-missing": (_edit(lambda d: _first_clone(d).pop("moved_bytes")),
                            "fetches[0] is missing field(s) moved_bytes"),
}


def _damage(run: Path, name: str) -> str:
    change, said = DAMAGES[name]
    fetch = run.with_name(run.name + "-fetch") / "fetch.json"
    fetch.write_text(change(fetch.read_text()))
    return said


def _one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1, stderr
    assert "(hint: " in errors[0], errors[0]
    return errors[0]


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_fetch_run_alone_is_one_line(tmp_path: Path, damage: str) -> None:
    run = both_run(tmp_path / "run")
    said = _damage(run, damage)
    for args in (("analyze", str(tmp_path / "run-fetch")),
                 ("report", str(tmp_path / "run-fetch"), "--reanalyze")):
        proc = gitnetdiag(*args, cwd=tmp_path)
        assert proc.returncode == BAD_RUN_EXIT, (args, proc.stderr)
        line = _one_error_line(proc.stderr)
        assert "[bad-run-dir]" in line and said in line, line


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_both_run_keeps_its_pushes(tmp_path: Path, damage: str) -> None:
    """``analyze RUN --diagnose`` (it raised the half's error and reported nothing before)
    and ``report RUN --reanalyze``: the pushes' culprit ranked, the clones said missing."""
    run = both_run(tmp_path / "run")
    said = _damage(run, damage)
    out = tmp_path / "out"
    analyzed = gitnetdiag("analyze", str(run), "--diagnose", "--out", str(out), cwd=tmp_path)
    reported = gitnetdiag("report", str(run), "--reanalyze", "--format", "json", cwd=tmp_path)
    for proc, data in ((analyzed, json.loads((out / "report.json").read_text())),
                       (reported, json.loads(reported.stdout))):
        assert proc.returncode == INCONCLUSIVE_EXIT, proc.stderr
        line = _one_error_line(proc.stderr)
        assert "fetch-half-missing" in line and said in line, line
        assert data["verdict"] == "inconclusive"
        assert data["headline"].startswith("Clones: not measured ("), data["headline"]
        assert "fetch.json cannot be read" in data["headline"]
        assert [c["id"] for c in data["culprits"]] == ["h2-flow-control-window"]
