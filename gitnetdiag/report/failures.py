"""Wording shared by every renderer's "measurement failures" section."""

from __future__ import annotations

from collections.abc import Sequence

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


def failure_line(failure: MeasurementFailure) -> str:
    """A failure in a line of a fetch run's report: what explains it, or the hint."""
    return f"{failure.reference}: {failure.message}" + (
        f" (explained by {failure.explained_by})" if failure.explained_by else f"; {failure.hint}")


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


def failure_table(
    failures: Sequence[MeasurementFailure],
) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The Markdown and HTML failures table's columns and rows; a failure-signature column
    when a push was described."""
    signed = any(f.seen for f in failures)
    cols = ("measurement", "reference", "what happened", "hint", "note")
    return cols + ((SIGNATURE_HEADING,) if signed else ()), [
        (failure_where(f), f.reference, f.message, f.hint, failure_note(f))
        + ((failure_signature(f),) if signed else ()) for f in failures]
