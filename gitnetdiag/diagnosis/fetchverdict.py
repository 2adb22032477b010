"""The verdict of a fetch run, by the push verdict's rule (:mod:`.verdict`), told of clones.

A protocol is *measured* when one of its clones finished or was bounded with at least
:data:`~gitnetdiag.thresholds.MIN_RATE_BYTES` (a clone that finished is a measurement
whatever its speed: its bytes over its time bound the rate), or stalled or was cut on the
wire (a stall is evidence for a culprit, not a missing measurement). A protocol whose
every clone failed (not by stalling, nor by an interruption) *fails*.

    failed        nothing requested was measured; or a requested protocol fails and a
                  ranked culprit explains it (a filter's resets): the headline says which
                  clones fail and why
    inconclusive  a requested protocol was not measured and nothing explains it, or
                  nothing ranks while a clone stalled or failed, a burst's connections
                  failed, or another step of the run failed
    degraded      culprits ranked
    healthy       every requested protocol measured, nothing ranks, nothing failed

A throwaway branch left on the server (``--fetch-seed``) is listed after the verdict, as
for pushes (``probe-ref-leftover``: exit 5).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gitnetdiag.diagnosis.culprits.fetchobs import FetchObservation
from gitnetdiag.diagnosis.culprits.fetchshared import clone_as_transfer
from gitnetdiag.diagnosis.model import Finding, MeasurementFailure, Verdict
from gitnetdiag.diagnosis.observations import (
    PROTOCOL_LABELS,
    PROTOCOL_ORDER,
    BurstResult,
    Observations,
    RunInfo,
    RunProblem,
)
from gitnetdiag.diagnosis.verdict import (
    EXPLAINED_BY,
    LEFTOVER_REFERENCE,
    MEASURED_FAILURE_KINDS,
    STALL_KINDS,
    Judgement,
    failure_headline,
    headline_prefix,
    unexplained_bursts,
)
from gitnetdiag.outcomes import MEASURED_OUTCOMES, FailureKind
from gitnetdiag.thresholds import MIN_RATE_BYTES

_STALL_HINT = ("a clone that stops moving with nothing ranked: rerun as root so the clone is "
               "captured, and read the server's logs for that time")
_GENERIC_HINT = ("see the clone's stderr file in the run directory and the run's errors in "
                 "fetch.json")
_IGNORED_STAGES = frozenset({"fetch", "cleanup"})
"""Run errors the clones' own failures already say (``fetch``) or that measured nothing
(``cleanup``: a partial clone left in the temporary directory, a branch left: listed)."""
SEED_LEFTOVER = "cleanup-leftover"
"""The run error of a ``--fetch-seed`` branch that may be left on the server."""

HintOf = Callable[[FailureKind | None, str], str]
"""The hint of a failed clone from its kind and git's words (the pipeline passes the
catalogue's, :func:`gitnetdiag.rundir.failures.failure_hint` for a download)."""


def _no_hint(kind: FailureKind | None, message: str) -> str:
    return ""


@dataclass(frozen=True, kw_only=True)
class FetchJudgement:
    """The verdict of a fetch run, what it rests on, and its headline."""

    verdict: Verdict
    failures: tuple[MeasurementFailure, ...]
    headline: str
    """What fails and why (``HTTP/1.1 clones fail (firewall-reset): ...``) for a failed run,
    what is missing for an inconclusive one; empty otherwise."""


def _kind(obs: FetchObservation) -> FailureKind | None:
    """How a clone that did not finish failed (a stall as a hung push), None for one that
    finished or was bounded."""
    return None if obs.outcome in MEASURED_OUTCOMES else clone_as_transfer(obs).error_kind


def _measured(obs: FetchObservation) -> bool:
    """A clone that gave a rate, finished or bounded with enough bytes to give one, or was
    cut on the wire (stalled, reset)."""
    if obs.outcome in MEASURED_OUTCOMES:
        return obs.measured or obs.moved_bytes >= MIN_RATE_BYTES
    return _kind(obs) in MEASURED_FAILURE_KINDS


