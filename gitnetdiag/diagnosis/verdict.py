"""The verdict comes from what was measured, not only from what ranked: one rule for both
directions (an upload's pushes in ``obs.protocols``, a download's clones in ``obs.transfers``).

    requested protocols ──> every transfer of one failed? ──yes──> failed (explained by a
                               │                                   ranked culprit, or not)
                               no
                               └──> measured? ──none──> failed
                                       │ one missing: inconclusive
                                       all
                                       └──> culprits ranked? ── yes: degraded
                                                              └─ no: healthy, unless some
                                                                     other step failed

A transfer *failed* when git did not complete it: refused, unreachable, an HTTP status,
auth, TLS, a host key, a reset, and a stall too (``hung``, ``timeout``: it moved nothing
more and was given up). A user's interruption is no failure of the path, nor a push the
server already had (``no-data``): those left aside, a requested protocol whose transfers
all failed (:func:`failing_protocols`) fails the run, explained or not: a protocol that
moved nothing is never ``degraded``. A failure is *explained* by the first ranked culprit
whose evidence is failures of every kind the protocol failed by (:data:`EXPLAINED_BY`, one
table) and that lives on that protocol (:data:`EXPLAINS_ONLY_ON`); else its cause is not
identified, never the nearest culprit.

A protocol is *measured* when one of its transfers completed with at least
:data:`~gitnetdiag.thresholds.MIN_RATE_BYTES` in a positive, finite time. A completed
transfer below that floor is ``too-small``: its time is round trips, not a rate. A push that
sent no data (the server had it) or was interrupted measured nothing, and failed nothing.
A culprit of one protocol's flow control (:data:`PROTOCOL_SPECIFIC`) is not ranked when that
protocol's pushes all stalled like another protocol's did.

    failed        a requested protocol's transfers all failed (explained or not: the
                  headline names the cause or says "cause not identified"), or nothing
                  requested was measured
    inconclusive  the transfers worked but a measurement is missing: a requested protocol
                  not measured (too small, no data, interrupted, never run), or nothing
                  ranks while another step (native probe, capture) failed, some of a
                  protocol's transfers stalled or failed, a burst's connections failed, or
                  no TCP evidence (capture, TCP_INFO) was recorded
    degraded      culprits ranked, every requested protocol measured
    healthy       every requested protocol measured, nothing ranks, nothing failed
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

from gitnetdiag.diagnosis.assembly import as_push_result
from gitnetdiag.diagnosis.culprits.idlepath import idle_kept_hint, idle_path_hint
from gitnetdiag.diagnosis.model import Finding, MeasurementFailure, Verdict
from gitnetdiag.diagnosis.observations import (
    PROTOCOL_LABELS,
    PROTOCOL_ORDER,
    Observations,
    ProtocolObservation,
    PushObservation,
    RunProblem,
)
from gitnetdiag.diagnosis.transfers import TransferObservation
from gitnetdiag.errors import GitnetdiagError, NetworkError, NothingMeasured, VerdictError
from gitnetdiag.outcomes import MEASURED_OUTCOMES, REFUSALS, FailureKind
from gitnetdiag.thresholds import MIN_RATE_BYTES, MIN_RATE_SIZE

MEASURED_FAILURE_KINDS = frozenset({"hung", "timeout", "reset"})
"""Failed transfers that stalled or were cut on the wire: beside a transfer of the same
protocol that gave a rate, the evidence of a ranked culprit (else ``push-stalled``)."""

EXPLAINED_BY: dict[str, frozenset[FailureKind]] = {
    "firewall-reset": frozenset({FailureKind.RESET, *REFUSALS}),
    "ssh-maxstartups": frozenset({FailureKind.RESET, *REFUSALS}),
    "listen-backlog-overflow": frozenset({FailureKind.RESET, *REFUSALS}),
    "edge-backend-errors": frozenset({FailureKind.HTTP_STATUS}),
    "edge-no-backend": frozenset({FailureKind.HTTP_STATUS, FailureKind.SERVER_ERROR,
                                  FailureKind.OTHER}),
    "h2-frame-settings": frozenset({FailureKind.RESET, FailureKind.OTHER}),
    "request-body-limit": frozenset({FailureKind.HTTP_STATUS, FailureKind.RESET,
                                     FailureKind.OTHER}),
    "streamed-body-refused": frozenset({FailureKind.HTTP_STATUS, FailureKind.RESET,
                                        FailureKind.OTHER}),
    # a clone's pack request answered 504 by the edge is an HTTP status
    "edge-idle-timeout": frozenset({FailureKind.RESET, FailureKind.OTHER,
                                    FailureKind.TIMEOUT, FailureKind.HTTP_STATUS}),
    "path-mtu-blackhole": frozenset({FailureKind.HUNG, FailureKind.TIMEOUT}),
    "client-http-stack": frozenset({FailureKind.HUNG, FailureKind.TIMEOUT}),
    "h2-flow-control-window": frozenset({FailureKind.HUNG}),
    "edge-response-buffering": frozenset({FailureKind.HUNG, FailureKind.TIMEOUT}),
    "path-idle-timeout": frozenset({FailureKind.HUNG, FailureKind.TIMEOUT}),
    "path-unreachable": frozenset({FailureKind.UNREACHABLE, FailureKind.TLS}),
    "proxy-refused-tunnel": frozenset({FailureKind.HTTP_STATUS, FailureKind.OTHER,
                                       FailureKind.AUTH, FailureKind.REFUSED,
                                       FailureKind.SERVER_ERROR}),
    "server-pack-generation": frozenset({FailureKind.HUNG}),  # its CLONE_CLAIMS only
}
"""The one table of culprits whose evidence is a failed request, connection or stalled
transfer, with the failure kinds they explain (either direction): a protocol whose every
transfer failed is explained by the first ranked culprit listed here for all its kinds; a
culprit not listed explains no failure. A new failure culprit adds its line here."""

PROTOCOL_SPECIFIC: dict[str, str] = {
    "h2-flow-control-window": "h2",
    "h2-frame-settings": "h2",
    "ssh-channel-window": "ssh",
}
"""Culprits that live in one protocol's flow control. When that protocol's pushes all
stalled and another protocol's stalled the same way, the stall is common to both (a slow
hook, the server) and is no evidence for the one-protocol culprit."""

EXPLAINS_ONLY_ON: dict[str, frozenset[str]] = {
    **{culprit: frozenset({name}) for culprit, name in PROTOCOL_SPECIFIC.items()},
    "client-http-stack": frozenset({"h1", "h2"}),
    "edge-response-buffering": frozenset({"h1", "h2"}),
}
"""Culprits of :data:`EXPLAINED_BY` that live in some protocols only: they explain those
protocols' failures, never another's (an HTTP/2 window does not stall an SSH push)."""

CLONE_CLAIMS: dict[str, Callable[[TransferObservation], bool]] = {
    "server-pack-generation": lambda clone: clone.cut_while_preparing,
}
"""Culprits that explain a failed clone only when it is theirs (``server-pack-generation``: a
clone stopped while the server still prepared its pack, never one stalled mid-pack)."""

PUSH_CLAIMS: dict[str, Callable[[PushObservation], bool]] = {
    "client-http-stack": lambda push: push.body_spoiled,
}
"""Culprits that explain a failed push of any kind when it is theirs (``client-http-stack``:
a push whose client sent a pack that fails its own trailer, whatever the server or an edge
then answered, a 502 as well as a reset)."""

STALL_KINDS = frozenset({"hung", "timeout"})
"""Failure kinds of a push that stopped making progress."""

_IGNORED_STAGES = frozenset({"cleanup", "push", "fetch"})
"""Run errors judged elsewhere: a leftover branch (listed after the verdict) and a partial
clone left behind (``cleanup``), a transfer's own failure (``push``, ``fetch``: judged from
the transfers)."""
LEFTOVER_REFERENCE = "probe-ref-leftover"
"""A throwaway branch still on the server: listed with its remove command in every report."""
_LEFTOVER_HINT = "remove it with the command in the message once the server is idle"

NO_DATA_REFERENCE = "push-sent-no-data"
"""The run error of a push that sent (almost) nothing: no rate, and no failure either."""

UNEXPLAINED_FAILURES = frozenset({"push-failures-unexplained", "fetch-failures-unexplained",
                                  "burst-failures-unexplained"})
"""References of failed operations (pushes, burst connections) that nothing ranked explains."""

_GENERIC_HINT = "see the run's manifest.json errors and the push's stderr file"


HintOf = Callable[[FailureKind | None, str], str]
"""The hint of a failed clone from its kind and git's words (the pipeline passes the
catalogue's, :func:`gitnetdiag.rundir.failures.failure_hint` for a download)."""


