"""``gitnetdiag compare`` in both directions (issue 36 item 1): clones with clones in the
words of clones, a push run against a fetch run refused in one line, a ``--direction both``
run compared by its matching half, a fetch culprit's predicted gain against the measured.

Offline: ``tests/data/fetch-healthy`` (two git:// clones of 2 MiB, 256 and 266 ms) and
copies of it with the clones made slower, beside the recorded push run ``captures/healthy``.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from gitnetdiag.commands.compare import matching_halves
from gitnetdiag.diagnosis.comparison import compare
from gitnetdiag.diagnosis.model import Diagnosis, Finding
from gitnetdiag.errors import UsageError
from gitnetdiag.pipeline import diagnosis_from_saved
from gitnetdiag.report.compare import (
    render_compare_json,
    render_compare_markdown,
    render_compare_terminal,
)
from gitnetdiag.report.compare_html import render_compare_html
from tests.commands.test_bad_input import REPO, gitnetdiag

FETCH_HEALTHY = REPO / "tests" / "data" / "fetch-healthy"
PUSH_HEALTHY = REPO / "captures" / "healthy"
SLOWER = 3.0
"""How much slower the crafted copy's clones are."""


def slow_copy(where: Path, factor: float = SLOWER) -> Path:
    """``fetch-healthy`` with every clone ``factor`` times slower (same bytes)."""
    shutil.copytree(FETCH_HEALTHY, where)
    record = where / "fetch.json"
    data: dict[str, Any] = json.loads(record.read_text())
    for protocol in data["protocols"]:
        for fetch in protocol["fetches"]:
            fetch["measured_s"] *= factor
            fetch["wall_s"] *= factor
            fetch["rate_bytes_per_s"] /= factor
    record.write_text(json.dumps(data, indent=2))
    return where


def push_words_left(text: str) -> list[str]:
    """Words of pushes in a comparison of clones."""
    return [word for word in ("push", "Push") if word in text]


