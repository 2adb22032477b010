"""An edge with no working backend: the same 502/503 to every request through it.

An edge (a load balancer, a reverse proxy) whose only backend is down, or whose every
member failed its health check, answers each request itself: HAProxy a 503 with no
``server`` header, nginx a 502 with its own, an AWS ALB a 503 from ``awselb``. Nothing
passes: git's ref advertisement and the tool's own native requests get the same status
from the same hop, while SSH or git:// to the same host works. The pattern is read over
:mod:`.answers` (every request by kind, who made it, who answered):

    every answered HTTPS request   the same 502 or 503       edge-no-backend
    ... and none 2xx               from the same hop         (both directions)
    some 2xx on another kind       "a status for one kind"   not this (said as seen)
    2xx and the status by turn     a pool member             edge-backend-errors

The fix names the answering product's pool and health-check settings
(``data/edge_backends.toml``). Who answered is read from the answers' ``server`` header, the
TLS terminator's HTTP/2 SETTINGS, the host's config files and, first, the page of the native
probes' own answers: a product whose built-in page is documented (HAProxy's 503 "No server is
available to handle this request.", the entry's ``page``) is named when the page holds it; a
page that differs keeps that product out of the products the answer's shape is like.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gitnetdiag.data import KnowledgeBaseError, load_table, require_source, require_text
from gitnetdiag.diagnosis.culprits._common import Hit, Tally, failure_cost_s, label
from gitnetdiag.diagnosis.culprits.answers import HTTPS_PROTOCOLS, Answer, answers
from gitnetdiag.diagnosis.measures import ok_pushes
from gitnetdiag.diagnosis.model import Evidence
from gitnetdiag.diagnosis.observations import Observations
from gitnetdiag.diagnosis.servers import answering_server, products_of_files
from gitnetdiag.diagnosis.terminators import BASE, by_fingerprint, by_name
from gitnetdiag.outcomes import MEASURED_OUTCOMES

CULPRIT = "edge-no-backend"
NO_BACKEND_STATUSES = frozenset({502, 503})
"""What an edge answers by itself when no backend takes the request."""
MIN_REQUESTS = 2
"""Fewer answered requests than this say too little of "every request"."""
FAILED_KINDS = frozenset({"http-status", "server-error", "other"})
"""Transfer failure kinds a status of the edge gives (git's words vary)."""
DATA_FILE = "edge_backends.toml"


@dataclass(frozen=True, kw_only=True)
class EdgeBackends:
    """What one edge product answers with no backend, and where its pool is set."""

    id: str
    """The product id (:data:`gitnetdiag.diagnosis.terminators.BASE` key)."""
    name: str
    """Its display name."""
    statuses: tuple[int, ...]
    """The statuses it answers by itself when no backend can take a request."""
    answer: str
    """What that answer looks like (its ``server`` header or none, its page)."""
    server: str
    """The ``server`` header of that answer, '' when it sends none."""
    fix: str
    """The settings that give it a working backend, in its own terms."""
    source: str
    """The documentation page."""
    page: str = ""
    """A phrase of the error page it writes by itself (tags stripped); '' when unknown."""
    page_source: str = ""
    """Where that page is documented or shipped ('' with no ``page``)."""


def _entry(raw: dict[str, Any], where: str) -> EdgeBackends:
    product = BASE.get(raw.get("id", ""))
    if product is None:
        raise KnowledgeBaseError(f"{where}: the id is not a product of h2_terminators.toml")
    require_text(raw, ("answer", "fix"), where)
    if not isinstance(raw.get("server"), str):
        raise KnowledgeBaseError(f"{where}: server must be text ('' for no server header)")
    source = require_source(raw.get("source"), where)
    statuses = raw.get("statuses")
    if not isinstance(statuses, list) or not statuses or not all(
            isinstance(s, int) and 500 <= s < 600 for s in statuses):
        raise KnowledgeBaseError(f"{where}: statuses must be a list of 5xx statuses")
    page = raw.get("page", "")
    if not isinstance(page, str) or ("page" in raw and not page.strip()):
        raise KnowledgeBaseError(f"{where}: page must be a phrase of the product's own page")
    page_source = require_source(raw.get("page_source"), where, "page_source") if page else ""
    return EdgeBackends(id=product.id, name=product.name, statuses=tuple(statuses),
                        answer=raw["answer"], server=raw["server"], fix=raw["fix"],
                        source=source, page=" ".join(page.split()), page_source=page_source)


def parse(text: str) -> dict[str, EdgeBackends]:
    """The table in ``text`` (TOML), validated; keyed by product id in file order."""
    return load_table(DATA_FILE, "product", _entry, text=text)


BACKENDS: dict[str, EdgeBackends] = load_table(DATA_FILE, "product", _entry)
"""Every product of the table, keyed by id, in file order."""


def _who(server: str) -> str:
    return f"server: {server}" if server else "no server header"


def dead_edge(obs: Observations) -> list[Answer] | None:
    """The HTTPS answers when every one is the same 502/503 from the same hop and none
    passed (pure); None when the run shows anything else."""
    every = [a for name in HTTPS_PROTOCOLS for a in answers(obs, name) if a.status is not None]
    if len(every) < MIN_REQUESTS:
        return None
    statuses = {a.status for a in every}
    servers = {a.server for a in every}
    if len(statuses) != 1 or not statuses <= NO_BACKEND_STATUSES or len(servers) != 1:
        return None
    return every


def _pages(every: Iterable[Answer]) -> list[str]:
    """The distinct pages the answers carried (only the native probes read one)."""
    return list(dict.fromkeys(a.page for a in every if a.page))


def wrote(entry: EdgeBackends, page: str) -> bool:
    """``page`` (an answer's text, tags stripped) holds the product's own page phrase."""
    return bool(entry.page) and entry.page.casefold() in " ".join(page.split()).casefold()


def by_page(pages: Iterable[str]) -> list[str]:
    """Product ids whose built-in error page one of ``pages`` is (pure)."""
    seen = list(pages)
    return [e.id for e in BACKENDS.values() if any(wrote(e, page) for page in seen)]


def _products(obs: Observations, said: Iterable[str], pages: Iterable[str] = ()) -> list[str]:
    """Product ids of the answering hop: whose own page its answers carried, what they
    called themselves, the TLS terminator's HTTP/2 fingerprint, the host's config files,
    the run's server identity."""
    ids = by_page(pages)
    ids += [known.id for text in said if text and (known := by_name(text)) is not None]
    like = by_fingerprint(obs.run.h2_server_settings or {})
    if like is not None:
        ids.append(like.id)
    ids += products_of_files(tuple(f.file for f in obs.host.config_findings) if obs.host
                             else ())
    identity = answering_server(obs)
    if identity is not None and identity.server:
        ids.append(identity.server)
    return [i for i in dict.fromkeys(ids) if i in BACKENDS]


def _fix(products: list[str], status: int, server: str, pages: list[str]) -> str:
    lead = ("Give the edge a working backend: the pool behind it has no member that answers "
            f"(the {status} is the edge's own answer, not the git server's)")
    matching = [p for p in products if status in BACKENDS[p].statuses] or products
    if matching:
        entry = BACKENDS[matching[0]]
        page = (f"; its page \"{entry.page}\" is {entry.name}'s own ({entry.page_source})"
                if any(wrote(entry, p) for p in pages) else "")
        return f"{lead}{page}. On the edge, {entry.name}: {entry.fix} ({entry.source})."
    answering = [e for e in BACKENDS.values() if status in e.statuses]
    # Not an identification: other products may answer alike; said so, listed first. A
    # product whose own page is known and not the one seen does not answer alike.
    alike = [e for e in answering if not server and not e.server
             and not (pages and e.page)]
    others = [e for e in answering if e not in alike]
    listed = "; ".join(f"{e.name} (answers {e.answer}): {e.fix} ({e.source})"
                       for e in (*alike, *others))
    shape = (f"; the answer ({status}, no server header) is the one "
             f"{' and '.join(e.name for e in alike)} gives by itself"
             if alike else "")
    seen = f" (its page: \"{pages[0][:160]}\")" if pages else ""
    return f"{lead}; gitnetdiag could not identify the edge{seen}{shape}: {listed}."


def _evidence(every: list[Answer]) -> list[Evidence]:
    counted = Counter((a.protocol, a.kind, a.who, a.source, a.page) for a in every)
    status, server = every[0].status, every[0].server
    return [Evidence(what=f"{label(protocol)} {kind} ({'git' if who == 'git' else 'gitnetdiag'}"
                     f"'s) answered {status}", value=count, unit="count", of=count,
                     text=_who(server) + (f', page "{page[:160]}"' if page else ""),
                     threshold=0, comparison=">", source=source)
            for (protocol, kind, who, source, page), count in counted.items()]


def _completed(obs: Observations, name: str) -> tuple[int, int]:
    """A protocol's transfers that completed, and all of them: a push that ended ok, a
    clone that finished or was bounded (a clone too small to give a rate still worked)."""
    if obs.run.transfer == "download":
        clones = [t for t in obs.transfers if t.protocol == name]
        return sum(t.outcome in MEASURED_OUTCOMES for t in clones), len(clones)
    p = obs.protocols.get(name)
    return (len(ok_pushes(p)), len(p.pushes)) if p is not None else (0, 0)


def _working_elsewhere(obs: Observations) -> list[Evidence]:
    """Transfers of the other transports to the same host that completed: the server
    behind the edge works."""
    items = []
    for name in ("ssh", "git"):
        done, total = _completed(obs, name)
        if done:
            items.append(Evidence(what=f"{label(name)} transfers completed", value=done,
                                  unit="count", of=total, threshold=0, comparison=">",
                                  source=f"{label(name)} transfers"))
    return items


def edge_no_backend(obs: Observations) -> Hit | None:
    every = dead_edge(obs)
    if every is None:
        return None
    failing = [name for name in HTTPS_PROTOCOLS
               if (counts := _completed(obs, name))[1] and not counts[0]]
    if not failing:
        return None
    status, server = every[0].status or 0, every[0].server
    tally = Tally(CULPRIT)
    tally.add("every-request", *_evidence(every))
    elsewhere = _working_elsewhere(obs)
    if elsewhere:
        tally.add("other-transport-works", *elsewhere)
    if len({(a.kind, a.who) for a in every}) > 1:
        tally.add("several-requests")
    costs = [(failure_cost_s(obs, name, FAILED_KINDS)[0], name) for name in failing]
    cost, protocol = max(costs)
    kinds = ", ".join(dict.fromkeys(f"{label(a.protocol)} {a.kind}" for a in every))
    works = " while " + ", ".join(e.what for e in elsewhere) if elsewhere else ""
    noun = "clones" if obs.run.transfer == "download" else "pushes"
    return tally.hit(
        cost_s=cost, cost_protocol=protocol, cap="cap",
        summary=f"{' and '.join(label(n) for n in failing)} {noun} fail: every HTTPS request "
        f"through the edge ({len(every)}: {kinds}) was answered {status} ({_who(server)}) and "
        f"none passed{works}: the edge has no working backend.",
        fix=_fix(_products(obs, [server], _pages(every)), status, server, _pages(every)))

