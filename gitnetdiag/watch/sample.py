"""One probe cycle's numbers: what the exporter keeps per target (pure).

A cycle's worker process turns each direction's diagnosis into a
:class:`DirectionSample` (:func:`sample_from_diagnosis` for the pushes,
:func:`sample_from_fetch` for the clones), gathers them into one
:class:`ProbeSample` and hands it to the exporter as JSON; the exporter never
holds a diagnosis, a capture or a manifest, only the latest sample of each target.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gitnetdiag.diagnosis.model import Diagnosis, Finding
from gitnetdiag.outcomes import MEASURED_OUTCOMES
from gitnetdiag.rundir import ProtocolRun, ProtocolTransfers, RunError
from gitnetdiag.serial import from_jsonable, to_jsonable

VERDICTS = ("healthy", "degraded", "inconclusive", "failed")
"""Every verdict a diagnosis can give, the best first; the verdict gauge has one series per
state."""

DIRECTIONS = ("push", "fetch")
"""The ``direction`` label's values: the pushes of a cycle, its clones."""

NOT_MEASURED = "not-measured"
"""Error kind of a protocol the run never transferred over (an earlier step failed)."""

_KIND_RE = re.compile(r"[^a-z0-9-]+")


def error_kind_label(text: str) -> str:
    """A failure kind or error reference as a short kebab-case label value."""
    return _KIND_RE.sub("-", text.lower()).strip("-")[:40] or "other"


@dataclass(frozen=True, kw_only=True)
class CycleProtocol:
    """One protocol's transfers (pushes or clones) in a cycle."""

    protocol: str
    """``h1``, ``h2``, ``ssh`` or ``git``."""
    success: bool
    """Every transfer over it completed."""
    error_kind: str = ""
    """Why not (``refused``, ``hung``, ``tls``, ``deadline``, ...); empty on success."""
    duration_s: float | None = None
    """Median duration of the completed transfers."""
    rate_bytes_per_s: float | None = None
    """Median rate of the completed transfers, bytes per second."""


@dataclass(frozen=True, kw_only=True)
class WindowStall:
    """Time a flow-control window stood at zero during the native push."""

    protocol: str
    """``h2`` or ``ssh``."""
    window: str
    """``stream`` or ``connection`` (HTTP/2), ``channel`` (SSH)."""
    seconds: float


@dataclass(frozen=True, kw_only=True)
class DirectionSample:
    """One direction of a cycle: its transfers and their diagnosis."""

    direction: str
    """``push`` or ``fetch`` (:data:`DIRECTIONS`)."""
    verdict: str = "failed"
    """The diagnosis verdict (:data:`VERDICTS`)."""
    protocols: tuple[CycleProtocol, ...] = ()
    """Per protocol, in probe order."""
    culprit_scores: dict[str, float] = field(default_factory=dict)
    """Score 0..1 of every culprit of the direction's catalogue (0 when it did not fire);
    empty without a diagnosis, so a failed cycle shows no stale scores."""
    culprit_costs_s: dict[str, float] = field(default_factory=dict)
    """Estimated seconds each fired culprit cost on the measured transfer."""
    run_dir: str = ""
    """Its run directory (``gitnetdiag report`` re-renders it); empty if none."""

    @property
    def success(self) -> bool:
        return bool(self.protocols) and all(p.success for p in self.protocols)


@dataclass(frozen=True, kw_only=True)
class ProbeSample:
    """Everything one cycle measured about one target."""

    target: str
    """The target's name (the ``target`` label)."""
    started_unix_s: float
    """When the cycle started, seconds since the epoch."""
    duration_s: float
    """Wall time of the whole cycle (transfers, clean-up, analysis)."""
    directions: tuple[DirectionSample, ...] = ()
    """Each direction the target asks for, in cycle order (push before fetch)."""
    rtt_s: float | None = None
    """Round-trip time of the path."""
    h2_stream_window_bytes: int | None = None
    """The server's initial HTTP/2 stream window (SETTINGS_INITIAL_WINDOW_SIZE)."""
    h2_connection_window_bytes: int | None = None
    """The most HTTP/2 connection-level credit the server granted."""
    ssh_channel_window_bytes: int | None = None
    """The server's initial SSH channel window."""
    stalls: tuple[WindowStall, ...] = ()
    """Zero-window time of the native pushes."""
    cleanup_failures: tuple[str, ...] = ()
    """Protocols whose throwaway branch could not be deleted (the branch is left on the
    server; the run's manifest names it). A clone leaves nothing on the server."""
    error: str = ""
    """One line on why the cycle failed as a whole (for the log), empty otherwise."""

    @property
    def success(self) -> bool:
        return bool(self.directions) and all(d.success for d in self.directions)

    @property
    def verdict(self) -> str:
        """The worst verdict of its directions (``failed`` without any)."""
        verdicts = [d.verdict for d in self.directions]
        return max(verdicts, key=_badness, default="failed")

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = to_jsonable(self)
        return result

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProbeSample:
        """The sample a cycle process printed; ``ValueError`` naming a field of the wrong type."""
        return from_jsonable(cls, dict(data), where="sample")


def _badness(verdict: str) -> int:
    return VERDICTS.index(verdict) if verdict in VERDICTS else len(VERDICTS)


