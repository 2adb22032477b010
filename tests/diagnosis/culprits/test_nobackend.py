"""Failures named by their pattern over every request: an edge with no backend (the same
502/503 to everything), a status for one kind of request only (said as seen), a status
that alternates with success across git's and the tool's own requests (a pool member),
in both directions; a size status stays a limit."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.culprits import nobackend
from gitnetdiag.diagnosis.culprits.answers import git_status_in_words
from gitnetdiag.diagnosis.culprits.pool import across_requesters
from gitnetdiag.diagnosis.observations import (
    BodyLimitProbe,
    H2Ledger,
    HttpExchange,
    Observations,
    PushObservation,
    RunProblem,
)
from gitnetdiag.diagnosis.terminators import KnowledgeBaseError
from tests.diagnosis.culprits.crafted import MB, Case, proto, run
from tests.diagnosis.test_transfer_culprits import HEALTHY
from tests.diagnosis.transfer_cases import on

REPO = "/git/lab.git"
GIT_503 = "fatal: unable to access 'https://198.18.2.2:8443/git/lab.git/': The requested URL " \
    "returned error: 503"


def _get(status: int, server: str | None = None, push: int = 1) -> HttpExchange:
    return HttpExchange(method="GET", path=f"{REPO}/info/refs", status=status, server=server,
                        push=push)


def _post(status: int, server: str | None = None, push: int = 1, **kw: object) -> HttpExchange:
    return HttpExchange(method="POST", path=f"{REPO}/git-receive-pack", status=status,
                        server=server, push=push, **kw)  # type: ignore[arg-type]


def _failed(message: str = GIT_503) -> PushObservation:
    return PushObservation(duration_s=0.3, bytes=MB, ok=False, error_kind="http-status",
                      error_message=message)


def case_edge_no_backend(**run_fields: object) -> Observations:
    """HAProxy's only backend is down: every GET info/refs of git's pushes (h1 and h2) and
    the native probe's own are answered 503 with no server header; SSH pushes work."""
    https = {}
    for name in ("h1", "h2"):
        p = proto(3.0)
        https[name] = replace(p, pushes=(_failed(),) * 3,
                              http_requests=tuple(_get(503, push=n) for n in (1, 2, 3)))
    native = RunProblem(stage="native", protocol="h2", reference="http-status",
                        message="GET info/refs answered HTTP 503")
    return Observations(run=run(**run_fields), protocols={**https, "ssh": proto(3.0)},
                        problems=(native,))


CASES: dict[str, Case] = {
    "edge-no-backend": (case_edge_no_backend, ("backend", "server")),
}


def test_the_same_503_to_every_request_is_an_edge_without_backend() -> None:
    result = diagnose(case_edge_no_backend())
    top = result.findings[0]
    print("edge-no-backend:", result.verdict, [(f.id, f.score, f.cost_s) for f in
                                               result.findings], result.headline)
    assert top.id == "edge-no-backend"
    assert result.verdict == "failed"
    assert "edge-no-backend" in result.headline and "cause not identified" not in result.headline
    answered = {(e.what, e.value) for e in top.evidence}
    assert ("HTTP/1.1 GET info/refs (git's) answered 503", 3) in answered
    assert ("HTTP/2 GET info/refs (gitnetdiag's) answered 503", 1) in answered
    assert ("SSH transfers completed", 3) in answered
    # No product identified: the fix lists the products that answer 503 by themselves.
    assert "could not identify the edge" in top.fix and "HAProxy gives by itself" in top.fix
    assert "ssh-channel-window" not in [f.id for f in result.findings]


def test_fix_names_the_edge_that_answered() -> None:
    """HAProxy's SETTINGS (or its config file on the host) name the edge; nginx's own
    server header on its 502 names nginx."""
    haproxy = diagnose(case_edge_no_backend(
        h2_server_settings={"ENABLE_CONNECT_PROTOCOL": 1, "MAX_CONCURRENT_STREAMS": 100}))
    assert "On the edge, HAProxy" in haproxy.findings[0].fix
    assert "option httpchk" in haproxy.findings[0].fix
    obs = case_edge_no_backend()
    nginx = replace(obs, problems=(), protocols={
        n: replace(p, http_requests=tuple(replace(r, status=502, server="nginx/1.22.1")
                                          for r in p.http_requests))
        for n, p in obs.protocols.items()})
    top = diagnose(nginx).findings[0]
    assert top.id == "edge-no-backend" and "On the edge, nginx" in top.fix
    assert "upstream" in top.fix and "nginx.org" in top.fix