def _no_hint(kind: FailureKind | None, message: str) -> str:
    return ""


@dataclass(frozen=True, kw_only=True)
class Judgement:
    """The verdict and what it rests on."""

    verdict: Verdict
    """See :data:`gitnetdiag.diagnosis.model.Verdict`."""
    requested: tuple[str, ...]
    """Protocols asked for."""
    measured: tuple[str, ...]
    """Protocols with a measured push."""
    failures: tuple[MeasurementFailure, ...]
    """What could not be measured."""
    failing: tuple[str, ...] = ()
    """Requested protocols whose every transfer failed (:func:`failing_protocols`): each
    fails the run, its failures explained by a culprit or not."""


def gives_rate(push: PushObservation) -> bool:
    """A completed push whose duration is a rate: positive, finite, above the floor."""
    return (push.ok and math.isfinite(push.duration_s) and push.duration_s > 0
            and push.bytes >= MIN_RATE_BYTES)


def is_measured(p: ProtocolObservation | None) -> bool:
    """Whether a protocol's pushes measured a rate (see the module docstring); a bare
    capture's ledgers or metrics without a push are a measurement too."""
    if p is None:
        return False
    if not p.pushes:
        return p.capture is not None or p.h2_ledger is not None or p.ssh_ledger is not None
    return any(gives_rate(push) for push in p.pushes)


