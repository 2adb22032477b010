"""The headline of a run's verdict: what fails and why, or what is missing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gitnetdiag.diagnosis.model import Finding
from gitnetdiag.diagnosis.observations import PROTOCOL_LABELS, PROTOCOL_ORDER, Observations
from gitnetdiag.diagnosis.verdict import LEFTOVER_REFERENCE, UNEXPLAINED_FAILURES, Judgement


def failure_headline(judgement: Judgement, findings: Sequence[Finding],
                     obs: Observations) -> str | None:
    """``HTTP/1.1 and HTTP/2 pushes fail: <why>``: the headline of a run whose requested
    transfers fail for a reason a ranked culprit names; None when none does."""
    explained = [f for f in judgement.failures if f.explained_by is not None]
    if not explained:
        return None
    noun = "clones" if obs.run.transfer == "download" else "pushes"
    names = [n for n in PROTOCOL_ORDER if any(f.protocol == n for f in explained)]
    labels = " and ".join(PROTOCOL_LABELS.get(n, n) for n in names)
    why = sorted({f.explained_by for f in explained if f.explained_by})
    by_id = {f.id: f for f in findings}
    # A culprit's own summary may already open with "X pushes fail: ".
    reasons = [(by_id[c].summary if c in by_id else c).split(" fail: ", 1)[-1] for c in why]
    return f"{labels} {noun} fail ({', '.join(why)}): " + " ".join(reasons)


def headline_prefix(judgement: Judgement) -> str:
    """The sentence that opens the headline of an inconclusive or failed run."""
    if judgement.verdict == "failed" and not judgement.measured:
        return "Nothing was measured: " + _first(judgement) + "."
    if judgement.verdict != "inconclusive":
        return ""
    missing = [PROTOCOL_LABELS.get(n, n) for n in judgement.requested
               if n not in judgement.measured]
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
    if judged.verdict in ("failed", "inconclusive"):
        return headline_prefix(judged)
    return ""
