"""Scoring the lab's fault matrix and fitting confidences on it (pure).

One :class:`MatrixRun` per ``diagnose --lab`` of the matrix, of either direction (the
fetch matrix's: its clones as one download :class:`Observations`,
:func:`~gitnetdiag.diagnosis.assembly.download_observations`): which culprit its
injected fault should produce (``None``: healthy, or a fault that is no
culprit) and the run's observations. From these:

- :func:`raw_hits` replays every detector on the observations: the raw score
  (the hand-set weights' sum) each culprit fired with;
- :func:`fit_calibrations` fits one :class:`Calibration` per culprit on those
  raw scores (see :mod:`gitnetdiag.diagnosis.calibration`), or says why the
  culprit keeps its hand weights;
- :func:`score_matrix` counts, per culprit, with the ranking of a given set
  of culprits (hand weights or fitted):

  - TP: its fault was injected and it was ranked first;
  - FN: its fault was injected and it was not ranked first (missing, dropped
    below the reporting threshold, or behind another culprit);
  - FP: it was ranked (at any place, above the reporting threshold) while
    another fault or none was injected.

  precision = TP / (TP + FP), recall = TP / (TP + FN).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from gitnetdiag.diagnosis.calibration import Calibration, fit_platt
from gitnetdiag.diagnosis.culprits import CULPRITS, Culprit
from gitnetdiag.diagnosis.engine import rank_findings
from gitnetdiag.diagnosis.observations import Observations

MIN_FIRED = 3
"""A culprit is fitted only when it fired at least this many times in the matrix."""


@dataclass(frozen=True, kw_only=True)
class MatrixRun:
    """One diagnosis of the matrix."""

    name: str
    """The run's directory name (``loss-80ms-r2``)."""
    fault: str
    """The lab fault injected."""
    expected: str | None
    """The culprit id it should rank first; ``None`` when no culprit should rank."""
    observations: Observations
    """What the run measured (its ``observations.json``)."""


@dataclass(frozen=True, kw_only=True)
class CulpritCounts:
    """One culprit's counts over the matrix."""

    tp: int = 0
    """Expected and ranked first."""
    fp: int = 0
    """Ranked while it was not expected."""
    fn: int = 0
    """Expected and not ranked first."""

    @property
    def precision(self) -> float | None:
        """TP / (TP + FP); ``None`` when it never ranked."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        """TP / (TP + FN); ``None`` when its fault was never injected."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None


@dataclass(frozen=True, kw_only=True)
class Fit:
    """The outcome of fitting one culprit."""

    calibration: Calibration | None
    """The fitted map, or ``None``: the culprit keeps its hand weights."""
    reason: str
    """Why it is hand-weighted (empty when fitted)."""


def hand_weighted(culprits: Sequence[Culprit] = CULPRITS,
                  only: Collection[str] | None = None) -> tuple[Culprit, ...]:
    """The culprits (of ``only``, when given; the others as shipped) as they rank with the
    hand-set weights."""
    return tuple(replace(c, fitted=False) if only is None or c.id in only else c
                 for c in culprits)


def raw_hits(obs: Observations, culprits: Sequence[Culprit] = CULPRITS, *,
             min_cost_s: float = 0.0) -> dict[str, float]:
    """Culprit id -> raw score (>= 0) of every detector of the run's direction that fires on
    ``obs`` costing at least ``min_cost_s`` (the fetch matrix: a hit that could never rank
    is no firing)."""
    hits = {}
    for culprit in culprits:
        if not culprit.judges(obs.run.transfer):
            continue
        hit = culprit.detect(obs)
        if hit is not None and hit.cost_s >= min_cost_s:
            hits[culprit.id] = max(0.0, hit.score)
    return hits


def ranked_ids(obs: Observations, culprits: Sequence[Culprit]) -> list[str]:
    """The culprits ranked above the reporting threshold, first first."""
    return [f.id for f in rank_findings(obs, culprits)[0]]


def score_matrix(runs: Sequence[MatrixRun],
                 rankings: Sequence[Sequence[str]]) -> dict[str, CulpritCounts]:
    """Per-culprit TP/FP/FN, given each run's ranked culprit ids (same order as ``runs``)."""
    counts: dict[str, dict[str, int]] = {}

    def bump(culprit: str, kind: str) -> None:
        counts.setdefault(culprit, {"tp": 0, "fp": 0, "fn": 0})[kind] += 1

    for run, ranked in zip(runs, rankings, strict=True):
        if run.expected is not None:
            bump(run.expected, "tp" if ranked[:1] == [run.expected] else "fn")
        for culprit in ranked:
            if culprit != run.expected:
                bump(culprit, "fp")
    return {culprit: CulpritCounts(**c) for culprit, c in counts.items()}


def top1_accuracy(runs: Sequence[MatrixRun], rankings: Sequence[Sequence[str]]) -> float:
    """Share of runs whose first culprit is the expected one (none ranked when none expected)."""
    if not runs:
        return 0.0
    right = sum((list(ranked[:1]) == [run.expected]) if run.expected else not ranked
                for run, ranked in zip(runs, rankings, strict=True))
    return right / len(runs)


def fit_calibrations(runs: Sequence[MatrixRun], culprits: Sequence[Culprit] = CULPRITS, *,
                     min_cost_s: float = 0.0) -> dict[str, Fit]:
    """One :class:`Fit` per culprit of ``culprits`` that judges the runs' direction, from
    the raw scores it fired with."""
    directions = {run.observations.run.transfer for run in runs}
    fired: dict[str, list[tuple[float, bool]]] = {
        c.id: [] for c in culprits if any(map(c.judges, directions))}
    for run in runs:
        for culprit_id, raw in raw_hits(run.observations, culprits,
                                        min_cost_s=min_cost_s).items():
            if culprit_id in fired:
                fired[culprit_id].append((raw, culprit_id == run.expected))
    return fit_fired(fired, {run.expected for run in runs if run.expected is not None})


def fit_fired(fired: Mapping[str, Sequence[tuple[float, bool]]],
              expected: set[str]) -> dict[str, Fit]:
    """Culprit id -> its :class:`Fit`, given every (raw score, was it the injected fault)
    pair it fired with (every culprit of the catalogue a key, in catalogue order) and the
    culprits some run of the matrix expected. Either direction's matrix."""
    fits = {}
    for culprit_id, pairs in fired.items():
        if culprit_id not in expected:
            fits[culprit_id] = Fit(calibration=None,
                                   reason="no lab fault in the matrix produces it")
        elif len(pairs) < MIN_FIRED:
            times = "time" if len(pairs) == 1 else "times"
            fits[culprit_id] = Fit(calibration=None, reason=(
                f"fired {len(pairs)} {times} in the matrix (< {MIN_FIRED})"))
        else:
            fits[culprit_id] = Fit(calibration=fit_platt([raw for raw, _ in pairs],
                                                         [injected for _, injected in pairs]),
                                   reason="")
    return fits


def with_calibrations(fits: dict[str, Fit],
                      culprits: Sequence[Culprit] = CULPRITS) -> tuple[Culprit, ...]:
    """The culprits of ``fits`` scored with them (hand weights where a fit has no
    calibration); the others as shipped."""
    return tuple(
        replace(c, fitted=False, calibration=fit.calibration) if (fit := fits.get(c.id)) else c
        for c in culprits
    )
