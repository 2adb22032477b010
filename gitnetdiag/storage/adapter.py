"""A storage check -> the diagnosis engine's :class:`StorageResult` (pure).

The engine's ``slow-storage`` culprit fires when the lower of the read and
write IOPS is below ``reference_iops``; we pass :data:`SLOW_IOPS`, the same
threshold the storage command's own verdict uses. Without a fio run there are
no IOPS figures and the culprit stays silent (the small-file time has no field
in the engine's input; the command's verdict still reports it).
"""

from __future__ import annotations

from dataclasses import dataclass

from gitnetdiag.diagnosis.engine import diagnose
from gitnetdiag.diagnosis.model import Finding
from gitnetdiag.diagnosis.observations import Observations, RunInfo, StorageResult
from gitnetdiag.storage.model import StorageCheck
from gitnetdiag.storage.reference import SLOW_IOPS, Verdict, verdict


def storage_observation_from_result(result: StorageCheck) -> StorageResult:
    """The engine's view of one storage check."""
    fio = result.fio
    return StorageResult(
        read_iops=fio.read.iops if fio is not None else None,
        write_iops=fio.write.iops if fio is not None else None,
        reference_iops=SLOW_IOPS,
        path=result.path,
    )


def storage_only_observations(result: StorageCheck, *, started: str = "") -> Observations:
    """Observations holding nothing but the storage check (for ``gitnetdiag storage``)."""
    return Observations(
        run=RunInfo(started=started, measured_by="gitnetdiag storage: fio reference job"),
        storage=storage_observation_from_result(result),
    )


def storage_findings(result: StorageCheck) -> tuple[Finding, ...]:
    """The engine's findings on a storage check alone (``slow-storage`` when below reference).

    A storage check has no push whose time it could cost, so the engine's
    minimum impact is set to zero: the finding is shown on its confidence alone.
    """
    return diagnose(storage_only_observations(result), min_impact_s=0.0).findings


@dataclass(frozen=True, kw_only=True)
class StorageReport:
    """A storage check with what it means: the one object the storage renderers take."""

    check: StorageCheck
    """The measured figures."""
    verdict: Verdict
    """The grade against the reference points."""
    findings: tuple[Finding, ...]
    """The engine's findings on the check (``slow-storage`` or none)."""


def storage_report(check: StorageCheck) -> StorageReport:
    """The check, its verdict and the engine's findings together."""
    return StorageReport(check=check, verdict=verdict(check), findings=storage_findings(check))
