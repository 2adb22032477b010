"""An edge pool with a bad member: the statuses per request, never a firewall."""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.culprits.pool import mixed_kinds
from gitnetdiag.diagnosis.observations import HttpExchange, Observations, PushObservation
from tests.diagnosis.culprits.crafted import MB, Case, cap, proto, run

RPC_308 = ("error: RPC failed; HTTP 308 curl 22 The requested URL returned error: 308")


def _requests(push: int, receive_status: int) -> tuple[HttpExchange, ...]:
    base = "/git/lab.git"
    return (
        HttpExchange(method="GET", path=f"{base}/info/refs", status=200, server=None, push=push),
        HttpExchange(method="POST", path=f"{base}/git-receive-pack", status=receive_status,
                     server=None, push=push),
    )


def case_edge_backend_errors(**run_fields: object) -> Observations:
    """Every second receive-pack POST through the edge answered 308; SSH fine. The
    capture saw RSTs from the server side (the edge closing on an unread body)."""
    failed = PushObservation(duration_s=0.4, bytes=MB, ok=False, error_kind="http-status",
                        error_message=RPC_308)
    https = {}
    for name in ("h1", "h2"):
        p = proto(3.0, capture=cap(resets_from_server=1))
        https[name] = replace(p, pushes=(p.pushes[0], failed, failed),
                              http_requests=_requests(1, 200) + _requests(2, 308)
                              + _requests(3, 308))
    return Observations(run=run(**run_fields), protocols={**https, "ssh": proto(3.0)})


CASES: dict[str, Case] = {
    "edge-backend-errors": (case_edge_backend_errors, ("option httpchk", "max_fails")),
}


def test_statuses_per_request_are_the_evidence_and_no_firewall_is_ranked() -> None:
    result = diagnose(case_edge_backend_errors())
    ids = [f.id for f in result.findings]
    assert ids[0] == "edge-backend-errors" and "firewall-reset" not in ids, ids
    top = result.findings[0]
    answered = {(e.what, e.value, e.of) for e in top.evidence}
    assert ("HTTP/1.1 POST git-receive-pack answered 308", 2, 3) in answered
    assert ("HTTP/1.1 POST git-receive-pack answered 2xx", 1, 3) in answered
    assert "no server header" in top.summary
    assert result.verdict == "degraded"


def test_fix_names_the_identified_edges_own_setting() -> None:
    top = diagnose(case_edge_backend_errors(server_headers=("nginx/1.22.1",))).findings[0]
    assert top.id == "edge-backend-errors"
    assert "max_fails" in top.fix and "option httpchk" not in top.fix
    assert "nginx.org" in top.fix


def test_every_request_failing_alike_is_not_a_pool() -> None:
    """A server that answers 308 every time is misconfigured as a whole, not a member."""
    every = (_requests(1, 308)[1], _requests(2, 308)[1])
    assert mixed_kinds(every) == []
    auth = (HttpExchange(method="GET", path="/r.git/info/refs", status=401),
            HttpExchange(method="GET", path="/r.git/info/refs", status=200))
    assert mixed_kinds(auth) == [], "a credentials challenge is part of a normal exchange"
    mixed = mixed_kinds(_requests(1, 200) + _requests(2, 502))
    assert [(m.kind, m.ok, dict(m.failed)) for m in mixed] == [
        ("POST git-receive-pack", 1, {(502, ""): 1})]


def test_members_taking_turns_show_in_the_server_header() -> None:
    """Two members by turn: every GET to the good one, every POST to the redirecting one.
    No kind is mixed, but the 2xx and the 308s came from different servers."""
    turns = tuple(r for push in (1, 2, 3) for r in (
        HttpExchange(method="GET", path="/git/lab.git/info/refs", status=200,
                     server="Apache/2.4.62 (Debian)", push=push),
        HttpExchange(method="POST", path="/git/lab.git/git-receive-pack", status=308,
                     server=None, push=push)))
    (mixed,) = mixed_kinds(turns)
    assert (mixed.ok, dict(mixed.failed)) == (3, {(308, ""): 3})
    same_server = tuple(replace(r, server="nginx") for r in turns)
    assert mixed_kinds(same_server) == [], "one server redirecting its POSTs is not a pool"


def test_a_members_server_header_passed_through_does_not_name_the_edge() -> None:
    """HAProxy passes the member's own ``server`` header on: the 2xx answers say Apache, so
    Apache is a member, not the edge; the edge is what terminated HTTP/2 (its SETTINGS look
    like HAProxy's). The lab's bad pool, where the fix named Apache's health check."""
    apache = "Apache/2.4.71 (Debian) OpenSSL/3.0.19"
    obs = case_edge_backend_errors(server_headers=(apache,),
                                   h2_server_settings={"ENABLE_CONNECT_PROTOCOL": 1,
                                                       "MAX_CONCURRENT_STREAMS": 100})
    obs = replace(obs, protocols={
        name: replace(p, http_requests=tuple(replace(r, server=apache) if r.status == 200
                                             else r for r in p.http_requests))
        for name, p in obs.protocols.items()})
    top = diagnose(obs).findings[0]
    assert top.id == "edge-backend-errors"
    assert "On the edge, HAProxy" in top.fix and "mod_proxy_hcheck" not in top.fix
    unknown = diagnose(replace(obs, run=replace(obs.run, h2_server_settings={}))).findings[0]
    assert "could not tell which product the edge is" in unknown.fix
