"""Download cases for the tests: a download's clones ranked and judged through the one
engine and the one verdict (:func:`~gitnetdiag.diagnosis.assembly.download_observations`,
:func:`~gitnetdiag.diagnosis.engine.rank_findings`, :func:`~gitnetdiag.diagnosis.verdict.judge`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from gitnetdiag.diagnosis.assembly import download_observations
from gitnetdiag.diagnosis.calibration import Calibration
from gitnetdiag.diagnosis.culprits import CULPRITS, DOWNLOAD, Culprit
from gitnetdiag.diagnosis.engine import rank_findings
from gitnetdiag.diagnosis.headline import verdict_headline
from gitnetdiag.diagnosis.model import Finding, MeasurementFailure, Verdict
from gitnetdiag.diagnosis.observations import BurstResult, HostEvidence, Observations, RunProblem
from gitnetdiag.diagnosis.transfers import TransferObservation
from gitnetdiag.diagnosis.verdict import HintOf, judge

DOWNLOAD_IDS = tuple(c.id for c in CULPRITS if c.directions == DOWNLOAD)
"""The download-only culprits (fitted on the fetch matrix)."""


def _culprits(calibrations: Mapping[str, Calibration] | None) -> tuple[Culprit, ...]:
    """The catalogue with the download-only culprits scored by ``calibrations`` (``{}``:
    their hand weights; None: as shipped)."""
    if calibrations is None:
        return CULPRITS
    return tuple(replace(c, fitted=False, calibration=calibrations.get(c.id))
                 if c.id in DOWNLOAD_IDS else c for c in CULPRITS)


def ranked(clones: Sequence[TransferObservation], *, bursts: Sequence[BurstResult] = (),
           host: HostEvidence | None = None,
           calibrations: Mapping[str, Calibration] | None = None) -> tuple[Finding, ...]:
    """The culprits a download of ``clones`` ranks (kept), first first."""
    obs = download_observations(clones, bursts=bursts, host=host)
    return rank_findings(obs, _culprits(calibrations))[0]


@dataclass(frozen=True, kw_only=True)
class Judged:
    verdict: Verdict
    failures: tuple[MeasurementFailure, ...]
    headline: str


def judgement(clones: Sequence[TransferObservation], findings: Sequence[Finding], *,
              requested: Sequence[str] = (), problems: Sequence[RunProblem] = (),
              bursts: Sequence[BurstResult] = (), hint_of: HintOf | None = None) -> Judged:
    """The verdict of a download of ``clones`` given its ranked findings, and its headline."""
    obs = download_observations(clones, bursts=bursts, requested=requested, problems=problems)
    judged = (judge(obs, findings) if hint_of is None
              else judge(obs, findings, hint_of=hint_of))
    return Judged(verdict=judged.verdict, failures=judged.failures,
                  headline=verdict_headline(judged, findings, obs))


def judged(clones: Sequence[TransferObservation], findings: Sequence[Finding]
           ) -> tuple[Verdict, tuple[MeasurementFailure, ...]]:
    """The verdict of the clones alone and the failures it rests on."""
    result = judgement(clones, findings)
    return result.verdict, result.failures


def on(clones: Sequence[TransferObservation]) -> Observations:
    """A download of ``clones`` as the detectors read it."""
    return download_observations(clones)
