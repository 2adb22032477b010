"""A diagnosis's failed pushes carry the failure-signature catalogue's description: the
matching entries, their candidate culprits and what was seen; the verdict is unchanged."""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.failuredesc import describe_failures
from gitnetdiag.diagnosis.observations import (
    HttpExchange,
    Observations,
    ProtocolObservation,
    PushObservation,
    RunProblem,
)
from gitnetdiag.diagnosis.signatures import NO_ENTRY
from gitnetdiag.outcomes import FailureKind
from tests.diagnosis import examples

PACK = "/git/lab.git/git-receive-pack"
RPC_411 = "error: RPC failed; HTTP 411 curl 22 The requested URL returned error: 411"
CURL_18 = "error: RPC failed; curl 18 transfer closed with outstanding read data remaining"


def _with_failed(name: str, push: PushObservation, requests: tuple[HttpExchange, ...] = (),
                 reference: str = "http-status") -> Observations:
    """The healthy example with protocol ``name``'s one push failed as given."""
    base = examples.healthy()
    protocol = ProtocolObservation(pushes=(push,), http_requests=requests)
    problem = RunProblem(stage="push", protocol=name, reference=reference,
                         kind=push.error_kind, message=f"https://git.example.test/r.git: "
                         f"{push.error_message}", hint="a hint")
    return replace(base, protocols={**base.protocols, name: protocol}, problems=(problem,))


def _failed(error_kind: FailureKind, message: str) -> PushObservation:
    return PushObservation(duration_s=1.0, bytes=3 << 20, ok=False, error_kind=error_kind,
                      error_message=message)


def test_a_refused_streamed_body_is_described_from_the_request_it_ended_on() -> None:
    requests = (
        HttpExchange(method="GET", path="/git/lab.git/info/refs", status=200, push=1),
        HttpExchange(method="POST", path=PACK, status=200, push=1, content_length_bytes=4),
        HttpExchange(method="POST", path=PACK, status=411, push=1, streamed=True),
    )
    obs = _with_failed("h1", _failed(FailureKind.HTTP_STATUS, RPC_411), requests)
    (failure,) = [f for f in diagnose(obs).measurement_failures if f.protocol == "h1"]
    assert failure.signatures == ("http-411",)
    assert failure.candidates == ("streamed-body-refused",)
    assert failure.seen == f"HTTP/1.1 push: POST git-receive-pack answered 411; git said: {RPC_411}"


def test_an_edge_close_after_silence_adds_the_tcp_ending() -> None:
    requests = (HttpExchange(method="POST", path=PACK, status=200, push=1,
                             silence_before_close_s=3.1,
                             ending="transfer closed with outstanding read data remaining"),)
    obs = _with_failed("h2", _failed(FailureKind.OTHER, CURL_18), requests,
                       reference="git-failed")
    (failure,) = [f for f in diagnose(obs).measurement_failures if f.protocol == "h2"]
    assert failure.signatures == ("curl-18-partial-file", "tcp-server-close-after-silence")
    assert failure.candidates[0] == "edge-idle-timeout"
    assert "the server closed the connection (FIN) after 3.1 s of silence" in failure.seen


def test_an_unknown_failure_is_described_as_such() -> None:
    obs = _with_failed("ssh", _failed(FailureKind.OTHER, "fatal: something new"),
                       reference="git-failed")
    (failure,) = [f for f in diagnose(obs).measurement_failures if f.protocol == "ssh"]
    assert failure.signatures == () and failure.candidates == ()
    assert failure.seen == f"SSH push: git said: fatal: something new; {NO_ENTRY}"


def test_failures_the_catalogue_does_not_speak_of_are_left_alone() -> None:
    obs = _with_failed("h2", _failed(FailureKind.AUTH, "HTTP 401"), reference="auth-failed")
    diagnosis = diagnose(obs)
    assert diagnosis.measurement_failures
    assert all(f.seen == "" and f.signatures == () for f in diagnosis.measurement_failures)


def test_describing_changes_no_verdict_and_no_other_field() -> None:
    obs = _with_failed("h1", _failed(FailureKind.HTTP_STATUS, RPC_411))
    diagnosis = diagnose(obs)
    bare = [replace(f, signatures=(), candidates=(), seen="")
            for f in diagnosis.measurement_failures]
    again = describe_failures(obs, bare)
    assert again == diagnosis.measurement_failures
    # HTTP/1.1's only push failed and no culprit explains it (issue 42: failed, not
    # inconclusive); the headline says what was seen, from the description.
    assert diagnosis.verdict == "failed"
    assert diagnosis.headline == (
        f"HTTP/1.1 pushes fail (git said: {RPC_411}): cause not identified.")


def test_a_bare_capture_has_no_git_words_to_describe() -> None:
    obs = _with_failed("ssh", _failed(FailureKind.RESET, "connection reset by the client side "
                                      "with 188240 B of the upload unacknowledged (capture)"),
                       reference="connection-reset")
    bare = replace(obs, run=replace(obs.run, git_version=None))
    assert all(f.seen == "" for f in diagnose(bare).measurement_failures)
    assert any(f.seen for f in diagnose(obs).measurement_failures)
