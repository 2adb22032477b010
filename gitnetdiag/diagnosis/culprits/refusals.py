"""Pushes refused or cut by a limit on the way: a body too large, a streamed body, a silence.

Three ways an HTTP server or its edge makes a push fail, each told apart by what git's
curl trace (every request: its framing, its size, its status, how it ended) and the native
body probe (:class:`~gitnetdiag.diagnosis.observations.BodyLimitProbe`) saw:

- ``request-body-limit``: the pack POST answered 413 while a smaller POST of the same kind
  passed (git's 4-byte probe POST); the probe brackets the limit with ``Expect:
  100-continue`` requests that send no body.
- ``streamed-body-refused``: a POST without a ``Content-Length`` (git streams every pack
  above ``http.postBuffer``) answered 411, or was reset right after its headers, while a
  POST with one passed.
- ``edge-idle-timeout``: the server side closed the connection after N s of silence while
  the server was still working (the SSH push beside it, or the server's own wait, measured
  longer). The close comes from the TLS terminator, whatever ``server`` header passed it.

The fix names the setting of the product that answered (``data/edge_limits.toml``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gitnetdiag.diagnosis.culprits._common import Hit, failure_cost_s, label, observed
from gitnetdiag.diagnosis.culprits.weights import WEIGHTS
from gitnetdiag.diagnosis.edgelimits import LIMITS, setting_text
from gitnetdiag.diagnosis.model import Evidence
from gitnetdiag.diagnosis.observations import (
    BodyLimitProbe,
    HttpExchange,
    Observations,
    ProtocolObservation,
)
from gitnetdiag.diagnosis.servers import answering_server, products_of_files
from gitnetdiag.diagnosis.terminators import by_fingerprint, by_name
from gitnetdiag.diagnosis.units import fmt_bytes, fmt_s

HTTPS = ("h1", "h2")
TOO_LARGE = 413
LENGTH_REQUIRED = 411
RIGHT_AFTER_HEADERS_S = 1.0
"""A close this soon after the request's last header is a refusal of the request, not a
timeout of a silent server."""
MIN_IDLE_S = 1.0
"""A close after less silence than this is no idle timeout."""
FAILED_KINDS = frozenset({"http-status", "reset", "other", "timeout", "hung"})
"""Push failure kinds a refusal or a cut connection gives (git's words vary)."""
POST_BUFFER_SOURCE = "https://git-scm.com/docs/git-config#Documentation/git-config.txt-httppostBuffer"
KEEPALIVE_SOURCE = "https://git-scm.com/docs/git-config#Documentation/git-config.txt-receivekeepAlive"
FALLBACK = ("nginx", "apache", "haproxy", "aws-alb", "cloudflare")
"""Products named, each with its setting, when gitnetdiag cannot tell which answered."""


@dataclass
class _Failures:
    """The protocols whose pushes failed on a culprit, and the costliest of them."""

    protocols: list[str] = field(default_factory=list)
    worst_s: float = 0.0
    worst_protocol: str | None = None

    def charge(self, obs: Observations, name: str) -> None:
        cost, failed, _total = failure_cost_s(obs, name, FAILED_KINDS)
        if failed:
            self.protocols.append(name)
        if cost > self.worst_s:
            self.worst_s, self.worst_protocol = cost, name


def _posts(p: ProtocolObservation) -> list[HttpExchange]:
    return [r for r in p.http_requests if r.method == "POST"]


def _ok(r: HttpExchange) -> bool:
    return r.status is not None and 200 <= r.status < 300


def _products(obs: Observations, said: Iterable[str | None]) -> list[str]:
    """Product ids on the path, the TLS terminator first: a close and a status may come
    from it while a ``server`` header passed on from behind names another product. The
    terminator is known by its HTTP/2 SETTINGS or by the configuration read on the host."""
    ids: list[str] = []
    like = by_fingerprint(obs.run.h2_server_settings or {})
    if like is not None:
        ids.append(like.id)
    files = tuple(f.file for f in obs.host.config_findings) if obs.host else ()
    ids += products_of_files(files)
    for text in said:
        known = by_name(text) if text else None
        if known is not None:
            ids.append(known.id)
    identity = answering_server(obs)
    if identity is not None and identity.server:
        ids.append(identity.server)
    return [i for i in dict.fromkeys(ids) if i in LIMITS]


def _fix_lines(products: list[str], fact: str, value: float) -> str:
    known = products or list(FALLBACK)
    lines = [text for pid in known if (text := setting_text(pid, fact, value)) is not None]
    if not lines:
        return "gitnetdiag has no documented setting for the product that answered"
    lead = "" if products else "gitnetdiag could not tell which product answered; "
    return lead + "; ".join(lines)


def _bracket(probe: BodyLimitProbe | None) -> tuple[int, int] | None:
    if probe is None or probe.smallest_refused_bytes is None:
        return None
    return probe.largest_accepted_bytes or 0, probe.smallest_refused_bytes


def _pack_bytes(obs: Observations, p: ProtocolObservation) -> int | None:
    sizes = [push.bytes for push in p.pushes if push.bytes > 0]
    return max(sizes) if sizes else obs.run.repo_bytes


def _limit_evidence(name: str, refused: list[HttpExchange], passed: list[HttpExchange],
                    probe: BodyLimitProbe | None, pack: int | None) -> list[Evidence]:
    source = f"curl trace of the {label(name)} pushes"
    items = [Evidence(what=f"{label(name)} pack POST answered {TOO_LARGE}",
                      value=len(refused), unit="count", threshold=0, comparison=">",
                      text=", ".join(sorted({f"server: {r.server}" if r.server
                                             else "no server header" for r in refused})),
                      source=source)]
    sized = [r.content_length_bytes for r in passed if r.content_length_bytes is not None]
    if sized:
        items.append(Evidence(what=f"{label(name)} smaller POST of the same kind answered 2xx",
                              value=max(sized), unit="B", source=source))
    bracket = _bracket(probe)
    if bracket is not None and probe is not None:
        items.append(Evidence(
            what="request-body limit (smallest body refused)", value=bracket[1], unit="B",
            text=f"largest accepted {fmt_bytes(bracket[0])}, {probe.requests} requests "
            "with Expect: 100-continue and no body sent", source=probe.source))
    if pack is not None:
        items.append(Evidence(what=f"{label(name)} pack size", value=pack, unit="B",
                              threshold=bracket[1] if bracket else None,
                              comparison=">=" if bracket else None, source="the push"))
    return items


def request_body_limit(obs: Observations) -> Hit | None:
    evidence: list[Evidence] = []
    failures = _Failures()
    said: list[str | None] = []
    limit: int | None = None
    for name, p in observed(obs, HTTPS):
        posts = _posts(p)
        refused = [r for r in posts if r.status == TOO_LARGE]
        probe_bracket = _bracket(p.body_limit)
        if not refused and probe_bracket is None:
            continue
        passed = [r for r in posts if _ok(r)]
        evidence += _limit_evidence(name, refused, passed, p.body_limit, _pack_bytes(obs, p))
        said += [r.server for r in refused]
        if p.body_limit is not None:
            said.append(p.body_limit.server)
        if probe_bracket is not None:
            limit = probe_bracket[1] if limit is None else min(limit, probe_bracket[1])
        failures.charge(obs, name)
    if not evidence:
        return None
    failing = failures.protocols
    which = " and ".join(label(n) for n in failing) or "HTTPS"
    bound = f" between {fmt_bytes(limit * 0.95)} and {fmt_bytes(limit)}" if limit else ""
    summary = (f"{which} pushes fail: the server or an edge refuses request bodies above a "
               f"limit{bound} ({TOO_LARGE} on the pack POST while smaller POSTs passed); a "
               "limit by size, not a bad pool member.")
    target = 4 * max((_pack_bytes(obs, obs.protocols[n]) or 0) for n in HTTPS
                     if n in obs.protocols) or (1 << 30)
    settings = _fix_lines(_products(obs, said), "body_limit", target)
    fix = (f"Raise the request-body limit above the largest pack pushed (here to "
           f"{fmt_bytes(target)} or more): {settings}."
           " Where the limit is fixed (a managed load balancer or CDN): push over SSH, or in "
           "smaller pushes (a few commits at a time).")
    weights = WEIGHTS["request-body-limit"]
    score = weights["refused-bracketed" if failing and limit else "refused"]
    return Hit(score=score, cost_s=failures.worst_s, cost_protocol=failures.worst_protocol,
               summary=summary, evidence=tuple(evidence), fix=fix)


def _refused_streams(p: ProtocolObservation) -> tuple[list[HttpExchange], list[HttpExchange]]:
    """The streamed POSTs refused (411, or closed right after the headers) and the POSTs
    with a ``Content-Length`` that passed."""
    posts = _posts(p)
    refused = [r for r in posts if r.streamed and (
        r.status == LENGTH_REQUIRED
        or (r.status is None and r.ending and r.silence_before_close_s is not None
            and r.silence_before_close_s < RIGHT_AFTER_HEADERS_S))]
    sized_ok = [r for r in posts if not r.streamed and _ok(r)]
    return refused, sized_ok


def _probe_refused_stream(probe: BodyLimitProbe | None) -> bool:
    if probe is None:
        return False
    sized_ok = probe.sized_status is not None and probe.sized_status < 400
    return sized_ok and (probe.streamed_status == LENGTH_REQUIRED or probe.streamed_reset)


def _stream_evidence(name: str, refused: list[HttpExchange], sized_ok: list[HttpExchange],
                     probe: BodyLimitProbe | None) -> list[Evidence]:
    source = f"curl trace of the {label(name)} pushes"
    items = []
    if refused:
        how = sorted({str(r.status) if r.status else f"closed: {r.ending}" for r in refused})
        items.append(Evidence(what=f"{label(name)} POST without Content-Length refused",
                              value=len(refused), unit="count", threshold=0, comparison=">",
                              text=", ".join(how), source=source))
    if sized_ok:
        items.append(Evidence(what=f"{label(name)} POST with a Content-Length answered 2xx",
                              value=len(sized_ok), unit="count", source=source))
    if _probe_refused_stream(probe) and probe is not None:
        answer = ("reset right after the headers" if probe.streamed_reset
                  else f"{probe.streamed_status}")
        items.append(Evidence(what="the same small POST, streamed vs with a Content-Length",
                              text=f"streamed: {answer}; with a length: {probe.sized_status}",
                              source=probe.source))
    return items


def streamed_body_refused(obs: Observations) -> Hit | None:
    evidence: list[Evidence] = []
    failures = _Failures()
    said: list[str | None] = []
    for name, p in observed(obs, HTTPS):
        refused, sized_ok = _refused_streams(p)
        by_probe = _probe_refused_stream(p.body_limit)
        if not (refused and sized_ok) and not by_probe:
            continue
        evidence += _stream_evidence(name, refused, sized_ok, p.body_limit)
        said += [r.server for r in refused]
        failures.charge(obs, name)
    if not evidence:
        return None
    pack = max((_pack_bytes(obs, obs.protocols[n]) or 0) for n in HTTPS if n in obs.protocols)
    buffer = 1 << max(20, (2 * max(pack, 1)).bit_length())
    failing = failures.protocols
    which = " and ".join(label(n) for n in failing) or "HTTPS"
    h1_ok = "h1" in obs.protocols and "h1" not in failing
    fix = (f"Let git send the pack with a Content-Length: `git config http.postBuffer "
           f"{buffer}` (above the pack; {POST_BUFFER_SOURCE})"
           + ("; or use HTTP/1.1 to that host (`git config http.version HTTP/1.1`), whose "
              "pushes passed" if h1_ok else "")
           + ". On the server or edge: "
           + _fix_lines(_products(obs, said), "streamed_body", 0) + ".")
    return Hit(
        score=WEIGHTS["streamed-body-refused"]["pushes-failed" if failing else "probe-only"],
        cost_s=failures.worst_s, cost_protocol=failures.worst_protocol,
        summary=f"{which} pushes fail: the server or an edge refuses a request body sent "
        "without a Content-Length (git streams every pack above http.postBuffer), while "
        "the same request with one passes.",
        evidence=tuple(evidence), fix=fix)


def _cut(p: ProtocolObservation) -> list[HttpExchange]:
    """Requests closed by the server side after at least :data:`MIN_IDLE_S` of silence."""
    return [r for r in p.http_requests if r.ending and r.silence_before_close_s is not None
            and r.silence_before_close_s >= MIN_IDLE_S and not (r.status or 0) >= 400]


def _server_busy_s(obs: Observations) -> tuple[float, str] | None:
    """The longest silent server phase measured: the server's wait for its status report
    on a push that completed (hooks, receive-pack), by protocol."""
    best: tuple[float, str] | None = None
    for name, p in obs.protocols.items():
        wait = p.trace2.server_wait_s if p.trace2 else None
        if wait is not None and any(push.ok for push in p.pushes) and (
                best is None or wait > best[0]):
            best = (wait, name)
    return best


def edge_idle_timeout(obs: Observations) -> Hit | None:
    evidence: list[Evidence] = []
    failures = _Failures()
    said: list[str | None] = []
    idle: list[float] = []
    for name, p in observed(obs, HTTPS):
        cut = _cut(p)
        if not cut:
            continue
        silences = [r.silence_before_close_s for r in cut if r.silence_before_close_s]
        idle += silences
        said += [r.server for r in cut]
        evidence.append(Evidence(
            what=f"{label(name)} connection closed from the server side after silence",
            value=min(silences), unit="s", of=None,
            text="; ".join(sorted({r.ending for r in cut})),
            source=f"curl trace of the {label(name)} pushes"))
        failures.charge(obs, name)
    if not evidence:
        return None
    timeout = min(idle)
    busy = _server_busy_s(obs)
    if busy is not None:
        evidence.append(Evidence(
            what=f"{label(busy[1])} push: the server's silent work before its status",
            value=busy[0], unit="s", threshold=timeout, comparison=">",
            source=f"trace2 of the {label(busy[1])} pushes"))
    working = busy is not None and busy[0] > timeout
    failing = failures.protocols
    which = " and ".join(label(n) for n in failing) or "HTTPS"
    busy_text = (f"; the {label(busy[1])} push measured the server silent for "
                 f"{fmt_s(busy[0])}" if working and busy else
                 "; the server's own working time was not measured longer")
    target = max(60.0, 2 * (busy[0] if busy else timeout))
    fix = (f"Raise the edge's timeout toward the server above the server's longest silent "
           f"phase (hooks, index-pack), to {fmt_s(target)} or more: "
           f"{_fix_lines(_products(obs, said), 'idle_timeout', target)}. On the git server, "
           f"`git config receive.keepAlive {max(1, int(timeout / 2))}` (below the "
           f"{fmt_s(timeout)} timeout) makes receive-pack send keepalives during that "
           f"silence ({KEEPALIVE_SOURCE}).")
    return Hit(
        score=WEIGHTS["edge-idle-timeout"][
            "server-working" if working and failing else "close-only"], cost_s=failures.worst_s,
        cost_protocol=failures.worst_protocol,
        summary=f"{which} pushes fail: the connection was closed from the server side after "
        f"{fmt_s(timeout)} of silence{busy_text}: an idle timeout on the way (most likely "
        "the edge that terminates TLS), not a firewall.",
        evidence=tuple(evidence), fix=fix)
