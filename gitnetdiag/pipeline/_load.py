"""A load run diagnosed (pure): the connection culprits, priced in the load's own terms.

    LoadReport ──> observations_from_load ──> the engine's connection detectors
        │          (a burst per step, the server's      │ fired: id, confidence,
        │           counter deltas and listener)         │ host evidence, fix
        └──> per-step evidence and cost <────────────────┘
             (operations lost or delayed per hour at the step where it began)
             ──> Diagnosis: ranked, verdict and headline in the load's words

The detectors decide *whether* a culprit fired and what fixes it; this module
says what it cost the load. A load measures no connect times: its own kernel's
SYN retransmissions per step (``TCPSynRetrans`` of its namespace) are the
bursts' SYN retransmissions, and the operations they delayed are those at least
one initial SYN timeout slower than their step's median (``slow_ops``), counted
only in a step where SYNs were retransmitted.

A culprit ranks when it is confident enough (:data:`MIN_SCORE`) and cost at
least one operation (the backlog also when the server counted a full queue during
the load: overflows, drops or SYN cookies of the load's connections). A run whose
operations failed, or whose server counted dropped connections, is never
``healthy``: with nothing ranked it is ``inconclusive`` and says what is
unexplained.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from gitnetdiag import __version__
from gitnetdiag.diagnosis.culprits import CULPRITS, SYN_RTO_S
from gitnetdiag.diagnosis.engine import MIN_SCORE, rank
from gitnetdiag.diagnosis.model import (
    Diagnosis,
    Environment,
    Evidence,
    Finding,
    MeasurementFailure,
    Verdict,
)
from gitnetdiag.diagnosis.observations import (
    BurstResult,
    HostEvidence,
    Listener,
    Observations,
    RunInfo,
)
from gitnetdiag.model.load.records import RTO_STEP_S, LoadReport, StepResult, target_port
from gitnetdiag.outcomes import FailureKind
from gitnetdiag.thresholds import SMALL_BACKLOG

LOAD_CULPRITS = ("listen-backlog-overflow", "syn-drop", "ssh-maxstartups", "firewall-reset")
"""The culprits a load run has evidence for: connection setup under concurrency."""
DROP_COUNTERS = ("ListenOverflows", "ListenDrops", "TCPReqQFullDrop", "TCPReqQFullDoCookies",
                 "SyncookiesSent")
"""Server counters that count connections a full SYN or accept queue dropped or answered
with a cookie: a load run where they moved is not healthy."""
_ENGINE_KINDS = frozenset({FailureKind.RESET, FailureKind.TIMEOUT, FailureKind.REFUSED,
                           FailureKind.HUNG, FailureKind.AUTH})
"""The load's failure kinds the connection detectors read; the others count as ``other``."""
_EXPLAINS: dict[str, frozenset[str] | None] = {
    "listen-backlog-overflow": None,  # every kind: a dropped connection fails in many ways
    "syn-drop": frozenset({"timeout", "hung"}),
    "ssh-maxstartups": frozenset({"reset", "refused"}),
    "firewall-reset": frozenset({"reset", "refused"}),
}
"""Failure kinds each culprit accounts for (None: all)."""
_DELAYS = frozenset({"listen-backlog-overflow", "syn-drop"})
"""Culprits whose dropped SYNs also delay operations by a SYN timeout."""
_NOUNS = {"clone": ("clone", "clones"), "fetch": ("fetch", "fetches"),
          "push": ("push", "pushes"), "ls-remote": ("ls-remote", "ls-remotes")}


def ops_noun(ops: Sequence[str], *, plural: bool = True) -> str:
    """What the run measured, in words: ``clones``, ``clones and fetches``, ``operations``."""
    names = [_NOUNS.get(op, (op, op))[1 if plural else 0] for op in ops]
    if len(names) == 1:
        return names[0]
    if len(names) == 2:
        return f"{names[0]} and {names[1]}"
    return "operations" if plural else "operation"


def _port(report: LoadReport) -> int | None:
    ports = {target_port(url) for url in report.remotes}
    return ports.pop() if len(ports) == 1 else None


def _failure_kind(text: str) -> FailureKind:
    """A load record's failure kind; ``other`` for one this version does not know."""
    try:
        return FailureKind(text)
    except ValueError:
        return FailureKind.OTHER


