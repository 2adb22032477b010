"""Pure parsers for git's own traces: ``GIT_TRACE_CURL`` (the HTTP exchanges of a push).

No I/O here: the functions take the text git wrote and return values. A push's phases
from its trace2 events (``GIT_TRACE2_EVENT``) are read where a clone's are, from the run
directory's trace2 file: :func:`gitnetdiag.rundir.trace2.push_phases` (the probe reads them
as it records the push, the analysis again from the file).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gitnetdiag.redaction import MASK, redact_text

_REDACTED_HEADERS = ("authorization", "proxy-authorization", "cookie", "set-cookie")


@dataclass(frozen=True, kw_only=True)
class CurlRequest:
    """One HTTP request seen in a curl trace."""

    method: str
    """Request method (GET, POST)."""
    path: str
    """Request path with the query string removed."""
    sent_s: float
    """Seconds from the first trace line to the request's header being sent."""
    status: int | None
    """Response status, None when no response arrived."""
    response_s: float | None
    """Seconds from the first trace line to the response's status line."""
    http_version: str | None
    """Protocol of the response (``HTTP/2``, ``HTTP/1.1``) or of the request."""
    server: str | None = None
    """The final response's ``server`` header, None when it had none."""
    content_length_bytes: int | None = None
    """The request's ``Content-Length``; None when it sent none."""
    streamed: bool = False
    """A POST whose body went without a ``Content-Length`` (chunked on HTTP/1.1, a body
    of unknown length on HTTP/2)."""
    last_io_s: float | None = None
    """Seconds from the first trace line to the last header or data line of this request."""
    ended_s: float | None = None
    """Seconds from the first trace line to curl's word that the transfer ended badly."""
    ending: str = ""
    """curl's own words for that ending (:data:`BAD_ENDINGS`), else empty."""
    upload_done: bool = False
    """curl said it handed over the whole body it declared (:data:`UPLOAD_DONE`): logged for
    a body with a ``Content-Length`` only, never for a streamed one."""
    last_sent_s: float | None = None
    """Seconds from the first trace line to the request's last line sent (a header line, or
    curl's word that the whole body went) before its status: where the server's wait began."""
    finished_s: float | None = None
    """Seconds from the first trace line to curl's word that the request ended well (the
    connection "left intact"), None otherwise."""
    content_type: str | None = None
    """The final response's ``Content-Type`` header, None when it had none."""

    @property
    def silence_before_close_s(self) -> float | None:
        """Seconds between the request's last header or data line and a bad ending."""
        if self.ended_s is None or self.last_io_s is None:
            return None
        return max(0.0, self.ended_s - self.last_io_s)

    @property
    def silence_before_status_s(self) -> float | None:
        """Seconds between the request's last line sent and its final status line: the
        server's (or its edge's) wait before answering (an edge's 504 after its timeout)."""
        if self.response_s is None or self.last_sent_s is None:
            return None
        return max(0.0, self.response_s - self.last_sent_s)

    @property
    def silence_before_finish_s(self) -> float | None:
        """Seconds between the request's last header or data line and curl's word that it
        ended well: a response the server side ended after a silence (an HTTP/2 edge that
        ends the stream at its timeout leaves curl content, and git short of its pack)."""
        if self.finished_s is None or self.last_io_s is None:
            return None
        return max(0.0, self.finished_s - self.last_io_s)


BAD_ENDINGS = (
    "transfer closed with outstanding read data remaining",
    "transfer closed with ",
    "was not closed cleanly",
    "was reset",
    "connection died",
    "empty reply from server",
    "connection reset by peer",
    "recv failure",
    "send failure",
    "failed sending data to the peer",
    "failure when receiving data from the peer",
    "the tls connection was non-properly terminated",
    "unexpected eof",
    "stream error in the http/2 framing layer",
    "operation timed out",
)
"""curl's words (lower case) for a transfer that ended before its answer did; curl logs
each as an ``== Info:`` line of the trace (``failf``)."""

FINISHED = "left intact"
"""curl's words (lower case) for a request that ended well with its connection kept
(``Connection #0 to host ... left intact``)."""

