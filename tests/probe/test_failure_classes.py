"""Failures named for what was seen (issue 23): git's stderr as it reads after each kind of
failure, and the clean-up that says only what it knows."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.assembly import as_push_result
from gitnetdiag.diagnosis.observations import (
    HostEvidence,
    Listener,
    Observations,
    PushObservation,
)
from gitnetdiag.diagnosis.transfers import TransferObservation
from gitnetdiag.pipeline._run import push_result
from gitnetdiag.probe.cleanup import Aftermath, RefCleanup, push_aftermath, remove_probe_ref
from gitnetdiag.probe.gitpush import (
    FailureKind,
    GitRun,
    Transport,
    classify_git_stderr,
    failure_line,
    http_status_of,
)
from gitnetdiag.rundir import PushRecord
from gitnetdiag.vocabulary import TransportKind
from tests.diagnosis.culprits.crafted import MB, cap, proto, run

RPC_308 = ("Writing objects:  33% (1/3)\rerror: RPC failed; HTTP 308 curl 22 The requested URL "
           "returned error: 308\nsend-pack: unexpected disconnect while reading sideband packet\n"
           "fatal: the remote end hung up unexpectedly\nEverything up-to-date\n")
PROBE_502 = ("error: RPC failed; HTTP 502 curl 22 The requested URL returned error: 502\n"
             "fatal: the remote end hung up unexpectedly\n")
INFO_REFS_503 = ("fatal: unable to access 'https://h/r.git/': The requested URL returned error: "
                 "503\n")
TLS = ("fatal: unable to access 'https://h/r.git/': SSL certificate problem: unable to get "
       "local issuer certificate\n")
REFUSED = ("fatal: unable to access 'https://h/r.git/': Failed to connect to h port 8443 after "
           "51 ms: Couldn't connect to server\n")
SSH_REFUSED = "ssh: connect to host 10.0.0.2 port 22: Connection refused\nfatal: Could not read"
TIMEOUT = ("fatal: unable to access 'https://h/r.git/': Failed to connect to h port 443 after "
           "130001 ms: Connection timed out\n")
RESET = ("error: RPC failed; curl 56 Recv failure: Connection reset by peer\n"
         "fatal: the remote end hung up unexpectedly\n")


@pytest.mark.parametrize(("stderr", "kind", "status"), [
    (RPC_308, FailureKind.HTTP_STATUS, 308),
    (PROBE_502, FailureKind.HTTP_STATUS, 502),
    (INFO_REFS_503, FailureKind.HTTP_STATUS, 503),
    ("error: RPC failed; HTTP 401 curl 22 The requested URL returned error: 401\n",
     FailureKind.AUTH, 401),
    (TLS, FailureKind.TLS, None),
    (REFUSED, FailureKind.REFUSED, None),
    (SSH_REFUSED, FailureKind.REFUSED, None),
    (TIMEOUT, FailureKind.TIMEOUT, None),
    (RESET, FailureKind.RESET, None),
])
def test_git_stderr_is_classified_by_what_was_seen(stderr: str, kind: FailureKind,
                                                   status: int | None) -> None:
    """A status beats the "hung up" that follows it; a reset is only curl's ECONNRESET."""
    assert classify_git_stderr(stderr) is kind
    assert http_status_of(stderr) == status


def test_the_status_line_is_the_reason_given() -> None:
    line = failure_line(RPC_308)
    assert line.startswith("error: RPC failed; HTTP 308"), line


def _record(kind: str, last_line: str) -> PushRecord:
    return PushRecord(protocol="h1", repeat=1, branch="gitnetdiag/probe-x", started_at="",
                      outcome="failed", failure_kind=kind, last_line=last_line, wall_s=0.3,
                      pack_bytes=MB, rate_bytes_per_s=None, http_version=None, alpn=None,
                      post_s=None, curl_last_info=None, phases=None, capture=None)