def _burst(report: LoadReport, step: StepResult, port: int | None) -> BurstResult:
    failed: Counter[FailureKind] = Counter()
    for group in step.errors:
        kind = _failure_kind(group.kind)
        failed[kind if kind in _ENGINE_KINDS else FailureKind.OTHER] += group.count
    return BurstResult(
        protocol=report.protocol,  # type: ignore[arg-type]
        concurrency=step.concurrency, ok=step.ok, port=port, failed_by_kind=dict(failed),
        duration_p50_s=step.latency.p50_s if step.latency else None,
        syn_retransmissions=step.client_deltas.get("TCPSynRetrans", 0),
    )


def _host(report: LoadReport) -> HostEvidence | None:
    """The counter deltas summed over the steps (zeros kept when the counters were read:
    a clean server is evidence too) and the listener on the loaded port."""
    read = "host_counters" in report.extra
    totals: Counter[str] = Counter(dict.fromkeys(DROP_COUNTERS, 0) if read else {})
    for step in report.steps:
        totals.update({k: v for k, v in step.host_deltas.items() if "." not in k})
    samples = [s.listener for s in report.steps if s.listener is not None]
    listeners: tuple[Listener, ...] = ()
    if samples:
        listeners = (Listener(port=samples[0].port, backlog=min(s.backlog for s in samples),
                              accept_queue=max(s.accept_queue_max for s in samples),
                              process=next((s.process for s in samples if s.process), "")),)
    if not read and not totals and not listeners:
        return None
    return HostEvidence(counter_deltas=dict(totals), listeners=listeners)


def observations_from_load(report: LoadReport) -> Observations:
    """Bursts (one per step), the server's counter deltas and its listener."""
    port = _port(report)
    steps = ", ".join(str(s.concurrency) for s in report.steps)
    return Observations(
        run=RunInfo(started=report.started, target_url=report.target,
                    measured_by=f"gitnetdiag load ({report.source}): {ops_noun(report.ops)} at "
                    f"concurrency {steps}, {report.step_duration_s:g} s per step"),
        bursts=tuple(_burst(report, step, port) for step in report.steps),
        host=_host(report),
    )


@dataclass(frozen=True, kw_only=True)
class StepCost:
    """What a culprit cost the load at the step where it began."""

    step: StepResult
    """The first step with operations it accounts for."""
    lost: int
    """Operations that failed there in a way it explains."""
    delayed: int
    """Operations that waited a SYN timeout there (for the culprits that drop SYNs)."""

    @property
    def per_hour(self) -> float:
        """Operations lost or delayed per hour at that step."""
        elapsed = self.step.elapsed_s
        return (self.lost + self.delayed) / elapsed * 3600.0 if elapsed > 0 else 0.0

    @property
    def seconds_per_op(self) -> float:
        """Mean seconds each operation of the step lost: a failure its wait (at least one
        SYN timeout) plus a redo, a delayed one a SYN timeout."""
        redo = self.step.latency.p50_s if self.step.latency else 0.0
        lost_s = self.lost * (SYN_RTO_S + redo) + self.delayed * SYN_RTO_S
        return lost_s / self.step.ops if self.step.ops else 0.0


def _affected(step: StepResult, culprit: str) -> tuple[int, int]:
    """Operations the culprit cost a step: failed, and late by a SYN timeout (counted only
    when the load's kernel retransmitted SYNs in that step: a busy server's slow tail is no
    dropped SYN)."""
    kinds = _EXPLAINS.get(culprit)
    lost = sum(g.count for g in step.errors if kinds is None or g.kind in kinds)
    syn = culprit in _DELAYS and step.client_deltas.get("TCPSynRetrans", 0) > 0
    return lost, step.slow_ops if syn else 0


def step_cost(report: LoadReport, culprit: str) -> StepCost | None:
    """The culprit's cost at the first step with operations it accounts for; for the backlog,
    failing that, the first step where the server counted a full queue (overflows, drops, SYN
    cookies: the load's connections, retried or answered in time), then the first step with
    more operations at once than a small backlog holds; None when none of these."""
    for step in report.steps:
        lost, delayed = _affected(step, culprit)
        if lost or delayed:
            return StepCost(step=step, lost=lost, delayed=delayed)
    if culprit == "listen-backlog-overflow":
        for step in report.steps:
            if any(step.host_deltas.get(key) for key in DROP_COUNTERS):
                return StepCost(step=step, lost=0, delayed=0)
        for step in report.steps:
            if _beyond_backlog(step):
                return StepCost(step=step, lost=0, delayed=0)
    return None


def _beyond_backlog(step: StepResult) -> bool:
    """More operations ran at once than a small listen backlog holds."""
    listener = step.listener
    return (listener is not None and listener.backlog <= SMALL_BACKLOG
            and step.concurrency > listener.backlog)


def _where(step: StepResult) -> str:
    return f"load step {step.index + 1} (concurrency {step.concurrency})"


