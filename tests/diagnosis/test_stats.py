"""Welch's t-test and Student's t distribution without scipy, against textbook values."""

from __future__ import annotations

import math

import pytest

from gitnetdiag.diagnosis.stats import regularized_beta, student_t_two_sided_p, welch_p_value


@pytest.mark.parametrize(("t", "df", "p"), [
    (12.706, 1, 0.05),     # two-sided 5% critical values of Student's t tables
    (4.303, 2, 0.05),
    (2.776, 4, 0.05),
    (2.228, 10, 0.05),
    (63.657, 1, 0.01),
    (3.169, 10, 0.01),
    (1.960, 1e6, 0.05),    # the normal limit
    (0.0, 3, 1.0),
])
def test_student_t_matches_the_tables(t: float, df: float, p: float) -> None:
    assert student_t_two_sided_p(t, df) == pytest.approx(p, abs=2e-4)
    assert student_t_two_sided_p(-t, df) == pytest.approx(p, abs=2e-4)


def test_regularized_beta_closed_forms() -> None:
    """I_x(1, 1) = x and I_x(a, 1) = x^a; both branches of the continued fraction."""
    for x in (0.0, 0.1, 0.5, 0.9, 1.0):
        assert regularized_beta(1.0, 1.0, x) == pytest.approx(x, abs=1e-12)
        assert regularized_beta(3.0, 1.0, x) == pytest.approx(x ** 3, abs=1e-12)
    with pytest.raises(ValueError, match="outside"):
        regularized_beta(1.0, 1.0, 1.5)


def test_welch_against_a_hand_computed_case() -> None:
    """a = 1,2,3 (mean 2, var 1), b = 4..8 (mean 6, var 2.5): t = -4 / sqrt(1/3 + 1/2) and
    Welch-Satterthwaite df = (5/6)^2 / ((1/3)^2 / 2 + (1/2)^2 / 4), about 5.9."""
    se2 = 1 / 3 + 2.5 / 5
    t = -4 / math.sqrt(se2)
    df = se2 ** 2 / ((1 / 3) ** 2 / 2 + 0.5 ** 2 / 4)
    assert welch_p_value([1, 2, 3], [4, 5, 6, 7, 8]) == pytest.approx(
        student_t_two_sided_p(t, df), rel=1e-12)
    assert 0.001 < welch_p_value([1, 2, 3], [4, 5, 6, 7, 8]) < 0.05


def test_welch_tells_noise_from_a_change() -> None:
    slow, fast = [27.1, 26.9, 27.3], [3.1, 3.4, 3.2]
    assert welch_p_value(slow, fast) < 1e-4
    assert welch_p_value([3.1, 3.9, 3.4], [3.3, 3.0, 3.8]) > 0.5
    assert welch_p_value([2.0, 2.0], [2.0, 2.0]) == 1.0
    assert welch_p_value([2.0, 2.0], [3.0, 3.0]) == 0.0
    with pytest.raises(ValueError, match="two values"):
        welch_p_value([1.0], [1.0, 2.0])