@pytest.mark.parametrize("outcome", ["stalled", "hung", "failed"])
def test_a_failure_without_a_kind_gets_the_same_kind_in_both_directions(outcome: str) -> None:
    """ONE-TRANSFER "Outcomes": a transfer that stopped moving and was recorded without a
    failure kind (a push of an older run, a clone) is ``hung`` whichever end sent, and
    any other unclassified failure is ``other``, for the shared detectors alike."""
    pushed = push_result(replace(_record("", "fatal: the remote end hung up"),
                                 outcome=outcome, failure_kind=None))
    cloned = as_push_result(TransferObservation(
        protocol="h1", repeat=1, outcome=outcome, moved_bytes=MB // 4, measured_s=0.0,
        rate_bytes_per_s=None, wall_s=30.0, tcp=None, path_rtt_s=None, phases=None))
    expected = "other" if outcome == "failed" else "hung"
    assert (pushed.ok, cloned.ok) == (False, False)
    assert pushed.error_kind == cloned.error_kind == expected


def test_an_http_status_is_never_a_firewall_reset() -> None:
    """The bad-pool case: statuses, RSTs from the edge closing on an unread body, no filter."""
    pushed = push_result(_record("http-status", failure_line(RPC_308)))
    assert pushed.error_kind == "http-status"
    h1 = proto(3.0, capture=cap(resets_from_server=2))
    h1 = replace(h1, pushes=(h1.pushes[0], pushed, pushed))
    ids = [f.id for f in diagnose(Observations(run=run(), protocols={"h1": h1})).findings]
    assert "firewall-reset" not in ids, ids


def _refused(duration_s: float, message: str = SSH_REFUSED) -> Observations:
    refused = PushObservation(duration_s=duration_s, bytes=MB, ok=False, error_kind="refused",
                         error_message=message.splitlines()[0])
    return Observations(run=run(rtt_s=0.05), protocols={
        "h1": proto(3.0), "ssh": replace(proto(3.0), pushes=(refused, refused))})


def test_a_refusal_alone_is_not_a_firewall() -> None:
    """Nothing listening refuses a whole round trip later: no filter is claimed. A listener
    on the refused port, or a refusal sooner than a round trip, shows one."""
    closed = _refused(0.3)
    assert "firewall-reset" not in [f.id for f in diagnose(closed).findings]
    listening = replace(closed, host=HostEvidence(
        listeners=(Listener(port=22, backlog=128, process="sshd"),)))
    top = diagnose(listening).findings[0]
    assert top.id == "firewall-reset"
    assert any("listener on the refused port 22" in e.what for e in top.evidence)
    early = _refused(0.02)
    assert diagnose(early).findings[0].id == "firewall-reset"


def _never(argv: object, **_: object) -> GitRun:
    raise AssertionError(f"no git run expected: {argv}")


def test_a_push_that_never_delivered_its_pack_is_never_created_without_asking(
        tmp_path: Path) -> None:
    """git's progress stopped before ``Total`` and no report-status came: no ls-remote."""
    for run_ in (GitRun(argv=("git",), exit_code=1, wall_s=0.3, timed_out=False,
                        stderr=RPC_308, stdout=""),
                 GitRun(argv=("git",), exit_code=None, wall_s=60.0, timed_out=True,
                        stderr="Writing objects:  12% (1/8)", stdout="")):
        aftermath = push_aftermath(run_)
        assert aftermath is Aftermath.CUT, run_.stderr
        result = remove_probe_ref(Transport(protocol=TransportKind.H1, url="https://h/r.git"),
                                  "gitnetdiag/probe-x", "a" * 40, aftermath, runner=_never,
                                  cwd=tmp_path)
        assert result.status is RefCleanup.NEVER_CREATED
        assert "never delivered its whole pack" in result.detail
        assert result.remove_command is None and result.check_command is None


