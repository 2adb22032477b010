"""Probe renderers: the per-protocol summary of a run and the HTTP/2 settings sweep."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table

from gitnetdiag.report.console import console_text

if TYPE_CHECKING:
    from gitnetdiag.probe.h2native import SweepRow
    from gitnetdiag.probe.rundir import RunManifest


def _mb_s(bytes_per_s: float | None) -> str:
    # A bare number: the column header names the unit (MB/s, as fmt_rate writes it).
    return "-" if bytes_per_s is None else f"{bytes_per_s / 1e6:.2f}"


def render_probe_summary(manifest: RunManifest, *, width: int = 100, color: bool = False) -> str:
    """The summary table: rate per protocol (median, min, max), HTTP version, failures."""
    from gitnetdiag.probe.runner import summarize

    table = Table(
        title=f"gitnetdiag probe {manifest.run_id} ({manifest.status})",
        caption="MB/s: median rate of the pushes (min, max); s: median wall time",
    )
    for column in ("proto", "ok", "MB/s", "min", "max", "s", "http", "failures", "burst"):
        table.add_column(column, justify="left" if column in ("proto", "http") else "right")
    for row in summarize(manifest):
        failures = ", ".join(f"{kind} {count}" for kind, count in sorted(row.failures.items()))
        burst = "-" if row.burst_ok is None else str(row.burst_ok)
        if row.burst_failures:
            burst += " (" + ", ".join(
                f"{k} {n}" for k, n in sorted(row.burst_failures.items())) + ")"
        table.add_row(
            row.protocol, f"{row.ok}/{row.pushes}",
            _mb_s(row.rate_median_bytes_per_s),
            _mb_s(row.rate_min_bytes_per_s),
            _mb_s(row.rate_max_bytes_per_s),
            "-" if row.wall_median_s is None else f"{row.wall_median_s:.2f}",
            row.http_version or "-", failures or "-", burst,
        )
    return console_text(table, width=width, color=color)


def render_sweep(rows: Sequence[SweepRow], *, width: int = 100, color: bool = False) -> str:
    """The HTTP/2 settings sweep as a small plain-text table (``width``/``color`` unused)."""
    del width, color
    lines = [
        f"{'client window':>14} {'client frame':>12} {'server window':>13} "
        f"{'rate MB/s':>9} {'stalls':>6} {'stalled s':>9} {'ok':>3}"
    ]
    for row in rows:
        rate = row.upload_rate_bytes_per_s
        lines.append(
            f"{row.client_window_bytes:>14} {row.client_max_frame_bytes:>12} "
            f"{row.server_initial_window_bytes:>13} "
            f"{(rate / 1e6 if rate else 0.0):>9.2f} {row.stall_count:>6} "
            f"{row.stalled_s:>9.3f} {'yes' if row.push_ok else 'no':>3}"
        )
    return "\n".join(lines)
