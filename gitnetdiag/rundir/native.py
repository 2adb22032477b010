"""Raw flow-control events of the native probes (``native-h2.json``, ``native-ssh.json``).

The probes record what they saw on the wire, each event with a monotonic
timestamp in nanoseconds since the connection (HTTP/2) or the channel (SSH)
opened; the pipeline replays them with :mod:`gitnetdiag.analysis.flowcontrol`,
so a stall threshold or a ledger fix applies to old runs too.

    native-h2.json  schema gitnetdiag.native-h2/2
        settings_received   [{t_ns, settings}]       server SETTINGS, names as in RFC 9113
        settings_sent       [{t_ns, settings}]       ours
        streams_opened      [{t_ns, stream_id}]
        window_updates      [{t_ns, stream_id, increment_bytes}]   received; stream 0 = connection
        data_sent           [{t_ns, stream_id, size_bytes}]        flow-controlled length
    native-ssh.json schema gitnetdiag.native-ssh/2
        window_bytes, max_packet_bytes               the channel at open (t_ns 0)
        window_adjusts      [{t_ns, increment_bytes}]   received
        data_sent           [{t_ns, size_bytes}]

Files without ``schema`` are the summaries written before version 2; the
pipeline reads those through its legacy path (:func:`native_schema`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gitnetdiag.rundir.manifest import read_record
from gitnetdiag.rundir.records import RefCleanup
from gitnetdiag.vocabulary import HTTP2_START_WINDOW_BYTES

H2_SCHEMA = "gitnetdiag.native-h2/2"
SSH_SCHEMA = "gitnetdiag.native-ssh/2"


@dataclass(frozen=True, kw_only=True)
class ReportStatus:
    """receive-pack's answer to a push with ``report-status`` (the ``report`` of a native
    record, as :meth:`to_dict` writes it)."""

    unpack_ok: bool
    """``unpack ok`` was reported."""
    unpack_message: str
    """The unpack line as sent (``ok`` or an error)."""
    refs: dict[str, str]
    """Ref -> ``ok`` or ``ng <reason>``."""

    def ok_for(self, ref: str) -> bool:
        return self.unpack_ok and self.refs.get(ref) == "ok"

    def to_dict(self) -> dict[str, Any]:
        return {"unpack_ok": self.unpack_ok, "unpack": self.unpack_message, "refs": self.refs}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReportStatus:
        """The answer back from a record's ``report`` (missing keys: nothing reported)."""
        return cls(unpack_ok=data.get("unpack_ok") is True,
                   unpack_message=str(data.get("unpack", "")),
                   refs={str(k): str(v) for k, v in (data.get("refs") or {}).items()})


@dataclass(frozen=True, kw_only=True)
class SettingsEvent:
    """A SETTINGS frame (only the settings it changed)."""

    t_ns: int
    """Monotonic ns since the connection started."""
    settings: dict[str, int]
    """Setting name (``INITIAL_WINDOW_SIZE``, ...) -> value."""


@dataclass(frozen=True, kw_only=True)
class StreamOpened:
    """We opened a stream (sent its HEADERS)."""

    t_ns: int
    """Monotonic ns since the connection started."""
    stream_id: int
    """HTTP/2 stream id."""


@dataclass(frozen=True, kw_only=True)
class WindowUpdateReceived:
    """A WINDOW_UPDATE from the server."""

    t_ns: int
    """Monotonic ns since the connection started."""
    stream_id: int
    """0 for the connection window."""
    increment_bytes: int
    """Window size increment."""


@dataclass(frozen=True, kw_only=True)
class H2DataSent:
    """A DATA frame we sent."""

    t_ns: int
    """Monotonic ns since the connection started."""
    stream_id: int
    """Stream it was sent on."""
    size_bytes: int
    """Flow-controlled length (payload with padding)."""


IDENTITY_HEADERS = ("server", "via", "x-served-by", "x-cache", "x-powered-by", "cf-ray",
                    "x-amz-cf-id", "x-amz-cf-pop", "x-azure-ref", "x-varnish",
                    "x-envoy-upstream-service-time", "x-akamai-request-id",
                    "x-akamai-transformed")
"""Response headers in which a server or a hop in front of it shows itself."""


_RECV_HEADER = re.compile(r"<= Recv header:\s*(.*?)\s*$")


def first_response_identity(text: str) -> tuple[str, ...]:
    """``name: value`` of the headers of the first response in a curl trace that show who
    answered (``server``, ``via``, CDN headers), in order."""
    found: list[str] = []
    in_response = False
    for raw in text.splitlines():
        match = _RECV_HEADER.search(raw)
        if match is None:
            continue
        line = match.group(1)
        if line.upper().startswith("HTTP/") or (in_response and not line):
            if found:
                break
            in_response = True
            continue
        name, sep, value = line.partition(":")
        if in_response and sep and name.strip().lower() in IDENTITY_HEADERS:
            found.append(f"{name.strip().lower()}: {value.strip()}")
    return tuple(found)


@dataclass(frozen=True, kw_only=True)
class NativePush:
    """What both native push records hold: the push's target and size, when it ended,
    receive-pack's answer, and what became of the throwaway branch."""

    schema: str
    """The file's schema (:data:`H2_SCHEMA`, :data:`SSH_SCHEMA`)."""
    target: str
    """``host:port`` of the server (no credentials, no path)."""
    request_bytes: int
    """Bytes of the request: command + flush + pack (HTTP/2: the POST body)."""
    ended_t_ns: int
    """When receive-pack's answer was complete (the response to the POST, report-status)."""
    report: dict[str, Any]
    """receive-pack's answer (report-status)."""
    ref: str
    """The throwaway branch pushed."""
    ref_deleted: bool
    """The branch was deleted afterwards."""
    cleanup: RefCleanup = RefCleanup.NOT_RUN
    """What became of the branch when the run ended it as git's pushes (see the manifest's
    push records)."""
    cleanup_detail: str = ""
    """Why, for anything but a plain ``deleted``/``never-created``."""
    cleanup_command: str | None = None
    """For ``leftover``/``unconfirmed``: the command that removes the branch (URL redacted)."""


