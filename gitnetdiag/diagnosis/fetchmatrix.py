"""The download direction's fault matrix: scoring and fitting on fetch runs (pure).

The same method as the push matrix (:mod:`gitnetdiag.diagnosis.matrix`), on the
input of the download detectors: one :class:`FetchMatrixRun` per
``diagnose --lab --direction fetch``, holding the culprit its fault should rank
first (``None`` for ``healthy`` and for the push faults the matrix runs as
negatives) and the clones it observed.

- :func:`fetch_raw_hits` replays every download detector on the clones;
- :func:`fit_fetch_calibrations` fits one calibration per download culprit on
  those raw scores (at least :data:`~gitnetdiag.diagnosis.matrix.MIN_FIRED`
  firings, and a fault of the matrix that produces it), or says why it keeps
  its hand weights;
- :func:`run_ranked_ids` ranks a run's culprits with a given table of
  calibrations (``{}``: the hand weights; a fit; ``None``: the shipped table);
- TP/FP/FN and the first culprit's accuracy are
  :func:`~gitnetdiag.diagnosis.matrix.score_matrix` and
  :func:`~gitnetdiag.diagnosis.matrix.top1_accuracy`, shared with the push matrix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gitnetdiag.diagnosis.calibration import Calibration
from gitnetdiag.diagnosis.culprits.download import (
    DOWNLOAD_CULPRITS,
    MIN_COST_S,
    DownloadDetector,
    FetchObservation,
    rank_download,
)
from gitnetdiag.diagnosis.matrix import Fit, fit_fired
from gitnetdiag.diagnosis.observations import BurstResult, HostEvidence

DownloadCulprits = Sequence[tuple[str, str, DownloadDetector]]


@dataclass(frozen=True, kw_only=True)
class FetchMatrixRun:
    """One fetch diagnosis of the matrix."""

    name: str
    """The run's directory name (``client-rmem-clamp-80ms-r2``)."""
    fault: str
    """The lab fault injected."""
    expected: str | None
    """The download culprit id it should rank first; ``None`` when none should rank."""
    observations: tuple[FetchObservation, ...]
    """Every clone the run observed."""
    bursts: tuple[BurstResult, ...] = ()
    """The fetch's bursts (``--burst``), read with ``host`` by ``listen-backlog-overflow``."""
    host: HostEvidence | None = None
    """The server's host evidence over the run, None without."""


def fetch_raw_hits(observations: Sequence[FetchObservation],
                   culprits: DownloadCulprits = DOWNLOAD_CULPRITS) -> dict[str, float]:
    """Download culprit id -> raw score (>= 0) of every detector that fires on the clones.

    Like :func:`~gitnetdiag.diagnosis.culprits.download.rank_download`, a hit whose cost is
    below its ``MIN_COST_S`` is not a firing: it could never rank, whatever its confidence.
    """
    hits = {}
    for culprit_id, _, detect in culprits:
        hit = detect(observations)
        if hit is not None and hit.cost_s >= MIN_COST_S:
            hits[culprit_id] = max(0.0, hit.score)
    return hits


def run_ranked_ids(run: FetchMatrixRun, calibrations: Mapping[str, Calibration] | None,
                   culprits: DownloadCulprits = DOWNLOAD_CULPRITS) -> list[str]:
    """The download culprits of a matrix run ranked (above the reporting thresholds),
    first first: its clones with its bursts and host evidence."""
    return [f.id for f in rank_download(run.observations, culprits, calibrations=calibrations,
                                        bursts=run.bursts, host=run.host)]


def fit_fetch_calibrations(runs: Sequence[FetchMatrixRun],
                           culprits: DownloadCulprits = DOWNLOAD_CULPRITS) -> dict[str, Fit]:
    """One :class:`~gitnetdiag.diagnosis.matrix.Fit` per download culprit."""
    fired: dict[str, list[tuple[float, bool]]] = {culprit_id: [] for culprit_id, _, _ in culprits}
    for run in runs:
        for culprit_id, raw in fetch_raw_hits(run.observations, culprits).items():
            fired[culprit_id].append((raw, culprit_id == run.expected))
    return fit_fired(fired, {run.expected for run in runs if run.expected is not None})


def fitted_table(fits: Mapping[str, Fit]) -> dict[str, Calibration]:
    """The calibrations of ``fits`` as :func:`run_ranked_ids` takes them (the culprits
    without one keep their hand weights)."""
    return {culprit_id: fit.calibration for culprit_id, fit in fits.items()
            if fit.calibration is not None}
