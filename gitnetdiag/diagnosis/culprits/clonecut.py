"""``edge-idle-timeout`` on a clone: the pack request ended by the edge after N s of silence.

A clone's ``POST git-upload-pack`` waits while the server prepares the pack (counting and
compressing objects, a pack-objects hook, a pack cache). An edge whose timeout toward the
server is shorter ends the request at that timeout, in one of two ways, told apart by the
clone's curl trace (git's HTTPS clones keep one, no data lines):

- before the server's response headers: the edge answers **504** itself, N s after the
  request went (git: ``RPC failed; HTTP 504 curl 22``, ``expected 'packfile'``);
- after them (the server said ``packfile`` and went silent): the edge closes the
  connection N s after the last byte (HTTP/1.1: ``curl 18 transfer closed with outstanding
  read data remaining``; HTTP/2: the stream ends and git finds the pack short, ``early
  EOF``, ``invalid index-pack output``).

N is the silence measured (the request's ``silence_before_status_s`` or
``silence_before_close_s``, :class:`~gitnetdiag.diagnosis.transfers.HttpExchange`); the
server's silent phase beside it comes from a clone that passed (SSH, git://, or the direct
HTTPS port): its wait from the fetch request to the first pack byte (trace2 and git's
progress). The fix names the edge's read timeout
(``data/edge_limits.toml``) and ``uploadpack.keepAlive``, which holds only a response that
has begun; ``http.postBuffer`` does not apply to a clone.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitnetdiag.diagnosis.culprits._common import Hit, failure_cost_s, label, observed
from gitnetdiag.diagnosis.culprits.refusals import (
    FAILED_KINDS,
    HTTPS,
    MIN_IDLE_S,
    _fix_lines,
    _products,
)
from gitnetdiag.diagnosis.culprits.refusals import edge_idle_timeout as push_edge_idle_timeout
from gitnetdiag.diagnosis.culprits.weights import WEIGHTS
from gitnetdiag.diagnosis.model import Evidence
from gitnetdiag.diagnosis.observations import HttpExchange, Observations
from gitnetdiag.diagnosis.units import fmt_s

GATEWAY_TIMEOUT = 504
"""What an edge answers when its timeout toward the server ran out before the answer
(RFC 9110 section 15.6.5; HAProxy ``timeout server``, nginx ``proxy_read_timeout``)."""
PACK_REQUEST = "POST git-upload-pack"
KEEPALIVE_SOURCE = ("https://git-scm.com/docs/git-config#Documentation/git-config.txt-"
                    "uploadpackkeepAlive")
POST_BUFFER_SOURCE = ("https://git-scm.com/docs/git-config#Documentation/git-config.txt-"
                      "httppostBuffer")


@dataclass(frozen=True, kw_only=True)
class _Cut:
    """One clone's pack request ended by the server side after a silence."""

    protocol: str
    request: HttpExchange
    silence_s: float
    before_headers: bool
    """Answered 504 (the edge's own answer, before the server's headers)."""


def _cuts(obs: Observations) -> list[_Cut]:
    """The failed HTTPS clones' pack requests ended after :data:`MIN_IDLE_S` of silence."""
    failed = {(t.protocol, t.repeat) for t in obs.transfers if t.failure_kind is not None}
    cuts = []
    for name, p in observed(obs, HTTPS):
        for r in p.http_requests:
            if r.kind != PACK_REQUEST or (name, r.push) not in failed:
                continue
            if r.status == GATEWAY_TIMEOUT and (r.silence_before_status_s or 0) >= MIN_IDLE_S:
                cuts.append(_Cut(protocol=name, request=r, before_headers=True,
                                 silence_s=r.silence_before_status_s or 0.0))
            elif (r.status is None or r.status < 300) and r.ending \
                    and (r.silence_before_close_s or 0) >= MIN_IDLE_S:
                cuts.append(_Cut(protocol=name, request=r, before_headers=False,
                                 silence_s=r.silence_before_close_s or 0.0))
    return cuts


def _cut_evidence(name: str, cuts: list[_Cut]) -> Evidence:
    silence = min(c.silence_s for c in cuts)
    source = f"curl trace of the {label(name)} clones ({PACK_REQUEST})"
    if all(c.before_headers for c in cuts):
        servers = sorted({f"server: {c.request.server}" if c.request.server
                          else "no server header" for c in cuts})
        return Evidence(what=f"{label(name)} clone's pack request answered "
                        f"{GATEWAY_TIMEOUT} after silence", value=silence, unit="s",
                        text=f"{len(cuts)} of the clones; " + ", ".join(servers),
                        source=source)
    behind = sorted({c.request.server for c in cuts if c.request.server})
    return Evidence(what=f"{label(name)} clone's connection closed from the server side "
                    "after silence", value=silence, unit="s",
                    text="after the response headers"
                    + (f" (theirs from {', '.join(behind)}, behind the hop that cut)"
                       if behind else "") + "; "
                    + "; ".join(sorted({c.request.ending for c in cuts})), source=source)