def test_any_request_that_passed_is_not_a_dead_edge() -> None:
    """A status for one kind of request only (every GET 200, every POST 503, the same
    server): neither no backend nor a pool member; said as seen, cause not identified."""
    obs = case_edge_no_backend()
    one_kind = replace(obs, problems=(), protocols={
        n: replace(p, http_requests=tuple(r for k in (1, 2, 3) for r in (
            _get(200, push=k), _post(503, push=k)))) if n != "ssh" else p
        for n, p in obs.protocols.items()})
    assert nobackend.dead_edge(one_kind) is None
    result = diagnose(one_kind)
    ids = [f.id for f in result.findings]
    assert "edge-no-backend" not in ids and "edge-backend-errors" not in ids, ids
    # failed once every all-failing protocol fails the run (the verdict rule of issue 42
    # item 1); inconclusive before: never healthy or degraded, and no culprit named.
    assert result.verdict in ("failed", "inconclusive"), result.verdict
    assert not result.findings, result.headline
    failure = next(f for f in result.measurement_failures if f.protocol == "h1")
    assert failure.explained_by is None and "503" in failure.seen


def test_two_statuses_or_two_hops_are_not_one_dead_edge() -> None:
    obs = case_edge_no_backend()
    h1 = obs.protocols["h1"]
    mixed = replace(obs, protocols={**obs.protocols, "h1": replace(
        h1, http_requests=(_get(502), _get(503), _get(503)))})
    assert nobackend.dead_edge(mixed) is None
    hops = replace(obs, protocols={**obs.protocols, "h1": replace(
        h1, http_requests=(_get(503, "nginx"), _get(503), _get(503)))})
    assert nobackend.dead_edge(hops) is None
    lone = Observations(run=run(), protocols={"h1": replace(
        h1, http_requests=(_get(503),), pushes=(_failed(),))})
    assert nobackend.dead_edge(lone) is None, "one request says too little of every request"


def test_a_clone_through_a_dead_edge_is_named_too() -> None:
    """Download direction: every clone's ref advertisement answered 503 (git's words)."""
    failed = replace(HEALTHY, outcome="failed", moved_bytes=0, rate_bytes_per_s=None,
                     measured_s=0.0, failure_kind="http-status", last_line=GIT_503, tcp=None)
    clones = [replace(failed, repeat=n) for n in (1, 2)] + [
        replace(failed, protocol="h2", repeat=n) for n in (1, 2)]
    # The SSH clone of a tiny repository finished with too few bytes to give a rate: it
    # still shows the server behind the edge works.
    tiny = replace(HEALTHY, protocol="ssh", outcome="ok", moved_bytes=900,
                   rate_bytes_per_s=None, measured_s=0.0, tcp=None)
    result = diagnose(on([*clones, tiny]))
    assert result.findings and result.findings[0].id == "edge-no-backend", result.findings
    assert result.verdict == "failed"
    top = result.findings[0]
    assert "clones fail" in top.summary
    assert ("SSH transfers completed", 1) in {(e.what, e.value) for e in top.evidence}


def test_clones_refused_on_their_post_only_are_one_kind_not_a_dead_edge() -> None:
    """Every clone's POST git-upload-pack got 503 ("RPC failed"): their ref advertisement
    had passed, so this is a status for one kind of request only, not a dead edge."""
    rpc = "error: RPC failed; HTTP 503 curl 22 The requested URL returned error: 503"
    failed = replace(HEALTHY, outcome="failed", moved_bytes=0, rate_bytes_per_s=None,
                     measured_s=0.0, failure_kind="http-status", last_line=rpc, tcp=None)
    obs = on([replace(failed, protocol=p, repeat=n) for p in ("h1", "h2") for n in (1, 2)])
    assert nobackend.dead_edge(obs) is None
    ids = [f.id for f in diagnose(obs).findings]
    assert "edge-no-backend" not in ids and "edge-backend-errors" not in ids, ids


