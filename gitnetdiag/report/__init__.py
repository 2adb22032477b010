"""Renderers: plain callables from one :class:`~gitnetdiag.diagnosis.Diagnosis` to text.

Every renderer redacts secrets first (:mod:`gitnetdiag.report.redact`) and
shows only what the diagnosis holds; none computes anything the others lack.
The HTML renderer imports matplotlib lazily.
"""

from __future__ import annotations

from collections.abc import Callable

from gitnetdiag.diagnosis.model import Diagnosis
from gitnetdiag.report.json_report import SCHEMA, render_json, report_dict
from gitnetdiag.report.markdown import render_markdown
from gitnetdiag.report.redact import redact_text, redact_url
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

__all__ = [
    "RENDERERS",
    "SCHEMA",
    "redact_text",
    "redact_url",
    "render_html",
    "render_json",
    "render_markdown",
    "render_terminal",
    "report_dict",
]
