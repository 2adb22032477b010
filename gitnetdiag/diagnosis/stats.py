"""Small-sample statistics for comparing runs (pure; no scipy).

``compare`` asks one question of two sets of push durations: is the
difference of their means beyond the noise of the repeats? Welch's t-test
answers it without assuming equal spreads (a slow, jittery run beside a fast,
steady one is the usual case). Its p-value needs Student's t distribution,
which is the regularized incomplete beta function: for ``t`` with ``df``
degrees of freedom, ``P(|T| >= |t|) = I_x(df / 2, 1 / 2)`` with
``x = df / (df + t^2)``. The incomplete beta comes from its continued
fraction, evaluated with the modified Lentz method.

A Mann-Whitney test was considered and left out: with three pushes a side
its smallest two-sided p-value is 2 / C(6, 3) = 0.1, so it could never call
any difference significant at the repeats a support engineer runs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

_TINY = 1e-300
_EPS = 3e-16
_MAX_TERMS = 300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta (converges for x < (a + 1) / (a + b + 2))."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    result = d
    for m in range(1, _MAX_TERMS + 1):
        m2 = 2 * m
        for numerator in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                          -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            step = c * d
            result *= step
        if abs(step - 1.0) < _EPS:
            break
    return result


def regularized_beta(a: float, b: float, x: float) -> float:
    """``I_x(a, b)``, the regularized incomplete beta function, for ``0 <= x <= 1``."""
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"x = {x} is outside [0, 1]")
    if x in (0.0, 1.0):
        return x
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def student_t_two_sided_p(t: float, df: float) -> float:
    """``P(|T| >= |t|)`` for Student's t with ``df`` (> 0, fractional allowed) degrees."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    return min(1.0, regularized_beta(df / 2.0, 0.5, df / (df + t * t)))


def welch_p_value(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of Welch's t-test that ``a`` and ``b`` have the same mean.

    Needs two values a side. Two sets without any spread are either identical
    (p = 1) or certainly different (p = 0).
    """
    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's t-test needs at least two values per sample")
    mean_a, mean_b = statistics.fmean(a), statistics.fmean(b)
    se2_a = statistics.variance(a) / len(a)
    se2_b = statistics.variance(b) / len(b)
    se2 = se2_a + se2_b
    if se2 == 0.0:
        return 1.0 if mean_a == mean_b else 0.0
    t = (mean_a - mean_b) / math.sqrt(se2)
    df = se2 * se2 / (se2_a * se2_a / (len(a) - 1) + se2_b * se2_b / (len(b) - 1))
    return student_t_two_sided_p(t, df)
