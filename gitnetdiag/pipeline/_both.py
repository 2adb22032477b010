"""A ``--direction both`` run's two diagnoses -> its one report's diagnosis, for the I/O side
(``watch``'s cycles) that may not call the pure side's code itself."""

from __future__ import annotations

from gitnetdiag.diagnosis.combined import combine, without_clones
from gitnetdiag.diagnosis.model import Diagnosis


def joined_diagnosis(pushes: Diagnosis, clones: Diagnosis | None, missing: str) -> Diagnosis:
    """The one diagnosis of both halves (:func:`~gitnetdiag.diagnosis.combined.combine`);
    without the clones' (``None``), the pushes' with ``missing`` said and judged
    (:func:`~gitnetdiag.diagnosis.combined.without_clones`)."""
    if clones is not None:
        return combine(pushes, clones)
    return without_clones(pushes, missing)
