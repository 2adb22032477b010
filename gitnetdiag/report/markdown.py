"""Markdown report for tickets: summary first, culprits with evidence, environment, method."""

from __future__ import annotations

from gitnetdiag.diagnosis.model import Diagnosis, Finding
from gitnetdiag.report.combined import render_text as render_both
from gitnetdiag.report.compare import md_table
from gitnetdiag.report.failures import INTRO, SECTION_TITLE, failure_table
from gitnetdiag.report.fixtext import fix_layout
from gitnetdiag.report.redact import redact_diagnosis
from gitnetdiag.report.transfers import (
    PROTOCOL_COLUMNS,
    protocol_rows,
    protocols_title,
    render_text,
    table_text,
)
from gitnetdiag.report.units import (
    PROJECTED_NOTE,
    environment_items,
    evidence_rows,
    fmt_s,
    target_text,
)


def _finding(rank: int, f: Finding) -> list[str]:
    return [
        f"### {rank}. `{f.id}`: {f.title}",
        "",
        f"**Cost** ~{fmt_s(f.cost_s)} · **confidence** {f.score:.2f}",
        "",
        f.summary,
        "",
        *md_table(("evidence", "measured", "threshold", "source"), evidence_rows(f)),
        *_fix(f.fix),
        "",
    ]


def _fix(fix: str) -> list[str]:
    """The answering product's lines first, the other products as a list."""
    layout = fix_layout(fix)
    lines = [f"**Fix:** {layout.lead}"]
    if layout.others:
        lines += ["", f"{layout.heading}:", *(f"- {item}" for item in layout.others)]
    return lines + (["", layout.tail] if layout.tail else [])


def render_markdown(diagnosis: Diagnosis) -> str:
    """The report as GitHub-flavoured Markdown."""
    d = redact_diagnosis(diagnosis)
    if d.parts:  # a both run: one ranking, then each direction's report
        return render_both(d, [render_markdown(p) for p in d.parts], markdown=True)
    if d.fetch_details is not None:
        return render_text(d, markdown=True)
    env = d.environment
    lines = [
        "# gitnetdiag report",
        "",
        f"**Verdict: {d.verdict}.** {d.headline}",
        "",
    ]
    if d.measurement_failures:
        cols, rows = failure_table(d.measurement_failures)
        lines += [f"## {SECTION_TITLE}", "", INTRO, "",
                  *md_table(cols, [(r[0], f"`{r[1]}`", *r[2:]) for r in rows])]
    if d.findings:
        lines += md_table(("rank", "culprit", "cost", "confidence"),
                          [(str(i), f"`{f.id}`", fmt_s(f.cost_s), f"{f.score:.2f}")
                           for i, f in enumerate(d.findings, start=1)])
    if d.protocols:
        lines += [f"## {protocols_title(d)}", "",
                  *table_text(PROTOCOL_COLUMNS, protocol_rows(d), markdown=True)]
        if any(s.projected_pushes for s in d.protocols):
            lines += ["", PROJECTED_NOTE]
        lines.append("")
    lines += ["## Culprits", ""]
    if d.findings:
        for i, f in enumerate(d.findings, start=1):
            lines += _finding(i, f)
    else:
        lines += ["No culprit passed the threshold.", ""]
    lines += [
        "## Environment",
        "",
        f"- target: `{target_text(env)}`",
        *(f"- {what}: {value}" for what, value in environment_items(d)),
        "",
        "## How it was measured",
        "",
        f"{env.measured_by or 'not recorded'}. gitnetdiag {env.gitnetdiag_version} ranked "
        f"culprits by estimated cost x confidence and dropped those below "
        f"{env.min_impact_s:g} s of impact or {env.min_score:g} confidence.",
        "",
    ]
    return "\n".join(lines)
