"""The headline of a run's verdict: what fails, what was seen and why, or what is missing.

A failed run's headline has one clause per cause, whichever the direction::

    SSH pushes fail (firewall-reset): <the culprit's summary>
    HTTP/1.1 and HTTP/2 clones fail (POST git-upload-pack answered 504; git said: ...):
        cause not identified.

The first names the ranked culprit that explains the failure
(:data:`~gitnetdiag.diagnosis.verdict.EXPLAINED_BY`); the second says what was seen of the
failure (the failure-signature catalogue's sentence, else the kind and git's words) and that
no culprit explains it, never the nearest culprit. No seconds: the ranking below has them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from gitnetdiag.diagnosis.model import Finding, MeasurementFailure
from gitnetdiag.diagnosis.observations import PROTOCOL_LABELS, Observations, PushObservation
from gitnetdiag.diagnosis.signatures import NO_ENTRY, without_notes
from gitnetdiag.diagnosis.verdict import (
    LEFTOVER_REFERENCE,
    STALL_KINDS,
    UNEXPLAINED_FAILURES,
    Judgement,
    judged_transfers,
)

CAUSE_NOT_IDENTIFIED = "cause not identified"
"""How a failed run's headline ends when no ranked culprit explains the failure."""

TRANSFER_STAGES = frozenset({"push", "fetch"})
"""Stages of a transfer's own failure (the others are another step's: native, capture)."""


def _label(name: str) -> str:
    return PROTOCOL_LABELS.get(name, name)


def failure_culprits(failures: Sequence[MeasurementFailure], protocols: Collection[str]
                     ) -> tuple[str, ...]:
    """The culprits that explain the failures of ``protocols``' transfers, sorted."""
    return tuple(sorted({f.explained_by for f in failures if f.explained_by
                         and f.protocol in protocols and f.stage in TRANSFER_STAGES}))


def _seen_in_failure(failure: MeasurementFailure) -> str:
    """The catalogue's sentence of what was seen, without its operation (``HTTP/2 push:``)
    and without "no entry" (the failure's own line says it)."""
    return without_notes(failure.seen.split(": ", 1)[-1]).removesuffix(f"; {NO_ENTRY}")


def _seen_in_transfer(push: PushObservation) -> str:
    """A failed transfer's kind and git's words (``refused: ssh: connect to host ...``),
    a stall with the time it was given up after."""
    kind = str(push.error_kind or "failed")
    after = f" after {push.duration_s:.0f} s" if push.error_kind in STALL_KINDS else ""
    # A stall's message may be its outcome's own name: no words of git's.
    words = push.error_message if push.error_message not in ("", kind, "stalled") else ""
    return f"{kind}{after}" + (f": {words}" if words else "")


def _seen(names: Sequence[str], failures: Sequence[MeasurementFailure],
          obs: Observations) -> str:
    """What was seen of the failing protocols ``names``: one sentence when they failed
    alike, else one per protocol (``HTTP/1.1: ...; HTTP/2: ...``)."""
    transfers = judged_transfers(obs)
    said: dict[str, str] = {}
    for name in names:
        described = [f for f in failures if f.protocol == name and f.seen]
        failed = [push for push in transfers.get(name, ()) if not push.ok]
        said[name] = (_seen_in_failure(described[0]) if described
                      else _seen_in_transfer(failed[0]) if failed else "failed")
    if len(set(said.values())) == 1:
        return next(iter(said.values()))
    return "; ".join(f"{_label(name)}: {text}" for name, text in said.items())


def failure_headline(judgement: Judgement, findings: Sequence[Finding],
                     obs: Observations) -> str | None:
    """What fails, what was seen and why, one clause per cause (see the module doc); None
    when no requested protocol's transfers all failed."""
    if not judgement.failing:
        return None
    noun = "clones" if obs.run.transfer == "download" else "pushes"
    by_cause: dict[tuple[str, ...], list[str]] = {}
    for name in judgement.failing:
        by_cause.setdefault(failure_culprits(judgement.failures, {name}), []).append(name)
    by_id = {f.id: f for f in findings}
    clauses = []
    for why, names in by_cause.items():
        labels = " and ".join(_label(n) for n in names)
        if not why:
            seen = _seen(names, judgement.failures, obs)
            clauses.append(f"{labels} {noun} fail ({seen}): {CAUSE_NOT_IDENTIFIED}.")
            continue
        # A culprit's own summary may already open with "X pushes fail: ".
        reasons = [(by_id[c].summary if c in by_id else c).split(" fail: ", 1)[-1]
                   for c in why]
        clauses.append(f"{labels} {noun} fail ({', '.join(why)}): " + " ".join(reasons))
    return " ".join(clauses)


def headline_prefix(judgement: Judgement) -> str:
    """The sentence that opens the headline of an inconclusive or failed run."""
    if judgement.verdict == "failed" and not judgement.measured:
        return "Nothing was measured: " + _first(judgement) + "."
    if judgement.verdict != "inconclusive":
        return ""
    missing = [_label(n) for n in judgement.requested if n not in judgement.measured]
    if missing:
        return f"Not measured: {', '.join(missing)} ({_first(judgement)})."
    stalled = {"push-stalled": "A push", "fetch-stalled": "A clone"}
    for reference, what in stalled.items():
        if any(f.reference == reference and f.explained_by is None for f in judgement.failures):
            return f"{what} stalled ({_first(judgement)})."
    if any(f.reference in UNEXPLAINED_FAILURES for f in judgement.failures):
        return f"Operations failed and no culprit explains them ({_first(judgement)})."
    return f"Part of the evidence is missing ({_first(judgement)})."


def _first(judgement: Judgement) -> str:
    blocking = [f for f in judgement.failures if f.explained_by is None]
    first = (blocking or list(judgement.failures))[0]
    return f"{first.reference}: {first.message}"


def verdict_headline(judgement: Judgement, findings: Sequence[Finding],
                     obs: Observations) -> str:
    """What fails and why for a failed run, what is missing for an inconclusive one (the
    failures after the verdict, a branch left, aside); empty otherwise."""
    judged = replace(judgement, failures=tuple(
        f for f in judgement.failures if f.reference != LEFTOVER_REFERENCE))
    if judged.verdict == "failed":
        failing = failure_headline(judged, findings, obs)
        if failing is not None:
            return failing
    if judged.verdict in ("failed", "inconclusive") and judged.failures:
        return headline_prefix(judged)
    return ""
