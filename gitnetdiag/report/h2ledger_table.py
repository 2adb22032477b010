"""The HTTP/2 flow-control ledger table of ``gitnetdiag analyze FILE --keylog``."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gitnetdiag.analysis.h2ledger import H2WireLedger


def ledger_table_rows(ledgers: Sequence[H2WireLedger]) -> list[list[str]]:
    """Rows of the ledger table: one per connection (header first)."""
    rows = [
        [
            "conn",
            "server",
            "srv window",
            "conn window",
            "DATA up",
            "DATA down",
            "WIN_UPD (conn)",
            "s no credit",
            "stalls",
            "bound",
        ]
    ]
    for ledger in ledgers:
        rows.append(
            [
                str(ledger.tcp_stream),
                ledger.server,
                str(ledger.server_initial_window_bytes),
                str(ledger.connection.peak_credit_bytes),
                str(ledger.data_bytes_to_server),
                str(ledger.data_bytes_to_client),
                f"{ledger.window_updates_from_server} "
                f"({ledger.connection_window_updates_from_server} conn)",
                f"{ledger.stalled_s:.3f}",
                str(ledger.stall_count),
                ledger.bound.which,
            ]
        )
    return rows


def render_h2_ledgers(
    ledgers: Sequence[H2WireLedger], console: Console, *, keys_given: bool = False
) -> None:
    """Print the HTTP/2 flow-control ledger table with rich.

    ``keys_given``: a key log was passed or the pcapng carries its secrets, so
    an empty table is not for want of keys.
    """
    header, *body = ledger_table_rows(ledgers)
    table = Table(title="HTTP/2 flow control (client uploads)")
    for name in header:
        table.add_column(name, justify="left" if name == "server" else "right")
    for row in body:
        table.add_row(*(Text(cell) for cell in row))  # addresses are not markup
    if not body:
        console.print(
            "no decrypted HTTP/2 traffic in the capture (the keys given decrypt no HTTP/2: "
            "keys of another session, or no h2 negotiated)" if keys_given
            else "no decrypted HTTP/2 traffic in the capture (give --keylog?)"
        )
        return
    console.print(table)
