"""Terminal table and Markdown of a storage check."""

from __future__ import annotations

from gitnetdiag.commands.storage import storage_findings
from gitnetdiag.model.storage.records import StorageCheck
from gitnetdiag.model.storage.reference import verdict
from gitnetdiag.report.storage import StorageReport, render_markdown, render_terminal, rows
from tests.storage.fakes import check_from
from tests.storage.helpers import CRAFTED_SLOW, REAL_DIRECT


def _report(check: StorageCheck) -> StorageReport:
    return StorageReport(check=check, verdict=verdict(check), findings=storage_findings(check))


def test_rows() -> None:
    table = {what: (value, ref) for what, value, ref in rows(check_from(CRAFTED_SLOW))}
    assert table["read IOPS"] == ("450", "~33,000 / ~2,000")
    assert table["write IOPS"] == ("150", "~11,000 / ~700")
    assert table["write bandwidth"][0] == "614.4 kB/s"
    assert table["read latency p50 / p99"][0].endswith(" ms")
    assert table["1,000 small files: total"] == ("600 ms", "well under 10 s")
    assert table["pack read (2 packs, cold)"][0] == "30.0 MB in 250 ms (120.00 MB/s)"


def test_terminal_shows_verdict_and_finding() -> None:
    check = check_from(CRAFTED_SLOW)
    text = render_terminal(_report(check))
    lines = text.splitlines()
    assert lines[0] == "storage check of /srv/git (ext4); fio direct I/O, 64 MiB file, 2.0 s"
    assert any(line.startswith("verdict: SLOW - 450 read / 150 write IOPS") for line in lines)
    assert any(line.startswith("finding slow-storage: Slow storage") for line in lines)
    assert any(line.startswith("  fix: Move the repositories to faster storage") for line in lines)


def test_terminal_without_finding() -> None:
    check = check_from(REAL_DIRECT)
    text = render_terminal(_report(check))
    assert "verdict: FAST" in text
    assert "finding" not in text


def test_markdown() -> None:
    check = check_from(CRAFTED_SLOW)
    md = render_markdown(_report(check))
    assert md.startswith("# gitnetdiag storage check\n")
    assert "| read IOPS | 450 | ~33,000 / ~2,000 |" in md
    assert "## `slow-storage`: Slow storage" in md
