"""One probe cycle's numbers: what the exporter keeps per target (pure).

A cycle's worker process turns the run's :class:`Diagnosis` into a
:class:`ProbeSample` (:func:`sample_from_diagnosis`) and hands it to the
exporter as JSON; the exporter never holds a diagnosis, a capture or a
manifest, only the latest sample of each target.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gitnetdiag.diagnosis.model import Diagnosis
from gitnetdiag.outcomes import MEASURED_OUTCOMES
from gitnetdiag.rundir import ProtocolRun, RunError
from gitnetdiag.serial import from_jsonable, to_jsonable

VERDICTS = ("healthy", "degraded", "inconclusive", "failed")
"""Every verdict a diagnosis can give; the verdict gauge has one series per state."""

NOT_MEASURED = "not-measured"
"""Error kind of a protocol the run never pushed over (an earlier step failed)."""

_KIND_RE = re.compile(r"[^a-z0-9-]+")


def error_kind_label(text: str) -> str:
    """A failure kind or error reference as a short kebab-case label value."""
    return _KIND_RE.sub("-", text.lower()).strip("-")[:40] or "other"


@dataclass(frozen=True, kw_only=True)
class ProtocolPushSample:
    """One protocol's push in a cycle."""

    protocol: str
    """``h1``, ``h2``, ``ssh`` or ``git``."""
    success: bool
    """Every push over it completed."""
    error_kind: str = ""
    """Why not (``refused``, ``hung``, ``tls``, ``deadline``, ...); empty on success."""
    duration_s: float | None = None
    """Median duration of the completed pushes."""
    rate_bytes_per_s: float | None = None
    """Median rate of the completed pushes, bytes per second."""


@dataclass(frozen=True, kw_only=True)
class WindowStall:
    """Time a flow-control window stood at zero during the native push."""

    protocol: str
    """``h2`` or ``ssh``."""
    window: str
    """``stream`` or ``connection`` (HTTP/2), ``channel`` (SSH)."""
    seconds: float


@dataclass(frozen=True, kw_only=True)
class ProbeSample:
    """Everything one cycle measured about one target."""

    target: str
    """The target's name (the ``target`` label)."""
    started_unix_s: float
    """When the cycle started, seconds since the epoch."""
    duration_s: float
    """Wall time of the whole cycle (pushes, clean-up, analysis)."""
    run_dir: str = ""
    """The cycle's run directory (``gitnetdiag report`` re-renders it); empty if none."""
    verdict: str = "failed"
    """The diagnosis verdict (:data:`VERDICTS`)."""
    protocols: tuple[ProtocolPushSample, ...] = ()
    """Per protocol, in probe order."""
    culprit_scores: dict[str, float] = field(default_factory=dict)
    """Score 0..1 of every catalogue culprit (0 when it did not fire); empty without a
    diagnosis, so a failed cycle shows no stale scores."""
    culprit_costs_s: dict[str, float] = field(default_factory=dict)
    """Estimated seconds each fired culprit cost on the measured push."""
    rtt_s: float | None = None
    """Round-trip time of the path."""
    h2_stream_window_bytes: int | None = None
    """The server's initial HTTP/2 stream window (SETTINGS_INITIAL_WINDOW_SIZE)."""
    h2_connection_window_bytes: int | None = None
    """The most HTTP/2 connection-level credit the server granted."""
    ssh_channel_window_bytes: int | None = None
    """The server's initial SSH channel window."""
    stalls: tuple[WindowStall, ...] = ()
    cleanup_failures: tuple[str, ...] = ()
    """Protocols whose throwaway branch could not be deleted (the branch is left on the
    server; the run's manifest names it)."""
    error: str = ""
    """One line on why the cycle failed as a whole (for the log), empty otherwise."""

    @property
    def success(self) -> bool:
        return bool(self.protocols) and all(p.success for p in self.protocols)

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = to_jsonable(self)
        return result

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProbeSample:
        """The sample a cycle process printed; ``ValueError`` naming a field of the wrong type."""
        return from_jsonable(cls, dict(data), where="sample")


def failed_sample(target: str, protocols: Iterable[str], kind: str, message: str, *,
                  started_unix_s: float, duration_s: float, run_dir: str = "") -> ProbeSample:
    """A cycle that produced no diagnosis: every protocol failed with ``kind``."""
    label = error_kind_label(kind)
    return ProbeSample(
        target=target, started_unix_s=started_unix_s, duration_s=duration_s, run_dir=run_dir,
        verdict="failed", error=message,
        protocols=tuple(ProtocolPushSample(protocol=p, success=False, error_kind=label)
                        for p in protocols),
    )