def failed_sample(target: str, protocols: Iterable[str], kind: str, message: str, *,
                  started_unix_s: float, duration_s: float,
                  run_dirs: Mapping[str, str] | None = None) -> ProbeSample:
    """A cycle that produced no diagnosis: every protocol of every direction failed with
    ``kind``. ``run_dirs``: direction -> its run directory ("" if none), in cycle order
    (default: the pushes only, without one)."""
    label = error_kind_label(kind)
    chosen = tuple(protocols)
    return ProbeSample(
        target=target, started_unix_s=started_unix_s, duration_s=duration_s, error=message,
        directions=tuple(
            DirectionSample(direction=direction, verdict="failed", run_dir=run_dir,
                            protocols=tuple(CycleProtocol(protocol=p, success=False,
                                                           error_kind=label) for p in chosen))
            for direction, run_dir in (run_dirs or {"push": ""}).items()),
    )


def _scores(findings: Iterable[Finding], catalogue: Iterable[str]
            ) -> tuple[dict[str, float], dict[str, float]]:
    """Every catalogue culprit's score (0: did not fire) and each fired one's cost."""
    scores = dict.fromkeys(catalogue, 0.0)
    costs: dict[str, float] = {}
    for finding in findings:
        scores[finding.id] = max(scores.get(finding.id, 0.0), finding.score)
        costs[finding.id] = finding.cost_s
    return scores, costs


def sample_from_diagnosis(
    diagnosis: Diagnosis, *, target: str, protocols: Iterable[str],
    push_errors: Mapping[str, str], catalogue: Iterable[str], started_unix_s: float,
    duration_s: float, run_dir: str, cleanup_failures: Iterable[str] = (),
) -> ProbeSample:
    """The metrics of one diagnosed push run (its ``push`` direction, the windows, the RTT).

    ``push_errors`` maps a protocol to the failure kind of its first failed push (the
    run manifest's kinds are finer than the diagnosis's: ``tls``, ``host-key``);
    ``catalogue`` lists every push culprit id, so that a culprit that did not fire reads 0.
    """
    summaries = {s.protocol: s for s in diagnosis.protocols}
    rows: list[CycleProtocol] = []
    for protocol in protocols:
        summary = summaries.get(protocol)
        if summary is None:
            kind = push_errors.get(protocol) or push_errors.get("*") or NOT_MEASURED
            rows.append(CycleProtocol(protocol=protocol, success=False,
                                       error_kind=error_kind_label(kind)))
            continue
        ok = summary.pushes_ok > 0 and summary.pushes_failed == 0
        kind = "" if ok else error_kind_label(
            push_errors.get(protocol) or next(iter(summary.failure_kinds), "other"))
        rows.append(CycleProtocol(
            protocol=protocol, success=ok, error_kind=kind,
            duration_s=summary.duration_s if summary.pushes_ok else None,
            rate_bytes_per_s=summary.rate_bytes_per_s))
    scores, costs = _scores((*diagnosis.dropped, *diagnosis.findings), catalogue)
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
        target=target, started_unix_s=started_unix_s, duration_s=duration_s,
        directions=(DirectionSample(direction="push", verdict=diagnosis.verdict,
                                    protocols=tuple(rows), culprit_scores=scores,
                                    culprit_costs_s=costs, run_dir=run_dir),),
        rtt_s=diagnosis.environment.rtt_s,
        h2_stream_window_bytes=h2.server_initial_window_bytes if h2 else None,
        h2_connection_window_bytes=h2.connection_window_bytes if h2 else None,
        ssh_channel_window_bytes=ssh.initial_window_bytes if ssh else None,
        stalls=tuple(stalls), cleanup_failures=tuple(cleanup_failures),
    )


def sample_from_fetch(
    *, verdict: str, findings: Iterable[Finding], runs: Iterable[ProtocolTransfers],
    protocols: Iterable[str], fetch_errors: Mapping[str, str], catalogue: Iterable[str],
    run_dir: str,
) -> DirectionSample:
    """The ``fetch`` direction of a cycle: each protocol's clones from the run's record
    (``fetch.json``: outcome, wall time, rate), the verdict and culprits from its diagnosis.

    ``fetch_errors`` as :func:`transfer_errors_of` gives them; ``catalogue`` lists every
    download culprit id, so that one that did not fire reads 0.
    """
    by_protocol = {run.protocol: run.transfers for run in runs}
    rows: list[CycleProtocol] = []
    for protocol in protocols:
        clones = by_protocol.get(protocol, ())
        measured = [c for c in clones if c.outcome in MEASURED_OUTCOMES]
        ok = bool(clones) and len(measured) == len(clones)
        kind = "" if ok else error_kind_label(
            fetch_errors.get(protocol) or fetch_errors.get("*") or NOT_MEASURED)
        rates = [c.rate_bytes_per_s for c in measured if c.rate_bytes_per_s is not None]
        rows.append(CycleProtocol(
            protocol=protocol, success=ok, error_kind=kind,
            duration_s=statistics.median(c.wall_s for c in measured) if measured else None,
            rate_bytes_per_s=statistics.median(rates) if rates else None))
    scores, costs = _scores(findings, catalogue)
    return DirectionSample(direction="fetch", verdict=verdict, protocols=tuple(rows),
                           culprit_scores=scores, culprit_costs_s=costs, run_dir=run_dir)


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


def transfer_errors_of(manifest_protocols: Iterable[ProtocolTransfers],
                       run_errors: Iterable[RunError]) -> dict[str, str]:
    """Protocol -> kind of its first failed transfer (push or clone), from a run's record.

    Whole-run errors (no protocol) apply to every protocol without a transfer of its own.
    """
    kinds: dict[str, str] = {}
    for run in manifest_protocols:
        failed = [t for t in run.transfers if t.outcome not in MEASURED_OUTCOMES]
        if failed:
            kinds[run.protocol] = failed[0].failure_kind or failed[0].outcome
    for error in run_errors:
        key = error.protocol or "*"
        kinds.setdefault(key, error.kind or error.reference)
    return kinds
