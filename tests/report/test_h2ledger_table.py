"""The HTTP/2 ledger table, on the recorded push of ``tests/analysis/data``."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from gitnetdiag.analysis.h2ledger import h2_ledgers_from_rows, parse_tshark_fields
from gitnetdiag.report.h2ledger_table import ledger_table_rows, render_h2_ledgers

DATA = Path(__file__).parent.parent / "analysis" / "data"


def test_table_and_rendering() -> None:
    ledgers = h2_ledgers_from_rows(
        parse_tshark_fields((DATA / "h2_small_window_push.tsv").read_text())
    )
    header, first, _ = ledger_table_rows(ledgers)
    assert header[2] == "srv window"
    assert first[2] == "65535"
    assert first[8] == "2"
    console = Console(record=True, width=200)
    render_h2_ledgers(ledgers, console)
    assert "65535" in console.export_text()