def _no_data(obs: Observations, name: str) -> bool:
    """The protocol has a push that sent (almost) nothing (the server had the objects)."""
    return any(p.stage == "push" and p.protocol == name and p.reference == NO_DATA_REFERENCE
               for p in obs.problems)


def _judged(pushes: Sequence[PushObservation], no_data: bool = False) -> list[PushObservation]:
    """The transfers that count for or against the path: all but those interrupted by the
    user and, ``no_data``, a push that sent nothing without a failure kind of its own."""
    return [push for push in pushes if push.error_kind != FailureKind.INTERRUPTED
            and not (no_data and not push.ok
                     and push.error_kind in (None, FailureKind.OTHER))]


def judged_transfers(obs: Observations) -> dict[str, list[PushObservation]]:
    """Each protocol's transfers as the verdict weighs them, either direction (a clone as
    a push, :func:`_as_push`), the interrupted ones and the pushes that sent no data left
    out (:func:`_judged`); a protocol with transfers is a key even when none is left."""
    if obs.run.transfer == "download":
        return {name: _judged([_as_push(t) for t in obs.transfers
                               if t.protocol == name and t.outcome != "interrupted"])
                for name in PROTOCOL_ORDER if any(t.protocol == name for t in obs.transfers)}
    return {name: _judged(p.pushes, _no_data(obs, name)) for name, p in obs.protocols.items()}


def failing_protocols(obs: Observations, requested: Sequence[str]) -> tuple[str, ...]:
    """The requested protocols whose every transfer failed, a stall included (either
    direction; interrupted transfers and pushes the server already had are left out)."""
    transfers = judged_transfers(obs)
    return tuple(name for name in requested if transfers.get(name)
                 and not any(push.ok for push in transfers[name]))


def all_stalled(obs: Observations) -> frozenset[str]:
    """Protocols whose every push stalled, when two or more did (else empty): a stall
    common to several protocols is not one protocol's flow control."""
    stalled = frozenset(name for name, p in obs.protocols.items()
                        if p.pushes and all(not push.ok and push.error_kind in STALL_KINDS
                                            for push in p.pushes))
    return stalled if len(stalled) > 1 else frozenset()


def supported(obs: Observations, finding: Finding) -> bool:
    """False for a one-protocol culprit whose protocol stalled like another one did."""
    return PROTOCOL_SPECIFIC.get(finding.id) not in all_stalled(obs)


