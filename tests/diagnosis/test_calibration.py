"""Platt calibration of raw culprit scores: crafted pairs with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gitnetdiag.diagnosis.calibration import Calibration, fit_platt, platt_targets


def test_recovers_the_logistic_that_generated_the_labels() -> None:
    """20,000 labels drawn from P = 1 / (1 + exp(-(-3 + 6 s))) give back a ~ -3 and b ~ 6."""
    rng = np.random.default_rng(7)
    raw = rng.uniform(0.0, 1.0, 20_000)
    injected = rng.uniform(size=raw.size) < 1.0 / (1.0 + np.exp(-(-3.0 + 6.0 * raw)))
    fit = fit_platt(raw.tolist(), injected.tolist())
    assert fit.intercept == pytest.approx(-3.0, abs=0.15)
    assert fit.slope == pytest.approx(6.0, abs=0.3)
    assert fit.positives + fit.negatives == 20_000


def test_platt_targets_smooth_small_samples() -> None:
    """Two positives and three negatives: targets 3/4 and 1/5."""
    assert platt_targets([True, False, True, False, False]).tolist() == [0.75, 0.2, 0.75, 0.2, 0.2]


def test_only_positives_give_the_smoothed_share_not_certainty() -> None:
    """Four runs, all its fault: confidence (4 + 1) / (4 + 2) = 5/6 whatever the raw score."""
    fit = fit_platt([0.9, 0.9, 0.9, 0.9], [True] * 4)
    assert fit.slope == 0.0
    assert fit.confidence(0.9) == pytest.approx(5 / 6, abs=1e-4)
    assert fit.confidence(0.1) == pytest.approx(5 / 6, abs=1e-4)


def test_separable_scores_give_a_finite_steep_fit_in_the_right_order() -> None:
    """Positives at 0.8-0.9, negatives at 0.3-0.4: finite parameters, the fit meets the
    smoothed targets (3/4 and 1/5) at the two clusters."""
    fit = fit_platt([0.9, 0.8, 0.3, 0.4, 0.35], [True, True, False, False, False])
    assert math.isfinite(fit.intercept) and 0 < fit.slope < 100
    assert fit.confidence(0.85) == pytest.approx(0.75, abs=0.05)
    assert fit.confidence(0.35) == pytest.approx(0.2, abs=0.05)
    assert fit.confidence(0.3) < fit.confidence(0.9)


def test_a_falling_relation_is_flattened_to_the_share() -> None:
    """When higher raw scores go with other faults, the slope is 0 (never negative) and
    the confidence is the smoothed share: (2 + 1) / 4 and 1 / 4 average to 1/2."""
    fit = fit_platt([0.2, 0.3, 0.9, 0.8], [True, True, False, False])
    assert fit.slope == 0.0
    assert fit.confidence(0.5) == pytest.approx(0.5, abs=1e-4)


def test_confidence_never_overflows() -> None:
    cal = Calibration(intercept=-800.0, slope=0.0, positives=1, negatives=1)
    assert cal.confidence(0.0) == pytest.approx(0.0)
    assert Calibration(intercept=800.0, slope=0.0, positives=1, negatives=1).confidence(0.0) == 1.0


@pytest.mark.parametrize("raw, labels", [([], []), ([0.5], [True, False]), ([math.nan], [True])])
def test_bad_input_is_refused(raw: list[float], labels: list[bool]) -> None:
    with pytest.raises(ValueError):
        fit_platt(raw, labels)