UPLOAD_DONE = ("we are completely uploaded and fine", "upload completely sent off")
"""curl's words (lower case) for a request body of known length handed over whole: the
first from its transfer loop (7.x to 8.6 at least; 7.88.1 logs it on HTTP/1.1 and HTTP/2),
the second where the body went out with the headers or, in older and newer releases, in
its place. A body without a ``Content-Length`` gets neither."""


def request_endings(requests: Sequence[CurlRequest], *, failed: bool, early: str,
                    headers_first: bool = False) -> list[tuple[float | None, str]]:
    """(silence before the close, curl's words for the ending) of each request. Of a
    ``failed`` transfer, the last request that curl saw end well after a silence, with a 2xx
    (or no) status, ended by the server side after that silence, in the words ``early``:
    an HTTP/2 edge that ends the stream at its timeout leaves curl content and git short
    of its pack or its status report. ``headers_first``: only after a 2xx status (a push's
    pack POST answered 200 before the silence; a request never answered may be the
    client's own stop, libcurl ending an HTTP/2 upload with no reply)."""
    endings = []
    for number, r in enumerate(requests, 1):
        silence, ending = r.silence_before_close_s, r.ending
        answered = r.status is not None and r.status >= 300  # an error page ends the request
        if failed and number == len(requests) and not ending and not answered \
                and (r.status is not None or not headers_first) \
                and r.silence_before_finish_s:
            silence, ending = r.silence_before_finish_s, early
        endings.append((silence, ending))
    return endings


@dataclass(frozen=True, kw_only=True)
class CurlTraceSummary:
    """What a ``GIT_TRACE_CURL`` file says about the HTTP exchanges of one git run."""

    http_version: str | None
    """Negotiated protocol of the git-receive-pack POST or, lacking it, of the last response."""
    alpn: str | None
    """Protocol the server accepted in ALPN (``h2``, ``http/1.1``), when logged."""
    requests: tuple[CurlRequest, ...]
    """Requests in order."""
    last_info: str | None
    """The last ``== Info:`` line (shows where a hung transfer stopped)."""


_CURL_LINE = re.compile(r"^(\d{2}):(\d{2}):(\d{2})\.(\d{1,6})\s+\S+\s+(.*)$")
_REQUEST_LINE = re.compile(r"^=> Send header: ([A-Z]+) (\S+) (HTTP/[\d.]+)\s*$")
_STATUS_LINE = re.compile(r"^<= Recv header: (HTTP/[\d.]+) (\d{3})")
_SERVER_LINE = re.compile(r"^<= Recv header: server:\s*(.*?)\s*$", re.IGNORECASE)
_TYPE_LINE = re.compile(r"^<= Recv header: content-type:\s*(.*?)\s*$", re.IGNORECASE)
_LENGTH_LINE = re.compile(r"^=> Send header: content-length:\s*(\d+)\s*$", re.IGNORECASE)
_IO_LINE = re.compile(r"^(=> Send|<= Recv) (header|data)")


def _normalise_version(version: str) -> str:
    return {"HTTP/2.0": "HTTP/2", "HTTP/2": "HTTP/2"}.get(version, version)


def _stamp_s(hours: str, minutes: str, seconds: str, frac: str) -> float:
    return int(hours) * 3600 + int(minutes) * 60 + int(seconds) + int(frac.ljust(6, "0")) / 1e6


def _bad_ending(info: str) -> bool:
    lowered = info.lower()
    return any(words in lowered for words in BAD_ENDINGS)