def _too_small(name: str, stage: str, moved: str, hint: str) -> MeasurementFailure:
    """A protocol whose transfers finished too small to time, ``moved`` saying how much
    the largest moved (``the push moved 900``)."""
    return MeasurementFailure(
        protocol=name, stage=stage, reference="too-small", kind=None,
        message=f"{PROTOCOL_LABELS.get(name, name)}: {moved} B, too few to give a rate (under "
        f"{MIN_RATE_BYTES} B, three round trips of TCP slow start)", hint=hint)


def _push_failures(obs: Observations, name: str,
                   explained_by: str | None) -> list[MeasurementFailure]:
    """Why a requested protocol measured nothing: the run's errors of its pushes (each
    once), else its first failed push, else too few bytes, else no push at all; each
    failure ``explained_by`` that culprit (None: by none)."""
    return [replace(f, explained_by=explained_by)
            for f in _push_problems(obs, name, stall_hint=explained_by is None)]


def _push_problems(obs: Observations, name: str, *,
                   stall_hint: bool) -> list[MeasurementFailure]:
    """:func:`_push_failures`' items, a stall hinted at as an unexplained one
    (``stall_hint``: what the run's evidence says to do, over the probe's own hint) or
    generically."""
    problems: dict[tuple[str, str], RunProblem] = {}
    for problem in obs.problems:
        if problem.stage == "push" and problem.protocol == name:
            problems.setdefault((problem.reference, problem.message), problem)
    if problems:
        return [MeasurementFailure(
            protocol=name, stage="push", reference=p.reference, kind=p.kind,
            message=p.message, hint=_stall_hint(obs, name) if stall_hint and p.kind in STALL_KINDS
            else p.hint or _GENERIC_HINT) for p in problems.values()]
    p = obs.protocols.get(name)
    failed = [push for push in (p.pushes if p else ()) if not push.ok]
    label = PROTOCOL_LABELS.get(name, name)
    done = [push for push in (p.pushes if p else ()) if push.ok]
    if failed:
        first = failed[0]
        return [MeasurementFailure(
            protocol=name, stage="push", reference="push-failed", kind=first.error_kind,
            message=f"{label}: {first.error_message or first.error_kind or 'push failed'}",
            hint=_stall_hint(obs, name) if stall_hint and first.error_kind in STALL_KINDS
            else _GENERIC_HINT,
        )]
    if any(push.bytes < MIN_RATE_BYTES for push in done):
        return [_too_small(name, "push", f"the push moved {max(push.bytes for push in done)}",
                           f"push a larger pack: --size {MIN_RATE_SIZE} or more (with --repo, a "
                           f"repository whose HEAD packs to {MIN_RATE_SIZE} or more, or leave "
                           "--repo out)")]
    if done:
        return [MeasurementFailure(
            protocol=name, stage="push", reference="not-measured", kind=None,
            message=f"{label}: the push has no valid duration ({done[0].duration_s} s)",
            hint=_GENERIC_HINT)]
    return [MeasurementFailure(
        protocol=name, stage="push", reference="not-measured", kind=None,
        message=f"{label}: no push was made", hint=_GENERIC_HINT,
    )]


def _unexplained_stalls(obs: Observations, name: str) -> list[MeasurementFailure]:
    """A push that hung is evidence; with no culprit to show for it the run is not healthy."""
    # Only pushes cut on the wire stalled; one that sent nothing or was interrupted did not.
    stalled = [push for push in obs.protocols[name].pushes
               if not push.ok and push.error_kind in MEASURED_FAILURE_KINDS]
    if not stalled:
        return []
    label = PROTOCOL_LABELS.get(name, name)
    total = len(obs.protocols[name].pushes)
    detail = f" ({stalled[0].error_message})" if stalled[0].error_message else ""
    return [MeasurementFailure(
        protocol=name, stage="push", reference="push-stalled", kind=stalled[0].error_kind,
        message=f"{label}: {len(stalled)} of {total} push(es) {stalled[0].error_kind or 'failed'}"
        f"{detail}; no culprit explains it",
        hint=_stall_hint(obs, name),
    )]


