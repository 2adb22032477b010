"""Native HTTP/2 push probe: git's smart-HTTP receive-pack spoken with ``h2``.

git and libcurl hide HTTP/2 flow control. This probe speaks the same push
itself, so it can timestamp what curl cannot show: the server's SETTINGS, each
WINDOW_UPDATE (stream and connection) and each DATA frame sent, and therefore
how long the upload sat waiting for credit.

    GET  /info/refs?service=git-receive-pack   ref advertisement, capabilities
    POST /git-receive-pack                     "<zero> <new> <probe ref>\\0 report-status"
                                               + flush + pack  -> "unpack ok", "ok <probe ref>"
    POST /git-receive-pack (always, finally)   "<new> <zero> <probe ref>" -> branch deleted

(<probe ref> is refs/heads/gitnetdiag/probe-<id>.)

The probe only ever names its own ``gitnetdiag/probe-<id>`` branch, refuses to
run when that branch already exists, and deletes it with a compare-and-swap
command (old id = the pushed commit), so it cannot remove anything else.

The receive-pack protocol helpers (pkt-lines, advertisement, report-status)
are pure and shared with :mod:`gitnetdiag.probe.sshnative`.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from h2.settings import SettingCodes

from gitnetdiag.analysis.flowcontrol import HTTP2_DEFAULT_WINDOW_BYTES
from gitnetdiag.errors import AnsweredError, GitnetdiagError, NetworkError, UsageError
from gitnetdiag.probe.credentials import HttpAccess, auth_failed, http_access
from gitnetdiag.probe.h2client import H2Client, H2Remote, Response
from gitnetdiag.probe.nativecleanup import BranchCleanup, end_branch
from gitnetdiag.probe.receivepack import (
    FLUSH_PKT,
    ZERO_OID,
    RefAdvertisement,
    ReportStatus,
    parse_advertisement,
    parse_report_status,
    pkt_line,
    ref_update_request,
    split_pkt_lines,
)
from gitnetdiag.probe.repo import check_safe_ref, probe_branch_name
from gitnetdiag.probe.tcpinfo import TcpInfoSample
from gitnetdiag.rundir.native import (
    H2DataSent,
    H2NativeRecord,
    SettingsEvent,
    StreamOpened,
    WindowUpdateReceived,
)
from gitnetdiag.serial import to_jsonable

__all__ = [
    "ZERO_OID", "H2ClientSide", "H2Push", "check_safe_ref", "h2_push_probe", "h2_sweep",
    "parse_advertisement", "parse_report_status", "pkt_line", "ref_update_request",
    "split_pkt_lines",
]

RECEIVE_PACK_REQUEST = "application/x-git-receive-pack-request"
RECEIVE_PACK_RESULT = "application/x-git-receive-pack-result"
DELETE_CONNECT_ATTEMPTS = 2
"""Connections the probe branch's delete tries when one is lost before any answer."""
CONNECTION_LOST = frozenset({"connect-failed", "tls-failed", "connection-closed",
                             "recv-failed", "send-failed"})
"""Error references of a connection lost before the server answered (a refusal, a
401, a GOAWAY are answers: asking again would be told the same)."""


# --------------------------------------------------------------------------
# The push probe
# --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class H2Push:
    """One native HTTP/2 push as the probe saw it: the raw events (``native-h2.json``) and
    receive-pack's answer. Its credit ledgers are derived on the pure side
    (:func:`gitnetdiag.pipeline.h2_push_ledger`)."""

    events: H2NativeRecord
    """What the probe saw, as written to ``native-h2.json``."""
    report: ReportStatus
    """receive-pack's answer."""

    @property
    def server_initial_window_bytes(self) -> int:
        """Server SETTINGS_INITIAL_WINDOW_SIZE: the stream window for our upload."""
        return self.events.server_settings().get("INITIAL_WINDOW_SIZE",
                                                 HTTP2_DEFAULT_WINDOW_BYTES)

    @property
    def ref_deleted(self) -> bool:
        return self.events.ref_deleted

    @property
    def auth(self) -> str:
        return self.events.auth

    @property
    def proxy(self) -> str | None:
        return self.events.proxy

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.events.warnings

    def to_dict(self) -> dict[str, Any]:
        """The raw events, as ``native-h2.json`` holds them."""
        result: dict[str, Any] = to_jsonable(self.events)
        return result


