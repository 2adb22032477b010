"""The native body probe's answers (``native-body.json``): POSTs of the pack's kind.

The probe (:mod:`gitnetdiag.probe.bodyprobe`) sends POSTs to the URL path of git's pack
POST, each on its own connection, and records how each was answered; nothing here
interprets more than one answer at a time except the bracket below, which both the
probe (to choose its next size) and the pipeline (to fill ``BodyLimitProbe``) read::

    native-body.json  schema gitnetdiag.native-body/1
        exchanges[]   purpose        limit     headers only: Content-Length N,
                                               Expect: 100-continue; the body is never sent
                                     sized     body 0000 (a flush-pkt), Content-Length: 4
                                     streamed  body 0000 without a length (HTTP/1.1
                                               chunked, HTTP/2 without content-length)
                      http_version   HTTP/1.1 | HTTP/2
                      answer         continue | status | closed | reset | silent | failed
                      status, server, content_length_bytes, body_sent_bytes,
                      started_s, elapsed_s, detail

A body of ``0000`` gives receive-pack no command, and a POST whose body never comes
gives it none either: no exchange can create or change a ref.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from gitnetdiag.rundir.manifest import check_numbers, read_record
from gitnetdiag.serial import Malformed

BODY_SCHEMA = "gitnetdiag.native-body/1"

BodyPurpose = Literal["limit", "sized", "streamed"]
"""What a POST asked: ``limit`` (is a body of this ``Content-Length`` accepted? headers
only, with ``Expect: 100-continue``), ``sized`` (the 4-byte body ``0000`` with a
``Content-Length``), ``streamed`` (the same body without one)."""
BodyAnswer = Literal["continue", "status", "closed", "reset", "silent", "failed"]
"""How a POST was answered: ``continue`` (``100 Continue``: the body may come),
``status`` (a final status), ``closed`` (the server closed the connection with no status),
``reset`` (a TCP reset, or an HTTP/2 RST_STREAM, with no status), ``silent`` (nothing
within the wait), ``failed`` (the probe could not ask: connect, TLS, ...; see ``detail``)."""
SizeVerdict = Literal["accepted", "refused", "unknown"]
"""What a ``limit`` answer says of its size."""
HttpVersion = Literal["HTTP/1.1", "HTTP/2"]

SIZE_REFUSED_STATUS = 413
"""Content Too Large (RFC 9110 15.5.14)."""


@dataclass(frozen=True, kw_only=True)
class BodyExchange:
    """One POST of the body probe and its answer."""

    purpose: BodyPurpose
    """What the POST asked (see :data:`BodyPurpose`)."""
    http_version: HttpVersion
    """``HTTP/1.1`` or ``HTTP/2``."""
    content_length_bytes: int | None
    """The ``Content-Length`` sent; None for a streamed body."""
    body_sent_bytes: int
    """Body bytes actually sent (0 for ``limit``: the body never goes out)."""
    answer: BodyAnswer
    """How it was answered."""
    status: int | None = None
    """The final status (``answer`` ``status``), else None."""
    server: str | None = None
    """The answer's ``server`` header; None when it had none."""
    started_s: float
    """Seconds since the probe started."""
    elapsed_s: float
    """From the connect to the answer (or to giving up)."""
    detail: str = ""
    """What failed, or how a stream ended after its status (``RST_STREAM``), else empty."""

    @property
    def size_verdict(self) -> SizeVerdict:
        """``accepted``: ``100 Continue``, no answer within the wait, or a 2xx; ``refused``:
        413, or the connection closed or reset with no status; anything else says nothing
        of the size (401, 5xx, a failed connect)."""
        if self.answer in ("continue", "silent"):
            return "accepted"
        if self.answer in ("closed", "reset"):
            return "refused"
        if self.answer == "status" and self.status is not None:
            if self.status == SIZE_REFUSED_STATUS:
                return "refused"
            if 200 <= self.status < 300:
                return "accepted"
        return "unknown"


@dataclass(frozen=True, kw_only=True)
class BodyProbeRecord:
    """``native-body.json``: the body probe of one HTTP(S) remote."""

    schema: str = BODY_SCHEMA
    """Always :data:`BODY_SCHEMA`."""
    target: str
    """``host:port`` of the server (no credentials)."""
    path: str
    """The path POSTed to (``<repo>/git-receive-pack``)."""
    protocols: tuple[Literal["h1", "h2"], ...]
    """The run's protocols whose URL this is (their observations get the answers)."""
    trigger: str
    """Why it ran (the failed push it follows)."""
    upper_bound_bytes: int
    """The size the bracket started from above (the pack's)."""
    answer_wait_s: float
    """How long a ``limit`` POST waited for an answer before counting as accepted."""
    exchanges: tuple[BodyExchange, ...]
    """Every POST, in the order they started."""
    duration_s: float
    """The whole probe, wall time."""
    auth: str
    """What authenticated the probe (``none``, ``url``, ``credential-helper``,
    ``extra-header``); never the secret."""
    tls_ca: str
    """Where the CA bundle came from, ``not-verified``, or ``plain-http``."""
    proxy: str | None
    """The proxy tunnelled through (URL without credentials), or None."""
    notes: tuple[str, ...] = ()
    """What could not be measured, one line each."""

    def sizes(self, verdict: SizeVerdict) -> list[int]:
        """``Content-Length``s of the ``limit`` POSTs with that verdict."""
        return [e.content_length_bytes for e in self.exchanges
                if e.purpose == "limit" and e.content_length_bytes is not None
                and e.size_verdict == verdict]

    @property
    def largest_accepted_bytes(self) -> int | None:
        return max(self.sizes("accepted"), default=None)

    @property
    def smallest_refused_bytes(self) -> int | None:
        return min(self.sizes("refused"), default=None)

    def refusal(self) -> BodyExchange | None:
        """The answer to the smallest refused size."""
        smallest = self.smallest_refused_bytes
        return next((e for e in self.exchanges if e.purpose == "limit"
                     and e.content_length_bytes == smallest and e.size_verdict == "refused"),
                    None)

    def last(self, purpose: BodyPurpose, http_version: HttpVersion) -> BodyExchange | None:
        """The last POST of that purpose and version (after a 401, the retry)."""
        return next((e for e in reversed(self.exchanges)
                     if e.purpose == purpose and e.http_version == http_version), None)


def body_probe_record(data: dict[str, Any], where: str) -> BodyProbeRecord:
    """A ``native-body.json`` object, every type and number checked (``bad-run-dir``)."""
    def check(record: BodyProbeRecord) -> None:
        check_numbers(record, where)
        for index, exchange in enumerate(record.exchanges):
            _check_exchange(exchange, f"{where}.exchanges[{index}]")
    return read_record(BodyProbeRecord, data, schema=BODY_SCHEMA, where=where, check=check)


def _check_exchange(exchange: BodyExchange, where: str) -> None:
    if exchange.status is not None and not 100 <= exchange.status <= 599:
        raise Malformed(f"{where}.status must be an HTTP status (100-599), got "
                        f"{exchange.status!r}")
    if (exchange.status is None) == (exchange.answer == "status"):
        raise Malformed(f"{where}: answer {exchange.answer!r} with status {exchange.status!r}")
    if (exchange.content_length_bytes is None) != (exchange.purpose == "streamed"):
        raise Malformed(f"{where}: a {exchange.purpose} POST with content_length_bytes "
                        f"{exchange.content_length_bytes!r}")

