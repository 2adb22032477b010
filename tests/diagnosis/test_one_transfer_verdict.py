"""One verdict rule for both directions (ONE-TRANSFER.md "Where the copies disagree":
verdict, exit codes, hints): each case is the same transfers, once as pushes
(:func:`gitnetdiag.diagnosis.verdict.judge`) and once as clones
(the same :func:`~gitnetdiag.diagnosis.verdict.judge` on a download), with the same findings; both
must come out with the same verdict, the same failure references, and exit alike.

Issue 42: a requested protocol whose transfers all fail, a stall and a refusal alike, fails
the run whether a ranked culprit explains it or not (it was ``inconclusive`` unexplained,
and ``degraded`` when every transfer of a protocol stalled beside an unrelated culprit); its
headline names the cause or says "cause not identified".

Before the fetch verdict followed the push's rule: the refused SSH transfer explained by
firewall-reset was ``failed`` as pushes and ``degraded`` as clones; a stall nothing
explained was ``inconclusive`` and ``failed``; a run error of another step, a burst whose
connections failed, a branch left on the server and a run still ``running`` were ignored
by the fetch verdict; then a run without TCP evidence (no capture, no TCP_INFO) was
``healthy`` as clones and ``inconclusive`` as pushes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pytest

from gitnetdiag.diagnosis.headline import failure_headline
from gitnetdiag.diagnosis.model import Finding
from gitnetdiag.diagnosis.observations import (
    BurstResult,
    CaptureMetrics,
    Observations,
    ProtocolObservation,
    PushObservation,
    RunInfo,
    RunProblem,
)
from gitnetdiag.diagnosis.transfers import TransferObservation
from gitnetdiag.diagnosis.verdict import judge, verdict_error
from gitnetdiag.errors import ExitCode
from gitnetdiag.outcomes import FailureKind
from gitnetdiag.rundir.failures import unfinished
from tests.diagnosis.test_transfer_culprits import HEALTHY
from tests.diagnosis.transfer_cases import judgement

CAPTURE = CaptureMetrics(source="capture")
"""TCP evidence for a push (a clone's is its TCP_INFO summary, in ``HEALTHY``)."""
REFUSED_LINE = "ssh: connect to host 10.77.1.2 port 22: Connection refused"


@dataclass(frozen=True)
class Transfer:
    """One push or clone of a case, told once for both directions."""

    protocol: str
    how: str = "ok"
    """``ok``, ``refused``, ``stalled``, ``hung-empty`` (given up after 60 s, nothing
    moved), ``auth`` or ``tiny``."""


def _push(t: Transfer) -> PushObservation:
    if t.how == "ok":
        return PushObservation(duration_s=4.0, bytes=40_000_000)
    if t.how == "tiny":
        return PushObservation(duration_s=0.1, bytes=2_000)
    if t.how == "stalled":
        return PushObservation(duration_s=15.0, bytes=300_000, ok=False, error_kind=FailureKind.HUNG,
                          error_message="stalled")
    if t.how == "hung-empty":
        return PushObservation(duration_s=60.0, bytes=3_000_000, ok=False,
                          error_kind=FailureKind.HUNG, error_message="")
    kind = FailureKind.REFUSED if t.how == "refused" else FailureKind.AUTH
    line = REFUSED_LINE if t.how == "refused" else "Permission denied (publickey)."
    return PushObservation(duration_s=0.05, bytes=0, ok=False, error_kind=kind, error_message=line)


def _clone(t: Transfer, repeat: int) -> TransferObservation:
    clone = replace(HEALTHY, protocol=t.protocol, repeat=repeat)
    if t.how == "ok":
        return clone
    if t.how == "tiny":
        return replace(clone, outcome="ok", moved_bytes=2_000, rate_bytes_per_s=None)
    if t.how == "stalled":
        return replace(clone, outcome="stalled", moved_bytes=300_000, rate_bytes_per_s=None,
                       stopped="stall")
    if t.how == "hung-empty":
        return replace(clone, outcome="hung", moved_bytes=0, measured_s=0.0, wall_s=60.0,
                       rate_bytes_per_s=None, last_line="")
    kind = FailureKind.REFUSED if t.how == "refused" else FailureKind.AUTH
    line = REFUSED_LINE if t.how == "refused" else "Permission denied (publickey)."
    return replace(clone, outcome="failed", moved_bytes=0, measured_s=0.0, wall_s=0.05,
                   rate_bytes_per_s=None, tcp=None, failure_kind=kind, last_line=line)


def _finding(culprit: str) -> Finding:
    return Finding(id=culprit, title=culprit, score=0.8, cost_s=3.0,
                   summary=f"the evidence of {culprit}", evidence=(), fix="the fix")


@dataclass(frozen=True)
class Case:
    transfers: tuple[Transfer, ...]
    findings: tuple[str, ...]
    verdict: str
    references: frozenset[str]
    """References of the failures the verdict rests on (both directions name them alike;
    a direction's own word in brackets: ``{transfer}-failed``)."""
    exit_code: ExitCode | None
    bursts: tuple[BurstResult, ...] = ()
    problems: Callable[[str], tuple[RunProblem, ...]] = field(default=lambda record: ())
    headline: str = ""
    """How a failed run's headline opens (``{Transfers}``: ``pushes`` or ``clones``)."""
    headline_end: str = ""
    """How it ends (no culprit named: ``cause not identified.``)."""
    tcp: bool = True
    """TCP evidence recorded (a push's capture, a clone's TCP_INFO)."""


H1, SSH = Transfer("h1"), Transfer("ssh")
REFUSED = (H1, Transfer("ssh", "refused"), Transfer("ssh", "refused"))
UNIDENTIFIED = "): cause not identified."
BURST = BurstResult(protocol="h1", concurrency=20, ok=12,
                    failed_by_kind={FailureKind.RESET: 8})


def _leftover(record: str) -> tuple[RunProblem, ...]:
    reference = "probe-ref-leftover" if record == "manifest.json" else "cleanup-leftover"
    return (RunProblem(stage="cleanup", protocol="h1", reference=reference,
                       message="the throwaway branch gitnetdiag/probe-ab may be left",
                       hint="git push URL :refs/heads/gitnetdiag/probe-ab"),)


def _capture_failed(record: str) -> tuple[RunProblem, ...]:
    return (RunProblem(stage="capture", protocol="h1", reference="capture-failed",
                       message="tcpdump: permission denied", hint="run as root"),)


CASES: dict[str, Case] = {
    # The case: the same refused SSH transfers, explained by firewall-reset: failed.
    "refused-explained-by-firewall-reset": Case(
        REFUSED, ("firewall-reset",), "failed", frozenset({"{transfer}-failed"}),
        ExitCode.NOT_MEASURED, headline="SSH {transfers} fail (firewall-reset): "),
    # Issue 42: the same refusals with nothing to explain them fail the run all the same
    # (they were inconclusive); the headline says what was seen.
    "refused-unexplained": Case(
        REFUSED, (), "failed", frozenset({"{transfer}-failed"}), ExitCode.NOT_MEASURED,
        headline=f"SSH {{transfers}} fail (refused: {REFUSED_LINE}{UNIDENTIFIED}",
        headline_end=UNIDENTIFIED),
    "every-protocol-refused": Case(REFUSED[1:], (), "failed", frozenset({"{transfer}-failed"}),
                                   ExitCode.NOT_MEASURED, headline_end=UNIDENTIFIED),
    # Every SSH transfer stalled while HTTP/1.1 measured and loss ranked: SSH moved nothing
    # to the end, so the run failed (it was degraded); loss explains no hang, so the
    # headline names no cause.
    "every-transfer-of-a-protocol-stalled-beside-an-unrelated-culprit": Case(
        (H1, Transfer("ssh", "stalled")), ("packet-loss",), "failed",
        frozenset({"{transfer}-failed"}), ExitCode.NOT_MEASURED,
        headline="SSH {transfers} fail (hung after ", headline_end=UNIDENTIFIED),
    "every-transfer-of-a-protocol-stalled-explained": Case(
        (H1, Transfer("ssh", "stalled")), ("path-mtu-blackhole",), "failed",
        frozenset({"{transfer}-failed"}), ExitCode.NOT_MEASURED,
        headline="SSH {transfers} fail (path-mtu-blackhole): the evidence of path-mtu-blackhole"),
    # An HTTP/2 window explains an HTTP/2 hang, never an SSH one (EXPLAINS_ONLY_ON).
    "ssh-stall-beside-an-http2-window": Case(
        (H1, Transfer("ssh", "stalled")), ("h2-flow-control-window",), "failed",
        frozenset({"{transfer}-failed"}), ExitCode.NOT_MEASURED,
        headline="SSH {transfers} fail (hung after ", headline_end=UNIDENTIFIED),
    "stall-unexplained": Case((Transfer("ssh", "stalled"),), (), "failed",
                              frozenset({"{transfer}-failed"}), ExitCode.NOT_MEASURED,
                              headline="SSH {transfers} fail (hung after ",
                              headline_end=UNIDENTIFIED),
    # The dead path: every SYN dropped, every transfer hung with nothing moved. It
    # was "degraded, syn-drop costs 21 s", exit 0; syn-drop explains no hang.
    "every-transfer-hung-with-nothing-moved": Case(
        (Transfer("h1", "hung-empty"), Transfer("ssh", "hung-empty")), ("syn-drop",), "failed",
        frozenset({"{transfer}-failed"}), ExitCode.NOT_MEASURED,
        headline="HTTP/1.1 and SSH {transfers} fail (hung after 60 s", headline_end=UNIDENTIFIED),
    "one-of-two-failed-nothing-ranks": Case(
        (H1, Transfer("h1", "auth")), (), "inconclusive",
        frozenset({"{transfer}-failures-unexplained"}), ExitCode.INCONCLUSIVE),
    # Some but not all of a protocol's transfers failed and nothing explains them: the
    # protocol measured, the failure is a gap (unchanged by issue 42).
    "one-of-three-refused-nothing-ranks": Case(
        (H1, SSH, SSH, Transfer("ssh", "refused")), (), "inconclusive",
        frozenset({"{transfer}-failures-unexplained"}), ExitCode.INCONCLUSIVE),
    "too-small": Case((Transfer("h1", "tiny"),), (), "failed", frozenset({"too-small"}),
                      ExitCode.NOT_MEASURED),
    "burst-failures-unexplained": Case((H1,), (), "inconclusive",
                                       frozenset({"burst-failures-unexplained"}),
                                       ExitCode.INCONCLUSIVE, bursts=(BURST,)),
    "another-step-failed": Case((H1,), (), "inconclusive", frozenset({"capture-failed"}),
                                ExitCode.INCONCLUSIVE, problems=_capture_failed),
    "run-never-finished": Case(
        (H1,), (), "inconclusive", frozenset({"run-unfinished"}), ExitCode.INCONCLUSIVE,
        problems=lambda record: (RunProblem(**unfinished(record)),)),
    "branch-left-on-the-server": Case((H1,), (), "healthy", frozenset({"probe-ref-leftover"}),
                                      ExitCode.NETWORK, problems=_leftover),
    "clean": Case((H1, SSH), (), "healthy", frozenset(), None),
    # No capture and no TCP_INFO: a window clamp or loss could not be seen (the fetch
    # verdict said healthy before it took the push's rule).
    "no-tcp-evidence": Case((H1,), (), "inconclusive", frozenset({"no-tcp-evidence"}),
                            ExitCode.INCONCLUSIVE, tcp=False),
    "no-tcp-evidence-but-a-culprit-ranked": Case((H1,), ("path-latency",), "degraded",
                                                 frozenset(), None, tcp=False),
}


@dataclass(frozen=True)
class Verdicts:
    verdict: str
    references: frozenset[str]
    exit_code: ExitCode | None
    headline: str


def _as_pushes(case: Case) -> Verdicts:
    protocols: dict[str, list[PushObservation]] = {}
    for t in case.transfers:
        protocols.setdefault(t.protocol, []).append(_push(t))
    obs = Observations(
        run=RunInfo(requested_protocols=tuple(protocols)),
        protocols={name: ProtocolObservation(pushes=tuple(pushes),
                                             capture=CAPTURE if case.tcp else None)
                   for name, pushes in protocols.items()},
        bursts=case.bursts, problems=case.problems("manifest.json"))
    findings = [_finding(culprit) for culprit in case.findings]
    judgement = judge(obs, findings)
    error = verdict_error(judgement.verdict, judgement.failures)
    return Verdicts(judgement.verdict,
                    frozenset(f.reference.replace("push", "{transfer}")
                              for f in judgement.failures),
                    error.exit_code if error else None,
                    failure_headline(judgement, findings, obs) or "")


def _as_clones(case: Case) -> Verdicts:
    clones = [_clone(t, repeat) if case.tcp else replace(_clone(t, repeat), tcp=None)
              for repeat, t in enumerate(case.transfers, start=1)]
    judged = judgement(clones, [_finding(culprit) for culprit in case.findings],
                          bursts=case.bursts, problems=case.problems("fetch.json"))
    # Stalls and failures a ranked culprit covers are listed with it, as evidence.
    blocking = [f for f in judged.failures if f.explained_by is None
                or f.reference.endswith("-failed")]
    error = verdict_error(judged.verdict, judged.failures)
    return Verdicts(judged.verdict,
                    frozenset(f.reference.replace("fetch", "{transfer}") for f in blocking),
                    error.exit_code if error else None, judged.headline)


@pytest.mark.parametrize("direction", ["push", "fetch"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_same_transfers_get_the_same_verdict(name: str, direction: str) -> None:
    case = CASES[name]
    got = _as_pushes(case) if direction == "push" else _as_clones(case)
    assert (got.verdict, got.references, got.exit_code) == (
        case.verdict, case.references, case.exit_code)
    transfers = "pushes" if direction == "push" else "clones"
    if case.headline:
        assert got.headline.startswith(case.headline.format(transfers=transfers)), got.headline
    if case.headline_end:
        assert got.headline.endswith(case.headline_end), got.headline


def test_a_refused_clone_gets_the_hint_of_its_kind() -> None:
    """ONE-TRANSFER "hints": the clone's failure carries the catalogue's hint of its kind
    (:func:`failure_hint`, the push's), not one fixed line."""
    from gitnetdiag.rundir.failures import failure_hint

    def hint_of(kind: FailureKind | None, message: str) -> str:
        return failure_hint(kind or "other", message, transfer="download")

    judged = judgement([_clone(t, 1) for t in REFUSED[1:]], (), hint_of=hint_of)
    assert {f.hint for f in judged.failures} == {failure_hint("refused", REFUSED_LINE)}
    assert "nothing listens on that port" in judged.failures[0].hint