def _step_evidence(report: LoadReport, step: StepResult, culprit: str) -> list[Evidence]:
    noun, one = ops_noun(report.ops), ops_noun(report.ops, plural=False)
    where = _where(step)
    lost, delayed = _affected(step, culprit)
    items: list[Evidence] = []
    if lost:
        kinds = ", ".join(f"{g.kind} {g.count}" for g in step.errors)
        items.append(Evidence(what=f"failed {noun}", value=lost, of=step.ops, unit="count",
                              text=kinds, threshold=0, comparison=">", source=where))
    if delayed:
        items.append(Evidence(what="SYN retransmissions by the load's kernel",
                              value=step.client_deltas["TCPSynRetrans"], unit="count",
                              threshold=0, comparison=">",
                              source=f"client netstat TCPSynRetrans delta over {where}"))
        items.append(Evidence(what=f"{noun} one SYN timeout slower than the median",
                              value=delayed, of=step.ok, unit="count", threshold=0,
                              comparison=">", source=where))
    lat = step.latency
    if lat is not None and lat.p99_s >= lat.p50_s + RTO_STEP_S:
        items.append(Evidence(what=f"{one} time p50", value=lat.p50_s, unit="s", source=where))
        items.append(Evidence(
            what=f"{one} time p99", value=lat.p99_s, unit="s",
            threshold=lat.p50_s + RTO_STEP_S, comparison=">=",
            basis="the median + one SYN timeout, less jitter", source=where))
    if culprit in _DELAYS:
        items += [Evidence(what=f"server counter {key}", value=step.host_deltas[key],
                           unit="count", threshold=0, comparison=">",
                           source=f"host netstat delta over {where}")
                  for key in DROP_COUNTERS if step.host_deltas.get(key)]
    listener = step.listener
    if culprit == "listen-backlog-overflow" and listener is not None:
        items.append(Evidence(
            what=f"accept queue peak of port {listener.port}", value=listener.accept_queue_max,
            unit="count", threshold=listener.backlog, comparison=">=",
            basis="its listen backlog", source=f"ss -ltn, {listener.samples} samples, {where}"))
    return items


def _opening(report: LoadReport, finding: Finding) -> str:
    """The culprit in one clause, with the server's own numbers where it has them."""
    if finding.id == "listen-backlog-overflow":
        samples = [s.listener for s in report.steps if s.listener is not None]
        totals: Counter[str] = Counter()
        for step in report.steps:
            totals.update({k: step.host_deltas[k] for k in DROP_COUNTERS
                           if k in step.host_deltas})
        counted = ", ".join(f"{k} +{v}" for k, v in totals.items())
        queue = (f"port {samples[0].port} ({samples[0].process or 'unknown process'}) listens "
                 f"with a backlog of {min(s.backlog for s in samples)}" if samples
                 else "the server's accept queue overflowed")
        return queue[0].upper() + queue[1:] + (f"; the server counted {counted}"
                                               if counted else "")
    return {
        "syn-drop": "SYNs were dropped: operations waited for a SYN retransmission",
        "ssh-maxstartups": "sshd refused connections before authentication (MaxStartups)",
        "firewall-reset": "Connections were reset or refused",
    }.get(finding.id, finding.title)


def _priced(report: LoadReport, finding: Finding, cost: StepCost) -> Finding:
    noun, one = ops_noun(report.ops), ops_noun(report.ops, plural=False)
    step = cost.step
    summary = (
        f"{_opening(report, finding)}. From concurrency {step.concurrency} (step "
        f"{step.index + 1}), where it began, {cost.lost} of {step.ops} {noun} failed"
        + (f" and {cost.delayed} waited a SYN timeout" if finding.id in _DELAYS else "")
        + f": {cost.per_hour:,.0f} {noun} lost or delayed per hour, "
        f"{cost.seconds_per_op:.3f} s lost per {one} on average."
    )
    if not cost.lost and not cost.delayed:
        counted = any(step.host_deltas.get(key) for key in DROP_COUNTERS)
        summary = (
            f"{_opening(report, finding)}. From concurrency {step.concurrency} (step "
            f"{step.index + 1}) "
            + ("the server counted a full queue" if counted else
               f"more {noun} ran at once than the backlog holds, and no overflow was counted")
            + f"; no {one} was lost or delayed in this run: the queue overflows as soon as "
            "the server accepts more slowly than connections arrive."
        )
    evidence = [Evidence(what=f"{noun} lost or delayed per hour", value=round(cost.per_hour),
                         unit="count", threshold=0, comparison=">", source=_where(step))]
    for later in report.steps[step.index:]:
        evidence += _step_evidence(report, later, finding.id)
    # The detector's burst items count failures against the concurrency, as a probe burst
    # does; a load step's are counted against its operations above.
    evidence += [e for e in finding.evidence if not e.source.startswith("burst ")]
    return replace(finding, cost_s=round(cost.seconds_per_op, 3), summary=summary,
                   evidence=tuple(evidence), cost_protocol=None)