def test_a_redirect_that_answered_the_pack_is_never_created_without_asking(
        tmp_path: Path) -> None:
    """The whole pack went to a member that answers 308: receive-pack never got it."""
    redirected = push_aftermath(GitRun(
        argv=("git",), exit_code=1, wall_s=1.0, timed_out=False, stdout="",
        stderr=WROTE_ALL + "error: RPC failed; HTTP 308 curl 22 The requested URL returned "
        "error: 308\n"))
    assert redirected is Aftermath.REDIRECTED
    result = remove_probe_ref(Transport(protocol=TransportKind.H1, url="https://h/r.git"),
                              "gitnetdiag/probe-x", "a" * 40, redirected, runner=_never,
                              cwd=tmp_path)
    assert result.status is RefCleanup.NEVER_CREATED and "redirect" in result.detail


WROTE_ALL = "Writing objects: 100% (3/3), 1.00 MiB | 9 MiB/s, done.\nTotal 3 (delta 0)\n"


def test_refs_that_cannot_be_listed_leave_the_branch_unconfirmed(tmp_path: Path) -> None:
    """A settled push (a 413 answered the whole pack) and an ls-remote that fails every time:
    ``unconfirmed`` with the reason and the check command, never ``leftover``."""
    clock = [0.0]
    calls: list[list[str]] = []

    def failing(argv: object, **_: object) -> GitRun:
        calls.append(list(argv))  # type: ignore[call-overload]
        clock[0] += 0.1
        return GitRun(argv=("git",), exit_code=128, wall_s=0.1, timed_out=False, stdout="",
                      stderr="fatal: unable to access 'https://u:tok@h/r.git/': The requested "
                      "URL returned error: 308\n")

    settled = push_aftermath(GitRun(
        argv=("git",), exit_code=1, wall_s=1.0, timed_out=False, stdout="",
        stderr=WROTE_ALL + "error: RPC failed; HTTP 413 curl 22 The requested URL returned "
        "error: 413\n"))
    assert settled is Aftermath.SETTLED
    result = remove_probe_ref(
        Transport(protocol=TransportKind.H2, url="https://u:tok@h/r.git"), "gitnetdiag/probe-x",
        "a" * 40, settled, runner=failing, cwd=tmp_path, wait_s=5.0,
        clock=lambda: clock[0], sleep=lambda s: clock.__setitem__(0, clock[0] + s))
    assert result.status is RefCleanup.UNCONFIRMED, result
    assert "cannot be listed" in result.detail and "308" in result.detail
    check = result.check_command or ""
    assert check.startswith("git ls-remote ") and check.endswith(" refs/heads/gitnetdiag/probe-x")
    assert all("ls-remote" in call for call in calls) and len(calls) >= 4
    assert "tok" not in (check + result.detail + (result.remove_command or ""))


def test_a_reset_is_a_firewall_only_when_the_rst_came_from_the_server_side() -> None:
    """curl's ECONNRESET is a reset; the capture decides whether it came from the server's
    side (a close or an HTTP/2 error that git words like a reset is not one)."""
    reset = push_result(_record("reset", failure_line(RESET)))
    assert reset.error_kind == "reset"

    def with_capture(resets_from_server: int) -> Observations:
        h1 = proto(3.0, capture=cap(resets_from_server=resets_from_server))
        return Observations(run=run(), protocols={
            "h1": replace(h1, pushes=(h1.pushes[0], reset, reset)), "ssh": proto(3.0)})

    assert "firewall-reset" not in [f.id for f in diagnose(with_capture(0)).findings]
    top = diagnose(with_capture(2)).findings[0]
    assert top.id == "firewall-reset"
    assert any("RST segments arriving from the server side" in e.what for e in top.evidence)


def test_a_failed_request_is_named_with_its_status_and_server() -> None:
    from gitnetdiag.rundir.records import HttpRequestRecord

    record = replace(_record("http-status", failure_line(RPC_308)), http_requests=(
        HttpRequestRecord(method="GET", path="/r.git/info/refs", status=200, server="Apache"),
        HttpRequestRecord(method="POST", path="/r.git/git-receive-pack", status=308)))
    message = push_result(record).error_message
    assert message.startswith("POST /r.git/git-receive-pack answered 308 (no server header): "
                              "error: RPC failed; HTTP 308"), message
