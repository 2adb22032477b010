"""Markdown and terminal reports: golden files for one crafted case.

Regenerate after an intended change with ``UPDATE_GOLDEN=1 pytest tests/report``
and review the diff.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from gitnetdiag.diagnosis import Diagnosis, diagnose
from gitnetdiag.report import render_markdown, render_terminal
from tests.diagnosis import examples

GOLDEN = Path(__file__).parent / "golden"


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} missing: run with UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")


RENDER: dict[str, Callable[[Diagnosis], str]] = {
    "slow_h2_edge.md": render_markdown,
    "slow_h2_edge.txt": render_terminal,
}


@pytest.mark.parametrize("name", sorted(RENDER))
def test_golden(name: str) -> None:
    _check(name, RENDER[name](diagnose(examples.slow_h2_edge())))


def test_markdown_puts_summary_first_and_names_the_fix() -> None:
    text = render_markdown(diagnose(examples.slow_h2_edge()))
    lines = text.splitlines()
    assert lines[2].startswith("**Verdict: degraded.**")
    assert text.index("## Culprits") < text.index("## Environment") < text.index("## How it")
    assert "`tune.h2.initial-window-size`" in text
    assert "| HTTP/2 | 2 | 1 (hung) |" in text


def test_terminal_verdict_first_and_color_optional() -> None:
    d = diagnose(examples.git_daemon_backlog())
    plain = render_terminal(d)
    assert plain.splitlines()[0] == "verdict: DEGRADED"
    assert "#1 listen-backlog-overflow" in plain
    assert "\x1b[" not in plain
    assert "\x1b[" in render_terminal(d, color=True)


def test_terminal_healthy() -> None:
    text = render_terminal(diagnose(examples.healthy()))
    assert text.splitlines()[0] == "verdict: HEALTHY"
    assert "no culprit above the threshold." in text
