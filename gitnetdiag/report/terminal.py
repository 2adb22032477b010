"""Terminal report (rich): verdict first, protocol table, ranked culprits with evidence and fix."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from gitnetdiag.diagnosis.model import Diagnosis, Finding
from gitnetdiag.report.combined import render_text as render_both
from gitnetdiag.report.console import console_output, text_console
from gitnetdiag.report.failures import (
    INTRO,
    SECTION_TITLE,
    failure_note,
    failure_signature,
    failure_where,
)
from gitnetdiag.report.fixtext import fix_lines
from gitnetdiag.report.redact import redact_diagnosis
from gitnetdiag.report.transfers import WORDS, protocol_rows, render_text
from gitnetdiag.report.units import (
    PROJECTED_NOTE,
    answered_by,
    evidence_rows,
    fmt_s,
    target_text,
)

_VERDICT_STYLE = {"healthy": "bold green", "degraded": "bold red",
                  "inconclusive": "bold yellow", "failed": "bold red"}


def _protocol_table(diagnosis: Diagnosis) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    transfers = WORDS.get(diagnosis.direction, WORDS["push"]).transfers
    for header in ("protocol", f"{transfers} ok/failed", "bytes", "duration median",
                   "rate median", "rate min-max"):
        table.add_column(header, justify="left" if header == "protocol" else "right")
    for s, row in zip(diagnosis.protocols, protocol_rows(diagnosis), strict=True):
        label, ok, failed, moved, duration, rate, low, high = row
        table.add_row(label, f"{ok}/{failed}", moved, duration, rate,
                      f"{low} - {high}" if s.rate_bytes_per_s else "-")
    return table


def _finding(console: Console, rank: int, finding: Finding, color: bool) -> None:
    console.print(Text.assemble((f"#{rank} {finding.id}", "bold" if color else ""),
                                f"  {finding.title}",
                                f"  cost ~{fmt_s(finding.cost_s)}  confidence {finding.score:.2f}"))
    console.print(Padding(Text(finding.summary), (0, 0, 0, 3)))
    for what, value, threshold, source in evidence_rows(finding):
        extra = "; ".join(f"{label}: {text}" for label, text in
                          (("threshold", threshold), ("source", source)) if text)
        line = f"- {what}: {value}" + (f" ({extra})" if extra else "")
        console.print(Padding(Text(line), (0, 0, 0, 3)))
    for n, line in enumerate(fix_lines(finding.fix, first="fix: ")):
        console.print(Padding(Text(line, style="green" if color else ""), (0, 0, 0, 3 if n == 0
                                                                            else 5)))


def render_terminal(diagnosis: Diagnosis, *, width: int = 100, color: bool = False) -> str:
    """The report as terminal text; ``color`` adds ANSI styles (not to sampled transfers')."""
    d = redact_diagnosis(diagnosis)
    if d.parts:  # a both run: one ranking, then each direction's report
        return render_both(d, [render_terminal(p, width=width, color=color)
                                        for p in d.parts], markdown=False)
    if d.fetch_details is not None:
        return render_text(d, markdown=False)
    console = text_console(width=width, color=color)
    style = _VERDICT_STYLE.get(d.verdict, "bold") if color else ""
    console.print(Text(f"verdict: {d.verdict.upper()}", style=style))
    console.print(Text(d.headline))
    console.print()
    if d.measurement_failures:
        console.print(Text(f"{SECTION_TITLE.lower()}: {INTRO[0].lower()}{INTRO[1:]}"))
        for failure in d.measurement_failures:
            note = failure_note(failure)
            line = (f"- {failure_where(failure)}: {failure.reference}: {failure.message}"
                    + (f" [{note}]" if note else ""))
            console.print(Padding(Text(line, style="yellow" if color else ""), (0, 0, 0, 1)))
            console.print(Padding(Text(f"hint: {failure.hint}"), (0, 0, 0, 3)))
            if signature := failure_signature(failure):
                console.print(Padding(Text(f"signature: {signature}"), (0, 0, 0, 3)))
        console.print()
    if d.protocols:
        console.print(_protocol_table(d))
        if any(s.projected_pushes for s in d.protocols):
            console.print(Text(PROJECTED_NOTE))
        console.print()
    if d.findings:
        console.print(Text("culprits, ranked by cost x confidence:"))
        for rank, finding in enumerate(d.findings, start=1):
            _finding(console, rank, finding, color)
            console.print()
    else:
        console.print(Text("no culprit above the threshold."))
        console.print()
    env = d.environment
    versions = ", ".join(f"{k} {v}" for k, v in env.versions.items()) or "-"
    console.print(
        Text(
            f"target {target_text(env)} | RTT {fmt_s(env.rtt_s)} | {versions} | "
            f"gitnetdiag {env.gitnetdiag_version}"
        )
    )
    for note in env.remote_notes:
        console.print(Text(f"remote: {note}"))
    https_server, ssh_server = answered_by(env.server)
    if env.server is not None:
        console.print(Text(f"answered by: HTTPS {https_server} | SSH {ssh_server}"))
    return console_output(console)
