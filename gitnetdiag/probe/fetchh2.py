"""Native HTTP/2 download ledger: git's upload-pack fetch spoken with ``h2``, under a window.

In an HTTP/2 download the *client's* window limits the rate: the server may
have no more DATA in flight than the window the client advertised, and waits
for the client's WINDOW_UPDATE to send more. libcurl hides that. This probe
sends the same requests git sends for a protocol v2 clone, advertising a
chosen window (``SETTINGS_INITIAL_WINDOW_SIZE`` for the stream, and the
connection window raised to match), and timestamps every DATA frame the server
sends and the credit the server has left after it:

    GET  /info/refs?service=git-upload-pack    git-protocol: version=2 -> capabilities
    POST /git-upload-pack   command=ls-refs     ref-prefix (the branch, else HEAD)
    POST /git-upload-pack   command=fetch       want <oid>, ofs-delta, done -> the pack

A server that does not pass ``git-protocol`` on answers protocol v0: the refs come
with the advertisement and the request is ``want <oid> <caps>``, flush, ``done``.

Read-only: upload-pack reads, writes nothing. The pack stream is bounded as
git's clones are (the same :class:`~gitnetdiag.probe.budget.RateMonitor`: a
stable rate, the budget, or a stall) and then cancelled (RST_STREAM CANCEL).
Run under two windows, side by side, the ledgers show how the server's pacing
follows the client's window.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from h2.errors import ErrorCodes
from h2.events import DataReceived
from h2.settings import SettingCodes

from gitnetdiag.analysis.flowcontrol import HTTP2_DEFAULT_WINDOW_BYTES
from gitnetdiag.errors import AnsweredError, GitnetdiagError, NetworkError
from gitnetdiag.probe.budget import Progress, RateMonitor
from gitnetdiag.probe.credentials import HttpAccess, auth_failed
from gitnetdiag.probe.h2client import H2Client, H2Remote, Response
from gitnetdiag.probe.h2native import get_info_refs
from gitnetdiag.probe.receivepack import (
    FLUSH_PKT,
    parse_advertisement,
    pkt_line,
    split_pkt_lines,
)
from gitnetdiag.rundir.ledgers import H2CreditLedger

DELIM_PKT = b"0001"
"""Protocol v2's section delimiter."""
LARGE_WINDOW_BYTES = 16 * 2**20
"""A window that never binds on a lab path (16 MiB per RTT is > 2.6 Gbit/s at 50 ms)."""
DOWNLOAD_WINDOWS: tuple[tuple[str, int], ...] = (
    ("HTTP/2 default", HTTP2_DEFAULT_WINDOW_BYTES),
    ("large", LARGE_WINDOW_BYTES),
)
"""The windows the ledgers are recorded under: RFC 9113's initial 65,535 B (a client that
does not raise it), and one that cannot bind."""
_POLL_S = 0.25
_V2 = ("git-protocol", "version=2")


def ls_refs_request(ref: str) -> bytes:
    """``command=ls-refs`` for one ref (``HEAD`` or ``refs/heads/<branch>``)."""
    return (pkt_line(b"command=ls-refs\n") + DELIM_PKT + pkt_line(b"symrefs\n")
            + pkt_line(f"ref-prefix {ref}\n".encode()) + FLUSH_PKT)


def fetch_request(oid: str) -> bytes:
    """``command=fetch`` of everything reachable from ``oid``, as a fresh clone asks it."""
    return (pkt_line(b"command=fetch\n") + DELIM_PKT + pkt_line(b"ofs-delta\n")
            + pkt_line(f"want {oid}\n".encode()) + pkt_line(b"done\n") + FLUSH_PKT)


def fetch_request_v0(oid: str, capabilities: frozenset[str]) -> bytes:
    """Protocol v0's upload-pack request (a server that ignores ``git-protocol``): one
    ``want`` with the capabilities git asks for, a flush, ``done``."""
    caps = " ".join(cap for cap in ("multi_ack_detailed", "side-band-64k", "ofs-delta")
                    if cap in capabilities)
    return pkt_line(f"want {oid} {caps}\n".encode()) + FLUSH_PKT + pkt_line(b"done\n")


