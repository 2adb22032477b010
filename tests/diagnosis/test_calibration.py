"""Calibration of raw culprit scores: crafted pairs with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gitnetdiag.diagnosis.calibration import (
    PRIOR_WEIGHT,
    Calibration,
    fit_platt,
    platt_targets,
    raw_log_odds,
)


def _draw(intercept: float, slope: float, n: int, seed: int) -> tuple[list[float], list[bool]]:
    rng = np.random.default_rng(seed)
    raw = rng.uniform(0.02, 0.98, n)
    z = intercept + slope * np.log(raw / (1 - raw))
    return raw.tolist(), (rng.uniform(size=n) < 1 / (1 + np.exp(-z))).tolist()


def test_recovers_the_logistic_that_generated_the_labels() -> None:
    """20,000 labels drawn from P = 1 / (1 + exp(-(-1 + 2 logit(s)))) give back a ~ -1, b ~ 2."""
    fit = fit_platt(*_draw(-1.0, 2.0, 20_000, seed=7))
    assert fit.intercept == pytest.approx(-1.0, abs=0.1)
    assert fit.slope == pytest.approx(2.0, abs=0.1)
    assert fit.positives + fit.negatives == 20_000


def test_labels_as_likely_as_the_raw_score_keep_the_hand_weights() -> None:
    """When the raw score already is the probability, the fit is the identity (a 0, b 1)."""
    fit = fit_platt(*_draw(0.0, 1.0, 20_000, seed=3))
    assert fit.intercept == pytest.approx(0.0, abs=0.06)
    assert fit.slope == pytest.approx(1.0, abs=0.06)
    assert fit.confidence(0.3) == pytest.approx(0.3, abs=0.02)


def test_platt_targets_smooth_small_samples() -> None:
    """Two positives and three negatives: targets 3/4 and 1/5."""
    assert platt_targets([True, False, True, False, False]).tolist() == [0.75, 0.2, 0.75, 0.2, 0.2]


def test_one_positive_at_even_odds_solves_the_stationary_equation() -> None:
    """One positive at raw 0.5 (log-odds 0): the slope keeps the prior's 1 and the intercept
    solves sigmoid(a) - 2/3 + PRIOR_WEIGHT a = 0 (target (1 + 1) / (1 + 2))."""
    low, high = -5.0, 5.0
    for _ in range(80):
        mid = (low + high) / 2
        if 1 / (1 + math.exp(-mid)) - 2 / 3 + PRIOR_WEIGHT * mid > 0:
            high = mid
        else:
            low = mid
    fit = fit_platt([0.5], [True])
    assert fit.slope == pytest.approx(1.0, abs=1e-3)
    assert fit.intercept == pytest.approx(low, abs=1e-3)


def test_only_positives_shrink_towards_the_smoothed_share_and_keep_the_order() -> None:
    """Six runs, all its fault, raw 1.4 (clipped to 0.99): the confidence there moves from
    0.99 towards 7/8; lower raw scores stay lower (the detector's order survives)."""
    fit = fit_platt([1.4] * 6, [True] * 6)
    assert (fit.positives, fit.negatives) == (6, 0)
    assert 7 / 8 - 0.01 <= fit.confidence(1.4) < 0.99
    assert fit.confidence(0.2) < fit.confidence(0.45) < fit.confidence(1.4)


def test_false_positives_lower_the_confidence() -> None:
    """At the same raw score 0.6, one positive and four negatives score below 0.6,
    four positives and one negative above it."""
    assert fit_platt([0.6] * 5, [True] + [False] * 4).confidence(0.6) < 0.6
    assert fit_platt([0.6] * 5, [True] * 4 + [False]).confidence(0.6) > 0.6


def test_a_falling_relation_is_flattened() -> None:
    """When higher raw scores go with other faults, the slope is 0 (never negative)."""
    fit = fit_platt([0.2, 0.3, 0.9, 0.8], [True, True, False, False])
    assert fit.slope == 0.0
    assert fit.confidence(0.2) == fit.confidence(0.9) == pytest.approx(0.5, abs=1e-3)


def test_confidence_never_overflows_and_clips_raw_scores() -> None:
    assert Calibration(intercept=-800.0, slope=0.0, positives=1, negatives=1).confidence(0.0) == (
        pytest.approx(0.0))
    assert Calibration(intercept=800.0, slope=0.0, positives=1, negatives=1).confidence(0.0) == 1.0
    assert raw_log_odds(5.0) == raw_log_odds(0.99) == pytest.approx(math.log(99))


@pytest.mark.parametrize("raw, labels", [([], []), ([0.5], [True, False]), ([math.nan], [True])])
def test_bad_input_is_refused(raw: list[float], labels: list[bool]) -> None:
    with pytest.raises(ValueError):
        fit_platt(raw, labels)
