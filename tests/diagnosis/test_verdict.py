"""The verdict rests on what was measured: a failed measurement is never healthy."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.observations import (
    CaptureMetrics,
    Observations,
    ProtocolObservation,
    PushObservation,
    RunProblem,
)
from gitnetdiag.diagnosis.verdict import is_measured, verdict_error
from gitnetdiag.errors import ExitCode
from tests.diagnosis import examples

AUTH = RunProblem(stage="push", protocol="h2", reference="auth-failed", kind="auth",
                  message="https://***@git.example.com/r.git: HTTP 401",
                  hint="check --ssh-key / the HTTP credentials for this remote")


def _failed(kind: str, message: str = "fatal: nope") -> ProtocolObservation:
    return ProtocolObservation(pushes=(
        PushObservation(duration_s=0.02, bytes=1_000_000, ok=False, error_kind=kind,  # type: ignore[arg-type]
                   error_message=message),))


def _with(obs: Observations, **protocols: ProtocolObservation) -> Observations:
    return replace(obs, protocols={**obs.protocols, **protocols})


def test_healthy_run_says_what_was_requested_and_measured() -> None:
    result = diagnose(examples.healthy())
    assert result.verdict == "healthy"
    assert result.requested_protocols == result.measured_protocols == ("h1", "h2", "ssh")
    assert result.measurement_failures == ()


def test_one_protocol_rejected_by_auth_fails_the_run() -> None:
    """HTTP/2 got 401 on its only push: the other two measured, nothing ranks. A requested
    protocol whose pushes all fail fails the run, explained or not (issue 42; it was
    inconclusive): the headline says what fails, what was seen, and that no culprit
    explains it."""
    obs = replace(_with(examples.healthy(), h2=_failed("auth", "HTTP 401")), problems=(AUTH,))
    result = diagnose(obs)
    assert result.verdict == "failed"
    assert result.measured_protocols == ("h1", "ssh")
    (failure,) = result.measurement_failures
    assert (failure.protocol, failure.reference) == ("h2", "auth-failed")
    assert failure.explained_by is None
    assert failure.hint == AUTH.hint
    assert result.headline == "HTTP/2 pushes fail (auth: HTTP 401): cause not identified."


def test_a_failing_protocol_fails_the_run_whatever_else_ranks() -> None:
    """SSH's pushes all failed by auth while HTTP/2's small window ranks: failed (it was
    inconclusive), and the headline is SSH's failure, not the unrelated HTTP/2 culprit,
    which stays in the ranking."""
    obs = replace(_with(examples.slow_h2_edge(), ssh=_failed("auth")), problems=())
    result = diagnose(obs)
    assert [f.id for f in result.findings] == ["h2-flow-control-window"]
    assert result.verdict == "failed"
    assert result.measurement_failures[0].reference == "push-failed"
    assert result.headline == "SSH pushes fail (auth: fatal: nope): cause not identified."


def test_nothing_measured_is_failed() -> None:
    obs = Observations(run=examples.healthy().run,
                       protocols={"h1": _failed("other", "unable to find remote helper for 'ftp'"),
                                  "h2": _failed("other", "unable to find remote helper for 'ftp'")})
    result = diagnose(obs)
    assert result.verdict == "failed"
    assert result.measured_protocols == ()
    assert [f.protocol for f in result.measurement_failures] == ["h1", "h2"]
    # Both failed alike: one sentence of what was seen (the catalogue's) for both.
    assert result.headline == ("HTTP/1.1 and HTTP/2 pushes fail (git said: unable to find "
                               "remote helper for 'ftp'): cause not identified.")


def test_requested_but_never_pushed_protocol_is_missing() -> None:
    """The manifest asked for SSH but no SSH push happened (the run stopped before it)."""
    base = examples.healthy()
    obs = replace(base, protocols={k: v for k, v in base.protocols.items() if k != "ssh"},
                  run=replace(base.run, requested_protocols=("h1", "h2", "ssh")))
    result = diagnose(obs)
    assert result.verdict == "inconclusive"
    assert [(f.protocol, f.reference) for f in result.measurement_failures] == [
        ("ssh", "not-measured")]


def test_setup_failure_before_any_push_is_failed() -> None:
    problem = RunProblem(stage="setup", reference="git-missing", message="git not found",
                         hint="install git")
    result = diagnose(Observations(problems=(problem,)))
    assert result.verdict == "failed"
    assert result.measurement_failures[0].hint == "install git"
    assert result.headline == "Nothing was measured: git-missing: git not found."


@pytest.mark.parametrize("kind", ["hung", "timeout", "reset"])
def test_a_stalled_push_is_no_measurement(kind: str) -> None:
    """A push that stalled or was cut gave no rate (issue 42: it was counted measured, so
    a protocol whose pushes all hung was never failed)."""
    assert not is_measured(_failed(kind))
    assert not is_measured(_failed("auth")) and not is_measured(_failed("refused"))
    assert is_measured(ProtocolObservation(capture=CaptureMetrics()))  # a bare capture
    assert not is_measured(None)


def test_hung_http2_fails_the_run_explained_by_its_window() -> None:
    """Every HTTP/2 push hung behind a small window: the protocol moved nothing to the end,
    so the run failed (it was degraded), the window named as the cause."""
    base = examples.slow_h2_edge()
    h2 = base.protocols["h2"]
    hung = tuple(replace(p, ok=False, error_kind="hung", error_message="") for p in h2.pushes)
    result = diagnose(_with(base, h2=replace(h2, pushes=hung)))
    assert result.verdict == "failed"
    assert result.measured_protocols == ("h1", "ssh")
    (failure,) = result.measurement_failures
    assert (failure.protocol, failure.kind, failure.explained_by) == (
        "h2", "hung", "h2-flow-control-window")
    assert result.headline.startswith("HTTP/2 pushes fail (h2-flow-control-window): ")
    error = verdict_error(result.verdict, result.measurement_failures)
    assert error is not None and error.exit_code == ExitCode.NOT_MEASURED


def test_a_stall_of_every_push_nothing_explains_fails_the_run() -> None:
    result = diagnose(_with(examples.healthy(), ssh=_failed("hung", "")))
    assert result.findings == ()
    assert result.verdict == "failed"
    assert [f.reference for f in result.measurement_failures] == ["push-failed"]
    assert result.headline == "SSH pushes fail (hung after 0 s): cause not identified."


def test_a_stall_beside_a_measured_push_nothing_explains_is_inconclusive() -> None:
    """One SSH push of four hung, nothing ranks: SSH measured, the stall unexplained."""
    ssh = examples.healthy().protocols["ssh"]
    stalled = replace(ssh, pushes=(*ssh.pushes, *_failed("hung", "").pushes))
    result = diagnose(_with(examples.healthy(), ssh=stalled))
    assert result.verdict == "inconclusive"
    assert [f.reference for f in result.measurement_failures] == ["push-stalled"]
    assert result.headline.startswith("A push stalled (push-stalled: SSH: 1 of 4 push(es) hung;")


def test_refusal_explained_by_a_ranked_firewall_reset_fails_the_run() -> None:
    """As in captures/firewall-reset: SSH refused, HTTP measured; the refusal is evidence,
    and a requested protocol that fails fails the run (issue 33), with a headline that
    says which pushes fail and why."""
    base = examples.healthy()
    refused = ProtocolObservation(
        pushes=(PushObservation(duration_s=0.02, bytes=1_000_000, ok=False, error_kind="refused",
                           error_message="Connection refused"),),
        capture=CaptureMetrics(source="capture ssh", resets_from_server=1))
    result = diagnose(_with(base, ssh=refused))
    assert [f.id for f in result.findings][:1] == ["firewall-reset"]
    assert result.verdict == "failed"
    assert result.headline.startswith("SSH pushes fail (firewall-reset): "), result.headline
    (failure,) = result.measurement_failures
    assert (failure.protocol, failure.explained_by) == ("ssh", "firewall-reset")


def test_failed_native_probe_blocks_healthy_but_not_degraded() -> None:
    native = RunProblem(stage="native", protocol="h2", reference="native-auth",
                        message="HTTP 401 on info/refs", hint="give credentials")
    healthy = diagnose(replace(examples.healthy(), problems=(native,)))
    assert healthy.verdict == "inconclusive"
    assert healthy.headline.startswith("Part of the evidence is missing (native-auth: ")
    degraded = diagnose(replace(examples.slow_h2_edge(), problems=(native,)))
    assert degraded.verdict == "degraded"
    assert [f.stage for f in degraded.measurement_failures] == ["native"]


def test_cleanup_errors_are_no_measurement_failure() -> None:
    cleanup = RunProblem(stage="cleanup", protocol="h1", reference="cleanup-failed",
                         message="could not delete")
    assert diagnose(replace(examples.healthy(), problems=(cleanup,))).verdict == "healthy"


def test_verdict_errors_carry_the_named_exit_codes() -> None:
    assert verdict_error("healthy", ()) is None and verdict_error("degraded", ()) is None
    native = RunProblem(stage="native", protocol="h2", reference="native-auth",
                        message="HTTP 401 on info/refs", hint="give credentials")
    result = diagnose(replace(examples.healthy(), problems=(native,)))
    error = verdict_error(result.verdict, result.measurement_failures)
    assert error is not None and error.exit_code == ExitCode.INCONCLUSIVE == 8
    assert error.one_line() == ("inconclusive: verdict inconclusive: native-auth: HTTP 401 on "
                                "info/refs (hint: give credentials)")
    obs = replace(_with(examples.healthy(), h2=_failed("auth", "HTTP 401")), problems=(AUTH,))
    result = diagnose(obs)
    error = verdict_error(result.verdict, result.measurement_failures)
    assert error is not None and error.exit_code == ExitCode.NOT_MEASURED
    assert error.one_line() == (
        "not-measured: verdict failed: auth-failed: https://***@git.example.com/r.git: "
        "HTTP 401 (hint: check --ssh-key / the HTTP credentials for this remote)")
    failed = diagnose(Observations(protocols={"h1": _failed("tls")}))
    error = verdict_error(failed.verdict, failed.measurement_failures)
    assert error is not None and error.reference == "not-measured"
    assert error.exit_code == ExitCode.NOT_MEASURED == 9


def test_old_observations_without_requested_protocols_still_judge() -> None:
    """observations.json written before this field: the observed protocols were the request."""
    data = examples.healthy().to_dict()
    del data["run"]["requested_protocols"]
    del data["problems"]
    result = diagnose(Observations.from_dict(data))
    assert result.verdict == "healthy" and result.requested_protocols == ("h1", "h2", "ssh")


def test_no_tcp_evidence_at_all_is_inconclusive_not_healthy() -> None:
    """Issue 13: no capture and no TCP_INFO hide a window clamp or loss; a run where nothing
    ranks then lacks evidence, it is not healthy."""
    healthy = examples.healthy()
    blind = replace(healthy, protocols={name: replace(p, capture=None, flight=None)
                                        for name, p in healthy.protocols.items()})
    result = diagnose(blind)
    assert result.verdict == "inconclusive"
    (failure,) = result.measurement_failures
    assert failure.reference == "no-tcp-evidence" and "TCP_INFO" in failure.message
    assert result.headline.startswith("Part of the evidence is missing (no-tcp-evidence")


def test_tcp_info_alone_is_enough_tcp_evidence_for_healthy() -> None:
    healthy = examples.healthy()
    kernel_only = replace(healthy, protocols={
        name: replace(p, capture=CaptureMetrics(source=f"TCP_INFO (ss -tin) {name} push 1",
                                                rwnd_limited_share=0.0,
                                                retransmission_rate=0.0), flight=None)
        for name, p in healthy.protocols.items()})
    assert diagnose(kernel_only).verdict == "healthy"