def parse_ls_refs(body: bytes) -> dict[str, str]:
    """``ref -> oid`` from an ls-refs answer (``<oid> <ref>[ attributes]``)."""
    lines, _ = split_pkt_lines(body)
    refs = {}
    for line in lines:
        if line is None:
            continue
        parts = line.decode(errors="replace").rstrip("\n").split(" ")
        if len(parts) >= 2 and len(parts[0]) in (40, 64):
            refs[parts[1]] = parts[0]
    return refs


@dataclass(kw_only=True)
class _Ledger:
    stream_id: int = 0
    t_ns: list[int] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    credit: list[int] = field(default_factory=list)


class DownloadClient(H2Client):
    """:class:`H2Client` that also records each DATA frame of the watched stream and the
    credit the server has left on it afterwards (h2 acknowledges and refills as it reads)."""

    ledger: _Ledger

    def _handle(self, event: object, t_ns: int) -> None:
        super()._handle(event, t_ns)
        ledger = getattr(self, "ledger", None)
        if isinstance(event, DataReceived) and ledger and event.stream_id == ledger.stream_id:
            ledger.t_ns.append(t_ns)  # the recorder's clock already starts at its t0
            ledger.sizes.append(int(event.flow_controlled_length or 0))
            try:
                ledger.credit.append(int(self.conn.remote_flow_control_window(event.stream_id)))
            except Exception:  # the stream closed with this frame: no credit left to ask
                ledger.credit.append(0)


def _post(client: DownloadClient, body: bytes) -> int:
    stream_id = int(client.conn.get_next_available_stream_id())
    client.conn.send_headers(stream_id, [
        (":method", "POST"), (":scheme", "https"), (":authority", client.target.authority),
        (":path", f"{client.target.path}/git-upload-pack"), ("user-agent", "git/2.39"),
        *client.access.request_headers(), _V2,
        ("content-type", "application/x-git-upload-pack-request"),
        ("accept", "application/x-git-upload-pack-result"),
        ("content-length", str(len(body)))])
    client.conn.send_data(stream_id, body, end_stream=True)
    client._flush()
    return stream_id


def _want(client: DownloadClient, branch: str | None) -> tuple[str, bytes]:
    """The object to fetch and the request that fetches it: protocol v2 where the server
    speaks it (``ls-refs``, then ``fetch``), else v0 from the ref advertisement, as git."""
    # The credential as git gets it (after a 401: URL userinfo, else the helpers), as the
    # push's native probe does; a 401 or 403 after that is the credential's fault.
    answer = get_info_refs(client, "git-upload-pack", [_V2])
    _check(client, answer, "GET info/refs")
    ref = f"refs/heads/{branch}" if branch else "HEAD"
    lines, _ = split_pkt_lines(answer.body)
    if b"version 2\n" not in lines:
        advertised = parse_advertisement(lines)
        oid = advertised.refs.get(ref)
        return _known(client, ref, oid), fetch_request_v0(oid or "", advertised.capabilities)
    listing = client.request("POST", f"{client.target.path}/git-upload-pack", headers=[
        _V2, ("content-type", "application/x-git-upload-pack-request"),
        ("accept", "application/x-git-upload-pack-result")], body=ls_refs_request(ref))
    _check(client, listing, "POST git-upload-pack (ls-refs)")
    oid = parse_ls_refs(listing.body).get(ref)
    return _known(client, ref, oid), fetch_request(oid or "")


def _check(client: DownloadClient, answer: Response, what: str) -> None:
    """An answer of the upload-pack service: a 401 or 403 is the credential's (the hint
    names the helper and http.extraHeader), any other error status a refusal."""
    if answer.status in (401, 403):
        raise auth_failed(client.access, answer.status, what)
    if answer.status != 200:
        raise AnsweredError(f"{client.target.authority}: {what} answered HTTP {answer.status}",
                            reference="upload-pack-refused", body=answer.body,
                            hint="the native download ledger needs read access over HTTPS")


def _known(client: DownloadClient, ref: str, oid: str | None) -> str:
    if oid is None:
        raise NetworkError(f"{client.target.authority} lists no {ref}", reference="no-ref",
                           hint="an empty repository has nothing to fetch: add --fetch-seed")
    return oid


