"""``edge-idle-timeout`` on clones: the pack request ended by the edge after N s of silence,
before the server's headers (504) or after them (a close), with the silent phase a clone
that passed measured beside it, the edge's read timeout and ``uploadpack.keepAlive`` in the
fix, and the clone failures described by the failure catalogue."""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.diagnosis.assembly import download_observations
from gitnetdiag.diagnosis.culprits.clonecut import clone_edge_idle_timeout, edge_idle_timeout
from gitnetdiag.diagnosis.engine import diagnose
from gitnetdiag.diagnosis.transfers import HttpExchange, TransferObservation
from gitnetdiag.diagnosis.verdict import judge
from gitnetdiag.outcomes import FailureKind
from tests.diagnosis.test_transfer_culprits import HEALTHY, PHASES
from tests.diagnosis.transfer_cases import ranked

REFS = HttpExchange(method="GET", path="/git/r.git/info/refs", status=200, push=1,
                    silence_before_status_s=0.05)
LS_REFS = HttpExchange(method="POST", path="/git/r.git/git-upload-pack", status=200, push=1,
                       silence_before_status_s=0.05)
GATEWAY = HttpExchange(method="POST", path="/git/r.git/git-upload-pack", status=504, push=1,
                       silence_before_status_s=3.05)
CUT = HttpExchange(method="POST", path="/git/r.git/git-upload-pack", status=200, push=1,
                   server="Apache/2.4.71 (Debian)", silence_before_status_s=0.06,
                   silence_before_close_s=3.0,
                   ending="transfer closed with outstanding read data remaining")
SAID_504 = ("error: RPC failed; HTTP 504 curl 22 The requested URL returned error: 504",
            "fatal: expected 'packfile'")
SAID_18 = ("error: RPC failed; curl 18 transfer closed with outstanding read data remaining",
           "error: 5 bytes of body are still expected", "fatal: early EOF",
           "fatal: fetch-pack: invalid index-pack output")


def _failed(protocol: str, last: HttpExchange, said: tuple[str, ...]) -> TransferObservation:
    kind = FailureKind.HTTP_STATUS if last.status == 504 else FailureKind.RESET
    return replace(HEALTHY, protocol=protocol, outcome="failed", moved_bytes=2_000,
                   measured_s=0.0, rate_bytes_per_s=None, wall_s=3.4, tcp=None,
                   failure_kind=kind, last_line=said[-1], git_said=said,
                   http_requests=(REFS, LS_REFS, last))


SSH_SLOW = replace(HEALTHY, protocol="ssh", wall_s=8.0,
                   phases=replace(PHASES, first_pack_byte_s=6.15, total_s=8.0))
"""The SSH clone beside them: no edge, the server silent 6 s before the first pack byte."""


def test_a_504_on_the_pack_request_is_the_edge_timeout_with_the_silence_measured() -> None:
    clones = [_failed("h1", GATEWAY, SAID_504), _failed("h2", GATEWAY, SAID_504), SSH_SLOW]
    findings = ranked(clones)
    assert findings[0].id == "edge-idle-timeout", [f.id for f in findings]
    top = findings[0]
    assert "504 after 3.0 s" in top.summary
    assert "before the server's response headers" in top.summary
    assert "the SSH clone measured the server silent for 6.0 s" in top.summary
    silences = [e.value for e in top.evidence if "answered 504" in e.what]
    assert silences == [3.05, 3.05]
    busy = next(e for e in top.evidence if "first pack byte" in e.what)
    assert busy.value == 6.0 and busy.threshold == 3.05
    assert "timeout server" in top.fix and "uploadpack.keepAlive 1" in top.fix
    assert "cannot hold a request the edge answers before the server's headers" in top.fix
    assert "`http.postBuffer`" in top.fix and "does not apply to a clone" in top.fix
    # the evidence keeps git's own names (a clone's words, not "download-pack")
    assert any("POST git-upload-pack" in e.source for e in top.evidence)
    # a failed clone costs its own time and a whole clone again: above the SSH pack wait
    assert top.cost_s > 6.0 and top.score == 0.85