def native_record(client: H2Client, stream_id: int, *, request_bytes: int, ended_ns: int,
                  report: ReportStatus, ref: str, ref_deleted: bool,
                  access: HttpAccess) -> H2NativeRecord:
    """The raw events the client recorded, as ``native-h2.json`` holds them."""
    recorder = client.recorder
    return H2NativeRecord(
        target=client.target.authority,
        alpn=client.alpn,
        server_headers=tuple(client.server_headers),
        identity_headers=tuple(client.identity_headers),
        upload_stream_id=stream_id,
        request_bytes=request_bytes,
        ended_t_ns=ended_ns,
        # The client's SETTINGS go out in the connection preface.
        settings_sent=(SettingsEvent(t_ns=0, settings=dict(client.client_settings)),),
        settings_received=tuple(SettingsEvent(t_ns=t, settings=dict(changed))
                                for t, changed in recorder.server_settings),
        streams_opened=tuple(StreamOpened(t_ns=t, stream_id=sid)
                             for sid, t in recorder.stream_opened.items()),
        window_updates=tuple(WindowUpdateReceived(t_ns=t, stream_id=sid, increment_bytes=inc)
                             for t, sid, inc in recorder.window_updates),
        data_sent=tuple(H2DataSent(t_ns=t, stream_id=sid, size_bytes=size)
                        for t, sid, size in recorder.data_sent),
        report=report.to_dict(),
        ref=ref,
        ref_deleted=ref_deleted,
        auth=access.auth_source,
        tls_ca=access.ca_source if access.verify else "not-verified",
        proxy=access.proxy.display if access.proxy else None,
        warnings=tuple(access.warnings),
    )


def get_info_refs(client: H2Client, service: str = "git-receive-pack",
                  headers: Sequence[tuple[str, str]] = ()) -> Response:
    """GET the advertisement of ``service`` (the push's ``git-receive-pack``, the native
    download's ``git-upload-pack``); after a 401, retry once with the credential git would
    use (URL userinfo, else the credential helpers)."""
    path = f"{client.target.path}/info/refs?service={service}"
    response = client.request("GET", path, headers)
    access = client.access
    if response.status == 401 and access.credential is None:
        challenge = response.headers.get("www-authenticate", "")
        if challenge and not challenge.lower().startswith("basic"):
            scheme = challenge.split()[0]
            raise NetworkError(
                f"{access.display_url} asks for {scheme} authentication, which the native "
                "HTTP/2 probe does not speak",
                hint="give a token through http.extraHeader (Authorization: Bearer ...)",
                reference="auth-unsupported",
            )
        if access.credential_after_401() is not None:
            response = client.request("GET", path, headers)
    return response


def _advertise(client: H2Client) -> RefAdvertisement:
    response = get_info_refs(client)
    if response.status in (401, 403):
        raise auth_failed(client.access, response.status, "GET info/refs")
    if response.status != 200:
        raise AnsweredError(
            f"GET info/refs answered HTTP {response.status}",
            hint="check the repository URL and that the server allows pushes (http.receivepack)",
            reference="http-status", body=response.body,
        )
    lines, _ = split_pkt_lines(response.body)
    return parse_advertisement(lines)


def _post_receive_pack(client: H2Client, body: bytes) -> Response:
    return client.request(
        "POST",
        f"{client.target.path}/git-receive-pack",
        headers=[("content-type", RECEIVE_PACK_REQUEST), ("accept", RECEIVE_PACK_RESULT)],
        body=body,
    )


def _authorize_push(client: H2Client) -> None:
    """Make sure the POST will be accepted before the pack is sent.

    git-http-backend's documented setup guards only the POST: the advertisement
    came without credentials and the push would get a 401. Like git's
    probe_rpc, ask with an empty request (a flush) first and fetch the
    credential after its 401, so the pack goes out once, authorized.
    """
    access = client.access
    if access.post_authorized or access.auth_source != "none":
        return
    response = _post_receive_pack(client, FLUSH_PKT)
    if response.status == 401 and access.credential_after_401() is None:
        raise auth_failed(access, response.status, "POST git-receive-pack")
    access.post_authorized = response.status == 200


