"""Native body probe: what a server (or its edge) answers to POSTs of the pack's kind.

A push over HTTP(S) failed with 413 or 411, or its connection ended right after the
pack POST (:func:`body_probe_trigger`). This probe asks the same URL path
(``<repo>/git-receive-pack``, ``Content-Type: application/x-git-receive-pack-request``),
reaching the server as git would (credential, extra headers, CA, proxy:
:mod:`gitnetdiag.probe.credentials`), two questions:

1. The request-body limit, bracketed within 5%: headers with ``Content-Length: N`` and
   ``Expect: 100-continue``. ``100 Continue`` (or silence for ``answer_wait_s``) means
   N passes, and the connection is closed without sending the body; 413, or a close
   right after the headers, means N is refused. Apache's ``LimitRequestBody`` and
   nginx's ``client_max_body_size`` judge the ``Content-Length`` before reading a byte.
2. Streamed vs sized: the body ``0000`` (a flush-pkt) with ``Content-Length: 4`` and
   without one (HTTP/1.1 chunked; for an h2 remote also HTTP/2 without content-length).
   A server that demands a length answers 411 to the second.

::

    sized POST, HTTP/1.1 (a 401 fetches the credential, as git does, and asks again)
    ├── beside it (threads): streamed HTTP/1.1; sized and streamed HTTP/2
    └── limit POSTs: the pack's size, then 64 KiB (or 1 KiB), then the geometric middle
        of the bracket until it is within 5% (:func:`bracket_limit`)

Every POST has its own connection. No body but the 4-byte flush-pkt is ever sent, and
receive-pack given a flush or nothing at all has no command to run: no POST can create
or change a ref. Each POST is bounded (connect 5 s, answer ``answer_wait_s`` or 5 s),
the limit bracket by 20 s; a failure is a note in the record, never an exception.
"""

from __future__ import annotations

import math
import select
import socket
import ssl
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from h2.events import (
    ConnectionTerminated,
    DataReceived,
    ResponseReceived,
    StreamEnded,
    StreamReset,
)
from h2.exceptions import H2Error

from gitnetdiag.errors import GitnetdiagError, NetworkError, UsageError
from gitnetdiag.outcomes import FailureKind
from gitnetdiag.probe.credentials import HttpAccess, http_access
from gitnetdiag.probe.gitpush import http_status_of
from gitnetdiag.probe.h2client import H2Client, H2Remote, open_socket, tls_context
from gitnetdiag.probe.h2native import RECEIVE_PACK_REQUEST, RECEIVE_PACK_RESULT
from gitnetdiag.probe.receivepack import FLUSH_PKT
from gitnetdiag.rundir import ProtocolRun
from gitnetdiag.rundir.bodyprobe import (
    BodyAnswer,
    BodyExchange,
    BodyProbeRecord,
    BodyPurpose,
    HttpVersion,
    SizeVerdict,
)

USER_AGENT = "git/2.39-gitnetdiag-bodyprobe"
CONNECT_TIMEOUT_S = 5.0
"""TCP connect, proxy CONNECT and TLS handshake of each POST."""
LIMIT_ANSWER_WAIT_S = 2.0
"""How long a ``limit`` POST waits for ``100 Continue`` or a refusal; silence passes."""
RESPONSE_WAIT_S = 5.0
"""How long a ``sized`` or ``streamed`` POST waits for its status."""
LIMIT_BUDGET_S = 20.0
"""The whole limit bracket; it stops where it got when this runs out."""
LOWER_STARTS = (65_536, 1_024)
"""Sizes tried below a refused pack, in order, until one passes."""
BRACKET_RATIO = 1.05
"""The bracket is done when its refused size is within 5% of its accepted one."""
MAX_LIMIT_REQUESTS = 10
"""At most this many ``limit`` POSTs."""
HEAD_LIMIT_BYTES = 65_536
"""An HTTP/1.1 answer head longer than this is not read further."""
BODY_STATUSES = frozenset({411, 413})
"""A pack POST answered with one of these: the probe's questions are the ones to ask."""
CHUNKED_FLUSH = b"4\r\n" + FLUSH_PKT + b"\r\n0\r\n\r\n"

ProbedProtocol = Literal["h1", "h2"]


# --------------------------------------------------------------------------
# When it runs, and the bracket (pure)
# --------------------------------------------------------------------------


