"""The probe summary and the HTTP/2 sweep table speak the report's units (MB/s)."""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.pipeline import summarize_run
from gitnetdiag.report.probe import render_probe_summary, render_sweep
from gitnetdiag.rundir import load_run
from gitnetdiag.rundir.records import SweepRow

CAPTURES = Path(__file__).resolve().parents[2] / "captures"


def test_probe_summary_gives_rates_in_mb_per_s_like_the_report() -> None:
    manifest = load_run(CAPTURES / "h2-small-window")
    text = render_probe_summary(manifest, summaries=summarize_run(manifest))
    lines = text.splitlines()
    assert "gitnetdiag probe 862b1449 (complete)" in lines[0]
    assert "MB/s" in lines[2] and "MiB/s" not in text
    # the report table says 1.54 MB/s for the same push
    assert any(line.startswith("│ h1 ") and "1.54" in line for line in lines)
    assert not any(line != line.rstrip() for line in lines)


def test_sweep_table_gives_the_rate_in_mb_per_s() -> None:
    row = SweepRow(client_window_bytes=65535, client_max_frame_bytes=16384,
                   server_initial_window_bytes=65535, upload_rate_bytes_per_s=1_250_000.0,
                   stall_count=3, stalled_s=0.5, push_ok=True)
    header, line = render_sweep([row]).splitlines()
    assert "rate MB/s" in header
    assert line.split() == ["65535", "16384", "65535", "1.25", "3", "0.500", "yes"]