def _stall_hint(obs: Observations, name: str) -> str:
    """What to do about an unexplained stall, given the evidence the run already has."""
    common = all_stalled(obs)
    if (path := idle_path_hint(obs)) is not None:
        return path
    if name in common:
        labels = " and ".join(PROTOCOL_LABELS.get(n, n) for n in PROTOCOL_ORDER if n in common)
        return (f"{labels} stalled alike, so the cause is common to them, most likely the "
                "server (a slow pre-receive hook, receive-pack): run with a --timeout above "
                "the server's time, and add 'gitnetdiag host' evidence with --host-report")
    if (kept := idle_kept_hint(obs)) is not None:
        return kept
    p = obs.protocols[name]
    ledger_wanted = name in ("h2", "ssh")
    has_ledger = p.h2_ledger is not None or p.ssh_ledger is not None
    if p.capture is not None and (has_ledger or not ledger_wanted):
        return ("the capture and ledgers show no known culprit: read the push's stderr and "
                "trace files in the run directory, and the server's logs for that time")
    return ("measure with packet capture (root) and the native probes (--native, --ca-file, "
            "--ssh-key) so the stall can be attributed")


def _unexplained_push_failures(obs: Observations, name: str) -> list[MeasurementFailure]:
    """Pushes of a measured protocol that failed (refused, auth, an HTTP status, ...) while
    another push of it gave a rate: with no culprit ranked, the run is not healthy."""
    pushes = obs.protocols[name].pushes
    failed = [push for push in _judged(pushes, _no_data(obs, name)) if not push.ok
              and push.error_kind not in MEASURED_FAILURE_KINDS]
    if not failed:
        return []
    label = PROTOCOL_LABELS.get(name, name)
    first = failed[0]
    return [MeasurementFailure(
        protocol=name, stage="push", reference="push-failures-unexplained",
        kind=first.error_kind,
        message=f"{label}: {len(failed)} of {len(pushes)} push(es) failed "
        f"({first.error_message or first.error_kind or 'failed'}); no culprit explains it",
        hint=_GENERIC_HINT)]


def unexplained_bursts(obs: Observations) -> list[MeasurementFailure]:
    """Burst connections that failed with nothing ranked: a measurement of the server's
    connection handling that no culprit accounts for, so the run is not healthy."""
    items = []
    for burst in obs.bursts:
        if not burst.failed:
            continue
        kinds = sorted(burst.failed_by_kind.items(), key=lambda item: -item[1])
        text = ", ".join(f"{kind} {count}" for kind, count in kinds)
        label = PROTOCOL_LABELS.get(burst.protocol, burst.protocol)
        items.append(MeasurementFailure(
            protocol=burst.protocol, stage="burst", reference="burst-failures-unexplained",
            kind=kinds[0][0],
            message=f"{burst.failed} of {burst.concurrency} concurrent {label} connections "
            f"failed ({text}); no culprit explains them",
            hint="add the server's evidence with --host-report (a 'gitnetdiag host --json' "
            "taken on the server during the run) so its listen backlog and drop counters "
            "can be read, and see the burst's error messages in the run directory"))
    return items


def _has_tcp_evidence(obs: Observations, name: str) -> bool:
    """A capture or TCP_INFO of the protocol's transfers: a push's (its capture metrics),
    any clone's (its capture, its TCP_INFO, the server's socket)."""
    if obs.run.transfer == "download":
        return any(t.capture is not None or t.tcp is not None or t.sender is not None
                   for t in obs.transfers if t.protocol == name)
    return obs.protocols[name].capture is not None


def _missing_tcp_evidence(obs: Observations, measured: Sequence[str]) -> list[MeasurementFailure]:
    """Without a capture or TCP_INFO a TCP window clamp or loss cannot be seen: a run with
    nothing ranked is then not healthy, it lacks the evidence that would rank them."""
    pushed = [name for name in measured if obs.protocols[name].pushes]
    if not pushed or any(_has_tcp_evidence(obs, name) for name in pushed):
        return []
    labels = ", ".join(PROTOCOL_LABELS.get(name, name) for name in pushed)
    transfers = "clones" if obs.run.transfer == "download" else "pushes"
    return [MeasurementFailure(
        protocol=None, stage="tcp-evidence", reference="no-tcp-evidence", kind=None,
        message=f"no TCP evidence for {labels}: no packet capture and no TCP_INFO samples",
        hint="run as root with tcpdump for a capture, or where 'ss' (iproute2) is installed "
        f"so the kernel's TCP_INFO of the {transfers} is sampled",
    )]