def body_probe_trigger(runs: Sequence[ProtocolRun]) -> str | None:
    """Why the body probe should run after these pushes, None when it should not: a push
    over HTTP failed with 411 or 413 on its pack POST (git's curl trace or its words), with
    an HTTP/2 stream error (how a 411 and RST_STREAM reach git), or with its connection
    reset or closed while the pack POST had no status."""
    for run in runs:
        if run.protocol not in ("h1", "h2"):
            continue
        for push in run.pushes:
            if push.outcome != "failed":
                continue
            where = f"{run.protocol} push #{push.repeat}"
            posts = [r for r in push.http_requests
                     if r.method == "POST" and r.path.endswith("/git-receive-pack")]
            status = next((r.status for r in reversed(posts) if r.status in BODY_STATUSES),
                          http_status_of(push.last_line))
            if status in BODY_STATUSES:
                return f"{where}: POST git-receive-pack answered {status}"
            if "curl 92" in push.last_line:
                return f"{where}: {push.last_line}"
            if push.failure_kind is FailureKind.RESET and (not posts or posts[-1].status is None):
                return f"{where}: the connection ended with no status to the pack POST"
    return None


@dataclass(frozen=True, kw_only=True)
class Bracket:
    """Where the bisection ended."""

    largest_accepted_bytes: int | None
    """Largest size that passed; None when none did."""
    smallest_refused_bytes: int | None
    """Smallest size refused; None when none was."""
    asked: tuple[int, ...]
    """Every size asked, in order."""


def bracket_limit(ask: Callable[[int], SizeVerdict], *, upper_bytes: int,
                  lower_bytes: Sequence[int] = LOWER_STARTS, ratio: float = BRACKET_RATIO,
                  max_asks: int = MAX_LIMIT_REQUESTS) -> Bracket:
    """Bracket the largest size ``ask`` accepts: ``upper_bytes`` first (accepted: there
    is no limit below it), then ``lower_bytes`` in order until one passes, then the
    geometric middle until the refused size is within ``ratio`` of the accepted one.
    An ``unknown`` answer (not about size) ends it where it is."""
    asked: list[int] = []

    def verdict(size: int) -> SizeVerdict:
        asked.append(size)
        return ask(size)

    def done(low: int | None, high: int | None) -> Bracket:
        return Bracket(largest_accepted_bytes=low, smallest_refused_bytes=high,
                       asked=tuple(asked))

    first = verdict(upper_bytes)
    if first != "refused":
        return done(upper_bytes if first == "accepted" else None, None)
    high, low = upper_bytes, None
    for size in (s for s in lower_bytes if s < upper_bytes):
        answer = verdict(size)
        if answer == "unknown":
            return done(None, high)
        if answer == "accepted":
            low = size
            break
        high = size
    if low is None:
        return done(None, high)
    while high - low > 1 and high > low * ratio and len(asked) < max_asks:
        middle = min(max(round(math.sqrt(low * high)), low + 1), high - 1)
        answer = verdict(middle)
        if answer == "unknown":
            break
        if answer == "accepted":
            low = middle
        else:
            high = middle
    return done(low, high)


# --------------------------------------------------------------------------
# One POST over HTTP/1.1 or HTTP/2
# --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Answer:
    answer: BodyAnswer
    status: int | None = None
    server: str | None = None
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class _Target:
    remote: H2Remote
    """Host, port and repository path."""
    tls: bool
    """https (else plain http)."""

    @classmethod
    def from_url(cls, url: str) -> _Target:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError("the body probe needs an http(s):// URL",
                             hint="give the repository's https URL")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:
            raise UsageError("bad port in the URL") from exc
        return cls(remote=H2Remote(host=parts.hostname, port=port,
                                   path=parts.path.rstrip("/")),
                   tls=parts.scheme == "https")

    @property
    def post_path(self) -> str:
        return f"{self.remote.path}/git-receive-pack"

    @property
    def host_header(self) -> str:
        host = self.remote.host
        return f"[{host}]:{self.remote.port}" if ":" in host else f"{host}:{self.remote.port}"


def _parse_head(head: bytes) -> _Answer:
    lines = head.decode("latin-1").split("\r\n")
    fields = lines[0].split()
    if len(fields) < 2 or not fields[0].startswith("HTTP/") or not fields[1].isdigit():
        return _Answer(answer="failed", detail=f"not an HTTP answer: {lines[0][:80]!r}")
    server = next((value.strip() for name, sep, value in (line.partition(":")
                                                          for line in lines[1:])
                   if sep and name.strip().lower() == "server"), None)
    return _Answer(answer="status", status=int(fields[1]), server=server)


