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


def fix_html(fix: str, label: str) -> str:
    """The fix as HTML: the lead in a paragraph, the other products as a list, the tail."""
    from gitnetdiag.report.fixtext import fix_layout

    layout = fix_layout(fix)
    parts = [f'<p class="fix">{label} {prose(layout.lead)}</p>']
    if layout.others:
        parts.append(f'<p class="fix">{prose(layout.heading)}:</p><ul class="fix">'
                     + "".join(f"<li>{prose(item)}</li>" for item in layout.others) + "</ul>")
    if layout.tail:
        parts.append(f'<p class="fix">{prose(layout.tail)}</p>')
    return "".join(parts)
