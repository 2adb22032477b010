"""Probe renderers: the per-protocol summary of a run and the HTTP/2 settings sweep."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table

from gitnetdiag.outcomes import MEASURED_OUTCOMES
from gitnetdiag.report.console import console_text

if TYPE_CHECKING:
    from gitnetdiag.diagnosis.model import Diagnosis, ProtocolSummary
    from gitnetdiag.rundir import RunManifest
    from gitnetdiag.rundir.records import SweepRow


def _mb_s(rate_bytes_per_s: float | None) -> str:
    # A bare number: the column header names the unit (MB/s, as fmt_rate writes it).
    return "-" if rate_bytes_per_s is None else f"{rate_bytes_per_s / 1e6:.2f}"


def render_probe_summary(
    manifest: RunManifest, *, summaries: Sequence[ProtocolSummary], width: int = 100,
    color: bool = False,
) -> str:
    """The summary table: rate per protocol (median, min, max), HTTP version, failures.

    ``summaries`` are the run's per-protocol summaries (``pipeline.summarize_run``),
    one per ``manifest.protocols`` entry, in the same order.
    """
    table = Table(
        title=f"gitnetdiag probe {manifest.run_id} ({manifest.status})",
        caption="MB/s: median rate of the pushes (min, max); s: median wall time "
        "(~: projected for the whole pack from bounded pushes)",
    )
    for column in ("proto", "ok", "MB/s", "min", "max", "s", "http", "failures", "burst"):
        table.add_column(column, justify="left" if column in ("proto", "http") else "right")
    for probed, row in zip(manifest.protocols, summaries, strict=True):
        # The recorded kinds (no-data, interrupted, tls, ...), finer than the engine's.
        kinds = Counter(p.failure_kind or p.outcome for p in probed.pushes
                        if p.outcome not in MEASURED_OUTCOMES)
        failures = ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()))
        versions = Counter(p.http_version for p in probed.pushes if p.http_version)
        burst = "-" if probed.burst is None else str(probed.burst.ok_count)
        if probed.burst is not None and probed.burst.failures_by_kind:
            burst += " (" + ", ".join(
                f"{k} {n}" for k, n in sorted(probed.burst.failures_by_kind.items())) + ")"
        table.add_row(
            row.protocol, f"{row.pushes_ok}/{len(probed.pushes)}", _mb_s(row.rate_bytes_per_s),
            _mb_s(row.rate_min_bytes_per_s), _mb_s(row.rate_max_bytes_per_s),
            "-" if row.duration_s is None or not row.pushes_ok
            else f"{'~' if row.projected_pushes else ''}{row.duration_s:.2f}",
            versions.most_common(1)[0][0] if versions else "-", failures or "-", burst,
        )
    return console_text(table, width=width, color=color)


def render_clone_summary(diagnosis: Diagnosis, run_name: str, *, width: int = 100,
                         color: bool = False) -> str:
    """The clones of a ``--direction both`` probe as the pushes' summary table shows them
    (one row per protocol: clones completed, median rate with min and max, median wall
    time, failure kinds), titled with their run directory's name and verdict."""
    table = Table(
        title=f"clones {run_name} ({diagnosis.verdict})",
        caption="MB/s: median rate of the clones (min, max); s: median wall time "
        "(~: projected for the whole pack from bounded clones)",
    )
    for column in ("proto", "ok", "MB/s", "min", "max", "s", "failures"):
        table.add_column(column, justify="left" if column == "proto" else "right")
    for row in diagnosis.protocols:
        kinds = Counter(row.failure_kinds)
        table.add_row(
            row.protocol, f"{row.pushes_ok}/{row.pushes_ok + row.pushes_failed}",
            _mb_s(row.rate_bytes_per_s), _mb_s(row.rate_min_bytes_per_s),
            _mb_s(row.rate_max_bytes_per_s),
            "-" if row.duration_s is None or not row.pushes_ok
            else f"{'~' if row.projected_pushes else ''}{row.duration_s:.2f}",
            ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items())) or "-")
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