def _read_head(sock: socket.socket, wait_s: float, *, continue_ends: bool) -> _Answer:
    """The final answer's head, or ``100 Continue`` when ``continue_ends``."""
    deadline = time.monotonic() + wait_s
    buffer = b""
    while True:
        end = buffer.find(b"\r\n\r\n")
        if end >= 0:
            answer = _parse_head(buffer[:end])
            if answer.status is None or answer.status >= 200:
                return answer
            if answer.status == 100 and continue_ends:
                return _Answer(answer="continue", server=answer.server)
            buffer = buffer[end + 4:]
            continue
        if len(buffer) > HEAD_LIMIT_BYTES:
            return _Answer(answer="failed", detail="an answer head over 64 KiB")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return _Answer(answer="silent")
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(16_384)
        except TimeoutError:
            return _Answer(answer="silent")
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            chunk = b""
        except ConnectionResetError:
            return _Answer(answer="reset", detail="TCP reset")
        if not chunk:
            return _Answer(answer="closed", detail="partial head" if buffer else "")
        buffer += chunk


class _Asker:
    """Sends one POST at a time, each on a connection of its own, as git reaches the URL."""

    def __init__(self, target: _Target, access: HttpAccess, t0: float) -> None:
        self.target, self.access, self.t0 = target, access, t0
        self.context: ssl.SSLContext | None = None
        if target.tls:
            self.context = tls_context(access)
            self.context.set_alpn_protocols(["http/1.1"])

    def _exchange(self, purpose: BodyPurpose, version: HttpVersion, started: float,
                  answer: _Answer, *, content_length: int | None, sent: int) -> BodyExchange:
        return BodyExchange(purpose=purpose, http_version=version,
                            content_length_bytes=content_length, body_sent_bytes=sent,
                            answer=answer.answer, status=answer.status, server=answer.server,
                            started_s=started - self.t0,
                            elapsed_s=time.monotonic() - started, detail=answer.detail)

    def _head(self, purpose: BodyPurpose, content_length: int | None) -> bytes:
        lines = [f"POST {self.target.post_path} HTTP/1.1", f"Host: {self.target.host_header}",
                 f"User-Agent: {USER_AGENT}", f"Content-Type: {RECEIVE_PACK_REQUEST}",
                 f"Accept: {RECEIVE_PACK_RESULT}"]
        lines += [f"{name}: {value}" for name, value in self.access.request_headers()
                  if not any(c in name + value for c in "\r\n")]
        if content_length is not None:
            lines.append(f"Content-Length: {content_length}")
        if purpose == "limit":
            lines.append("Expect: 100-continue")
        elif purpose == "streamed":
            lines.append("Transfer-Encoding: chunked")
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def _connect(self) -> socket.socket:
        raw = open_socket(self.target.remote, self.access.proxy, CONNECT_TIMEOUT_S)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.context is None:
            return raw
        try:
            return self.context.wrap_socket(raw, server_hostname=self.target.remote.host)
        except (ssl.SSLError, OSError) as exc:
            raw.close()
            raise NetworkError(f"TLS handshake with {self.target.remote.authority} failed: "
                               f"{exc}", reference="tls-failed") from exc

    def h1(self, purpose: BodyPurpose, content_length: int | None, wait_s: float
           ) -> BodyExchange:
        """One HTTP/1.1 POST: headers only for ``limit`` (closed at ``100 Continue``), else
        the flush-pkt, with ``content_length`` or chunked."""
        body = {"limit": b"", "sized": FLUSH_PKT, "streamed": CHUNKED_FLUSH}[purpose]
        sent = 0 if purpose == "limit" else len(FLUSH_PKT)
        started = time.monotonic()
        try:
            sock = self._connect()
        except GitnetdiagError as exc:
            return self._exchange(purpose, "HTTP/1.1", started,
                                  _Answer(answer="failed", detail=exc.message),
                                  content_length=content_length, sent=0)
        try:
            sock.sendall(self._head(purpose, content_length) + body)
            answer = _read_head(sock, wait_s, continue_ends=purpose == "limit")
        except (ConnectionResetError, BrokenPipeError) as exc:
            answer = _Answer(answer="reset", detail=f"sending: {exc.strerror or exc}")
        except OSError as exc:
            answer = _Answer(answer="failed", detail=str(exc))
        finally:
            sock.close()
        return self._exchange(purpose, "HTTP/1.1", started, answer,
                              content_length=content_length, sent=sent)

    def h2(self, purpose: BodyPurpose, wait_s: float = RESPONSE_WAIT_S) -> BodyExchange:
        """One HTTP/2 POST of the flush-pkt, with a content-length (``sized``) or without."""
        length = len(FLUSH_PKT) if purpose == "sized" else None
        started = time.monotonic()
        try:
            client = H2Client(self.target.remote, access=self.access,
                              timeout_s=CONNECT_TIMEOUT_S)
        except GitnetdiagError as exc:
            return self._exchange(purpose, "HTTP/2", started,
                                  _Answer(answer="failed", detail=exc.message),
                                  content_length=length, sent=0)
        try:
            answer = self._h2_post(client, length, time.monotonic() + wait_s)
        except (OSError, H2Error) as exc:
            answer = _Answer(answer="failed", detail=str(exc))
        finally:
            client.close()
        return self._exchange(purpose, "HTTP/2", started, answer, content_length=length,
                              sent=len(FLUSH_PKT))

    def _h2_post(self, client: H2Client, length: int | None, deadline: float) -> _Answer:
        conn, sock = client.conn, client.sock
        stream_id = conn.get_next_available_stream_id()
        headers = [(":method", "POST"), (":scheme", "https"),
                   (":authority", self.target.remote.authority),
                   (":path", self.target.post_path), ("user-agent", USER_AGENT),
                   *self.access.request_headers(), ("content-type", RECEIVE_PACK_REQUEST),
                   ("accept", RECEIVE_PACK_RESULT)]
        if length is not None:
            headers.append(("content-length", str(length)))
        conn.send_headers(stream_id, headers)
        conn.send_data(stream_id, FLUSH_PKT, end_stream=True)
        sock.sendall(conn.data_to_send())
        status: int | None = None
        server: str | None = None
        while (remaining := deadline - time.monotonic()) > 0:
            if not sock.pending():
                poller = select.poll()
                poller.register(sock, select.POLLIN)
                if not poller.poll(max(1, int(remaining * 1000))):
                    continue
            data = sock.recv(65_536)
            if not data:
                return _h2_answer(status, server, "the server closed the connection")
            for event in conn.receive_data(data):
                if isinstance(event, ResponseReceived) and event.stream_id == stream_id:
                    fields = {_text(k).lower(): _text(v) for k, v in event.headers}
                    status, server = int(fields.get(":status", "0")), fields.get("server")
                elif isinstance(event, DataReceived):
                    conn.acknowledge_received_data(event.flow_controlled_length,
                                                   event.stream_id)
                elif isinstance(event, StreamEnded) and event.stream_id == stream_id:
                    return _h2_answer(status, server, "")
                elif isinstance(event, StreamReset) and event.stream_id == stream_id:
                    return _h2_answer(status, server,
                                      f"RST_STREAM (error {int(event.error_code)})",
                                      reset=True)
                elif isinstance(event, ConnectionTerminated):
                    return _h2_answer(status, server,
                                      f"GOAWAY (error {int(event.error_code or 0)})")
            sock.sendall(conn.data_to_send())
        return _h2_answer(status, server, "", silent=True)


