"""benchmarks/time_to_diagnosis.py: the part of a run's steps that moves bytes on the path."""

from __future__ import annotations

from benchmarks.time_to_diagnosis import on_path_s


def _row(step: str, start: float, end: float) -> dict[str, object]:
    return {"step": step, "start": start, "end": end, "pid": 1}


def test_transfers_side_by_side_count_once_and_other_work_not_at_all() -> None:
    rows = [
        _row("start-up (interpreter, imports, options)", 0.0, 0.3),
        _row("paths", 0.4, 1.0),  # the aggregate row of the two below
        _row("path 198.18.2.2:8443", 0.4, 1.0),
        _row("path 198.18.2.2:22", 0.4, 1.0),
        _row("seed repository (beside the paths)", 0.3, 0.9),
        _row("seed branch", 1.0, 2.2),
        _row("fetch h1 #1", 2.2, 3.6),
        _row("pipeline and plotting library loaded (beside the clones)", 2.2, 2.7),
        _row("native downloads' libraries (beside the clones)", 2.7, 2.8),
        _row("pushes' repository (beside the paths)", 0.3, 1.1),
        _row("pushes: versions, capture support, git config", 4.0, 4.1),
        _row("paths (beside the repository)", 4.1, 4.5),  # a push run's one row
        _row("native h2 ledger", 5.0, 6.4),
        _row("native ssh ledger", 5.0, 6.5),
        _row("seed clean-up", 6.5, 7.0),
        _row("host evidence since the snapshot", 6.5, 6.7),
        _row("reports (md, html, json)", 7.1, 7.4),
    ]
    # paths 0.6 + seed 1.2 + clone 1.4 + a push run's paths 0.4 + the two ledgers 1.5
    # + clean-up 0.5
    assert abs(on_path_s(rows) - 5.6) < 1e-9


def test_no_step_on_the_path_is_zero() -> None:
    assert on_path_s([_row("analysis and diagnosis", 0.0, 1.0)]) == 0.0
    assert on_path_s([]) == 0.0