def explains(finding: Finding, protocol: str, kinds: Collection[FailureKind]) -> bool:
    """Whether ``finding``'s culprit explains failures of these kinds on ``protocol``
    (:data:`EXPLAINED_BY`, :data:`EXPLAINS_ONLY_ON`)."""
    return (bool(kinds) and set(kinds) <= EXPLAINED_BY.get(finding.id, frozenset())
            and protocol in EXPLAINS_ONLY_ON.get(finding.id, frozenset({protocol})))


def _explains_pushes(finding: Finding, protocol: str,
                     pushes: Sequence[PushObservation]) -> bool:
    """Whether ``finding`` explains every failed push of ``protocol``: each one it claims
    (:data:`PUSH_CLAIMS`), and the kinds of the rest (:func:`explains`)."""
    failed = [push for push in pushes if not push.ok]
    claims = PUSH_CLAIMS.get(finding.id)
    rest = [push for push in failed if claims is None or not claims(push)]
    if failed and not rest:
        return protocol in EXPLAINS_ONLY_ON.get(finding.id, frozenset({protocol}))
    return explains(finding, protocol, {push.error_kind or FailureKind.OTHER for push in rest})


def _explaining(protocol: str, pushes: Sequence[PushObservation], findings: Sequence[Finding],
                clones: Sequence[TransferObservation] = ()) -> str | None:
    """The first ranked culprit whose evidence is failures of every kind these transfers
    of ``protocol`` failed by (:func:`judged_transfers`: an interruption is none), and, of
    a download, that claims every failed clone of them (:data:`CLONE_CLAIMS`)."""
    failed = [c for c in clones if c.outcome not in (*MEASURED_OUTCOMES, "interrupted")]
    return next((f.id for f in findings if _explains_pushes(f, protocol, pushes)
                 and (f.id not in CLONE_CLAIMS
                      or (bool(failed) and all(map(CLONE_CLAIMS[f.id], failed))))), None)


def judge(obs: Observations, findings: Sequence[Finding], *,
          hint_of: HintOf = _no_hint) -> Judgement:
    """The verdict of one run given its kept (ranked) findings, either direction: an
    upload's pushes (``obs.protocols``) or a download's clones (``obs.transfers``, each
    judged as a push, their failures told of clones, ``hint_of`` the hint of a failed one)."""
    download = obs.run.transfer == "download"
    clones = {n: [t for t in obs.transfers if t.protocol == n] for n in PROTOCOL_ORDER}
    pushes = judged_transfers(obs)
    gave = ({n for n in PROTOCOL_ORDER if any(map(_clone_measured, clones[n]))} if download
            else {n for n, p in obs.protocols.items() if is_measured(p)})
    observed = tuple(name for name in PROTOCOL_ORDER if name in pushes)
    requested = tuple(name for name in PROTOCOL_ORDER
                      if name in (obs.run.requested_protocols or observed))
    failing = failing_protocols(obs, requested)
    # The protocols of clones not requested are not judged; those of pushes are.
    measured = tuple(name for name in (requested if download else observed)
                     if name in gave and name not in failing)
    failures: list[MeasurementFailure] = []
    for name in requested:
        if name in measured:
            continue
        # A clone's failure is explained only when the protocol fails.
        explained_by = (_explaining(name, pushes.get(name, ()), findings, clones[name])
                        if name in failing or not download else None)
        failures += (_clones_not_measured(name, clones[name], explained_by, hint_of)
                     if download else _push_failures(obs, name, explained_by))
    if download:
        failures += [f for name in measured for f in _clones_in_measured(clones[name], findings,
                                                                         hint_of)]
    elif not findings:
        failures += [f for name in measured for f in _unexplained_stalls(obs, name)]
        failures += [f for name in measured for f in _unexplained_push_failures(obs, name)]
    if not findings:
        failures += unexplained_bursts(obs)
    other = _run_failures(obs)
    tcp = [] if findings else _missing_tcp_evidence(obs, measured)
    # A download's missing evidence after the run's own errors, which name its cause.
    failures += [*other, *tcp] if download else [*tcp, *other]
    verdict = _verdict(measured, requested, failing, other, findings, failures)
    # After the verdict: a branch left behind measured nothing wrong, but the user must act.
    return Judgement(verdict=verdict, requested=requested, measured=measured,
                     failures=(*failures, *_leftovers(obs)), failing=failing)


