"""Terminal table and Markdown of a storage check (:class:`StorageReport`)."""

from __future__ import annotations

from dataclasses import dataclass

from rich import box
from rich.table import Table
from rich.text import Text

from gitnetdiag.diagnosis.model import Finding
from gitnetdiag.diagnosis.units import fmt_bytes, fmt_rate
from gitnetdiag.model.storage.records import StorageCheck
from gitnetdiag.model.storage.reference import (
    NETWORKED_SSD_READ_IOPS,
    NETWORKED_SSD_WRITE_IOPS,
    SLOW_IOPS,
    SMALL_FILES_SLOW_S,
    SPINNING_DISK_READ_IOPS,
    SPINNING_DISK_WRITE_IOPS,
    Verdict,
)
from gitnetdiag.report.console import console_output, text_console


@dataclass(frozen=True, kw_only=True)
class StorageReport:
    """A storage check with what it means: the one object the storage renderers take."""

    check: StorageCheck
    """The measured figures."""
    verdict: Verdict
    """The grade against the reference points."""
    findings: tuple[Finding, ...]
    """The engine's findings on the check (``slow-storage`` or none)."""


HEADERS = ("measure", "measured", "reference (net SSD / HDD)")

Row = tuple[str, str, str]


def _latency(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def _duration(seconds: float) -> str:
    return f"{seconds * 1e3:.0f} ms" if seconds < 1.0 else f"{seconds:.2f} s"


def rows(check: StorageCheck) -> list[Row]:
    """Table rows: what, the measured value, the reference points."""
    out: list[Row] = []
    fio = check.fio
    if fio is not None:
        mode = "" if fio.direct else " (buffered)"
        out += [
            (f"read IOPS{mode}", f"{fio.read.iops:,.0f}",
             f"~{NETWORKED_SSD_READ_IOPS:,.0f} / ~{SPINNING_DISK_READ_IOPS:,.0f}"),
            (f"write IOPS{mode}", f"{fio.write.iops:,.0f}",
             f"~{NETWORKED_SSD_WRITE_IOPS:,.0f} / ~{SPINNING_DISK_WRITE_IOPS:,.0f}"),
            ("read bandwidth", fmt_rate(fio.read.bandwidth_bytes_per_s), ""),
            ("write bandwidth", fmt_rate(fio.write.bandwidth_bytes_per_s), ""),
            ("read latency p50 / p99",
             f"{_latency(fio.read.latency_p50_s)} / {_latency(fio.read.latency_p99_s)}", ""),
            ("write latency p50 / p99",
             f"{_latency(fio.write.latency_p50_s)} / {_latency(fio.write.latency_p99_s)}", ""),
        ]
    sf = check.small_files
    if sf is not None:
        out += [
            (f"{sf.files:,} small files: write + fsync", _duration(sf.write_s), ""),
            (f"{sf.files:,} small files: read back" + ("" if sf.cold_read else " (warm)"),
             _duration(sf.read_s), ""),
            (f"{sf.files:,} small files: total", _duration(sf.total_s),
             f"well under {SMALL_FILES_SLOW_S:.0f} s"),
        ]
    pr = check.pack_read
    if pr is not None:
        temperature = "warm" if pr.cache == "warm" else "cold"
        out.append(
            (f"pack read ({pr.packs} pack{'s' if pr.packs != 1 else ''}, {temperature})",
             f"{fmt_bytes(pr.bytes_read)} in {_duration(pr.read_s)} "
             f"({fmt_rate(pr.rate_bytes_per_s)})", ""),
        )
    return out


def _subject(check: StorageCheck) -> str:
    fs = f" ({check.filesystem})" if check.filesystem else ""
    job = ""
    if check.fio is not None:
        job = (f"; fio {check.io_mode} I/O, {check.size_bytes / 2**20:g} MiB file, "
               f"{check.fio.runtime_s:.1f} s")
    return f"storage check of {check.path}{fs}{job}"


def render_terminal(report: StorageReport, *, width: int = 100, color: bool = False) -> str:
    """The check as terminal text: subject, table, notes, verdict, findings."""
    check, verdict, findings = report.check, report.verdict, report.findings
    console = text_console(width=width, color=color)
    console.print(Text(_subject(check)), soft_wrap=True)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for index, header in enumerate(HEADERS):
        table.add_column(header, justify="left" if index == 0 else "right")
    for row in rows(check):
        table.add_row(*row)
    console.print(table)
    for note in check.notes:
        console.print(Text(f"note: {note}"), soft_wrap=True)
    console.print(Text(f"slow below {SLOW_IOPS:,.0f} IOPS (the lower of read and write) or "
                       f"{SMALL_FILES_SLOW_S:.0f} s for the small files"))
    console.print(Text(verdict.line()), soft_wrap=True)
    for finding in findings:
        console.print(Text(f"finding {finding.id}: {finding.title} "
                           f"(confidence {finding.score:.2f})"))
        console.print(Text(f"  {finding.summary}"))
        console.print(Text(f"  fix: {finding.fix}"))
    return console_output(console).rstrip() + "\n"


def render_markdown(report: StorageReport) -> str:
    """The check as GitHub-flavoured Markdown for a ticket."""
    check, verdict, findings = report.check, report.verdict, report.findings
    lines = ["# gitnetdiag storage check", "", _subject(check), "",
             f"**{verdict.line()}**", "",
             "| " + " | ".join(HEADERS) + " |", "|---|---:|---:|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows(check)]
    lines.append("")
    lines += [f"- note: {note}" for note in check.notes]
    for finding in findings:
        lines += ["", f"## `{finding.id}`: {finding.title}", "", finding.summary, "",
                  f"**Fix:** {finding.fix}"]
    return "\n".join(lines).rstrip() + "\n"