def test_git_status_in_words() -> None:
    assert git_status_in_words(GIT_503) == 503
    assert git_status_in_words("error: RPC failed; HTTP 308 curl 22 The requested URL "
                               "returned error: 308") == 308
    assert git_status_in_words("fatal: the remote end hung up unexpectedly") is None


def _redirecting_pool(apache: str = "Apache/2.4.71 (Debian)") -> Observations:
    """Round-robin over a good member and one answering 308: git's GET info/refs always
    on the good one, its POST git-receive-pack always on the bad one, both members giving
    the same server header (so the headers do not tell them apart); the native probe's
    own GET and POST to the same paths passed."""
    https = {}
    for name in ("h1", "h2"):
        p = proto(3.0)
        https[name] = replace(p, pushes=(_failed("error: RPC failed; HTTP 308 curl 22"),) * 3,
                              http_requests=tuple(r for k in (1, 2, 3) for r in (
                                  _get(200, apache, k), _post(308, apache, k))))
    https["h2"] = replace(https["h2"], h2_ledger=H2Ledger(
        source="native HTTP/2 probe of 198.18.2.2:8443", request_bytes=1_048_718))
    return Observations(run=run(server_headers=(apache,)),
                        protocols={**https, "ssh": proto(3.0)})


def test_the_tools_own_post_passing_names_the_pool_member() -> None:
    obs = _redirecting_pool()
    (mixed,) = across_requesters(obs, "h2")
    assert mixed.kind == "POST git-receive-pack (git's and gitnetdiag's own)"
    assert (mixed.ok, dict(mixed.failed)) == (1, {(308, "Apache/2.4.71 (Debian)"): 3})
    assert across_requesters(obs, "h1") == [], "no request of the tool's over HTTP/1.1"
    result = diagnose(obs)
    assert result.findings[0].id == "edge-backend-errors", result.findings
    assert result.verdict == "failed"
    assert "edge-backend-errors" in result.headline
    without = replace(obs, protocols={n: replace(p, h2_ledger=None)
                                      for n, p in obs.protocols.items()})
    assert "edge-backend-errors" not in [f.id for f in diagnose(without).findings]


@pytest.mark.parametrize("status", [411, 413])
def test_a_size_status_stays_a_limit(status: int) -> None:
    """The body probe's small sized POST passed while git's pack POST got 413 (or its
    streamed one 411): a limit, not a pool member, and no dead edge."""
    obs = _redirecting_pool()
    h2 = obs.protocols["h2"]
    limited = replace(h2, h2_ledger=None, http_requests=tuple(
        replace(r, status=status, streamed=status == 411) if r.method == "POST" else r
        for r in h2.http_requests), body_limit=BodyLimitProbe(
            source="native body probe of 198.18.2.2:8443", sized_status=200,
            streamed_status=411 if status == 411 else 200))
    obs = replace(obs, protocols={"h2": limited, "ssh": obs.protocols["ssh"]})
    assert across_requesters(obs, "h2") == []
    ids = [f.id for f in diagnose(obs).findings]
    assert "edge-backend-errors" not in ids and "edge-no-backend" not in ids, ids


def test_clones_that_pass_and_fail_on_the_same_request_are_a_pool() -> None:
    """Download direction: two clones of each HTTPS protocol passed, two got 502 on their
    POST git-upload-pack (git's "RPC failed"): members by turn."""
    rpc = "error: RPC failed; HTTP 502 curl 22 The requested URL returned error: 502"
    failed = replace(HEALTHY, outcome="failed", moved_bytes=0, rate_bytes_per_s=None,
                     measured_s=0.0, failure_kind="http-status", last_line=rpc, tcp=None)
    clones = [replace(c, protocol=p, repeat=n) for p in ("h1", "h2")
              for n, c in enumerate((HEALTHY, failed, HEALTHY, failed), 1)]
    obs = on(clones)
    assert [m.kind for m in across_requesters(obs, "h1")] == ["POST git-upload-pack (git's)"]
    ids = [f.id for f in diagnose(obs).findings]
    assert "edge-backend-errors" in ids and "edge-no-backend" not in ids, ids


