"""The diagnosis and comparison renderers by ``--format`` name.

Only the HTML renderers import matplotlib, on first use.
"""

from __future__ import annotations

from collections.abc import Callable

from gitnetdiag.diagnosis.comparison import Comparison
from gitnetdiag.diagnosis.model import Diagnosis
from gitnetdiag.report.compare import (
    render_compare_json,
    render_compare_markdown,
    render_compare_terminal,
)
from gitnetdiag.report.json_report import render_json
from gitnetdiag.report.markdown import render_markdown
from gitnetdiag.report.terminal import render_terminal


def render_html(diagnosis: Diagnosis) -> str:
    """Self-contained HTML with embedded plots (imports matplotlib on first use)."""
    from gitnetdiag.report.html import render_html as _render

    return _render(diagnosis)


RENDERERS: dict[str, Callable[[Diagnosis], str]] = {
    "terminal": render_terminal,
    "md": render_markdown,
    "html": render_html,
    "json": render_json,
}
"""Renderer by ``--format`` name."""


def render_compare_html(comparison: Comparison) -> str:
    """``gitnetdiag compare`` as HTML with before/after plots (matplotlib on first use)."""
    from gitnetdiag.report.compare_html import render_compare_html as _render

    return _render(comparison)


COMPARE_RENDERERS: dict[str, Callable[[Comparison], str]] = {
    "terminal": render_compare_terminal,
    "md": render_compare_markdown,
    "html": render_compare_html,
    "json": render_compare_json,
}
"""Comparison renderer by ``--format`` name."""