def _unexplained(report: LoadReport) -> list[MeasurementFailure]:
    noun = ops_noun(report.ops)
    items = []
    failed = report.total_failed
    if failed:
        kinds: Counter[str] = Counter()
        for step in report.steps:
            kinds.update({g.kind: g.count for g in step.errors})
        text = ", ".join(f"{k} {v}" for k, v in kinds.most_common())
        items.append(MeasurementFailure(
            protocol=report.protocol, stage="load", reference="load-failures-unexplained",
            kind=_failure_kind(kinds.most_common(1)[0][0]),
            message=f"{failed} of {report.total_ops} {noun} failed ({text}); no culprit "
            "explains them",
            hint="read the server's counters and listener (--host-netns NS or --host-local "
            "on the server) and see the error messages in the load report"))
    dropped = {k: sum(s.host_deltas.get(k, 0) for s in report.steps) for k in DROP_COUNTERS}
    moved = ", ".join(f"{k} +{v}" for k, v in dropped.items() if v)
    if moved:
        items.append(MeasurementFailure(
            protocol=report.protocol, stage="load", reference="server-dropped-connections",
            kind=None, message=f"the server counted {moved}; no culprit ranks for it",
            hint="rerun with more concurrency or longer steps, and read the listener's "
            "backlog (ss -ltn on the server)"))
    return items


def _headline(report: LoadReport, ranked: Sequence[Finding], costs: dict[str, StepCost],
              verdict: Verdict, failures: Sequence[MeasurementFailure]) -> str:
    noun = ops_noun(report.ops)
    if ranked:
        top, cost = ranked[0], costs[ranked[0].id]
        more = (f"; {len(ranked) - 1} more culprit{'s' if len(ranked) > 2 else ''} below"
                if len(ranked) > 1 else "")
        if not cost.lost and not cost.delayed:
            return (f"{top.id}: a risk from concurrency {cost.step.concurrency}, no {noun} "
                    f"lost or delayed in this run (confidence {top.score:.2f}){more}.")
        return (f"{top.id}: {cost.per_hour:,.0f} {noun} lost or delayed per hour from "
                f"concurrency {cost.step.concurrency}, where it began (confidence "
                f"{top.score:.2f}){more}.")
    if verdict == "failed":
        return f"Nothing was measured: none of {report.total_ops} {noun} succeeded."
    if verdict == "inconclusive":
        return f"Not explained: {failures[0].message}." if failures else "Not explained."
    return f"No culprit costs the {noun} noticeable time ({report.total_ops} {noun}, none failed)."


def diagnose_load(report: LoadReport) -> Diagnosis:
    """The ranked connection culprits of a load run, costed per step."""
    obs = observations_from_load(report)
    fired = [f for c in CULPRITS if c.id in LOAD_CULPRITS and (f := c(obs)) is not None]
    costs = {f.id: c for f in fired if (c := step_cost(report, f.id)) is not None}
    priced = rank([_priced(report, f, costs[f.id]) if f.id in costs else f for f in fired])
    kept = tuple(f for f in priced if f.id in costs and f.score >= MIN_SCORE)
    dropped = tuple(f for f in priced if f not in kept)
    measured = any(s.ok for s in report.steps)
    failures: list[MeasurementFailure] = []
    verdict: Verdict
    if not measured:
        verdict = "failed"
        failures = _unexplained(report)
    elif kept:
        verdict = "degraded"
    else:
        failures = _unexplained(report)
        verdict = "inconclusive" if failures else "healthy"
    protocol = (report.protocol,)
    return Diagnosis(
        verdict=verdict, headline=_headline(report, kept, costs, verdict, failures),
        findings=kept,
        dropped=dropped, protocols=(),
        environment=Environment(
            gitnetdiag_version=__version__, started=report.started, target_url=report.target,
            rtt_s=None, path_rate_bytes_per_s=None, versions={}, protocols=protocol,
            measured_by=obs.run.measured_by, min_impact_s=0.0, min_score=MIN_SCORE),
        observations=obs, requested_protocols=protocol,
        measured_protocols=protocol if measured else (), measurement_failures=tuple(failures),
        direction="load",
    )
