"""Self-contained HTML report with plots embedded as base64 PNG.

The figures come from :mod:`gitnetdiag.report.plots`, which imports matplotlib
on first use (Agg backend), so the other renderers and the CLI start fast.
"""

from __future__ import annotations

import base64
import functools
import html
from collections.abc import Sequence

from gitnetdiag.analysis.nativeledger import H2Pacing
from gitnetdiag.analysis.window import ReceiverWindowSeries
from gitnetdiag.diagnosis.model import Diagnosis, Finding
from gitnetdiag.diagnosis.transfers import TransferObservation
from gitnetdiag.report.combined import TITLE as BOTH_TITLE
from gitnetdiag.report.combined import html_body as both_body
from gitnetdiag.report.failures import INTRO, SECTION_TITLE, failure_line, failure_table
from gitnetdiag.report.htmltext import fix_html, prose
from gitnetdiag.report.plots import Figure, pacing_figure, report_figures, window_figure
from gitnetdiag.report.redact import redact_diagnosis
from gitnetdiag.report.transfers import (
    PROTOCOL_COLUMNS,
    SSH_LEDGER_COLUMNS,
    SSH_LEDGER_TITLE,
    WORDS,
    burst_line,
    columns,
    direction_line,
    evidence,
    header,
    protocol_rows,
    protocols_title,
    record,
    sections,
    ssh_ledger_row,
    transfer_row,
)
from gitnetdiag.report.units import (
    PROJECTED_NOTE,
    environment_items,
    evidence_rows,
    fmt_s,
    target_text,
)

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; color: #222; }
.verdict { font-size: 1.4rem; font-weight: bold; }
.degraded, .failed { color: #b00020; } .healthy { color: #1b7f3b; }
.inconclusive { color: #a05a00; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
code { background: #f3f3f3; padding: 0 0.2rem; }
.fix { background: #eef7ee; padding: 0.5rem; border-left: 4px solid #1b7f3b; }
img { max-width: 100%; }
"""


def esc(text: object) -> str:
    """Text as HTML, quotes escaped."""
    return html.escape(str(text), quote=True)


def page(title: str, body: Sequence[str], *, style: str = STYLE) -> str:
    """A self-contained page (no external resources) of ``body``'s markup."""
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{esc(title)}</title><style>{style}</style></head><body>"
            + "".join(body) + "</body></html>\n")


def plots_section(figures: Sequence[Figure]) -> str:
    """The figures as inline PNG under a "Plots" heading; empty without figures."""
    if not figures:
        return ""
    parts = ["<h2>Plots</h2>"]
    for figure in figures:
        data = base64.b64encode(figure.png).decode("ascii")
        parts.append(
            f'<figure><img alt="{esc(figure.title)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{esc(figure.title)}</figcaption></figure>"
        )
    return "".join(parts)


def _finding(rank: int, f: Finding) -> str:
    return (
        f'<section class="culprit" id="{esc(f.id)}"><h3>{rank}. <code>{esc(f.id)}</code>: '
        f"{esc(f.title)}</h3>"
        f"<p><b>Cost</b> ~{esc(fmt_s(f.cost_s))} · <b>confidence</b> {f.score:.2f}</p>"
        f"<p>{prose(f.summary)}</p>"
        + html_table(("evidence", "measured", "threshold", "source"), evidence_rows(f))
        + fix_html(f.fix, "<b>Fix:</b>") + "</section>"
    )


def html_table(cols: Sequence[str], rows: Sequence[Sequence[str]], *,
               code: int | None = None) -> str:
    """A table of text cells under a header row; column ``code``'s cells as code."""
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td><code>{esc(cell)}</code></td>" if i == code
                                    else f"<td>{prose(cell)}</td>" for i, cell in enumerate(row))
                   + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def html_list(lines: Sequence[str]) -> str:
    """Lines of text as a bulleted list."""
    return "<ul>" + "".join(f"<li>{prose(line)}</li>" for line in lines) + "</ul>"


def _table(title: str, cols: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    return f"<h2>{esc(title)}</h2>{html_table(cols, rows)}" if rows else ""


def _clone_finding(rank: int, finding: Finding) -> str:
    return (f"<h3>{rank}. <code>{esc(finding.id)}</code>: {esc(finding.title)}</h3>"
            f"<p>costs ~{finding.cost_s:.1f} s, score {finding.score:.2f}. "
            f"{prose(finding.summary)}</p>"
            + html_table(("evidence", "value", "threshold", "source"), evidence_rows(finding))
            + fix_html(finding.fix, "fix:"))


def _fetch_html(d: Diagnosis) -> str:
    """The page of a redacted diagnosis of a fetch run's clones: each transfer's row, the
    culprits, the evidence sections present, the window and ledger plots."""
    words, done, details = WORDS[d.direction], d.observations.transfers, evidence(d)
    parts = [
        f"<h1>gitnetdiag report: {esc(words.way)} direction ({esc(d.direction)})</h1>",
        f"<p>{esc(direction_line(d.direction))}</p>",
        *(f"<p>{esc(line)}</p>" for line in header(d)),
        f"<p>verdict: <strong>{esc(d.verdict)}</strong></p>",
    ]
    if d.headline:
        parts.append(f"<p>{prose(d.headline)}</p>")
    parts += [f"<p>{esc(failure_line(f))}</p>" for f in d.measurement_failures]
    rows = [transfer_row(obs) for obs in done]
    parts.append(_table(words.transfers.capitalize(), columns(d.direction), rows)
                 or f"<h2>{esc(words.transfers.capitalize())}</h2>"
                 f"<p>no {esc(words.transfer)} was measured</p>")
    if d.observations.bursts:
        parts.append("<h2>Bursts</h2>" + html_list([burst_line(b) for b in d.observations.bursts]))
    parts.append(f"<h2>Culprits ({esc(words.way)} direction)</h2>")
    if d.findings:
        parts += [_clone_finding(rank, f) for rank, f in enumerate(d.findings, start=1)]
    elif any(obs.measured for obs in done):
        parts.append(f"<p>no {esc(words.way)} culprit above the threshold</p>")
    if record(d).errors:
        parts.append("<h2>Errors</h2><ul>" + "".join(
            f"<li><code>{esc(e.reference)}</code>: {esc(e.message)}</li>"
            for e in record(d).errors) + "</ul>")
    ssh = (SSH_LEDGER_TITLE, SSH_LEDGER_COLUMNS, [ssh_ledger_row(p) for p in details.ssh_pacing])
    parts += [_table(title, cols, rows) for title, cols, rows in [*sections(d), ssh]]
    parts.append(plots_section(_clone_figures(tuple(done), tuple(details.windows),
                                              tuple(details.h2_pacing))))
    return page(f"gitnetdiag report: {d.direction}", parts)


def _clone_figures(done: tuple[TransferObservation, ...],
                   windows: tuple[ReceiverWindowSeries | None, ...],
                   pacing: tuple[H2Pacing, ...]) -> list[Figure]:
    """The clones' window and ledger figures; drawn once for the same data (a both run's
    clones are on their own page and again on the joined one: 0.2 s of drawing each)."""
    try:
        return list(_drawn(done, windows, pacing))
    except TypeError:  # data that cannot be a cache key: drawn again
        return list(_drawn.__wrapped__(done, windows, pacing))


@functools.lru_cache(maxsize=2)
def _drawn(done: tuple[TransferObservation, ...],
           windows: tuple[ReceiverWindowSeries | None, ...],
           pacing: tuple[H2Pacing, ...]) -> tuple[Figure, ...]:
    figures = (window_figure(done, windows), pacing_figure(pacing))
    return tuple(figure for figure in figures if figure is not None)


def render_html(diagnosis: Diagnosis) -> str:
    """One self-contained HTML page (plots inline, no external resources)."""
    d = redact_diagnosis(diagnosis)
    if d.parts:  # a both run: one ranking, then each direction's report
        return page(f"{BOTH_TITLE}: {d.verdict}",
                    [both_body(d, [render_html(p) for p in d.parts])])
    if d.fetch_details is not None:
        return _fetch_html(d)
    env = d.environment
    parts = [
        "<h1>gitnetdiag report</h1>",
        f'<p class="verdict {esc(d.verdict)}">Verdict: {esc(d.verdict)}</p>',
        f"<p>{prose(d.headline)}</p>",
    ]
    if d.measurement_failures:
        parts += [f'<h2 id="measurement-failures">{esc(SECTION_TITLE)}</h2><p>{esc(INTRO)}</p>',
                  html_table(*failure_table(d.measurement_failures), code=1)]
    if d.protocols:
        parts.append(_table(protocols_title(d), PROTOCOL_COLUMNS, protocol_rows(d)))
        if any(s.projected_pushes for s in d.protocols):
            parts.append(f"<p>{esc(PROJECTED_NOTE)}</p>")
    parts.append("<h2>Culprits</h2>")
    if d.findings:
        parts += [_finding(i, f) for i, f in enumerate(d.findings, start=1)]
    else:
        parts.append("<p>No culprit passed the threshold.</p>")
    parts.append(plots_section(report_figures(d)))
    parts.append(
        "<h2>Environment</h2><ul>"
        f"<li>target: <code>{esc(target_text(env))}</code></li>"
        + "".join(f"<li>{what}: {esc(value)}</li>" for what, value in environment_items(d))
        + f"<li>measured by: {esc(env.measured_by or 'not recorded')}</li>"
        f"<li>gitnetdiag {esc(env.gitnetdiag_version)}; threshold: impact &gt;= "
        f"{env.min_impact_s:g} s and confidence &gt;= {env.min_score:g}</li></ul>"
    )
    return page(f"gitnetdiag report: {d.verdict}", parts)