def _verdict(measured: Sequence[str], requested: Sequence[str], failing: Sequence[str],
             other: Sequence[MeasurementFailure], findings: Sequence[Finding],
             failures: Sequence[MeasurementFailure]) -> Verdict:
    """The rule of the module doc, either direction."""
    if failing or (not measured and (requested or other)):
        return "failed"
    if any(name not in measured for name in requested):
        return "inconclusive"
    if findings:
        return "degraded"
    if any(f.explained_by is None for f in failures):
        return "inconclusive"
    return "healthy"


_LEFTOVER_HINTS = {LEFTOVER_REFERENCE: _LEFTOVER_HINT,
                   "cleanup-leftover": "remove it with git push --delete"}
"""The run error of a throwaway branch left on the server (a push's probe branch, a
``--fetch-seed`` branch) and what to do when the run gave no command."""


def _run_failures(obs: Observations) -> list[MeasurementFailure]:
    """The run's problems of other steps (a native probe, a capture, the set-up, the seed's
    push, a run that never finished)."""
    hint = _FETCH_HINT if obs.run.transfer == "download" else _GENERIC_HINT
    return [MeasurementFailure(protocol=p.protocol, stage=p.stage, reference=p.reference,
                               kind=p.kind, message=p.message, hint=p.hint or hint)
            for p in obs.problems if p.stage not in _IGNORED_STAGES]


def _leftovers(obs: Observations) -> list[MeasurementFailure]:
    return [MeasurementFailure(protocol=p.protocol, stage=p.stage, reference=LEFTOVER_REFERENCE,
                               kind=p.kind, message=p.message,
                               hint=p.hint or _LEFTOVER_HINTS[p.reference])
            for p in obs.problems if p.stage == "cleanup" and p.reference in _LEFTOVER_HINTS]


# The download direction: one clone each in ``obs.transfers``.

_CLONE_STALL_HINT = ("a clone that stops moving with nothing ranked: rerun as root so the clone is "
               "captured, and read the server's logs for that time")
_FETCH_HINT = ("see the clone's stderr file in the run directory and the run's errors in "
                 "fetch.json")


def _as_push(obs: TransferObservation) -> PushObservation:
    """A clone as the verdict's push: one that finished or was bounded completed (whether it
    measured is :func:`_clone_measured`'s), else how it failed (a stall as a hung push)."""
    if obs.outcome in MEASURED_OUTCOMES:
        return PushObservation(duration_s=obs.wall_s, bytes=obs.moved_bytes,
                          moved_bytes=obs.moved_bytes)
    return as_push_result(obs)


def _clone_measured(obs: TransferObservation) -> bool:
    """A clone that gave a rate: finished or bounded with enough bytes to give one."""
    return obs.outcome in MEASURED_OUTCOMES and obs.moved_bytes >= MIN_RATE_BYTES


def _clone_failure(obs: TransferObservation, reference: str, explained_by: str | None,
                   hint_of: HintOf) -> MeasurementFailure:
    """A clone that failed, with the hint of its kind and of git's words."""
    transfer = as_push_result(obs)
    label = PROTOCOL_LABELS.get(obs.protocol, obs.protocol)
    return MeasurementFailure(
        protocol=obs.protocol, stage="fetch", reference=reference, kind=transfer.error_kind,
        message=f"{label}: clone #{obs.repeat} {obs.outcome} ({transfer.error_message})"
        + ("" if explained_by else "; no culprit explains it"),
        hint=hint_of(transfer.error_kind, transfer.error_message) or _FETCH_HINT,
        explained_by=explained_by)


