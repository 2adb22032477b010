"""Renderers: plain callables from one data object to text, ``render(obj, *, width, color)``.

The diagnosis report (this package's :data:`RENDERERS`: terminal, Markdown,
HTML with :mod:`~gitnetdiag.report.plots`, JSON) takes a
:class:`~gitnetdiag.diagnosis.Diagnosis`. The other commands' views live
beside it with the same shape: :mod:`~gitnetdiag.report.probe` (run summary,
HTTP/2 sweep), :mod:`~gitnetdiag.report.load`, :mod:`~gitnetdiag.report.storage`,
:mod:`~gitnetdiag.report.host`, :mod:`~gitnetdiag.report.lab`. Commands call one
library function and one renderer and print the text.

The diagnosis and load renderers redact secrets first
(:mod:`gitnetdiag.report.redact`: their objects carry URLs and git's messages).
Numbers are formatted with :mod:`gitnetdiag.report.units`, the one unit
convention. A renderer shows only what its object holds; none computes
anything the others lack. Only the HTML renderers import matplotlib, lazily.
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

__all__ = [
    "COMPARE_RENDERERS",
    "RENDERERS",
    "SCHEMA",
    "redact_text",
    "redact_url",
    "render_compare_html",
    "render_compare_json",
    "render_compare_markdown",
    "render_compare_terminal",
    "render_html",
    "render_json",
    "render_markdown",
    "render_terminal",
    "report_dict",
]
