"""An edge whose backend pool has a bad member: requests of one kind succeed or fail by turn.

A load balancer that spreads requests over its pool without health checks
sends some of them to a member that is down or misconfigured (a port that
redirects everything to https, a stopped backend behind a 502). Through the
same edge the same request (``POST git-receive-pack``) then gets ``200`` one
time and ``308`` or ``502`` the next. git's pushes show it in their curl
traces: each request, its status and the ``server`` header of the answer.
No connection is cut, so this is never a firewall's reset.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from gitnetdiag.diagnosis.culprits._common import Hit, failure_cost_s, label, observed
from gitnetdiag.diagnosis.culprits.answers import answers
from gitnetdiag.diagnosis.model import Evidence
from gitnetdiag.diagnosis.observations import HttpExchange, Observations
from gitnetdiag.diagnosis.servers import NAMES, answering_server

HTTPS_PROTOCOLS = ("h1", "h2")
AUTH_CHALLENGES = frozenset({401, 407})
"""Statuses that are part of a normal exchange (credentials asked for, then sent)."""


@dataclass(frozen=True, kw_only=True)
class PoolCheck:
    """How one product health-checks the members of its pool, from its documentation."""

    text: str
    """The setting, in the product's own terms."""
    source: str
    """The documentation page it comes from."""


POOL_CHECKS: dict[str, PoolCheck] = {
    "haproxy": PoolCheck(
        text="in the backend, `option httpchk GET <a path git serves>` with "
        "`http-check expect status 200`, and `check` on each `server` line (without "
        "`http-check expect`, any 2xx or 3xx answer passes the check, a redirecting member "
        "too)",
        source="https://docs.haproxy.org/2.6/configuration.html, `option httpchk`",
    ),
    "nginx": PoolCheck(
        text="`server ... max_fails=N fail_timeout=T` in the `upstream` block counts "
        "only what `proxy_next_upstream` names as a failure (errors, timeouts, `http_500`, "
        "`http_502`, `http_503`, `http_504`, ...); a member that answers a redirect is "
        "never counted failed: mark it `down` or take it out of the `upstream`",
        source="https://nginx.org/en/docs/http/ngx_http_upstream_module.html#server",
    ),
    "apache": PoolCheck(
        text="mod_proxy_hcheck on each `BalancerMember` (`hcmethod=GET "
        "hcuri=<a path git serves> hcexpr=<name>` with a `ProxyHCExpr` that wants a 2xx "
        "status: without `hcexpr` a 2xx or 3xx answer passes)",
        source="https://httpd.apache.org/docs/2.4/mod/mod_proxy_hcheck.html",
    ),
}
"""Product (:data:`gitnetdiag.diagnosis.servers.SERVERS` key) -> its pool health check."""


SIZE_STATUSES = frozenset({411, 413})
"""Statuses that refuse a request for its body's size or framing: a limit, not a member."""


def is_failure_status(status: int | None) -> bool:
    """A redirect or an error status that is not a credentials challenge, nor a refusal
    of the body's size or framing (a limit answers those, whichever member it reaches)."""
    return (status is not None and status >= 300 and status not in AUTH_CHALLENGES
            and status not in SIZE_STATUSES)


def _sized_kind(r: HttpExchange) -> str:
    """The request's kind and body: the same request is the same method, path and size."""
    if r.method != "POST":
        return r.kind
    body = "streamed" if r.streamed else (
        f"{r.content_length_bytes} B" if r.content_length_bytes is not None else "")
    return f"{r.kind} ({body})" if body else r.kind


@dataclass(frozen=True, kw_only=True)
class MixedKind:
    """One kind of request that both succeeded and failed through the same edge."""

    kind: str
    """``POST git-receive-pack``, ``GET info/refs``, ..."""
    ok: int
    """Requests answered 2xx."""
    failed: Counter[tuple[int, str]]
    """(status, server header or '') -> requests answered so."""
    ok_servers: tuple[str, ...]
    """``server`` headers of the 2xx answers ('' for none), distinct, in order."""

    @property
    def total(self) -> int:
        return self.ok + sum(self.failed.values())


def _kind_of(requests: list[HttpExchange], kind: str) -> MixedKind:
    ok = [r for r in requests if r.status is not None and 200 <= r.status < 300]
    failed = Counter((r.status or 0, r.server or "") for r in requests
                     if is_failure_status(r.status))
    return MixedKind(kind=kind, ok=len(ok), failed=failed,
                     ok_servers=tuple(dict.fromkeys(r.server or "" for r in ok)))


def mixed_kinds(requests: tuple[HttpExchange, ...]) -> list[MixedKind]:
    """Request kinds with 2xx answers and failure answers both (pure).

    When no kind is mixed (two members taking turns can give every ``GET`` to one and every
    ``POST`` to the other), the pushes' requests to the same repository count as one kind
    if their failures came from another server than their successes: the ``server``
    header of the 2xx answers differs from that of the failures."""
    # an edge's timeout status is no member's (edge-idle-timeout), as in across_requesters
    answered = [r for r in requests if r.status is not None and r.status not in TIMEOUT_STATUSES]
    kinds = [_kind_of([r for r in answered if _sized_kind(r) == kind], kind)
             for kind in dict.fromkeys(_sized_kind(r) for r in answered)]
    mixed = [k for k in kinds if k.ok and k.failed]
    if mixed:
        return mixed
    failing = ", ".join(dict.fromkeys(r.kind for r in answered if is_failure_status(r.status)))
    every = _kind_of(answered, f"requests to the repository (failed: {failing})")
    failed_servers = {server for _status, server in every.failed}
    if every.ok and every.failed and not failed_servers & set(every.ok_servers):
        return [every]
    return []