def _receive_pack(client: H2Client, body: bytes) -> tuple[ReportStatus, int]:
    _authorize_push(client)
    return _report_of(client, _post_receive_pack(client, body))


def _report_of(client: H2Client, response: Response) -> tuple[ReportStatus, int]:
    """receive-pack's report in the answer to its POST; an error for any other answer."""
    if response.status in (401, 403):
        raise auth_failed(client.access, response.status, "POST git-receive-pack")
    if response.status != 200:
        raise AnsweredError(
            f"POST git-receive-pack answered HTTP {response.status}",
            hint="the server refused the push; check its error log",
            reference="http-status", body=response.body,
        )
    lines, _ = split_pkt_lines(response.body)
    return parse_report_status(lines), response.stream_id


def delete_probe_branch_h2(
    target: H2Remote,
    *,
    access: HttpAccess,
    ref: str,
    pushed_oid: str,
    keylog_file: str | None = None,
    timeout_s: float = 60.0,
) -> bool:
    """Delete ``ref`` if (and only if) it still points at ``pushed_oid``; True when gone."""
    check_safe_ref(ref)
    client = H2Client(target, access=access, keylog_file=keylog_file, timeout_s=timeout_s)
    try:
        advertised = _advertise(client)
        current = advertised.refs.get(ref)
        if current is None:
            return True
        if current != pushed_oid:
            return False
        caps = [cap for cap in ("report-status", "delete-refs") if cap in advertised.capabilities]
        report, _ = _receive_pack(client, ref_update_request(pushed_oid, ZERO_OID, ref, caps))
        return report.ok_for(ref)
    finally:
        client.close()


def _delete_quietly(
    target: H2Remote, access: HttpAccess, ref: str, oid: str, keylog_file: str | None,
    timeout_s: float,
) -> bool:
    """Delete the probe branch; a failure here must not hide the push's own error.

    A connection that failed before the server answered (refused, reset, a TLS
    handshake that went wrong) says nothing about the branch: the delete is asked
    again once on a new connection (a compare-and-swap, so asking twice is safe)."""
    for attempt in range(DELETE_CONNECT_ATTEMPTS):
        try:
            return delete_probe_branch_h2(target, access=access, ref=ref, pushed_oid=oid,
                                          keylog_file=keylog_file, timeout_s=timeout_s)
        except AnsweredError as exc:  # the server's own word: asking again changes nothing
            print(f"warning: could not delete {ref}: {exc.one_line()}", file=sys.stderr)
            return False
        except GitnetdiagError as exc:
            again = (isinstance(exc, NetworkError) and exc.reference in CONNECTION_LOST
                     and attempt + 1 < DELETE_CONNECT_ATTEMPTS)
            print(f"warning: could not delete {ref}: {exc.one_line()}"
                  + ("; asking again on a new connection" if again else ""), file=sys.stderr)
            if not again:
                return False
    return False


@dataclass(frozen=True, kw_only=True)
class H2ClientSide:
    """What the probe's own HTTP/2 client advertises and records beyond the push itself."""

    client_settings: dict[SettingCodes, int] | None = None
    """SETTINGS the client advertises (None: the client's defaults)."""
    keylog_file: str | None = None
    """Where the TLS secrets go (NSS key log format), None: nowhere."""
    tcpinfo_sink: list[TcpInfoSample] | None = None
    """Where the TCP_INFO samples of the client's socket go (no root needed)."""
    stop: threading.Event | None = None
    """Set by the thread that got Ctrl-C or SIGTERM: the push stops within a second and
    cleans up (a probe in a worker thread gets no signal of its own)."""