def test_two_fetch_runs_compare_in_the_words_of_clones(tmp_path: Path) -> None:
    slow = slow_copy(tmp_path / "slow")
    proc = gitnetdiag("compare", str(slow), str(FETCH_HEALTHY), "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["direction"] == "fetch"
    pair = data["pairs"][0]
    assert pair["slower"] == "A" and pair["deciding_protocol"] == "git"
    row = pair["protocols"][0]
    # A complete clone is timed whole less its checkout (trace2's, a few ms, not scaled).
    assert row["speedup"] == pytest.approx(SLOWER, rel=0.02)
    assert row["before"]["rate_median_bytes_per_s"] == pytest.approx(
        row["after"]["rate_median_bytes_per_s"] / SLOWER, rel=0.02)
    assert "a clone (x3.0" in data["headline"]
    assert push_words_left(data["headline"]) == []
    # Each run's start is its fetch.json's, as a push run's is its manifest's.
    started = json.loads((FETCH_HEALTHY / "fetch.json").read_text())["started_at"]
    assert [run["started"] for run in data["runs"]] == [started, started]


@pytest.mark.parametrize("render", [partial(render_compare_terminal, width=200),
                                    render_compare_markdown, render_compare_html])
def test_every_format_names_clones_not_pushes(render: Any, tmp_path: Path) -> None:
    comparison = compare([diagnosis_from_saved(slow_copy(tmp_path / "slow")),
                          diagnosis_from_saved(FETCH_HEALTHY)], ["slow", "healthy"])
    text = render(comparison)
    assert "A clone (median, range)" in text and "3 clones)" in text
    assert "t-test on the clone durations" in text
    if isinstance(render, partial):
        assert "Clones per protocol" in text
    # The HTML's plots are PNG (base64): its words are in the tables and captions.
    assert push_words_left(text.split("<img")[0] if "<img" in text else text) == []


def test_push_comparison_keeps_the_words_of_pushes() -> None:
    pushes = diagnosis_from_saved(PUSH_HEALTHY)
    comparison = compare([pushes, pushes], ["a", "b"])
    assert comparison.direction == "push"
    text = render_compare_terminal(comparison, width=200)
    assert "Pushes per protocol" in text and "A push (median, range)" in text
    assert json.loads(render_compare_json(comparison))["direction"] == "push"


@pytest.mark.parametrize("order", [(PUSH_HEALTHY, FETCH_HEALTHY),
                                   (FETCH_HEALTHY, PUSH_HEALTHY)])
def test_a_push_run_against_a_fetch_run_is_one_usage_error(order: tuple[Path, Path],
                                                           tmp_path: Path) -> None:
    proc = gitnetdiag("compare", *map(str, order), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("error [usage]: A (") and "compare pairs runs of the same " \
        "direction" in lines[0] and "(hint: " in lines[0], lines[0]


def test_pure_compare_refuses_mixed_directions() -> None:
    with pytest.raises(UsageError, match=r"is a push run and B .* a fetch run"):
        compare([diagnosis_from_saved(PUSH_HEALTHY), diagnosis_from_saved(FETCH_HEALTHY)],
                ["push", "fetch"])


def both_run(where: Path) -> Path:
    """A ``--direction both`` run's layout: the pushes in RUN, the clones in RUN-fetch."""
    shutil.copytree(PUSH_HEALTHY, where)
    slow_copy(where.with_name(where.name + "-fetch"))
    return where


def test_a_both_run_compares_by_its_matching_half(tmp_path: Path) -> None:
    run = both_run(tmp_path / "run")
    said: list[str] = []
    # against a fetch run, either order: its clones
    assert matching_halves([run, FETCH_HEALTHY], said.append) == [
        tmp_path / "run-fetch", FETCH_HEALTHY]
    assert matching_halves([FETCH_HEALTHY, run]) == [FETCH_HEALTHY, tmp_path / "run-fetch"]
    assert said and "half of a --direction both run" in said[0] and "clones" in said[0]
    # its fetch half against a push run: its pushes
    assert matching_halves([tmp_path / "run-fetch", PUSH_HEALTHY]) == [run, PUSH_HEALTHY]
    # one direction given: left as given; a lone push and a lone fetch run: left for the error
    assert matching_halves([run, PUSH_HEALTHY]) == [run, PUSH_HEALTHY]
    assert matching_halves([PUSH_HEALTHY, FETCH_HEALTHY]) == [PUSH_HEALTHY, FETCH_HEALTHY]


def test_a_both_run_against_a_fetch_run_through_the_cli(tmp_path: Path) -> None:
    run = both_run(tmp_path / "run")
    proc = gitnetdiag("compare", str(run), str(FETCH_HEALTHY), "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["direction"] == "fetch"
    assert data["runs"][0]["source"] == str(tmp_path / "run-fetch")
    assert data["pairs"][0]["slower"] == "A"
    assert "half of a --direction both run" in proc.stderr


def with_top(d: Diagnosis, cost_s: float) -> Diagnosis:
    """The fetch diagnosis with one download culprit ranked first, priced on git://."""
    finding = Finding(
        id="client-tcp-receive-window-clamp", title="Client TCP receive window clamp",
        score=0.9, cost_s=cost_s, summary="crafted", fix="raise net.ipv4.tcp_rmem",
        evidence=(), cost_protocol="git")
    return replace(d, findings=(finding,))


def test_a_fetch_culprits_predicted_gain_against_the_measured(tmp_path: Path) -> None:
    slow = diagnosis_from_saved(slow_copy(tmp_path / "slow"))
    fast = diagnosis_from_saved(FETCH_HEALTHY)
    measured = slow.observations.protocols["git"].pushes[0].duration_s  # for the scale
    assert measured > 0
    gain = compare([with_top(slow, 0.5), fast], ["slow", "fast"]).pairs[0].gain
    assert gain is not None and gain.protocol == "git" and gain.culprit_gone
    # Whole clones less their checkout: 0.838 s (three times the wall) against 0.275 s.
    assert gain.measured_gain_s == pytest.approx(0.838 - 0.275, abs=0.002)
    assert gain.predicted_gain_s == 0.5
    assert gain.error_share == pytest.approx((0.5 - gain.measured_gain_s) / gain.measured_gain_s)


def test_a_culprit_without_a_cost_predicts_no_number(tmp_path: Path) -> None:
    slow = diagnosis_from_saved(slow_copy(tmp_path / "slow"))
    comparison = compare([with_top(slow, 0.0), diagnosis_from_saved(FETCH_HEALTHY)],
                         ["slow", "fast"])
    gain = comparison.pairs[0].gain
    assert gain is not None and gain.predicted_gain_s is None and gain.error_share is None
    assert gain.measured_gain_s is not None and gain.measured_gain_s > 0
    assert "carries no estimated cost" in gain.note
    text = render_compare_markdown(comparison)
    assert "predicted gain - (no estimated cost in A)" in text
    assert "prediction off by" not in text


def test_clones_of_different_bytes_compare_by_rate(tmp_path: Path) -> None:
    """Clones of different bytes (issue 44): not their durations, a whole clone of the
    baseline's size at each clone's rate, the sizes said."""
    cut = slow_copy(tmp_path / "cut")
    record = cut / "fetch.json"
    data: dict[str, Any] = json.loads(record.read_text())
    for fetch in data["protocols"][0]["fetches"]:
        fetch["moved_bytes"] //= 2
    record.write_text(json.dumps(data))
    comparison = compare([with_top(diagnosis_from_saved(cut), 0.5),
                          diagnosis_from_saved(FETCH_HEALTHY)], ["cut", "whole"])
    gain = comparison.pairs[0].gain
    assert gain is not None and gain.measured_gain_s is not None
    assert "a clone moved 1.0 MB before, 2.1 MB after" in gain.note, gain.note
    assert gain.basis == "projected" and gain.projected_bytes == pytest.approx(1.05e6, rel=0.01)
    (row,) = comparison.pairs[0].protocols
    # Half the bytes in three times the time: a sixth of the rate, the 1 MB clone 6x faster.
    assert row.projected and row.speedup == pytest.approx(6.0, rel=0.05)
    assert (f"B is faster than A on git://: x{row.speedup:.1f} a whole clone of 1.0 MB "
            "projected at each run's rate") in comparison.headline
    assert "A's moved 1.0 MB, B's moved 2.1 MB" in render_compare_markdown(comparison)
    whole = compare([with_top(diagnosis_from_saved(slow_copy(tmp_path / "slow")), 0.5),
                     diagnosis_from_saved(FETCH_HEALTHY)], ["slow", "whole"]).pairs[0].gain
    assert whole is not None and whole.basis == "duration" and "projected" not in whole.note