@dataclass(frozen=True, kw_only=True)
class H2NativeRecord(NativePush):
    """``native-h2.json``: one native HTTP/2 push, as raw events plus its context."""

    schema: str = H2_SCHEMA
    """Always :data:`H2_SCHEMA`."""
    alpn: str
    """Negotiated ALPN (``h2``)."""
    server_headers: tuple[str, ...] = ()
    """``server`` response headers in order (an edge that passes the backend's on sends two:
    its own first); empty when the server sends none."""
    identity_headers: tuple[str, ...] = ()
    """Every response header in which a server or a hop in front of it shows itself
    (``server``, ``via``, CDN headers), as ``name: value`` lines in order; empty in runs
    recorded before it was kept."""
    upload_stream_id: int
    """Stream that carried the receive-pack POST."""
    settings_sent: tuple[SettingsEvent, ...]
    """SETTINGS this probe advertised."""
    settings_received: tuple[SettingsEvent, ...]
    """The server's SETTINGS frames, in order."""
    streams_opened: tuple[StreamOpened, ...]
    """Streams this probe opened."""
    window_updates: tuple[WindowUpdateReceived, ...]
    """Every WINDOW_UPDATE received, stream and connection, in order."""
    data_sent: tuple[H2DataSent, ...]
    """Every DATA frame sent, in order."""
    auth: str
    """What authenticated the probe (``none``, ``url``, ``credential-helper``,
    ``extra-header``); never the secret."""
    tls_ca: str
    """Where the CA bundle came from, or ``not-verified``."""
    proxy: str | None
    """The proxy tunnelled through (URL without credentials), or None."""
    warnings: tuple[str, ...]
    """What the probe could not do as git does."""

    def server_settings(self) -> dict[str, int]:
        """The server's SETTINGS as last known."""
        return {name: value for event in self.settings_received
                for name, value in event.settings.items()}

    def connection_window_before_data(self) -> int | None:
        """The connection window the server had granted before this probe's first DATA
        frame: 65535 plus the connection WINDOW_UPDATEs that came first (the probe's GET of
        the ref advertisement precedes the POST, so the server's first frames are in). What
        a server does there tells it apart: Apache raises the window to 2^31-1 in its first
        frames, HAProxy only once DATA arrives. None without a DATA frame."""
        if not self.data_sent:
            return None
        first_data_ns = self.data_sent[0].t_ns
        return HTTP2_START_WINDOW_BYTES + sum(
            u.increment_bytes for u in self.window_updates
            if u.stream_id == 0 and u.t_ns < first_data_ns)


@dataclass(frozen=True, kw_only=True)
class SshAdjustReceived:
    """An SSH_MSG_CHANNEL_WINDOW_ADJUST from the server."""

    t_ns: int
    """Monotonic ns since the channel opened."""
    increment_bytes: int
    """Bytes added to the window."""


@dataclass(frozen=True, kw_only=True)
class SshDataSent:
    """Channel data we sent."""

    t_ns: int
    """Monotonic ns since the channel opened."""
    size_bytes: int
    """Bytes the channel accepted."""


@dataclass(frozen=True, kw_only=True)
class SshNativeRecord(NativePush):
    """``native-ssh.json``: one native SSH push, as raw channel events plus its context."""

    schema: str = SSH_SCHEMA
    """Always :data:`SSH_SCHEMA`."""
    server_banner: str
    """The server's identification string."""
    via: str = ""
    """The SSH jump host (``user@host:port``) the connection went through, following git's
    single ``ProxyJump`` host as ``ssh -J`` does; "" when it went straight to ``target``
    (and in files written before it was recorded)."""
    connect_s: float
    """TCP connect time; through a jump host, until the channel to the server was open
    (TCP to the jump host, its key exchange and auth, the ``direct-tcpip`` channel)."""
    kex_s: float
    """Key exchange (and host-key verification) time."""
    auth_s: float
    """Public-key authentication time."""
    window_bytes: int
    """Server's initial channel window at channel open."""
    max_packet_bytes: int
    """Server's maximum packet size at channel open."""
    first_data_t_ns: int
    """When the upload started."""
    window_adjusts: tuple[SshAdjustReceived, ...]
    """Every window adjust received on the channel."""
    data_sent: tuple[SshDataSent, ...]
    """Every send on the channel."""
    advertisement: dict[str, Any]
    """The ref advertisement."""


NativeRecord = H2NativeRecord | SshNativeRecord


def native_schema(data: dict[str, Any]) -> str | None:
    """The file's schema, None for a pre-version-2 summary (legacy reader)."""
    schema = data.get("schema")
    return schema if isinstance(schema, str) else None


def h2_record(data: dict[str, Any], where: str) -> H2NativeRecord:
    """A version-2 ``native-h2.json`` object, every type checked, no NaN or infinity (credit
    may be negative: HTTP/2 allows it); ``bad-run-dir`` otherwise."""
    return read_record(H2NativeRecord, data, schema=H2_SCHEMA, where=where, negative=True)


def ssh_record(data: dict[str, Any], where: str) -> SshNativeRecord:
    """A version-2 ``native-ssh.json`` object, checked as :func:`h2_record`."""
    return read_record(SshNativeRecord, data, schema=SSH_SCHEMA, where=where, negative=True)