def h2_push_probe(
    url: str,
    *,
    ca_file: str | None = None,
    pack: bytes,
    new_oid: str,
    probe_id: str,
    client_side: H2ClientSide | None = None,
    timeout_s: float = 120.0,
    access: HttpAccess | None = None,
    verify: bool | None = None,
    cleanup: BranchCleanup | None = None,
) -> H2Push:
    """Push ``pack`` to a fresh probe branch over native HTTP/2, then delete the branch
    (with ``cleanup``: as git's pushes, waiting for a slow hook; else a compare-and-swap).

    The server is reached as git would reach it (:func:`http_access`): credential,
    extra headers, CA and proxy from the user's git config and environment;
    an explicit ``ca_file`` wins, as ``--ca-file`` does for git, and
    ``verify=False`` skips certificate checks (``--insecure``). ``access`` lets a
    caller resolve all that once for several pushes.
    """
    target = H2Remote.from_url(url)
    ref = f"refs/heads/{probe_branch_name(probe_id)}"
    check_safe_ref(ref)
    if access is None:
        access = http_access(url, ca_file=ca_file, verify=verify)
    side = client_side or H2ClientSide()
    client = H2Client(
        target,
        access=access,
        keylog_file=side.keylog_file,
        client_settings=side.client_settings,
        timeout_s=timeout_s, tcpinfo_sink=side.tcpinfo_sink,  # TCP_INFO of our socket, no root
        stop=side.stop,
    )
    pushed = deleted = False
    answer: ReportStatus | None = None
    status: int | None = None
    try:
        advertised = _advertise(client)
        if ref in advertised.refs:
            raise UsageError(f"{ref} already exists on the server", hint="use a new probe id")
        caps = [cap for cap in ("report-status",) if cap in advertised.capabilities]
        body = ref_update_request(ZERO_OID, new_oid, ref, caps, pack)
        pushed = True  # from here on the branch may exist: always try to delete it
        _authorize_push(client)
        response = _post_receive_pack(client, body)
        status = response.status
        report, stream_id = _report_of(client, response)
        answer = report
        ended_ns = client.recorder.now_ns()
    finally:
        client.close()
        if cleanup is not None:
            sent = sum(size for _, _, size in client.recorder.data_sent)
            deleted = end_branch(cleanup, ref, new_oid, started=pushed,
                                 sent_all=pushed and sent >= len(body), report=answer,
                                 status=status)
        elif pushed:
            deleted = _delete_quietly(target, access, ref, new_oid, side.keylog_file, timeout_s)
    events = native_record(client, stream_id, request_bytes=len(body), ended_ns=ended_ns,
                           report=report, ref=ref, ref_deleted=deleted, access=access)
    return H2Push(events=events, report=report)


# --------------------------------------------------------------------------
# Sweep over client settings
# --------------------------------------------------------------------------


DEFAULT_SWEEP: tuple[tuple[int, int], ...] = (
    (65_535, 16_384),
    (1_048_576, 16_384),
    (16_777_216, 16_384),
    (16_777_216, 1_048_576),
)
"""(client initial window, client max frame size) pairs tried by :func:`h2_sweep`."""


def h2_sweep(
    url: str,
    *,
    ca_file: str | None = None,
    pack: bytes,
    new_oid: str,
    probe_id_factory: Callable[[], str],
    settings: Sequence[tuple[int, int]] = DEFAULT_SWEEP,
    timeout_s: float = 120.0,
    verify: bool | None = None,
    cleanup: BranchCleanup | None = None,
) -> tuple[H2NativeRecord, ...]:
    """Repeat the push with different client SETTINGS; the raw events of each variant.

    The client's INITIAL_WINDOW_SIZE and MAX_FRAME_SIZE govern what the server
    may send us; the upload is governed by the server's window, so the rows
    derived from these events (:func:`gitnetdiag.pipeline.sweep_rows`)
    show whether changing the client side helps (it should not).
    """
    records: list[H2NativeRecord] = []
    access = http_access(url, ca_file=ca_file, verify=verify)
    for window, frame in settings:
        push = h2_push_probe(
            url, access=access, pack=pack, new_oid=new_oid, probe_id=probe_id_factory(),
            client_side=H2ClientSide(client_settings={SettingCodes.INITIAL_WINDOW_SIZE: window,
                                                      SettingCodes.MAX_FRAME_SIZE: frame}),
            timeout_s=timeout_s, cleanup=cleanup,
        )
        records.append(push.events)
    return tuple(records)
