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

The names below are imported on first use (module ``__getattr__``), so that a
command importing one renderer module (``gitnetdiag.report.capture``) does not
load the diagnosis renderers and models with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitnetdiag.report.compare import (
        render_compare_json,
        render_compare_markdown,
        render_compare_terminal,
    )
    from gitnetdiag.report.json_report import SCHEMA, render_json, report_dict
    from gitnetdiag.report.markdown import render_markdown
    from gitnetdiag.report.redact import redact_text, redact_url
    from gitnetdiag.report.renderers import (
        COMPARE_RENDERERS,
        RENDERERS,
        render_compare_html,
        render_html,
    )
    from gitnetdiag.report.terminal import render_terminal

_HOME: dict[str, str] = {name: module for module, names in {
    "compare": ("render_compare_json", "render_compare_markdown", "render_compare_terminal"),
    "json_report": ("SCHEMA", "render_json", "report_dict"),
    "markdown": ("render_markdown",),
    "redact": ("redact_text", "redact_url"),
    "renderers": ("COMPARE_RENDERERS", "RENDERERS", "render_compare_html", "render_html"),
    "terminal": ("render_terminal",),
}.items() for name in names}
"""Exported name -> the module of this package that defines it."""

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


def __getattr__(name: str) -> Any:
    """Import an exported name's module on first use."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
