"""The verdict of a fetch run, by the push verdict's rule (:mod:`.verdict`): never
``healthy`` when a clone failed and no ranked culprit explains it.

    failed        no clone measured a rate, and no failed clone is explained
    inconclusive  a clone failed or stalled and no ranked culprit explains it
    degraded      culprits ranked (failed clones, if any, explained by one of them)
    healthy       every clone measured or finished, nothing ranks
"""

from __future__ import annotations

from collections.abc import Sequence

from gitnetdiag.diagnosis.culprits.fetchobs import FetchObservation
from gitnetdiag.diagnosis.culprits.fetchshared import clone_as_transfer
from gitnetdiag.diagnosis.model import Finding, MeasurementFailure, Verdict
from gitnetdiag.diagnosis.observations import PROTOCOL_LABELS
from gitnetdiag.diagnosis.verdict import EXPLAINED_BY, STALL_KINDS
from gitnetdiag.outcomes import MEASURED_OUTCOMES, FailureKind

_HINT = "see the clone's stderr file in the run directory and the run's errors in fetch.json"
_STALL_HINT = ("a clone that stops moving with nothing ranked: rerun as root so the clone is "
               "captured, and read the server's logs for that time")


def _explained(kind: FailureKind | None, findings: Sequence[Finding]) -> str | None:
    for finding in findings:
        if (kind or FailureKind.OTHER) in EXPLAINED_BY.get(finding.id, frozenset()):
            return finding.id
    return None


def judge_fetch(clones: Sequence[FetchObservation], findings: Sequence[Finding]
                ) -> tuple[Verdict, tuple[MeasurementFailure, ...]]:
    """The verdict of a fetch run's clones given its ranked findings, and the failures it
    rests on (each failed clone once, with the culprit that explains it, if any)."""
    failures = []
    for obs in clones:
        if obs.measured or obs.outcome == "interrupted" or obs.outcome in MEASURED_OUTCOMES:
            # A clone that finished (or was bounded) did not fail, even when its pack came in
            # too few progress lines to give a rate (a CPU-starved client's h1 clone of 0.7 MiB
            # in a fresh-clone run): only the "no clone measured" rule below counts it.
            continue
        transfer = clone_as_transfer(obs)
        kind = transfer.error_kind
        stalled = kind in STALL_KINDS
        # A stall is evidence of a culprit that ranks (any); a refusal or reset only of one
        # whose evidence is failed connections.
        explained = (findings[0].id if stalled and findings else _explained(kind, findings))
        label = PROTOCOL_LABELS.get(obs.protocol, obs.protocol)
        failures.append(MeasurementFailure(
            protocol=obs.protocol, stage="fetch",
            reference="fetch-stalled" if stalled else "fetch-failed", kind=kind,
            message=f"{label}: clone #{obs.repeat} {obs.outcome} "
            f"({transfer.error_message})" + ("" if explained else "; no culprit explains it"),
            hint=_STALL_HINT if stalled else _HINT, explained_by=explained))
    verdict: Verdict
    if not any(obs.measured for obs in clones) and not any(f.explained_by for f in failures):
        # A failure a ranked culprit explains is its evidence (the push verdict's rule): a
        # path-MTU black hole towards the client stalls every clone.
        verdict = "failed"
    elif any(f.explained_by is None for f in failures):
        verdict = "inconclusive"
    elif findings:
        verdict = "degraded"
    else:
        verdict = "healthy"
    return verdict, tuple(failures)
