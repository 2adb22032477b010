"""trace2 and curl trace parsing on recorded traces of real pushes (git 2.39.5)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gitnetdiag.probe.trace2 import parse_curl_trace, redact_curl_trace, request_endings
from gitnetdiag.rundir.trace2 import push_phases

DATA = Path(__file__).parent / "data"


def test_git_daemon_push_phases() -> None:
    """A git:// push: ref advertisement, pack write and server wait come from the events."""
    lines = (DATA / "push-git.trace2.json").read_text().splitlines()
    phases = push_phases(lines)
    assert phases.events == 29
    assert phases.exit_code == 0
    assert phases.total_s == pytest.approx(1.011709)
    assert phases.objects_written == 35
    # get_refs_list left at .565280, the process started at .560174 (first event)
    assert phases.ref_advertisement_s == pytest.approx(0.565280 - 0.560174, abs=1e-6)
    assert phases.pack_write_s == pytest.approx(0.841236)
    assert phases.pack_prepare_s == pytest.approx(0.000326 + 0.000374)
    # pack-objects child_exit .410584 -> push_refs region_leave .570914
    assert phases.server_wait_s == pytest.approx(0.570914 - 0.410584, abs=1e-6)


def test_https_push_phases_through_remote_helper() -> None:
    """Over HTTPS pack-objects runs under send-pack under git-remote-https; still found."""
    phases = push_phases((DATA / "push-h2.trace2.json").read_text().splitlines())
    assert phases.exit_code == 0
    assert phases.objects_written == 7
    assert phases.pack_write_s is not None and phases.pack_write_s > 0.0
    assert phases.server_wait_s is not None and 0.0 < phases.server_wait_s < phases.total_s  # type: ignore[operator]
    assert phases.ref_advertisement_s is not None
    assert 0.0 < phases.ref_advertisement_s < (phases.total_s or 0.0)


def test_cut_off_trace_and_junk_lines() -> None:
    """A hung push leaves a trace without exit events: parsed, exit code None."""
    lines = (DATA / "push-git.trace2.json").read_text().splitlines()[:20]
    phases = push_phases(["not json", "", '{"no": "sid"}', *lines])
    assert phases.exit_code is None
    assert phases.total_s is None
    assert phases.ref_advertisement_s is not None
    assert phases.server_wait_s is None
    empty = push_phases([])
    assert empty.events == 0 and empty.pack_write_s is None


def test_curl_trace_http2() -> None:
    summary = parse_curl_trace((DATA / "push-h2.curl.txt").read_text())
    assert summary.http_version == "HTTP/2"
    assert summary.alpn == "h2"
    methods = [(r.method, r.path.rsplit("/", 1)[-1], r.status) for r in summary.requests]
    assert methods[0] == ("GET", "refs", 200)
    assert ("POST", "git-receive-pack", 200) in methods
    post = next(r for r in summary.requests if r.method == "POST")
    assert post.response_s is not None and post.response_s > post.sent_s
    assert summary.last_info is not None


def test_curl_trace_http11() -> None:
    summary = parse_curl_trace((DATA / "push-h1.curl.txt").read_text())
    assert summary.http_version == "HTTP/1.1"
    assert all(r.http_version == "HTTP/1.1" for r in summary.requests)


def test_hung_http2_trace_keeps_last_info() -> None:
    """The HAProxy stall: the POST never gets an answer, the last line says where."""
    text = (
        "10:00:00.000000 http.c:725  == Info: Using HTTP2, server supports multiplexing\n"
        "10:00:00.100000 http.c:684  => Send header: POST /git/lab.git/git-receive-pack HTTP/2\n"
        "10:00:00.100100 http.c:725  == Info: Using Stream ID: 5 (easy handle 0x1)\n"
    )
    summary = parse_curl_trace(text)
    assert summary.http_version == "HTTP/2"
    assert summary.requests[0].status is None
    assert summary.last_info == "Using Stream ID: 5 (easy handle 0x1)"


def test_redaction() -> None:
    text = (
        "10:00:00.000000 http.c:684              => Send header: Authorization: Basic c2VjcmV0\n"
        "10:00:00.000001 http.c:684              => Send header: cookie: session=abc\n"
        "10:00:00.000002 http.c:725              == Info: url https://bob:hunter2@host/x\n"
        "10:00:00.000003 http.c:684              => Send header: Host: example\n"
    )
    redacted = redact_curl_trace(text)
    assert "c2VjcmV0" not in redacted and "session=abc" not in redacted
    assert "hunter2" not in redacted and "bob" not in redacted
    assert "Authorization: ***" in redacted
    assert "Host: example" in redacted
    assert redacted.count("\n") == 4


@pytest.mark.parametrize("version", ["h1", "h2"])
def test_a_clone_answered_504_by_the_edge_keeps_the_wait_before_the_status(version: str) -> None:
    """The lab's clone-edge-504 (HAProxy timeout server 3 s, git 2.39.5): the pack request's
    status came 3.05 s after its last line sent (50 ms RTT), the edge's own 504 with no
    server header; the ref advertisement and ls-refs were answered at once."""
    trace = parse_curl_trace((DATA / f"clone-504-{version}.curl.txt").read_text())
    refs, ls_refs, fetch = trace.requests
    assert (fetch.method, fetch.path, fetch.status, fetch.server) == (
        "POST", "/git/lab.git/git-upload-pack", 504, None)
    assert fetch.silence_before_status_s == pytest.approx(3.05, abs=0.02)
    assert refs.silence_before_status_s is not None and refs.silence_before_status_s < 0.2
    assert ls_refs.silence_before_status_s is not None and ls_refs.silence_before_status_s < 0.2
    assert fetch.ending == "" and fetch.silence_before_close_s is None


