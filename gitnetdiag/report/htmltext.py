"""Report prose as HTML (renderers only format)."""

from __future__ import annotations

import html
import re

_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def prose(text: object) -> str:
    """Report prose as HTML: escaped, its Markdown code spans (the findings write settings,
    commands and paths as `` `tune.h2.initial-window-size` ``) as ``<code>``, never raw
    backticks."""
    escaped = html.escape(str(text), quote=True)
    return _CODE_SPAN.sub(lambda found: f"<code>{found.group(1)}</code>", escaped)
