"""Markdown report for tickets: summary first, culprits with evidence, environment, method."""

from __future__ import annotations

from gitnetdiag.diagnosis.model import Diagnosis, Finding
from gitnetdiag.report.combined import render_text as render_both
from gitnetdiag.report.compare import md_cell, md_table
from gitnetdiag.report.failures import (
    INTRO,
    SECTION_TITLE,
    SIGNATURE_HEADING,
    failure_note,
    failure_signature,
    failure_where,
)
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
    answered_by,
    evidence_rows,
    fmt_rate,
    fmt_s,
)


def _failures(d: Diagnosis) -> list[str]:
    """The measurement failures table; a failure-signature column when a push was described."""
    signed = any(f.seen for f in d.measurement_failures)
    extra = f" {SIGNATURE_HEADING} |" if signed else ""
    lines = [f"## {SECTION_TITLE}", "", INTRO, "",
             f"| measurement | reference | what happened | hint | note |{extra}",
             "|---|---|---|---|---|" + ("---|" if signed else "")]
    for f in d.measurement_failures:
        cell = f" {md_cell(failure_signature(f))} |" if signed else ""
        lines.append(f"| {md_cell(failure_where(f))} | `{f.reference}` | {md_cell(f.message)} | "
                     f"{md_cell(f.hint)} | {md_cell(failure_note(f))} |{cell}")
    return [*lines, ""]


def _finding(rank: int, f: Finding) -> list[str]:
    lines = [
        f"### {rank}. `{f.id}`: {f.title}",
        "",
        f"**Cost** ~{fmt_s(f.cost_s)} · **confidence** {f.score:.2f}",
        "",
        f.summary,
        "",
        *md_table(("evidence", "measured", "threshold", "source"), evidence_rows(f)),
        f"**Fix:** {f.fix}",
        "",
    ]
    return lines


def render_markdown(diagnosis: Diagnosis) -> str:
    """The report as GitHub-flavoured Markdown."""
    if diagnosis.parts:  # a both run: one ranking, then each direction's report
        d = redact_diagnosis(diagnosis)
        return render_both(d, [render_markdown(p) for p in d.parts], markdown=True)
    if diagnosis.sampled is not None:
        return render_text(redact_diagnosis(diagnosis), markdown=True)
    d = redact_diagnosis(diagnosis)
    env = d.environment
    lines = [
        "# gitnetdiag report",
        "",
        f"**Verdict: {d.verdict}.** {d.headline}",
        "",
    ]
    if d.measurement_failures:
        lines += _failures(d)
    if d.findings:
        lines.append("| rank | culprit | cost | confidence |")
        lines.append("|---|---|---|---|")
        lines += [
            f"| {i} | `{f.id}` | {fmt_s(f.cost_s)} | {f.score:.2f} |"
            for i, f in enumerate(d.findings, start=1)
        ]
        lines.append("")
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
    versions = ", ".join(f"{k} {v}" for k, v in env.versions.items()) or "-"
    https_server, ssh_server = answered_by(env.server)
    lines += [
        "## Environment",
        "",
        f"- target: `{env.target_url or '-'}`",
        f"- started: {env.started or '-'}",
        f"- RTT: {fmt_s(env.rtt_s)}",
        f"- path rate: {fmt_rate(env.path_rate_bytes_per_s)}",
        f"- client versions: {versions}",
        f"- HTTPS server that answered: {https_server}",
        f"- SSH server: {ssh_server}",
        f"- protocols measured: {', '.join(d.measured_protocols) or '-'} "
        f"(requested: {', '.join(d.requested_protocols) or '-'})",
        "",
        "## How it was measured",
        "",
        f"{env.measured_by or 'not recorded'}. gitnetdiag {env.gitnetdiag_version} ranked "
        f"culprits by estimated cost x confidence and dropped those below "
        f"{env.min_impact_s:g} s of impact or {env.min_score:g} confidence.",
        "",
    ]
    return "\n".join(lines)