REFS_ANSWER_TIMEOUT_S = 5.0
"""The most :func:`refs_answer` waits: one request, after the clones already failed."""


def refs_answer(url: str, *, access: HttpAccess, timeout_s: float) -> None:
    """One native ``GET info/refs?service=git-upload-pack`` over HTTP/2, to see who answers
    when git's clones failed with an HTTP status (git's trace keeps no body): returns when
    it answered 200, raises :class:`AnsweredError` (with the page's excerpt) for an error
    status, or the connection's own error. At most ``min(timeout_s, 5 s)``."""
    client = DownloadClient(H2Remote.from_url(url), access=access,
                            timeout_s=min(timeout_s, REFS_ANSWER_TIMEOUT_S))
    try:
        _check(client, get_info_refs(client, "git-upload-pack", [_V2]), "GET info/refs")
    finally:
        client.close()


def h2_download(url: str, *, access: HttpAccess, label: str, window_bytes: int,
                branch: str | None, budget_s: float | None, stall_timeout_s: float | None,
                timeout_s: float) -> H2CreditLedger:
    """One bounded native fetch advertising ``window_bytes``; failures end up in the record."""
    settings = {SettingCodes.INITIAL_WINDOW_SIZE: window_bytes}
    record = H2CreditLedger(label=label, window_bytes=window_bytes, outcome="failed")
    try:
        client = DownloadClient(H2Remote.from_url(url), access=access, client_settings=settings,
                                timeout_s=timeout_s)
    except GitnetdiagError as exc:
        return _failed(record, exc)
    try:
        if window_bytes > HTTP2_DEFAULT_WINDOW_BYTES:  # the connection's window as well
            client.conn.increment_flow_control_window(window_bytes - HTTP2_DEFAULT_WINDOW_BYTES)
            client._flush()
        _, request = _want(client, branch)
        return _stream_pack(client, record, request, budget_s=budget_s,
                            stall_timeout_s=stall_timeout_s, timeout_s=timeout_s)
    except GitnetdiagError as exc:
        return _failed(record, exc)
    finally:
        client.close()


def _failed(record: H2CreditLedger, exc: GitnetdiagError) -> H2CreditLedger:
    return H2CreditLedger(label=record.label, window_bytes=record.window_bytes,
                            outcome="failed", error=f"{exc.reference}: {exc.message}")


def _stream_pack(client: DownloadClient, record: H2CreditLedger, request: bytes, *,
                 budget_s: float | None, stall_timeout_s: float | None,
                 timeout_s: float) -> H2CreditLedger:
    client.ledger = _Ledger()
    started = time.monotonic()
    stream_id = client.ledger.stream_id = _post(client, request)
    monitor = RateMonitor(budget_s=budget_s, stall_timeout_s=stall_timeout_s)
    stopped = None
    while True:
        client._pump(_POLL_S)
        now = time.monotonic() - started
        monitor.add(Progress(t_s=now, moved_bytes=sum(client.ledger.sizes)))
        ended = bool(client._responses.get(stream_id, {}).get("ended"))
        stop = None if ended else monitor.stop_reason(now, pack_finished=False)
        if ended or stop is not None or now >= timeout_s:
            stopped = stop.value if stop else (None if ended else "timeout")
            break
    if stopped is not None:
        client.conn.reset_stream(stream_id, ErrorCodes.CANCEL)
        client._flush()
    client._responses.pop(stream_id, None)
    ledger = client.ledger
    stream_started = client.recorder.stream_opened.get(stream_id, 0)
    return H2CreditLedger(
        label=record.label, window_bytes=record.window_bytes,
        outcome="ok" if stopped is None else ("bounded" if stopped in ("stable", "budget")
                                              else "stalled"),
        stopped=stopped, server_settings=_settings(client),
        request_t_s=stream_started / 1e9,
        data_t_s=tuple(t / 1e9 for t in ledger.t_ns), data_bytes=tuple(ledger.sizes),
        credit_left_bytes=tuple(ledger.credit), received_bytes=sum(ledger.sizes),
        rate_bytes_per_s=monitor.rate_bytes_per_s())


def _settings(client: DownloadClient) -> dict[str, int]:
    merged: dict[str, int] = {}
    for _, changed in client.recorder.server_settings:
        merged.update(changed)
    return merged
