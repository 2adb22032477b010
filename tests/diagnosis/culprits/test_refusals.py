"""Pushes refused or cut on the way: a body limit, a refused streamed body, an idle timeout.

Each crafted run is what git's curl trace and the native body probe record of the lab's
failure faults (docs/failures.md): the culprit ranks first, its evidence holds the limit,
the verdict is ``failed`` with a headline that says which pushes fail, and neither a bad
pool member nor a firewall takes its place.
"""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.culprits.pool import mixed_kinds
from gitnetdiag.diagnosis.model import Diagnosis
from gitnetdiag.diagnosis.observations import (
    BodyLimitProbe,
    HttpExchange,
    Observations,
    ProtocolObservation,
    PushObservation,
)
from gitnetdiag.diagnosis.verdict import verdict_error
from gitnetdiag.errors import ExitCode
from tests.diagnosis.culprits.crafted import MB, Case, cap, proto, run

REPO = "/git/lab.git"
LIMIT = 1_048_576
APACHE = "Apache/2.4.62 (Debian)"


def _push_requests(push: int, status: int | None, *, server: str | None = APACHE,
                   ending: str = "", silence_s: float | None = None) -> tuple[HttpExchange, ...]:
    """git's requests of one push above http.postBuffer: the ref advertisement, the 4-byte
    probe POST with a Content-Length, then the pack streamed without one."""
    return (
        HttpExchange(method="GET", path=f"{REPO}/info/refs", status=200, server=server,
                     push=push),
        HttpExchange(method="POST", path=f"{REPO}/git-receive-pack", status=200,
                     server=server, push=push, content_length_bytes=4),
        HttpExchange(method="POST", path=f"{REPO}/git-receive-pack", status=status,
                     server=server, push=push, streamed=True, ending=ending,
                     silence_before_close_s=silence_s),
    )


def _failed(kind: str, message: str, n: int = 3) -> tuple[PushObservation, ...]:
    return tuple(PushObservation(duration_s=0.6, bytes=3 * MB, ok=False, error_kind=kind,
                            error_message=message) for _ in range(n))


def _https(pushes: tuple[PushObservation, ...], requests: tuple[HttpExchange, ...],
           **kw: object) -> ProtocolObservation:
    return replace(proto(2.0, size=3 * MB), pushes=pushes, http_requests=requests, **kw)


def case_request_body_limit(server: str = APACHE) -> Observations:
    """Apache's LimitRequestBody of 1 MiB: every pack POST answered 413, the 4-byte POST
    200; the body probe bracketed the limit; SSH pushed the same 3 MiB."""
    requests = tuple(r for push in (1, 2, 3) for r in _push_requests(push, 413, server=server))
    probe = BodyLimitProbe(source="native body probe of 198.18.2.2:8443", requests=9,
                           largest_accepted_bytes=1_030_000, smallest_refused_bytes=LIMIT + 1,
                           refused_status=413, sized_status=200, streamed_status=413,
                           server=server)
    pushes = _failed("http-status", "error: RPC failed; HTTP 413 curl 22 The requested URL "
                     "returned error: 413")
    https = {name: _https(pushes, requests, body_limit=probe) for name in ("h1", "h2")}
    return Observations(run=run(repo_bytes=3 * MB),
                        protocols={**https, "ssh": proto(2.0, size=3 * MB)})


def case_streamed_body_refused() -> Observations:
    """An edge answers 411 to a POST without a Content-Length: HTTP/1.1 says so, HTTP/2's
    stream is reset (curl 92); the probe's same small POST passed with a length."""
    h1 = tuple(r for push in (1, 2, 3) for r in _push_requests(push, 411, server=None))
    h2 = tuple(r for push in (1, 2, 3) for r in _push_requests(
        push, None, server=None, silence_s=0.01,
        ending="HTTP/2 stream 1 was not closed cleanly: PROTOCOL_ERROR (err 1)"))
    probe = BodyLimitProbe(source="native body probe of 198.18.2.2:8443", requests=2,
                           sized_status=200, streamed_status=411)
    return Observations(run=run(repo_bytes=3 * MB), protocols={
        "h1": _https(_failed("http-status", "error: RPC failed; HTTP 411 curl 22 The "
                             "requested URL returned error: 411"), h1, body_limit=probe),
        "h2": _https(_failed("reset", "error: RPC failed; curl 92 HTTP/2 stream 1 was not "
                             "closed cleanly: PROTOCOL_ERROR (err 1)"), h2, body_limit=probe),
        "ssh": proto(2.0, size=3 * MB)})


