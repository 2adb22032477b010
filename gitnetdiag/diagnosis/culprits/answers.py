"""What each HTTPS request of a run was answered, git's and the tool's own alike (pure).

The failure patterns of an edge are read over one list per protocol: every request by
kind (``GET info/refs``, ``POST git-receive-pack``, ``POST git-upload-pack``), who made it
(git, or gitnetdiag's own native requests to the same URL) and who answered (the
``server`` header of the answer, '' for none)::

    git's pushes     curl trace (ProtocolObservation.http_requests)     each request
    git's clones     git's last line ("RPC failed; HTTP 503", "unable   the request git
                     to access ...: returned error: 503"), 2xx for an   ended on (and
                     ok clone's GET info/refs and POST git-upload-pack  the GET before it)
    the native       its ledger (it exists only when GET info/refs and  GET, POST 2xx
    HTTP/2 probe     POST git-receive-pack answered 200), else its run
                     error ("GET info/refs answered HTTP 503") and the
                     answer's page (``RunProblem.page``); on a clone,
                     its one GET info/refs after a failed HTTP/2 clone
    the body probe   its small sized and streamed POSTs                 POST statuses

:mod:`.nobackend` (the same 502/503 to everything) and :mod:`.pool` (a status that
alternates with success on the same request) read it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from gitnetdiag.diagnosis.observations import Observations, ProtocolObservation
from gitnetdiag.outcomes import MEASURED_OUTCOMES

HTTPS_PROTOCOLS = ("h1", "h2")
Who = Literal["git", "tool"]
"""Who made the request: git (its pushes' or clones') or gitnetdiag's own native probes."""

_GIT_STATUS = re.compile(r"RPC failed; HTTP (\d{3})|returned error: (\d{3})", re.IGNORECASE)
_NATIVE_STATUS = re.compile(r"\b(GET|POST) (info/refs|git-receive-pack|git-upload-pack) "
                            r"answered HTTP (\d{3})")


@dataclass(frozen=True, kw_only=True)
class Answer:
    """One request and what answered it."""

    protocol: str
    """``h1`` or ``h2``."""
    kind: str
    """Method and git service (``POST git-receive-pack``)."""
    status: int | None
    """The final status; None when no answer came."""
    server: str
    """The answer's ``server`` header; '' for none (or not known)."""
    who: Who
    """Who made the request."""
    source: str
    """Where it was read (``curl trace of the HTTP/2 pushes``)."""
    page: str = ""
    """The text of the answer's page (tags stripped, at most 512 characters): only the
    native probes read an error answer's body (git's traces keep none); '' else."""

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def git_status_in_words(line: str) -> int | None:
    """The HTTP status git printed for a failed request, None when it printed none."""
    match = _GIT_STATUS.search(line)
    return int(match.group(1) or match.group(2)) if match else None


def _clone_request(line: str) -> str:
    """The request a clone ended on: git says "RPC failed" of its POST, "unable to access"
    of the ref advertisement (its first GET)."""
    return "POST git-upload-pack" if "rpc failed" in line.lower() else "GET info/refs"


def _pushes(name: str, p: ProtocolObservation) -> Iterator[Answer]:
    source = f"curl trace of the {name} pushes"
    for r in p.http_requests:
        yield Answer(protocol=name, kind=r.kind, status=r.status, server=r.server or "",
                     who="git", source=source)


def _clones(obs: Observations, name: str) -> Iterator[Answer]:
    source = f"git's words of the {name} clones"
    for t in obs.transfers:
        if t.protocol != name:
            continue
        if t.outcome in MEASURED_OUTCOMES:
            for kind in ("GET info/refs", "POST git-upload-pack"):
                yield Answer(protocol=name, kind=kind, status=200, server="", who="git",
                             source=source)
        elif (status := git_status_in_words(t.last_line)) is not None:
            kind = _clone_request(t.last_line)
            if kind != "GET info/refs":  # git POSTs only after the ref advertisement passed
                yield Answer(protocol=name, kind="GET info/refs", status=200, server="",
                             who="git", source=source)
            yield Answer(protocol=name, kind=kind, status=status, server="", who="git",
                         source=source)


def _native(obs: Observations, name: str, p: ProtocolObservation) -> Iterator[Answer]:
    ledger = p.h2_ledger
    if ledger is not None and ledger.request_bytes is not None:
        # The native probe keeps a ledger only of a push whose GET and POST answered 200.
        server = obs.run.server_headers[0] if obs.run.server_headers else ""
        for kind in ("GET info/refs", "POST git-receive-pack"):
            yield Answer(protocol=name, kind=kind, status=200, server=server, who="tool",
                         source=ledger.source)
    for problem in obs.problems:
        if problem.stage != "native" or problem.protocol != name:
            continue
        if (match := _NATIVE_STATUS.search(problem.message)) is None:
            continue
        source = f"native {name} probe"
        if match.group(1) == "POST":  # the probe POSTs only after its GET answered 200
            yield Answer(protocol=name, kind="GET info/refs", status=200, server="",
                         who="tool", source=source)
        yield Answer(protocol=name, kind=f"{match.group(1)} {match.group(2)}",
                     status=int(match.group(3)), server="", who="tool", source=source,
                     page=problem.page)
    probe = p.body_limit
    if probe is not None:
        for status in (probe.sized_status, probe.streamed_status):
            if status is not None:
                yield Answer(protocol=name, kind="POST git-receive-pack", status=status,
                             server=probe.server or "", who="tool", source=probe.source)


def answers(obs: Observations, name: str) -> tuple[Answer, ...]:
    """Every request of protocol ``name`` this run knows the answer of, git's first."""
    p = obs.protocols.get(name)
    if p is None:
        return ()
    gits = _clones(obs, name) if obs.run.transfer == "download" else _pushes(name, p)
    return (*gits, *_native(obs, name, p))
