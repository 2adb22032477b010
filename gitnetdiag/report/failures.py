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


SIGNATURE_HEADING = "failure signature"


def failure_signature(failure: MeasurementFailure) -> str:
    """The failure-signature catalogue's description of a failed push: the matching
    entries, the culprits they may point to and what was seen, or what was seen ending in
    "gitnetdiag has no entry for it"; empty when the failure was not described."""
    if not failure.seen:
        return ""
    if not failure.signatures:
        return failure.seen
    may = (f"may point to {', '.join(failure.candidates)}" if failure.candidates
           else "no network culprit")
    return f"{', '.join(failure.signatures)} ({may}): {failure.seen}"