class _TraceReader:
    """The requests of a curl trace, one line at a time."""

    def __init__(self) -> None:
        self.requests: list[CurlRequest] = []
        self.alpn: str | None = None
        self.last_info: str | None = None
        self.using_http2 = False

    def _update_last(self, **changes: Any) -> None:
        self.requests[-1] = replace(self.requests[-1], **changes)

    def info(self, info: str, rel_s: float) -> None:
        self.last_info = info
        if "ALPN" in info and "accepted" in info:
            self.alpn = info.rsplit(" ", 1)[-1]
        if info.startswith("Using HTTP2"):
            self.using_http2 = True
        if self.requests and not self.requests[-1].ending and _bad_ending(info):
            self._update_last(ended_s=rel_s, ending=info)
        if self.requests and info.lower().startswith(UPLOAD_DONE):
            self._update_last(upload_done=True)
            if self.requests[-1].status is None:
                self._update_last(last_sent_s=rel_s)
        if self.requests and FINISHED in info.lower() and self.requests[-1].finished_s is None \
                and not self.requests[-1].ending:
            self._update_last(finished_s=rel_s)

    def line(self, body: str, rel_s: float) -> None:
        request = _REQUEST_LINE.match(body)
        if request is not None:
            method, target, version = request.groups()
            self.requests.append(CurlRequest(
                method=method, path=target.split("?", 1)[0], sent_s=rel_s, status=None,
                response_s=None, http_version=_normalise_version(version),
                streamed=method == "POST", last_io_s=rel_s, last_sent_s=rel_s))
            return
        if not self.requests:
            return
        last = self.requests[-1]
        if _IO_LINE.match(body) and last.ended_s is None:
            self._update_last(last_io_s=rel_s)
            if body.startswith("=> Send") and last.status is None:
                self._update_last(last_sent_s=rel_s)
        length = _LENGTH_LINE.match(body)
        if length is not None and last.status is None:
            self._update_last(content_length_bytes=int(length.group(1)), streamed=False)
            return
        status = _STATUS_LINE.match(body)
        if status is not None:
            version, code = status.groups()
            if last.status is None or int(code) >= 200 > last.status:
                self._update_last(status=int(code), response_s=rel_s,
                                  http_version=_normalise_version(version))
            return
        server = _SERVER_LINE.match(body)
        if server is not None and last.status is not None:
            self._update_last(server=server.group(1) or None)
        content_type = _TYPE_LINE.match(body)
        if content_type is not None and last.status is not None:
            self._update_last(content_type=content_type.group(1) or None)


def parse_curl_trace(text: str) -> CurlTraceSummary:
    """Requests, negotiated HTTP version and last info line of a curl trace."""
    first_s: float | None = None
    reader = _TraceReader()
    for raw in text.splitlines():
        match = _CURL_LINE.match(raw)
        if match is None:
            continue
        *clock, body = match.groups()
        stamp = _stamp_s(*clock)
        if first_s is None:
            first_s = stamp
        rel_s = stamp - first_s
        if rel_s < 0:  # crossed midnight
            rel_s += 86400.0
        if body.startswith("== Info:"):
            reader.info(body[len("== Info:"):].strip(), rel_s)
        else:
            reader.line(body, rel_s)
    requests = reader.requests
    http_version: str | None = None
    posts = [r for r in requests if r.method == "POST" and r.path.endswith("git-receive-pack")]
    chosen = posts[-1] if posts else (requests[-1] if requests else None)
    if chosen is not None:
        http_version = chosen.http_version
    if reader.using_http2 and http_version is None:
        http_version = "HTTP/2"
    return CurlTraceSummary(
        http_version=http_version, alpn=reader.alpn, requests=tuple(requests),
        last_info=reader.last_info,
    )


def last_answer(summary: CurlTraceSummary) -> str | None:
    """The last answered request, its status and Content-Type, in words
    (``POST git-receive-pack answered 200, Content-Type text/html``); None without one."""
    answered = [r for r in summary.requests if r.status is not None]
    if not answered:
        return None
    last = answered[-1]
    name = "info/refs" if last.path.endswith("/info/refs") else last.path.rsplit("/", 1)[-1]
    kind = f"{last.method} {name}"
    return (f"{kind} answered {last.status}, "
            + (f"Content-Type {last.content_type}" if last.content_type else "no Content-Type"))


def redact_curl_trace(text: str, secrets: Iterable[str] = ()) -> str:
    """The trace with credentials removed: the known ``secrets``, and everything
    :func:`gitnetdiag.redaction.redact_text` finds by context. Header lines of
    Authorization, Cookie and their kin lose their whole value (a cookie value
    may hold quotes the generic rule stops at)."""
    out: list[str] = []
    for line in text.splitlines(keepends=True):
        lowered = line.lower()
        for header in _REDACTED_HEADERS:
            marker = f"header: {header}:"
            index = lowered.find(marker)
            if index >= 0:
                cut = index + len(marker)
                ending = "\n" if line.endswith("\n") else ""
                line = f"{line[:cut]} {MASK}{ending}"
                break
        out.append(line)
    return redact_text("".join(out), secrets)