def _server_silent_s(obs: Observations) -> tuple[float, str] | None:
    """The longest wait from the fetch request to the first pack byte of a clone that
    passed (the server's silent pack preparation, seen where no edge cut it), by protocol."""
    best: tuple[float, str] | None = None
    for t in obs.transfers:
        wait = t.phases.server_pack_generation_s
        if t.failure_kind is None and wait is not None and (best is None or wait > best[0]):
            best = (wait, t.protocol)
    return best


def _cost_s(obs: Observations, name: str) -> float:
    """Expected seconds a clone of ``name`` loses to the cut: the failed clone's time, and
    a whole clone again (the wall time of a clone that passed: the server's silent
    preparation included, which a redo pays again); the push model's
    (:func:`~gitnetdiag.diagnosis.culprits._common.failure_cost_s`) without a passing clone."""
    mine = [t for t in obs.transfers if t.protocol == name]
    passed = sorted(t.wall_s for t in obs.transfers if t.failure_kind is None and t.measured)
    failed = [t for t in mine if t.failure_kind is not None]
    if not passed or not mine:
        return failure_cost_s(obs, name, FAILED_KINDS)[0]
    redo = passed[len(passed) // 2]
    return sum(t.wall_s + redo for t in failed) / len(mine)


def _fix(obs: Observations, cuts: list[_Cut], timeout: float, busy: float | None) -> str:
    target = max(60.0, 2 * (busy or timeout))
    # A 504 is the edge's own answer (its server header, if any, names it); after the
    # headers the server header is the working server's, passed on by the hop that cut.
    said = [c.request.server for c in cuts if c.before_headers]
    settings = _fix_lines(_products(obs, said), "idle_timeout", target)
    before = any(c.before_headers for c in cuts)
    keepalive = (f"On the git server, `git config uploadpack.keepAlive "
                 f"{max(1, int(timeout / 2))}` (below the {fmt_s(timeout)} timeout) makes "
                 "upload-pack send keepalive packets while pack-objects is silent, once its "
                 f"response has begun ({KEEPALIVE_SOURCE})")
    keepalive += (": it cannot hold a request the edge answers before the server's headers "
                  "(the 504), only a faster pack preparation can (`git repack -adb`: one "
                  "pack with a reachability bitmap)." if before else ".")
    return (f"Raise the edge's timeout toward the server above the server's longest silent "
            f"phase of a clone (counting and compressing objects before the pack), to "
            f"{fmt_s(target)} or more: {settings}. {keepalive} `http.postBuffer`, the usual "
            "advice for this error, does not apply to a clone: it sizes the request bodies "
            f"git sends, and a clone's requests are small ({POST_BUFFER_SOURCE}).")


def clone_edge_idle_timeout(obs: Observations) -> Hit | None:
    """``edge-idle-timeout`` of a download (see the module doc)."""
    cuts = _cuts(obs)
    if not cuts:
        return None
    names = list(dict.fromkeys(c.protocol for c in cuts))
    evidence = [_cut_evidence(n, [c for c in cuts if c.protocol == n]) for n in names]
    timeout = min(c.silence_s for c in cuts)
    busy = _server_silent_s(obs)
    if busy is not None:
        evidence.append(Evidence(
            what=f"{label(busy[1])} clone: the server silent from the fetch request to the "
            "first pack byte", value=busy[0], unit="s", threshold=timeout, comparison=">",
            source=f"trace2 and git's progress of the {label(busy[1])} clones"))
    working = busy is not None and busy[0] > timeout
    costs = [(_cost_s(obs, n), n) for n in names]
    cost, worst = max(costs)
    which = " and ".join(label(n) for n in names)
    how = (f"the edge answered the pack request {GATEWAY_TIMEOUT} after {fmt_s(timeout)} "
           "of server silence, before the server's response headers"
           if all(c.before_headers for c in cuts) else
           f"the connection was closed from the server side after {fmt_s(timeout)} of "
           "silence")
    busy_text = (f"; the {label(busy[1])} clone measured the server silent for "
                 f"{fmt_s(busy[0])} before its first pack byte" if working and busy else
                 "; the server's own silent phase was not measured longer")
    return Hit(
        score=WEIGHTS["edge-idle-timeout"]["server-working" if working else "close-only"],
        cost_s=cost, cost_protocol=worst,
        summary=f"{which} clones fail: {how}{busy_text}: an idle timeout on the way (most "
        "likely the edge that terminates TLS) while the server prepared the pack.",
        evidence=tuple(evidence), fix=_fix(obs, cuts, timeout, busy[0] if busy else None))


def edge_idle_timeout(obs: Observations) -> Hit | None:
    """``edge-idle-timeout`` in either direction: a push's
    (:func:`~gitnetdiag.diagnosis.culprits.refusals.edge_idle_timeout`) or a clone's."""
    if obs.run.transfer == "download":
        return clone_edge_idle_timeout(obs)
    return push_edge_idle_timeout(obs)