TIMEOUT_STATUSES = frozenset({408, 504})
"""Statuses of a request that took too long (an edge's timeout): they alternate with
success by how long the server worked, whichever member answered (``edge-idle-timeout``)."""


def across_requesters(obs: Observations, name: str) -> list[MixedKind]:
    """Request kinds (method and path, whatever the size) answered 2xx and a failure status
    both, where the tool's own requests are among them: git's ``POST git-receive-pack``
    redirected while gitnetdiag's own native POST to the same path passed (pure). A
    download's clones need no request of the tool's: a clone's requests are the same
    whatever the member, so clones that pass and fail on the same request alternate."""
    every = answers(obs, name)
    found = []
    for kind in dict.fromkeys(a.kind for a in every):
        same = [a for a in every if a.kind == kind]
        ok = [a for a in same if a.ok]
        failed = [a for a in same if is_failure_status(a.status)
                  and a.status not in TIMEOUT_STATUSES]
        tool = any(a.who == "tool" for a in (*ok, *failed))
        if ok and failed and (tool or obs.run.transfer == "download"):
            whose = "git's and gitnetdiag's own" if tool else "git's"
            found.append(MixedKind(kind=f"{kind} ({whose})", ok=len(ok),
                                   failed=Counter((a.status or 0, a.server) for a in failed),
                                   ok_servers=tuple(dict.fromkeys(a.server for a in ok))))
    return found


def _who(server: str) -> str:
    return f"server: {server}" if server else "no server header"


def _evidence(name: str, mixed: list[MixedKind], noun: str) -> list[Evidence]:
    source = f"curl trace of the {label(name)} {noun}"
    items = []
    for kind in mixed:
        items.append(Evidence(what=f"{label(name)} {kind.kind} answered 2xx", value=kind.ok,
                              unit="count", of=kind.total,
                              text=", ".join(_who(s) for s in kind.ok_servers), source=source))
        for (status, server), count in sorted(kind.failed.items()):
            items.append(Evidence(what=f"{label(name)} {kind.kind} answered {status}",
                                  value=count, unit="count", of=kind.total, text=_who(server),
                                  threshold=0, comparison=">", source=source))
    return items


def _edge_product(obs: Observations, members: set[str]) -> str | None:
    """The edge's product id: not a name one of the pool's members gave (a ``server``
    header the edge passed through from a member names the member, not the edge); then
    its HTTP/2 fingerprint, which is the edge's own (it terminates HTTP/2)."""
    identity = answering_server(obs)
    if identity is None:
        return None
    if identity.product is not None and identity.product in members:
        return identity.fingerprint
    return identity.server


def _fix(obs: Observations, members: set[str]) -> str:
    edge = _edge_product(obs, members)
    lead = ("Take the failing member out of the edge's pool and health-check the members "
            "with a request git makes, expecting 200, so that a member that redirects or "
            "errs is taken out by itself")
    if edge in POOL_CHECKS:
        check = POOL_CHECKS[edge]
        return f"{lead}. On the edge, {NAMES.get(edge, edge)}: {check.text} ({check.source})."
    known = "; ".join(f"{NAMES.get(edge, edge)}: {c.text} ({c.source})"
                      for edge, c in POOL_CHECKS.items())
    return f"{lead}; gitnetdiag could not tell which product the edge is: {known}."


def edge_backend_errors(obs: Observations) -> Hit | None:
    evidence: list[Evidence] = []
    summary_bits: list[str] = []
    worst_cost, worst_protocol = 0.0, None
    failed_pushes = 0
    members: set[str] = set()
    noun = "clones" if obs.run.transfer == "download" else "pushes"
    for name, p in observed(obs, HTTPS_PROTOCOLS):
        # git's POST refused where the tool's passed proves nothing of the pool when the
        # body git's HTTP stack sent was not git's pack (client-http-stack's evidence).
        mixed = mixed_kinds(p.http_requests) or (
            [] if p.h2_spoiled_body is not None else across_requesters(obs, name))
        if not mixed:
            continue
        evidence += _evidence(name, mixed, noun)
        cost, failed, total = failure_cost_s(obs, name, {"http-status"})
        failed_pushes += failed
        if cost > worst_cost:
            worst_cost, worst_protocol = cost, name
        for kind in mixed:
            statuses = ", ".join(f"{count} got {status} ({_who(server)})"
                                 for (status, server), count in sorted(kind.failed.items()))
            summary_bits.append(f"{label(name)} {kind.kind}: {kind.ok} of {kind.total} got "
                                f"2xx, {statuses}")
        if failed:
            summary_bits.append(f"{failed} of {total} {label(name)} {noun} failed on it")
        members.update(server for kind in mixed for server in kind.ok_servers if server)
        members.update(server for kind in mixed for _status, server in kind.failed if server)
    if not evidence:
        return None
    return Hit(
        score=0.75 if failed_pushes else 0.5,
        cost_s=worst_cost,
        cost_protocol=worst_protocol,
        summary="Through the same edge the same requests succeeded and failed by turn ("
        + "; ".join(summary_bits)
        + "): a member of the edge's pool is down or misconfigured.",
        evidence=tuple(evidence),
        fix=_fix(obs, members),
    )