def _h2_answer(status: int | None, server: str | None, ending: str, *, reset: bool = False,
               silent: bool = False) -> _Answer:
    """A status however its stream ended (the ending kept as detail); else how it ended."""
    if status is not None:
        return _Answer(answer="status", status=status, server=server,
                       detail=f"then {ending}" if ending else "")
    if silent:
        return _Answer(answer="silent")
    return _Answer(answer="reset" if reset else "closed", server=server,
                   detail=ending or "END_STREAM with no status")


def _text(value: str | bytes) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


# --------------------------------------------------------------------------
# The probe
# --------------------------------------------------------------------------


def _authorized(ask: Callable[[], BodyExchange], access: HttpAccess,
                exchanges: list[BodyExchange]) -> BodyExchange:
    """Ask; after a 401, once more with the credential git would use (as git does)."""
    exchange = ask()
    exchanges.append(exchange)
    if exchange.status == 401 and access.credential is None \
            and access.credential_after_401() is not None:
        exchange = ask()
        exchanges.append(exchange)
    return exchange


def _stop_note(sized: BodyExchange, access: HttpAccess, where: str) -> str | None:
    """Why nothing more is worth asking after the first POST, None when it is."""
    if sized.answer == "failed":
        return f"the body probe could not reach {where}: {sized.detail}"
    if sized.status in (401, 403):
        return (f"POST git-receive-pack answered {sized.status} with the credential from "
                f"{access.auth_source}: the body probe stopped there")
    return None


def _limit(asker: _Asker, upper_bytes: int, answer_wait_s: float,
           exchanges: list[BodyExchange], notes: list[str]) -> None:
    """The limit bracket's POSTs, within :data:`LIMIT_BUDGET_S`."""
    deadline = time.monotonic() + LIMIT_BUDGET_S

    def ask(size: int) -> SizeVerdict:
        if time.monotonic() > deadline:
            notes.append(f"the limit bracket stopped at its {LIMIT_BUDGET_S:g} s budget")
            return "unknown"
        exchange = asker.h1("limit", size, answer_wait_s)
        exchanges.append(exchange)
        if exchange.size_verdict == "unknown":
            said = exchange.status or exchange.detail or exchange.answer
            notes.append(f"a POST with Content-Length {size} was answered {said}: "
                         "the limit bracket stopped there")
        return exchange.size_verdict

    bracket_limit(ask, upper_bytes=upper_bytes)