def _failing(clones: Sequence[FetchObservation]) -> bool:
    """Every clone failed, and not by stalling nor by an interruption: git itself gave up
    (the push's :func:`~gitnetdiag.diagnosis.verdict.is_failing`)."""
    kinds = [_kind(obs) for obs in clones]
    return bool(kinds) and all(kind is not None and kind not in STALL_KINDS
                               and kind != FailureKind.INTERRUPTED for kind in kinds)


def _explaining(clones: Sequence[FetchObservation], findings: Sequence[Finding]) -> str | None:
    """The first ranked culprit whose evidence is failed connections of every kind these
    clones failed by (the push verdict's rule)."""
    kinds = {kind for obs in clones if (kind := _kind(obs)) is not None}
    if not kinds:
        return None
    return next((f.id for f in findings if kinds <= EXPLAINED_BY.get(f.id, frozenset())), None)


def _clone_failure(obs: FetchObservation, reference: str, explained_by: str | None,
                   hint: str) -> MeasurementFailure:
    transfer = clone_as_transfer(obs)
    label = PROTOCOL_LABELS.get(obs.protocol, obs.protocol)
    return MeasurementFailure(
        protocol=obs.protocol, stage="fetch", reference=reference, kind=transfer.error_kind,
        message=f"{label}: clone #{obs.repeat} {obs.outcome} ({transfer.error_message})"
        + ("" if explained_by else "; no culprit explains it"),
        hint=hint or _GENERIC_HINT, explained_by=explained_by)


def _failed(obs: FetchObservation, reference: str, explained_by: str | None,
            hint_of: HintOf) -> MeasurementFailure:
    """A clone that failed, with the hint of its kind and of git's words."""
    transfer = clone_as_transfer(obs)
    return _clone_failure(obs, reference, explained_by,
                          hint_of(transfer.error_kind, transfer.error_message))


def _too_small(name: str, clones: Sequence[FetchObservation]) -> MeasurementFailure:
    label = PROTOCOL_LABELS.get(name, name)
    largest = max(obs.moved_bytes for obs in clones)
    empty = ("an empty repository has nothing to fetch, and a tiny one too little to time: "
             if largest == 0 else "")
    return MeasurementFailure(
        protocol=name, stage="fetch", reference="too-small", kind=None,
        message=f"{label}: the clone received {largest} B, too few to give a rate (under "
        f"{MIN_RATE_BYTES} B, three round trips of TCP slow start)",
        hint=f"{empty}add --fetch-seed 1MiB (or more) to clone a throwaway branch of generated "
        "data (needs write access), or fetch a larger repository")


def _not_measured(name: str, clones: Sequence[FetchObservation], explained_by: str | None,
                  hint_of: HintOf) -> list[MeasurementFailure]:
    """Why a requested protocol measured nothing: each failed clone, else too few bytes,
    else no clone at all."""
    failed = [obs for obs in clones if obs.outcome not in MEASURED_OUTCOMES
              and obs.outcome != "interrupted"]
    if failed:
        return [_failed(obs, "fetch-failed", explained_by, hint_of) for obs in failed]
    done = [obs for obs in clones if obs.outcome in MEASURED_OUTCOMES]
    if done:
        return [_too_small(name, done)]
    label = PROTOCOL_LABELS.get(name, name)
    return [MeasurementFailure(protocol=name, stage="fetch", reference="not-measured",
                               kind=None, message=f"{label}: no clone was made",
                               hint=_GENERIC_HINT)]


def _in_measured(clones: Sequence[FetchObservation], findings: Sequence[Finding],
                 hint_of: HintOf) -> list[MeasurementFailure]:
    """The stalled and failed clones of a measured protocol: a stall is the evidence of any
    culprit that ranks; a failed clone only of one whose evidence is failed connections.
    With nothing ranked they leave the run inconclusive (the push verdict's rule)."""
    items = []
    for obs in clones:
        kind = _kind(obs)
        if kind is None or kind == FailureKind.INTERRUPTED:
            continue
        if kind in MEASURED_FAILURE_KINDS - {FailureKind.RESET}:
            items.append(_clone_failure(obs, "fetch-stalled",
                                        findings[0].id if findings else None, _STALL_HINT))
        else:
            items.append(_failed(obs, "fetch-failures-unexplained",
                                 _explaining([obs], findings), hint_of))
    return items


