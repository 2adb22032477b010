"""benchmarks/native_bound_replay.py: a recorded native download fed again under a budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.native_bound_replay import main, replay


def _steady(rate: float, until_s: float, step_s: float = 0.01) -> list[tuple[float, int]]:
    """5 kB of preamble (refs, capabilities), then ``rate`` bytes/s."""
    return [(0.0, 0), (0.01, 5_000)] + [
        (round(0.01 + step_s * n, 3), int(5_000 + rate * step_s * n))
        for n in range(1, int(until_s / step_s) + 1)]


def test_a_steady_download_stops_at_the_budget_at_the_same_rate() -> None:
    points = _steady(1_000_000.0, 4.0)
    reference = replay(points, 2.1)
    shorter = replay(points, 1.1)
    assert reference.stopped == shorter.stopped == "budget"
    assert reference.ended_s == pytest.approx(2.1, abs=0.02)
    assert shorter.ended_s == pytest.approx(1.1, abs=0.02)
    assert shorter.rate == pytest.approx(reference.rate, rel=0.01)
    assert shorter.rate == pytest.approx(1_000_000.0, rel=0.02)


def test_a_download_that_ends_first_is_the_same_either_way() -> None:
    points = _steady(20_000_000.0, 0.5)
    assert replay(points, 2.1) == replay(points, 1.1)
    assert replay(points, 1.1).stopped is None


def test_a_directory_without_ledgers_is_one_line_and_exit_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "no fetch.json" in err and "hint" in err
    assert main(["--rtts", "x", str(tmp_path)]) == 2