def test_a_close_after_the_headers_is_the_edge_timeout_with_the_server_header_behind() -> None:
    clones = [_failed("h1", CUT, SAID_18), SSH_SLOW]
    hit = clone_edge_idle_timeout(download_observations(clones))
    assert hit is not None
    assert "closed from the server side after 3.0 s" in hit.summary
    (cut, _busy) = hit.evidence
    assert cut.value == 3.0 and "after the response headers" in cut.text
    assert "Apache/2.4.71 (Debian), behind the hop that cut" in cut.text
    assert "uploadpack.keepAlive 1" in hit.fix and "before the server's headers" not in hit.fix
    # the Apache header came through the hop that cut: the fix does not name Apache alone
    assert "could not tell which product answered" in hit.fix and "timeout server" in hit.fix


def test_no_cut_without_a_silence_a_failed_clone_or_a_pack_request() -> None:
    quick = replace(CUT, silence_before_close_s=0.2)
    assert clone_edge_idle_timeout(download_observations(
        [_failed("h1", quick, SAID_18), SSH_SLOW])) is None
    refs_504 = replace(GATEWAY, path="/git/r.git/info/refs", method="GET")
    assert clone_edge_idle_timeout(download_observations(
        [_failed("h1", refs_504, SAID_504)])) is None
    passed = replace(HEALTHY, http_requests=(REFS, LS_REFS, replace(CUT, ending="")))
    assert clone_edge_idle_timeout(download_observations([passed])) is None


def test_without_a_clone_that_passed_the_close_alone_scores_lower() -> None:
    hit = clone_edge_idle_timeout(download_observations([_failed("h1", CUT, SAID_18)]))
    assert hit is not None and hit.score == 0.55
    assert "not measured longer" in hit.summary


def test_a_push_is_still_judged_by_the_push_detector() -> None:
    """The same cut request on an upload: the push's wording and receive.keepAlive."""
    obs = download_observations([_failed("h1", CUT, SAID_18)])
    push = replace(obs, run=replace(obs.run, transfer="upload"), transfers=())
    hit = edge_idle_timeout(push)
    assert hit is not None and "pushes fail" in hit.summary
    assert "receive.keepAlive" in hit.fix and "uploadpack.keepAlive" not in hit.fix


def test_the_failed_clones_are_failed_and_described_by_the_catalogue() -> None:
    clones = [_failed("h1", CUT, SAID_18), _failed("h2", GATEWAY, SAID_504), SSH_SLOW]
    obs = download_observations(clones, requested=("h1", "h2", "ssh"))
    obs = replace(obs, run=replace(obs.run, measured_by="fetch"))
    diagnosis = diagnose(obs)
    assert diagnosis.findings[0].id == "edge-idle-timeout"
    judged = judge(obs, diagnosis.findings)
    assert {f.explained_by for f in judged.failures if f.protocol in ("h1", "h2")} == {
        "edge-idle-timeout"}
    by = {f.protocol: f for f in diagnosis.measurement_failures}
    assert by["h1"].signatures[:2] == ("curl-18-partial-file", "body-still-expected")
    assert by["h2"].signatures[0] == "http-504"
    for failure in (by["h1"], by["h2"]):
        assert failure.candidates[0] == "edge-idle-timeout"
        assert "server-processing" not in failure.candidates  # a push's cause only
        assert "http.postBuffer, the usual advice for this error, does not apply to a clone" \
            in failure.seen
    assert "POST git-upload-pack answered 504" in by["h2"].seen
    assert "expected 'packfile'" in by["h2"].seen


def test_a_504_beside_passing_requests_is_no_pool_member() -> None:
    """The clones' ref advertisement and ls-refs passed and their fetch got the edge's 504:
    an edge's timeout, not a member that errs (edge-backend-errors stays silent)."""
    clones = [_failed("h1", GATEWAY, SAID_504), _failed("h2", GATEWAY, SAID_504), SSH_SLOW]
    assert "edge-backend-errors" not in [f.id for f in ranked(clones)]
