"""A storage check -> the diagnosis engine's :class:`StorageResult` (pure).

Only data types cross here; the engine runs in the command
(:func:`gitnetdiag.commands.storage.storage_findings`) or the pipeline.

The engine's ``slow-storage`` culprit fires when the lower of the read and
write IOPS is below ``reference_iops``; we pass :data:`SLOW_IOPS`, the same
threshold the storage command's own verdict uses. Without a fio run there are
no IOPS figures and the culprit stays silent (the small-file time has no field
in the engine's input; the command's verdict still reports it).
"""

from __future__ import annotations

from gitnetdiag.diagnosis.observations import Observations, RunInfo, StorageResult
from gitnetdiag.model.storage.records import StorageCheck
from gitnetdiag.model.storage.reference import SLOW_IOPS


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