def _run_failures(problems: Sequence[RunProblem]) -> list[MeasurementFailure]:
    """The run's problems of other steps (the seed's push, a capture, the set-up, a run
    that never finished), as the push verdict counts its other problems."""
    return [MeasurementFailure(protocol=p.protocol, stage=p.stage, reference=p.reference,
                               kind=p.kind, message=p.message, hint=p.hint or _GENERIC_HINT)
            for p in problems if p.stage not in _IGNORED_STAGES]


def _leftovers(problems: Sequence[RunProblem]) -> list[MeasurementFailure]:
    return [MeasurementFailure(protocol=p.protocol, stage=p.stage, reference=LEFTOVER_REFERENCE,
                               kind=p.kind, message=p.message,
                               hint=p.hint or "remove it with git push --delete")
            for p in problems if p.stage == "cleanup" and p.reference == SEED_LEFTOVER]


def judge_clones(clones: Sequence[FetchObservation], findings: Sequence[Finding], *,
                 requested: Sequence[str] = (), problems: Sequence[RunProblem] = (),
                 bursts: Sequence[BurstResult] = (),
                 hint_of: HintOf = _no_hint) -> FetchJudgement:
    """The verdict of a fetch run's clones given its ranked findings (see the module doc):
    ``requested`` the protocols asked for (default: those cloned), ``problems`` the run's
    errors with their hints (a ``cleanup-leftover``: the seed branch left on the server),
    ``bursts`` the ``--burst`` results, ``hint_of`` the hint of a failed clone."""
    names = tuple(n for n in PROTOCOL_ORDER
                  if n in (requested or {obs.protocol for obs in clones}))
    by_name = {n: [obs for obs in clones if obs.protocol == n] for n in names}
    failing = {n for n in names if _failing(by_name[n])}
    measured = tuple(n for n in names if n not in failing and any(map(_measured, by_name[n])))
    failures: list[MeasurementFailure] = []
    unexplained = explained_failure = False
    for name in names:
        if name in measured:
            continue
        explained_by = _explaining(by_name[name], findings) if name in failing else None
        unexplained = unexplained or explained_by is None
        explained_failure = explained_failure or explained_by is not None
        failures += _not_measured(name, by_name[name], explained_by, hint_of)
    for name in measured:
        failures += _in_measured(by_name[name], findings, hint_of)
    if not findings:
        failures += unexplained_bursts(Observations(bursts=tuple(bursts)))
    other = _run_failures(problems)
    failures += other
    verdict: Verdict
    if not measured and (names or other):
        verdict = "failed"
    elif unexplained:
        verdict = "inconclusive"
    elif explained_failure:
        verdict = "failed"
    elif findings:
        verdict = "degraded"
    elif any(f.explained_by is None for f in failures):
        verdict = "inconclusive"
    else:
        verdict = "healthy"
    judgement = Judgement(verdict=verdict, requested=names, measured=measured,
                          failures=tuple(failures))
    failures += _leftovers(problems)
    return FetchJudgement(verdict=verdict, failures=tuple(failures),
                          headline=_headline(judgement, findings))


def _headline(judgement: Judgement, findings: Sequence[Finding]) -> str:
    """The push's headline of a failing run, told of clones."""
    if judgement.verdict == "failed":
        download = Observations(run=RunInfo(transfer="download"))
        failing = failure_headline(judgement, findings, download)
        if failing is not None:
            return failing
    if judgement.verdict in ("failed", "inconclusive"):
        return headline_prefix(judgement)
    return ""


def judge_fetch(clones: Sequence[FetchObservation], findings: Sequence[Finding]
                ) -> tuple[Verdict, tuple[MeasurementFailure, ...]]:
    """The verdict of the clones alone (:func:`judge_clones`) and the failures it rests on."""
    judged = judge_clones(clones, findings)
    return judged.verdict, judged.failures