def test_a_clone_cut_after_the_headers_over_http11_ends_badly_after_the_silence() -> None:
    """clone-edge-cut over HTTP/1.1: the 200 and its headers (Apache's), then 3.0 s of
    nothing and curl's "transfer closed with outstanding read data remaining"."""
    fetch = parse_curl_trace((DATA / "clone-cut-h1.curl.txt").read_text()).requests[-1]
    assert fetch.status == 200 and fetch.server is not None and "Apache" in fetch.server
    assert fetch.ending == "transfer closed with outstanding read data remaining"
    assert fetch.silence_before_close_s == pytest.approx(3.0, abs=0.02)
    assert fetch.silence_before_finish_s is None


def test_a_clone_cut_after_the_headers_over_http2_ends_well_for_curl() -> None:
    """clone-edge-cut over HTTP/2: the edge ends the stream and curl leaves the connection
    intact, 3.0 s after the headers: only the time before that end tells the cut."""
    fetch = parse_curl_trace((DATA / "clone-cut-h2.curl.txt").read_text()).requests[-1]
    assert fetch.status == 200 and fetch.ending == ""
    assert fetch.silence_before_finish_s == pytest.approx(3.0, abs=0.03)


def test_a_failed_clone_records_the_http2_end_after_silence_as_the_server_sides(
        tmp_path: Path) -> None:
    """The clone's record: the last request of a failed clone that curl saw end well after
    a silence ended from the server side after it; a clone that passed keeps it clean."""
    from gitnetdiag.probe.fetchonce import FINISHED_EARLY, _curl_requests

    trace = tmp_path / "fetch-h2-1.curl.txt"
    trace.write_text((DATA / "clone-cut-h2.curl.txt").read_text())
    failed = _curl_requests(trace, failed=True)
    assert [r.status for r in failed] == [200, 200, 200]
    assert failed[-1].ending == FINISHED_EARLY
    assert failed[-1].silence_before_close_s == pytest.approx(3.0, abs=0.03)
    assert failed[0].ending == "" and failed[0].silence_before_close_s is None
    passed = _curl_requests(trace, failed=False)
    assert passed[-1].ending == "" and passed[-1].silence_before_close_s is None
    assert _curl_requests(tmp_path / "none.curl.txt", failed=True) == ()
    answered = tmp_path / "fetch-h2-2.curl.txt"
    answered.write_text((DATA / "clone-504-h2.curl.txt").read_text())
    (*_, gateway) = _curl_requests(answered, failed=True)
    assert gateway.status == 504 and gateway.ending == ""  # the 504 page was the whole answer
    assert gateway.silence_before_status_s == pytest.approx(3.05, abs=0.02)


def test_a_failed_push_records_the_http2_end_after_silence_as_the_server_sides() -> None:
    """edge-idle-timeout over HTTP/2 (recorded in the lab): HAProxy ends the pack POST's
    stream 5.0 s after its 200 headers, while the hook works in silence; curl leaves the
    connection intact and git says 'unexpected disconnect while reading sideband packet'.
    The push's record says the server side ended it after 5.0 s; a push that passed not."""
    from gitnetdiag.probe.pushonce import FINISHED_EARLY

    requests = parse_curl_trace((DATA / "push-edge-timeout-h2.curl.txt").read_text()).requests
    assert [(r.method, r.status, r.ending) for r in requests] == [
        ("GET", 200, ""), ("POST", 200, ""), ("POST", 200, "")]
    failed = request_endings(requests, failed=True, early=FINISHED_EARLY)
    assert failed[:2] == [(None, ""), (None, "")]
    silence, ending = failed[-1]
    assert ending == FINISHED_EARLY and silence == pytest.approx(5.0, abs=0.02)
    assert request_endings(requests, failed=False, early=FINISHED_EARLY)[-1] == (None, "")
    pushed = request_endings(requests, failed=True, early=FINISHED_EARLY, headers_first=True)
    assert pushed[-1][1] == FINISHED_EARLY, "the 200 came before the silence"
    unanswered = [*requests[:-1], replace(requests[-1], status=None)]
    assert request_endings(unanswered, failed=True, early=FINISHED_EARLY,
                           headers_first=True)[-1] == (None, ""), "no answer: not the edge's"
    assert request_endings(unanswered, failed=True, early=FINISHED_EARLY)[-1][1] == (
        FINISHED_EARLY), "a clone's request keeps the rule without a status"


LOGIN_WALL = """\
10:00:00.000000 http.c:684  => Send header: GET /r.git/info/refs?service=git-receive-pack HTTP/1.1
10:00:00.010000 http.c:684              <= Recv header: HTTP/1.1 200 OK
10:00:00.010100 http.c:684              <= Recv header: Server: BIG-IP
10:00:00.010200 http.c:684              <= Recv header: Content-Type: text/html; charset=utf-8
10:00:00.020000 http.c:684              == Info: Connection #0 to host h left intact
"""


def test_the_answer_in_gits_place_is_told_with_its_content_type() -> None:
    """A login wall's 200 HTML page to the ref advertisement: the request, its status and
    its Content-Type (the request's own Content-Type header is not the answer's)."""
    from gitnetdiag.probe.trace2 import last_answer

    summary = parse_curl_trace(LOGIN_WALL)
    (request,) = summary.requests
    assert request.content_type == "text/html; charset=utf-8"
    assert last_answer(summary) == ("GET info/refs answered 200, Content-Type text/html; "
                                    "charset=utf-8")
    pushed = parse_curl_trace((DATA / "push-h1.curl.txt").read_text())
    assert last_answer(pushed) == ("POST git-receive-pack answered 200, Content-Type "
                                   "application/x-git-receive-pack-result")
    assert last_answer(parse_curl_trace("")) is None
