"""The body probe's pure parts: when it runs, how one answer reads, and the bisection of the
request-body limit against a fake responder."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gitnetdiag.outcomes import FailureKind
from gitnetdiag.probe.bodyprobe import (
    MAX_LIMIT_REQUESTS,
    Bracket,
    body_probe_trigger,
    bracket_limit,
    progress_line,
)
from gitnetdiag.rundir import ProtocolRun, PushRecord
from gitnetdiag.rundir.bodyprobe import BodyAnswer, BodyExchange, BodyProbeRecord, SizeVerdict
from gitnetdiag.rundir.records import HttpRequestRecord

PACK = 25 * 2**20


def _limited(limit: int) -> tuple[Callable[[int], SizeVerdict], list[int]]:
    """A server that accepts a Content-Length up to ``limit``; the sizes it was asked."""
    asked: list[int] = []

    def ask(size: int) -> SizeVerdict:
        asked.append(size)
        return "accepted" if size <= limit else "refused"
    return ask, asked


@pytest.mark.parametrize("limit", [1_048_576, 10_000_000, 100 * 1024, 65_536, 2_000,
                                   PACK - 1])
def test_the_bracket_holds_the_limit_within_5_percent_in_10_requests(limit: int) -> None:
    ask, asked = _limited(limit)
    bracket = bracket_limit(ask, upper_bytes=PACK)
    low, high = bracket.largest_accepted_bytes, bracket.smallest_refused_bytes
    assert low is not None and high is not None
    assert low <= limit < high
    assert high <= low * 1.05
    assert list(bracket.asked) == asked and len(asked) <= MAX_LIMIT_REQUESTS
    assert asked[0] == PACK


def test_a_limit_of_1_mib_takes_9_requests() -> None:
    """The pack, 64 KiB, then seven geometric middles: 1037211 B passed, 1086915 B refused."""
    ask, asked = _limited(1_048_576)
    bracket = bracket_limit(ask, upper_bytes=PACK)
    assert asked[:3] == [PACK, 65_536, 1_310_720]
    assert len(asked) == 9
    assert (bracket.largest_accepted_bytes, bracket.smallest_refused_bytes) == (1_037_211,
                                                                               1_086_915)


def test_a_pack_below_the_limit_is_one_request() -> None:
    ask, _ = _limited(PACK)
    assert bracket_limit(ask, upper_bytes=PACK) == Bracket(
        largest_accepted_bytes=PACK, smallest_refused_bytes=None, asked=(PACK,))


def test_a_limit_below_every_start_is_refused_everywhere() -> None:
    ask, _ = _limited(500)
    assert bracket_limit(ask, upper_bytes=PACK) == Bracket(
        largest_accepted_bytes=None, smallest_refused_bytes=1_024, asked=(PACK, 65_536, 1_024))


def test_a_small_pack_starts_below_itself() -> None:
    """A 10 KiB pack refused: 64 KiB is not tried, 1 KiB is."""
    ask, asked = _limited(5_000)
    bracket = bracket_limit(ask, upper_bytes=10_240)
    assert asked[:2] == [10_240, 1_024]
    assert bracket.largest_accepted_bytes is not None
    assert bracket.largest_accepted_bytes <= 5_000 < (bracket.smallest_refused_bytes or 0)


def test_an_answer_not_about_size_stops_the_bracket_where_it_is() -> None:
    """A 401 (or a failed connect) at the third size: the bracket so far, nothing more."""
    answers: list[SizeVerdict] = ["refused", "accepted", "unknown"]
    asked: list[int] = []

    def ask(size: int) -> SizeVerdict:
        asked.append(size)
        return answers[len(asked) - 1]
    bracket = bracket_limit(ask, upper_bytes=PACK)
    assert (bracket.largest_accepted_bytes, bracket.smallest_refused_bytes) == (65_536, PACK)
    assert len(asked) == 3
    first_unknown = bracket_limit(lambda size: "unknown", upper_bytes=PACK)
    assert first_unknown == Bracket(largest_accepted_bytes=None, smallest_refused_bytes=None,
                                    asked=(PACK,))


def _exchange(answer: BodyAnswer, status: int | None = None) -> BodyExchange:
    return BodyExchange(purpose="limit", http_version="HTTP/1.1", content_length_bytes=1,
                        body_sent_bytes=0, answer=answer, status=status, started_s=0.0,
                        elapsed_s=0.0)


@pytest.mark.parametrize(("answer", "status", "verdict"), [
    ("continue", None, "accepted"), ("silent", None, "accepted"), ("status", 200, "accepted"),
    ("status", 413, "refused"), ("closed", None, "refused"), ("reset", None, "refused"),
    ("status", 401, "unknown"), ("status", 502, "unknown"), ("failed", None, "unknown"),
])
def test_what_one_answer_says_of_its_size(answer: BodyAnswer, status: int | None,
                                          verdict: SizeVerdict) -> None:
    assert _exchange(answer, status).size_verdict == verdict


def _push(protocol: str, *, outcome: str = "failed", kind: str | None = "http-status",
          last_line: str = "", requests: tuple[HttpRequestRecord, ...] = ()) -> ProtocolRun:
    push = PushRecord(protocol=protocol, repeat=1, branch="b", started_at="",
                      outcome=outcome,  # type: ignore[arg-type]
                      failure_kind=FailureKind(kind) if kind else None, last_line=last_line,
                      wall_s=0.1, pack_bytes=1, rate_bytes_per_s=None, http_version=None,
                      alpn=None, post_s=None, curl_last_info=None, phases=None, capture=None,
                      http_requests=requests)
    return ProtocolRun(protocol=protocol, url="https://h/r", endpoint="h:443", pushes=(push,))


POST = "/r/git-receive-pack"


def test_the_probe_runs_after_a_pack_post_refused_for_its_body() -> None:
    by_trace = _push("h1", requests=(HttpRequestRecord(method="POST", path=POST, status=200),
                                     HttpRequestRecord(method="POST", path=POST, status=413)))
    assert body_probe_trigger([by_trace]) == "h1 push #1: POST git-receive-pack answered 413"
    by_words = _push("h2", last_line="error: RPC failed; HTTP 411 curl 22 The requested URL "
                     "returned error: 411")
    assert body_probe_trigger([by_words]) == "h2 push #1: POST git-receive-pack answered 411"
    stream_error = "error: RPC failed; curl 92 Stream error in the HTTP/2 framing layer"
    assert body_probe_trigger([_push("h2", kind="other", last_line=stream_error)]) \
        == f"h2 push #1: {stream_error}"
    closed = _push("h1", kind="reset", requests=(
        HttpRequestRecord(method="POST", path=POST, status=None),))
    assert body_probe_trigger([closed]) == ("h1 push #1: the connection ended with no status "
                                            "to the pack POST")


def test_the_probe_does_not_run_for_other_failures() -> None:
    assert body_probe_trigger([_push("h1", outcome="ok", kind=None)]) is None
    assert body_probe_trigger([_push("h1", last_line="error: RPC failed; HTTP 502")]) is None
    assert body_probe_trigger([_push("h1", kind="auth", last_line="HTTP 401")]) is None
    answered = _push("h1", kind="reset", requests=(
        HttpRequestRecord(method="POST", path=POST, status=200),))
    assert body_probe_trigger([answered]) is None
    assert body_probe_trigger([_push("ssh", kind="reset")]) is None


def test_the_progress_line_says_the_bracket_and_each_versions_answers() -> None:
    def post(purpose: str, version: str, status: int, length: int | None = 4) -> BodyExchange:
        return BodyExchange(purpose=purpose, http_version=version,  # type: ignore[arg-type]
                            content_length_bytes=length, body_sent_bytes=4, answer="status",
                            status=status, started_s=0.0, elapsed_s=0.01)
    record = BodyProbeRecord(
        target="h:443", path=POST, protocols=("h1", "h2"), trigger="t", upper_bound_bytes=PACK,
        answer_wait_s=2.0, duration_s=0.42, auth="none", tls_ca="option", proxy=None,
        exchanges=(post("sized", "HTTP/1.1", 200), post("streamed", "HTTP/1.1", 411, None),
                   post("sized", "HTTP/2", 200), post("streamed", "HTTP/2", 411, None),
                   post("limit", "HTTP/1.1", 413, 2 * 2**20),
                   BodyExchange(purpose="limit", http_version="HTTP/1.1",
                                content_length_bytes=2**20, body_sent_bytes=0,
                                answer="continue", started_s=0.0, elapsed_s=0.0)))
    assert progress_line(record) == (
        "6 POSTs in 0.4 s: body limit between 1.00 MiB and 2.00 MiB (413); "
        "HTTP/1.1 sized 200, streamed 411; HTTP/2 sized 200, streamed 411")
