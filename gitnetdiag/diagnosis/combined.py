"""One diagnosis of a ``--direction both`` run: its pushes' and its clones' joined.

Each half is diagnosed on its own, by the one engine with each direction's culprits.
Joined they give one verdict, the worse of the two
(:func:`~gitnetdiag.diagnosis.verdict.worst_verdict`: an inconclusive or failed half is
never hidden), one headline, and one ranking of the findings of both directions by the
engine's own order (:func:`~gitnetdiag.diagnosis.engine.rank`; in a failed run the culprits
that explain a failed half's failure first, :func:`~gitnetdiag.diagnosis.engine.failure_first`),
each finding tagged with the direction it was found on (``Finding.direction``). A failed
run's headline is its failed halves' (what fails and why), never a culprit of the other
direction's seconds. A culprit found in both directions
stays two findings, one per direction. The halves are kept (``Diagnosis.parts``) for each
direction's tables and details.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from gitnetdiag.diagnosis.engine import failure_first, rank
from gitnetdiag.diagnosis.headline import failure_culprits, headline_prefix
from gitnetdiag.diagnosis.model import Diagnosis, Finding, MeasurementFailure
from gitnetdiag.diagnosis.observations import PROTOCOL_ORDER
from gitnetdiag.diagnosis.units import fmt_rate, fmt_s
from gitnetdiag.diagnosis.verdict import (
    LEFTOVER_REFERENCE,
    VERDICT_ORDER,
    Judgement,
    failing_protocols,
    worst_verdict,
)

HALVES = ("push", "fetch")
"""The directions of a ``both`` diagnosis' parts, in their order."""

_TRANSFERS = {"upload": "pushes", "download": "clones"}
"""A half's transfers, by the way its pack moved (``RunInfo.transfer``)."""


def _way(part: Diagnosis) -> str:
    """``upload`` or ``download``: how the half's pack moved."""
    return part.observations.run.transfer


def _tagged(part: Diagnosis, findings: Iterable[Finding]) -> list[Finding]:
    """The half's findings, each tagged with its direction (a tag already set is kept)."""
    return [f if f.direction is not None else replace(f, direction=part.direction)
            for f in findings]


def _protocols(lists: Iterable[Sequence[str]]) -> tuple[str, ...]:
    """The protocols named in any of ``lists``, in canonical order."""
    named = {name for names in lists for name in names}
    return tuple(name for name in PROTOCOL_ORDER if name in named)


def _ranking_sentence(findings: Sequence[Finding], parts: Sequence[Diagnosis]) -> str:
    """The top culprit and its direction, or that none costs either direction time."""
    ways: dict[str, str] = {part.direction: _way(part) for part in parts}
    if findings:
        top = findings[0]
        more = ""
        if len(findings) > 1:
            more = f"; {len(findings) - 1} more culprit{'s' if len(findings) > 2 else ''} below"
        way = ways.get(top.direction or "", top.direction or "")
        return (f"{top.id} ({way}) costs an estimated {fmt_s(top.cost_s)} "
                f"(confidence {top.score:.2f}){more}.")
    said = []
    for part in parts:
        rates = ", ".join(f"{s.label} {fmt_rate(s.rate_bytes_per_s)}" for s in part.protocols
                          if s.rate_bytes_per_s)
        said.append(_TRANSFERS.get(_way(part), _way(part)) + (f" ({rates})" if rates else ""))
    return f"No culprit costs the {' or the '.join(said)} noticeable time."


def _explaining(part: Diagnosis) -> set[tuple[str | None, str]]:
    """A failed half's culprits that explain its failing protocols, by (direction, id)."""
    if part.verdict != "failed":
        return set()
    failing = failing_protocols(part.observations, part.requested_protocols)
    return {(part.direction, c) for c in failure_culprits(part.measurement_failures, failing)}


def _trouble(part: Diagnosis) -> str:
    """What an inconclusive or failed half lacks: a failed half's own headline (what fails
    and why, or that nothing was measured), what an inconclusive one misses as its own
    headline opens."""
    if part.verdict == "failed":
        return part.headline
    judged = Judgement(verdict=part.verdict, requested=part.requested_protocols,
                       measured=part.measured_protocols,
                       failures=tuple(f for f in part.measurement_failures
                                      if f.reference != LEFTOVER_REFERENCE))
    return (headline_prefix(judged) if judged.failures else "") or part.headline


def combine(push: Diagnosis, fetch: Diagnosis) -> Diagnosis:
    """One diagnosis (direction ``both``) of a run's pushes and its clones.

    The verdict is the worse half's; the headline what an inconclusive or failed half
    lacks (each named by its way, the worse first), then, unless the run failed, the
    ranking's top culprit and its direction; the measurement failures are the halves',
    the worse half's first (the exit code's message names its first); the environment is
    the pushes' (the run directory both halves hang off).
    """
    parts = (push, fetch)
    for part, direction in zip(parts, HALVES, strict=True):
        if part.direction != direction:
            raise ValueError(f"a both diagnosis joins a push and a fetch diagnosis, got "
                             f"{part.direction!r} for the {direction} half")
    explained = _explaining(push) | _explaining(fetch)
    findings = failure_first(rank([f for p in parts for f in _tagged(p, p.findings)]),
                             lambda f: (f.direction, f.id) in explained)
    dropped = tuple(rank([f for p in parts for f in _tagged(p, p.dropped)]))
    worst_first = sorted(parts, key=lambda p: -VERDICT_ORDER.index(p.verdict))
    said = [f"{_way(p).capitalize()}: {text}" for p in worst_first
            if p.verdict in ("inconclusive", "failed") and (text := _trouble(p))]
    verdict = worst_verdict([p.verdict for p in parts])
    # A failed run's headline says what fails and why, not seconds (the ranking has them).
    ranking = [] if verdict == "failed" and said else [_ranking_sentence(findings, parts)]
    return Diagnosis(
        verdict=verdict,
        headline=" ".join([*said, *ranking]),
        findings=findings,
        dropped=dropped,
        protocols=(),
        environment=push.environment,
        requested_protocols=_protocols(p.requested_protocols for p in parts),
        measured_protocols=_protocols(p.measured_protocols for p in parts),
        measurement_failures=tuple(f for p in worst_first for f in p.measurement_failures),
        direction="both",
        parts=parts,
    )


MISSING_HALF_REFERENCE = "fetch-half-missing"
"""The measurement failure of a ``--direction both`` run whose clones cannot be read."""


def without_clones(push: Diagnosis, reason: str) -> Diagnosis:
    """The pushes' diagnosis of a ``--direction both`` run whose clones' half is missing or
    damaged (``reason``, one clause): never a plain push run's verdict, at best
    ``inconclusive``, its headline and measurement failures saying which half is gone."""
    failure = MeasurementFailure(
        protocol=None, stage="fetch", reference=MISSING_HALF_REFERENCE, kind=None,
        message=f"this --direction both run's clones cannot be read: {reason}",
        hint="keep RUN-fetch beside RUN (they are written together), or diagnose the "
        "clones again with --direction fetch")
    verdict = worst_verdict([push.verdict, "inconclusive"])
    return replace(push, verdict=verdict,
                   headline=f"Clones: not measured ({reason}). Pushes: {push.headline}",
                   measurement_failures=(failure, *push.measurement_failures))
