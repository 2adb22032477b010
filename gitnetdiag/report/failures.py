"""Wording shared by every renderer's "measurement failures" section."""

from __future__ import annotations

from gitnetdiag.diagnosis.model import MeasurementFailure
from gitnetdiag.diagnosis.observations import PROTOCOL_LABELS

SECTION_TITLE = "Measurement failures"
INTRO = "What could not be measured; fix it and run again for a complete diagnosis:"


def failure_where(failure: MeasurementFailure) -> str:
    """``HTTP/2 push``, ``SSH native``, ``run setup``: which measurement failed."""
    who = PROTOCOL_LABELS.get(failure.protocol or "", failure.protocol or "run")
    return f"{who} {failure.stage}"


def failure_note(failure: MeasurementFailure) -> str:
    """Why a failure does not make the run inconclusive, or the empty string."""
    if failure.explained_by is None:
        return ""
    return f"evidence for {failure.explained_by}"