def sample_from_diagnosis(
    diagnosis: Diagnosis, *, target: str, protocols: Iterable[str],
    push_errors: Mapping[str, str], catalogue: Iterable[str], started_unix_s: float,
    duration_s: float, run_dir: str, cleanup_failures: Iterable[str] = (),
) -> ProbeSample:
    """The metrics of one diagnosed run.

    ``push_errors`` maps a protocol to the failure kind of its first failed push (the
    run manifest's kinds are finer than the diagnosis's: ``tls``, ``host-key``);
    ``catalogue`` lists every culprit id, so that a culprit that did not fire reads 0.
    """
    summaries = {s.protocol: s for s in diagnosis.protocols}
    rows: list[ProtocolPushSample] = []
    for protocol in protocols:
        summary = summaries.get(protocol)
        if summary is None:
            kind = push_errors.get(protocol) or push_errors.get("*") or NOT_MEASURED
            rows.append(ProtocolPushSample(protocol=protocol, success=False,
                                       error_kind=error_kind_label(kind)))
            continue
        ok = summary.pushes_ok > 0 and summary.pushes_failed == 0
        kind = "" if ok else error_kind_label(
            push_errors.get(protocol) or next(iter(summary.failure_kinds), "other"))
        rate = summary.rate_bytes_per_s
        rows.append(ProtocolPushSample(
            protocol=protocol, success=ok, error_kind=kind,
            duration_s=summary.duration_s if summary.pushes_ok else None,
            rate_bytes_per_s=rate))
    scores = dict.fromkeys(catalogue, 0.0)
    costs: dict[str, float] = {}
    for finding in (*diagnosis.dropped, *diagnosis.findings):
        scores[finding.id] = max(scores.get(finding.id, 0.0), finding.score)
        costs[finding.id] = finding.cost_s
    observed = diagnosis.observations.protocols
    h2 = observed["h2"].h2_ledger if "h2" in observed else None
    ssh = observed["ssh"].ssh_ledger if "ssh" in observed else None
    stalls: list[WindowStall] = []
    if h2 is not None:
        stalls += [WindowStall(protocol="h2", window=window, seconds=seconds)
                   for window, seconds in (("stream", h2.stream_zero_credit_s),
                                           ("connection", h2.connection_zero_credit_s))
                   if seconds is not None]
    if ssh is not None and ssh.zero_window_s is not None:
        stalls.append(WindowStall(protocol="ssh", window="channel", seconds=ssh.zero_window_s))
    return ProbeSample(
        target=target, started_unix_s=started_unix_s, duration_s=duration_s, run_dir=run_dir,
        verdict=diagnosis.verdict, protocols=tuple(rows), culprit_scores=scores,
        culprit_costs_s=costs, rtt_s=diagnosis.environment.rtt_s,
        h2_stream_window_bytes=h2.server_initial_window_bytes if h2 else None,
        h2_connection_window_bytes=h2.connection_window_bytes if h2 else None,
        ssh_channel_window_bytes=ssh.initial_window_bytes if ssh else None,
        stalls=tuple(stalls), cleanup_failures=tuple(cleanup_failures),
    )


def cleanup_failures_of(run_errors: Iterable[RunError],
                        manifest_protocols: Iterable[ProtocolRun] = ()) -> tuple[str, ...]:
    """One protocol per throwaway branch a run may have left on the server: every push
    whose clean-up ended ``leftover`` or ``unconfirmed``, and every other clean-up error
    (a native probe's branch). A push's own ``leftover`` error is not counted twice."""
    found: list[str] = []
    pushes_left: Counter[str] = Counter()
    for run in manifest_protocols:
        for push in run.pushes:
            if push.cleanup in ("leftover", "unconfirmed"):
                found.append(run.protocol)
                pushes_left[run.protocol] += push.cleanup == "leftover"
    for error in run_errors:
        if error.stage != "cleanup":
            continue
        protocol = error.protocol or ""
        if pushes_left[protocol]:
            pushes_left[protocol] -= 1
        else:
            found.append(protocol)
    return tuple(found)


def push_errors_of(manifest_protocols: Iterable[ProtocolRun],
                   run_errors: Iterable[RunError]) -> dict[str, str]:
    """Protocol -> kind of its first failed push, from a run manifest's records.

    Whole-run errors (no protocol) apply to every protocol without a push of its own.
    """
    kinds: dict[str, str] = {}
    for run in manifest_protocols:
        failed = [p for p in run.pushes if p.outcome not in MEASURED_OUTCOMES]
        if failed:
            kinds[run.protocol] = failed[0].failure_kind or failed[0].outcome
    for error in run_errors:
        key = error.protocol or "*"
        kinds.setdefault(key, error.kind or error.reference)
    return kinds