def _clones_not_measured(name: str, clones: Sequence[TransferObservation], explained_by: str | None,
                  hint_of: HintOf) -> list[MeasurementFailure]:
    """Why a requested protocol measured nothing: each failed clone, else too few bytes,
    else no clone at all."""
    failed = [obs for obs in clones if obs.outcome not in MEASURED_OUTCOMES
              and obs.outcome != "interrupted"]
    if failed:
        return [_clone_failure(obs, "fetch-failed", explained_by, hint_of) for obs in failed]
    done = [obs for obs in clones if obs.outcome in MEASURED_OUTCOMES]
    if done:
        largest = max(obs.moved_bytes for obs in done)
        empty = ("an empty repository has nothing to fetch, and a tiny one too little to time: "
                 if largest == 0 else "")
        return [_too_small(name, "fetch", f"the clone received {largest}",
                           f"{empty}add --fetch-seed 1MiB (or more) to clone a throwaway branch "
                           "of generated data (needs write access), or fetch a larger repository")]
    label = PROTOCOL_LABELS.get(name, name)
    return [MeasurementFailure(protocol=name, stage="fetch", reference="not-measured",
                               kind=None, message=f"{label}: no clone was made",
                               hint=_FETCH_HINT)]


def _clones_in_measured(clones: Sequence[TransferObservation], findings: Sequence[Finding],
                 hint_of: HintOf) -> list[MeasurementFailure]:
    """The stalled and failed clones of a measured protocol: a stall is the evidence of a
    ranked culprit (:func:`_stall_culprit`); a failed clone only of one whose evidence is
    failed connections. With nothing ranked they leave the run inconclusive (the push
    verdict's rule)."""
    items = []
    for obs in clones:
        push = _as_push(obs)
        kind = push.error_kind
        if kind is None or kind == FailureKind.INTERRUPTED:
            continue
        if kind in MEASURED_FAILURE_KINDS - {FailureKind.RESET}:
            items.append(_clone_failure(obs, "fetch-stalled", _stall_culprit(obs, findings),
                                        lambda kind, message: _CLONE_STALL_HINT))
        else:
            items.append(_clone_failure(obs, "fetch-failures-unexplained",
                                        _explaining(obs.protocol, [push], findings, [obs]),
                                        hint_of))
    return items


def _stall_culprit(clone: TransferObservation, findings: Sequence[Finding]) -> str | None:
    """The first ranked culprit that claims the stalled clone, else the first that claims
    no clone in particular (:data:`CLONE_CLAIMS`)."""
    return next((f.id for f in findings if f.id in CLONE_CLAIMS and CLONE_CLAIMS[f.id](clone)),
                next((f.id for f in findings if f.id not in CLONE_CLAIMS), None))


VERDICT_ORDER: tuple[Verdict, ...] = ("healthy", "degraded", "inconclusive", "failed")
"""The verdicts from best to worst (the module doc's table, read upwards): of two runs
judged together, the later one's stands (:func:`worst_verdict`)."""


def worst_verdict(verdicts: Sequence[Verdict]) -> Verdict:
    """The worst of ``verdicts`` by :data:`VERDICT_ORDER` (``healthy`` of none)."""
    return max(verdicts, key=VERDICT_ORDER.index, default="healthy")


def verdict_error(verdict: Verdict, failures: Sequence[MeasurementFailure]
                  ) -> GitnetdiagError | None:
    """The error a command exits with after printing an inconclusive or failed diagnosis,
    or a healthy/degraded one that left a throwaway branch on the server."""
    if verdict not in ("inconclusive", "failed"):
        left = [f for f in failures if f.reference == LEFTOVER_REFERENCE]
        if not left:
            return None
        more = f" (+{len(left) - 1} more)" if len(left) > 1 else ""
        return NetworkError(f"{left[0].message}{more}", hint=left[0].hint,
                            reference=LEFTOVER_REFERENCE)
    blocking = [f for f in failures if f.explained_by is None] or list(failures)
    first = blocking[0] if blocking else None
    more = f" (+{len(blocking) - 1} more)" if len(blocking) > 1 else ""
    what = f"{first.reference}: {first.message}{more}" if first else "no measurement"
    cls = NothingMeasured if verdict == "failed" else VerdictError
    return cls(f"verdict {verdict}: {what}",
               hint=first.hint if first else "see the report's measurement failures")