def test_every_entry_of_the_data_names_a_known_product_and_its_page() -> None:
    assert {"haproxy", "nginx", "apache", "envoy", "go", "aws-alb"} <= set(nobackend.BACKENDS)
    for entry in nobackend.BACKENDS.values():
        assert entry.source.startswith("https://") and entry.fix and entry.statuses
    with pytest.raises(KnowledgeBaseError, match="not a product"):
        nobackend.parse('[[product]]\nid = "nope"\nstatuses = [503]\nanswer = "a"\n'
                        'fix = "b"\nsource = "https://x"\n')
    with pytest.raises(KnowledgeBaseError, match="5xx"):
        nobackend.parse('[[product]]\nid = "haproxy"\nstatuses = [200]\nanswer = "a"\nserver = ""\n'
                        'fix = "b"\nsource = "https://x"\n')


HAPROXY_PAGE = "503 Service Unavailable No server is available to handle this request."
"""HAProxy's built-in 503 (src/http.c, http_err_msgs) once its tags are stripped."""


def _with_page(obs: Observations, page: str) -> Observations:
    return replace(obs, problems=tuple(replace(p, page=page) for p in obs.problems))


def test_haproxys_own_page_names_the_edge() -> None:
    """The native probe's GET info/refs got HAProxy's own 503 page: HAProxy is named from
    it (no server header, no SETTINGS, no config file), in its terms, with the page's
    source."""
    top = diagnose(_with_page(case_edge_no_backend(), HAPROXY_PAGE)).findings[0]
    print("page:", top.fix)
    assert top.id == "edge-no-backend"
    assert "On the edge, HAProxy" in top.fix and "option httpchk" in top.fix
    assert "could not identify" not in top.fix
    assert "github.com/haproxy/haproxy" in top.fix
    tool = next(e for e in top.evidence if "gitnetdiag's" in e.what)
    assert tool.text == f'no server header, page "{HAPROXY_PAGE}"', tool.text


def test_a_page_that_is_not_haproxys_leaves_the_edge_unknown() -> None:
    """The same 503 with no server header, but the page is another's (a custom
    ``errorfile`` or another product): not identified, and not "HAProxy gives by itself"."""
    other = "Maintenance: the service is down, try again later."
    top = diagnose(_with_page(case_edge_no_backend(), other)).findings[0]
    assert top.id == "edge-no-backend"
    assert "could not identify the edge" in top.fix, top.fix
    assert "HAProxy gives by itself" not in top.fix and "On the edge" not in top.fix
    assert other in top.fix
    assert nobackend.by_page([other]) == [] and nobackend.by_page([HAPROXY_PAGE]) == ["haproxy"]


def test_a_clone_through_haproxy_without_backend_is_named_from_its_page() -> None:
    """Download direction: every clone's GET info/refs got 503 (git's words, no page) and
    the native HTTP/2 GET info/refs after them got HAProxy's page."""
    failed = replace(HEALTHY, outcome="failed", moved_bytes=0, rate_bytes_per_s=None,
                     measured_s=0.0, failure_kind="http-status", last_line=GIT_503, tcp=None)
    clones = [replace(failed, protocol=p, repeat=1) for p in ("h1", "h2")]
    native = RunProblem(stage="native", protocol="h2", reference="upload-pack-refused",
                        message="198.18.2.2:8443: GET info/refs answered HTTP 503",
                        page=HAPROXY_PAGE)
    obs = replace(on([*clones, replace(HEALTHY, protocol="ssh")]), problems=(native,))
    top = diagnose(obs).findings[0]
    assert top.id == "edge-no-backend" and "On the edge, HAProxy" in top.fix, top.fix
    assert ("HTTP/2 GET info/refs (gitnetdiag's) answered 503", 1) in {
        (e.what, e.value) for e in top.evidence}


def test_a_page_phrase_needs_its_source() -> None:
    entry = ('[[product]]\nid = "haproxy"\nstatuses = [503]\nanswer = "a"\nserver = ""\n'
             'fix = "f"\nsource = "https://example.org/doc"\n')
    assert nobackend.parse(entry + 'page = "No server"\npage_source = '
                           '"https://example.org/src"\n')["haproxy"].page == "No server"
    with pytest.raises(KnowledgeBaseError, match="page_source"):
        nobackend.parse(entry + 'page = "No server"\n')
    with pytest.raises(KnowledgeBaseError, match="page must be"):
        nobackend.parse(entry + 'page = " "\npage_source = "https://example.org/src"\n')
    assert nobackend.BACKENDS["haproxy"].page == "No server is available to handle this request."