def case_edge_idle_timeout() -> Observations:
    """The edge's `timeout server 3s` under an 8 s silent hook: the HTTPS pack POSTs got
    200, then the connection closed 3 s later (curl 18); the SSH push waited 8 s for the
    server's status; the capture saw the edge's RST."""
    requests = tuple(r for push in (1, 2, 3) for r in _push_requests(
        push, 200, ending="transfer closed with outstanding read data remaining",
        silence_s=3.02))
    pushes = _failed("reset", "send-pack: unexpected disconnect while reading sideband packet")
    https = {name: _https(pushes, requests, capture=cap(resets_from_server=1))
             for name in ("h1", "h2")}
    return Observations(run=run(repo_bytes=3 * MB), protocols={
        **https, "ssh": proto(2.0, size=3 * MB, trace={"server_wait_s": 8.1})})


CASES: dict[str, Case] = {
    "request-body-limit": (case_request_body_limit, ("LimitRequestBody",)),
    "streamed-body-refused": (case_streamed_body_refused, ("http.postBuffer",)),
    "edge-idle-timeout": (case_edge_idle_timeout, ("receive.keepAlive",)),
}


def _check_failed_run(result: Diagnosis, culprit: str, settings: tuple[str, ...]) -> None:
    ids = [f.id for f in result.findings]
    assert ids and ids[0] == culprit, [(f.id, f.score, f.cost_s) for f in result.findings]
    assert result.verdict == "failed", result.headline
    assert result.headline.startswith("HTTP/1.1 and HTTP/2 pushes fail ("), result.headline
    assert "costs an estimated" not in result.headline
    assert "edge-backend-errors" not in ids and "firewall-reset" not in ids, ids
    for setting in settings:
        assert setting in result.findings[0].fix, result.findings[0].fix
    error = verdict_error(result.verdict, result.measurement_failures)
    assert error is not None and error.exit_code != ExitCode.OK


def test_each_failure_case_ranks_first_and_fails_the_run() -> None:
    for culprit, (make, settings) in CASES.items():
        _check_failed_run(diagnose(make()), culprit, settings)


def test_a_body_limit_is_bracketed_and_named_in_the_answering_products_terms() -> None:
    top = diagnose(case_request_body_limit()).findings[0]
    limit = next(e for e in top.evidence if e.what.startswith("request-body limit"))
    assert limit.value == LIMIT + 1 and limit.unit == "B"
    pack = next(e for e in top.evidence if e.what.endswith("pack size"))
    assert pack.value == 3 * MB and pack.threshold == LIMIT + 1
    assert "limit by size, not a bad pool member" in top.summary
    assert "httpd.apache.org" in top.fix and "SSH" in top.fix
    nginx = diagnose(case_request_body_limit("nginx/1.22.1")).findings[0]
    assert "client_max_body_size" in nginx.fix and "LimitRequestBody" not in nginx.fix


def test_the_idle_time_is_measured_and_the_servers_wait_is_beside_it() -> None:
    top = diagnose(case_edge_idle_timeout()).findings[0]
    closed = next(e for e in top.evidence if "closed from the server side" in e.what)
    assert closed.value is not None and abs(closed.value - 3.02) < 0.01
    busy = next(e for e in top.evidence if "silent work" in e.what)
    assert busy.value == 8.1 and busy.threshold == closed.value
    assert "not a firewall" in top.summary


def test_a_close_right_after_the_headers_is_no_idle_timeout() -> None:
    """The streamed POST reset 10 ms after its headers is a refusal, not a timeout."""
    ids = [f.id for f in diagnose(case_streamed_body_refused()).findings]
    assert "edge-idle-timeout" not in ids


def test_a_limit_by_size_is_not_a_pool_member() -> None:
    """The 4-byte POST passed and the streamed pack got 413: different requests by size."""
    requests = _push_requests(1, 413) + _push_requests(2, 413)
    assert mixed_kinds(requests) == []
    same = _push_requests(1, 200) + _push_requests(2, 502)
    assert [m.kind for m in mixed_kinds(same)] == ["POST git-receive-pack (streamed)"]


def test_an_unexplained_failure_is_failed_with_no_unrelated_culprit() -> None:
    """HTTP/2 pushes failed in words gitnetdiag has no entry for, with nothing that explains
    them: the run failed (issue 42; it was inconclusive), and the headline says what was
    seen and that the cause is not identified, naming no unrelated culprit."""
    base = case_edge_idle_timeout()
    h2 = replace(base.protocols["h2"], http_requests=(), capture=cap(),
                 pushes=_failed("other", "fatal: the server spoke in riddles"))
    obs = replace(base, protocols={"h1": proto(2.0, size=3 * MB), "h2": h2,
                                   "ssh": proto(2.0, size=3 * MB)})
    result = diagnose(obs)
    assert result.verdict == "failed", (result.verdict, result.headline)
    assert result.headline == ("HTTP/2 pushes fail (git said: fatal: the server spoke in "
                               "riddles): cause not identified.")
    assert all(f.explained_by is None for f in result.measurement_failures)
    error = verdict_error(result.verdict, result.measurement_failures)
    assert error is not None and error.exit_code == ExitCode.NOT_MEASURED
