"""The HTML report's figures: Stevens graphs on one time axis, a binned HTTP/2 credit plot."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.model import Diagnosis
from gitnetdiag.diagnosis.observations import FlightSeries
from gitnetdiag.pipeline import diagnose_run
from gitnetdiag.report import render_html
from gitnetdiag.report.plots import (
    CREDIT_TITLE,
    STEVENS_TITLE,
    credit_envelope,
    report_figures,
    time_span_s,
    window_edge,
)
from tests.diagnosis import examples

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
CASES = sorted(p.name for p in CAPTURES.iterdir() if (p / "expected.json").is_file())
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_envelope_is_min_time_weighted_median_max_and_zero_share_per_bin() -> None:
    """Each value holds until the next one; a bin sees every value held in it."""
    env = credit_envelope([0.0, 0.5, 1.0, 1.25], [100, 0, 50, 0], bin_s=1.0, end_s=2.0)
    assert env.start_s.tolist() == [0.0, 1.0]
    assert env.low.tolist() == [0.0, 0.0]
    assert env.high.tolist() == [100.0, 50.0]
    assert env.zero_share.tolist() == [0.5, 0.75]
    # bin 1 holds 50 for 0.25 s and 0 for 0.75 s: the time-weighted median is 0
    assert env.median.tolist() == [0.0, 0.0]


def test_envelope_median_follows_time_not_sample_count() -> None:
    """Many short samples do not outweigh one long one."""
    t = [0.0, 0.01, 0.02, 0.03, 0.04]
    env = credit_envelope(t, [0, 0, 0, 0, 80], bin_s=1.0, end_s=1.0)
    assert env.median.tolist() == [80.0]
    assert env.zero_share[0] == pytest.approx(0.04)


def test_envelope_bins_before_the_first_sample_are_empty() -> None:
    env = credit_envelope([1.0, 1.2], [10, 20], bin_s=0.5, end_s=1.5)
    assert env.start_s.tolist() == [0.0, 0.5, 1.0]
    assert math.isnan(env.low[0]) and math.isnan(env.high[1])
    assert env.zero_share.tolist() == [0.0, 0.0, 0.0]
    assert (env.low[2], env.high[2]) == (10.0, 20.0)


def test_envelope_of_a_long_sawtooth_has_few_bins() -> None:
    """20 s of refills every 10 ms: at most a few dozen bins, each spanning 0 to the window."""
    t = np.arange(0, 20, 0.005)
    credit = np.where(np.arange(t.size) % 2 == 0, 65535.0, 0.0)
    env = credit_envelope(t.tolist(), credit.tolist())
    assert env.start_s.size <= 60
    assert (env.low == 0).all() and (env.high == 65535).all()
    assert np.allclose(env.zero_share, 0.5, atol=0.01)  # bins cut a refill cycle


def test_envelope_of_nothing_is_empty() -> None:
    assert credit_envelope([], []).start_s.size == 0


def test_window_edge_is_acked_plus_window_never_below_what_was_sent() -> None:
    flight = FlightSeries(
        t_s=(0.0, 0.1, 0.2, 0.3),
        bytes_sent=(100.0, 300.0, 600.0, 600.0),
        bytes_in_flight=(100.0, 200.0, 500.0, 0.0),
        advertised_window=(1000.0, 1000.0, 200.0, 1000.0),
    )
    # acked 0, 100, 100 (held: 600-500), 600; the third edge would be 300 < 600 sent
    assert window_edge(flight).tolist() == [1000.0, 1100.0, 600.0, 1600.0]


def test_flight_series_rejects_bytes_sent_of_another_length() -> None:
    with pytest.raises(ValueError, match="bytes_sent"):
        FlightSeries(t_s=(0.0, 1.0), bytes_in_flight=(1.0, 1.0), advertised_window=(1.0, 1.0),
                     bytes_sent=(1.0,))


def test_html_names_its_figures() -> None:
    page = render_html(diagnose(examples.slow_h2_edge()))
    alts = re.findall(r'<img alt="([^"]*)" src="data:image/png;base64,', page)
    assert len(alts) == 3
    assert alts[1] == CREDIT_TITLE
    assert alts[2] == "Push rate per protocol"
    assert page.count("<figcaption>") == 3


@pytest.fixture(scope="module", params=CASES)
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Diagnosis:
    """The diagnosis of a recorded run, re-derived from its captures."""
    run_dir = tmp_path_factory.mktemp("case") / request.param
    shutil.copytree(CAPTURES / request.param, run_dir)
    (run_dir / "observations.json").unlink(missing_ok=True)
    diagnosis, _ = diagnose_run(run_dir)
    assert isinstance(diagnosis, Diagnosis)
    return diagnosis


def test_every_recorded_run_plots(recorded: Diagnosis) -> None:
    """Every figure renders; captured protocols get a Stevens graph on one time axis."""
    figures = report_figures(recorded)
    assert all(f.png.startswith(PNG_MAGIC) for f in figures)
    titles = [f.title for f in figures]
    flights = [p.flight for p in recorded.observations.protocols.values() if p.flight]
    if flights:
        assert titles[0] == STEVENS_TITLE
        assert all(len(f.bytes_sent) == len(f.t_s) for f in flights)
        assert time_span_s(recorded) >= max(f.t_s[-1] for f in flights)
    h2 = recorded.observations.protocols.get("h2")
    has_credit = h2 is not None and h2.h2_ledger is not None and h2.h2_ledger.credit is not None
    assert (CREDIT_TITLE in titles) == has_credit


def test_recorded_h2_case_html_has_stevens_credit_and_rate_figures(tmp_path: Path) -> None:
    run_dir = tmp_path / "case"
    shutil.copytree(CAPTURES / "h2-small-window", run_dir)
    (run_dir / "observations.json").unlink()
    diagnosis, _ = diagnose_run(run_dir)
    page = render_html(diagnosis)
    alts = re.findall(r'<img alt="([^"]*)" src="data:image/png;base64,', page)
    assert [a.replace("&#x27;", "'") for a in alts] == [
        STEVENS_TITLE, CREDIT_TITLE, "Push rate per protocol"]