def body_probe(url: str, *, protocols: Sequence[str], upper_bytes: int,
               trigger: str, ca_file: str | None = None, verify: bool | None = None,
               answer_wait_s: float = LIMIT_ANSWER_WAIT_S) -> BodyProbeRecord:
    """Ask ``url``'s pack POST path both questions (module docstring); every answer, and
    what could not be asked, in the record. ``protocols``: the run's ``h1``/``h2`` with
    this URL (HTTP/2 POSTs only with ``h2``); ``upper_bytes``: the size git's push sent.

    Raises only :class:`UsageError` for a URL that is not http(s)."""
    target = _Target.from_url(url)
    t0 = time.monotonic()
    exchanges: list[BodyExchange] = []
    notes: list[str] = []
    access: HttpAccess | None = None
    try:
        access = http_access(url, ca_file=ca_file, verify=verify)
        notes.extend(access.warnings)
        asker = _Asker(target, access, t0)
        sized = _authorized(lambda: asker.h1("sized", len(FLUSH_PKT), RESPONSE_WAIT_S),
                            access, exchanges)
        stop = _stop_note(sized, access, target.remote.authority)
        if stop is not None:
            notes.append(stop)
        else:
            jobs: list[Callable[[], BodyExchange]] = [
                lambda: asker.h1("streamed", None, RESPONSE_WAIT_S)]
            if "h2" in protocols and target.tls:
                jobs += [lambda: asker.h2("sized"), lambda: asker.h2("streamed")]
            with ThreadPoolExecutor(max_workers=len(jobs),
                                    thread_name_prefix="gitnetdiag-body") as pool:
                beside = [pool.submit(job) for job in jobs]
                _limit(asker, upper_bytes, answer_wait_s, exchanges, notes)
                for future in beside:
                    exchange = future.result()
                    exchanges.append(exchange)
                    if exchange.answer == "failed":
                        notes.append(f"the {exchange.purpose} {exchange.http_version} POST "
                                     f"failed: {exchange.detail}")
    except GitnetdiagError as exc:
        notes.append(f"the body probe failed: {exc.message}")
    return BodyProbeRecord(
        target=target.remote.authority, path=target.post_path, protocols=_probed(protocols),
        trigger=trigger, upper_bound_bytes=upper_bytes, answer_wait_s=answer_wait_s,
        exchanges=tuple(sorted(exchanges, key=lambda e: e.started_s)),
        duration_s=time.monotonic() - t0,
        auth=access.auth_source if access else "none",
        tls_ca=("plain-http" if not target.tls else "unknown" if access is None
                else access.ca_source if access.verify else "not-verified"),
        proxy=access.proxy.display if access and access.proxy else None,
        notes=tuple(notes))


def _probed(names: Sequence[str]) -> tuple[ProbedProtocol, ...]:
    return tuple("h1" if name == "h1" else "h2" for name in names if name in ("h1", "h2"))


def _mib(size: int) -> str:
    return f"{size / 2**20:.2f} MiB"


def progress_line(record: BodyProbeRecord) -> str:
    """The probe's line in the run's progress: the bracket, then each version's sized and
    streamed answers, then the first note."""
    accepted, refused = record.largest_accepted_bytes, record.smallest_refused_bytes
    refusal = record.refusal()
    said = f"{refusal.status}" if refusal and refusal.status else "a close"
    if accepted is not None and refused is not None:
        limit = f"body limit between {_mib(accepted)} and {_mib(refused)} ({said})"
    elif refused is not None:
        limit = f"a body of {_mib(refused)} refused ({said}), nothing smaller tried passed"
    elif accepted is not None:
        limit = f"a Content-Length of {_mib(accepted)} (the pack) accepted"
    else:
        limit = "no body limit measured"
    parts = [f"{len(record.exchanges)} POSTs in {record.duration_s:.1f} s: {limit}"]
    for version in ("HTTP/1.1", "HTTP/2"):
        sized, streamed = record.last("sized", version), record.last("streamed", version)
        if sized is not None and streamed is not None:
            parts.append(f"{version} sized {sized.status or sized.answer}, "
                         f"streamed {streamed.status or streamed.answer}")
    return "; ".join(parts + list(record.notes[:1]))
