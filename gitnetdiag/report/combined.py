"""A ``both`` diagnosis (a run's pushes and its clones) as one document.

The verdict and headline first, then the one ranking of both directions' culprits, each
tagged with its direction's way (``upload``, ``download``: :data:`WORDS`), then each
half as it renders alone (:attr:`~gitnetdiag.diagnosis.model.Diagnosis.parts`), under a
heading that names its direction; a half's own title gives way to that heading and its
headings sit one level lower. Each format's renderer renders the halves and passes them
here; the JSON is :mod:`gitnetdiag.report.json_report`'s.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from gitnetdiag.diagnosis.model import Diagnosis, Finding
from gitnetdiag.report.htmltext import prose
from gitnetdiag.report.transfers import WORDS, table_text
from gitnetdiag.report.units import fmt_s

TITLE = "gitnetdiag report: both directions"
"""The document's title in every format."""
RANKING_TITLE = "Culprits of both directions, ranked by cost x confidence"
"""The heading of the one ranking."""
RANKING_COLUMNS = ("rank", "direction", "culprit", "cost", "confidence")
"""The ranking's table, the same in every format."""
NONE_RANKED = "No culprit above the threshold in either direction."


def way(direction: str | None) -> str:
    """A finding's direction tag: its direction's way (``upload``, ``download``)."""
    words = WORDS.get(direction or "")
    return words.way if words else (direction or "-")


def part_title(part: Diagnosis) -> str:
    """The heading of one half: ``Upload: pushes (direction push)``."""
    words = WORDS[part.direction]
    return f"{words.way.capitalize()}: {words.transfers} (direction {part.direction})"


def directions_line(d: Diagnosis) -> str:
    """Which directions the document holds: ``upload: pushes; download: clones``."""
    return "; ".join(f"{WORDS[p.direction].way}: {WORDS[p.direction].transfers}"
                     for p in d.parts)


def ranking_rows(d: Diagnosis) -> list[tuple[str, ...]]:
    """The one ranking's rows, highest first, in :data:`RANKING_COLUMNS` order."""
    return [(str(rank), way(f.direction), f.id, fmt_s(f.cost_s), f"{f.score:.2f}")
            for rank, f in enumerate(d.findings, start=1)]


def render_text(d: Diagnosis, parts: Sequence[str], *, markdown: bool) -> str:
    """The terminal text (``markdown`` False) or the Markdown of a redacted ``both``
    diagnosis, ``parts`` its halves rendered alone in the same format."""
    rows = ranking_rows(d)
    if markdown:
        lines = [f"# {TITLE}", "", f"**Verdict: {d.verdict}.** {d.headline}", "",
                 f"## {RANKING_TITLE}", ""]
    else:
        lines = [f"{TITLE} ({directions_line(d)})", f"verdict: {d.verdict.upper()}",
                 d.headline, "", f"{RANKING_TITLE.lower()}:"]
    lines += table_text(RANKING_COLUMNS, rows, markdown=markdown) if rows else [NONE_RANKED]
    for part, text in zip(d.parts, parts, strict=True):
        title = part_title(part)
        lines += ["", f"## {title}" if markdown else f"=== {title} ===", ""]
        lines.append(nested_markdown(text) if markdown else text.rstrip("\n"))
    return "\n".join(lines).rstrip("\n") + "\n"


def nested_markdown(text: str) -> str:
    """A half's Markdown under its direction's heading: its title (a leading ``# ``
    line) dropped, every other heading one level lower."""
    lines = text.rstrip("\n").split("\n")
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
        while lines and not lines[0]:
            lines = lines[1:]
    return "\n".join("#" + line if line.startswith("#") else line for line in lines)


_TITLE_TAG = re.compile(r"<h1\b[^>]*>.*?</h1>", re.DOTALL)
_HEADING_TAG = re.compile(r"<(/?)h([1-5])\b")
_ID = re.compile(r'\bid="')


def nested_html(page: str, prefix: str) -> str:
    """A half's page body under its direction's heading: its ``<h1>`` title dropped, every
    other heading one level lower, every element id prefixed with ``prefix-`` (a culprit
    found both ways is two elements). Its text is escaped, so every tag is markup."""
    body = page.split("<body>", 1)[-1].rsplit("</body>", 1)[0]
    body = _TITLE_TAG.sub("", body, count=1)
    body = _ID.sub(f'id="{prefix}-', body)
    return _HEADING_TAG.sub(lambda m: f"<{m[1]}h{int(m[2]) + 1}", body)


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _ranking_html(d: Diagnosis, anchors: str) -> str:
    """The ranking's table; a culprit's cell links to its details in its direction's
    section when that section gives them an id (``anchors``: the sections' markup)."""
    def cell(column: str, text: str, f: Finding) -> str:
        anchor = f"{f.direction}-{f.id}"
        if column == "culprit" and f'id="{_esc(anchor)}"' in anchors:
            return f'<td><a href="#{_esc(anchor)}">{_esc(text)}</a></td>'
        return f"<td>{_esc(text)}</td>"

    head = "".join(f"<th>{_esc(c)}</th>" for c in RANKING_COLUMNS)
    body = "".join(
        "<tr>" + "".join(cell(column, text, f)
                         for column, text in zip(RANKING_COLUMNS, row, strict=True)) + "</tr>"
        for f, row in zip(d.findings, ranking_rows(d), strict=True))
    return f"<table><tr>{head}</tr>{body}</table>"


def html_body(d: Diagnosis, pages: Sequence[str]) -> str:
    """The body of a redacted ``both`` diagnosis' page, ``pages`` its halves' pages."""
    sections = [f'<section class="direction" id="{_esc(part.direction)}">'
                f"<h2>{_esc(part_title(part))}</h2>{nested_html(page, part.direction)}"
                "</section>" for part, page in zip(d.parts, pages, strict=True)]
    parts = [f"<h1>{_esc(TITLE)}</h1>",
             f"<p>{_esc(directions_line(d))}</p>",
             f'<p class="verdict {_esc(d.verdict)}">Verdict: {_esc(d.verdict)}</p>',
             f"<p>{prose(d.headline)}</p>", f"<h2>{_esc(RANKING_TITLE)}</h2>",
             _ranking_html(d, "".join(sections)) if d.findings
             else f"<p>{_esc(NONE_RANKED)}</p>"]
    return "".join(parts + sections)
