"""A blocking HTTP/2 client over TLS that timestamps every flow-control event.

Used by the native HTTP/2 push probe (:mod:`gitnetdiag.probe.h2native`). It
reaches the server as git would (:mod:`gitnetdiag.probe.credentials`): the
same CA and verification, an HTTP proxy through CONNECT, the extra headers
and, once known, the credential on every request.
"""

from __future__ import annotations

import select
import socket
import ssl
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    PingAckReceived,
    RemoteSettingsChanged,
    ResponseReceived,
    StreamEnded,
    StreamReset,
    WindowUpdated,
)
from h2.exceptions import H2Error
from h2.settings import SettingCodes, Settings

from gitnetdiag.analysis.flowcontrol import HTTP2_DEFAULT_WINDOW_BYTES
from gitnetdiag.errors import NetworkError, UsageError
from gitnetdiag.probe.credentials import HttpAccess, Proxy
from gitnetdiag.probe.tcpinfo import SocketSampler, TcpInfoSample
from gitnetdiag.redaction import redact_url
from gitnetdiag.rundir.native import IDENTITY_HEADERS

USER_AGENT = "git/2.39-gitnetdiag-h2native"
PROXY_REPLY_LIMIT_BYTES = 16_384


@dataclass(frozen=True, kw_only=True)
class H2Remote:
    """Where the smart-HTTP repository is."""

    host: str
    port: int
    path: str
    """Repository path on the server, e.g. ``/git/lab.git`` (no trailing slash)."""

    @classmethod
    def from_url(cls, url: str) -> H2Remote:
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise UsageError(f"not an https:// URL: {redact_url(url)}",
                             hint="give the repository's https URL")
        return cls(host=parts.hostname, port=parts.port or 443, path=parts.path.rstrip("/"))

    @property
    def authority(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, kw_only=True)
class Response:
    """A complete HTTP/2 response."""

    stream_id: int
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    """Response headers, names in lower case."""


@dataclass
class Recorder:
    """Timestamped (monotonic ns since the connection started) flow-control facts."""

    t0_ns: int
    server_settings: list[tuple[int, dict[str, int]]] = field(default_factory=list)
    window_updates: list[tuple[int, int, int]] = field(default_factory=list)
    """(t_ns, stream id, increment)."""
    data_sent: list[tuple[int, int, int]] = field(default_factory=list)
    """(t_ns, stream id, flow-controlled bytes)."""
    stream_opened: dict[int, int] = field(default_factory=dict)
    """stream id -> t_ns."""

    def now_ns(self) -> int:
        return time.monotonic_ns() - self.t0_ns


def _setting_name(code: int) -> str:
    try:
        return SettingCodes(code).name
    except ValueError:
        return f"0x{code:x}"


def _text(value: str | bytes) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


class H2Client:
    """A blocking HTTP/2 client over TLS that records every flow-control event."""

    def __init__(
        self,
        target: H2Remote,
        *,
        access: HttpAccess,
        keylog_file: str | None = None,
        client_settings: dict[SettingCodes, int] | None = None,
        timeout_s: float = 60.0,
        tcpinfo_sink: list[TcpInfoSample] | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.target = target
        self.access = access
        self.timeout_s = timeout_s
        self.stop = stop
        """Set from another thread: the next wait (at most a second away) raises
        KeyboardInterrupt, the Ctrl-C path (a client in a worker thread gets no signal)."""
        self.recorder = Recorder(t0_ns=time.monotonic_ns())
        self.server_headers: list[str] = []
        self.identity_headers: list[str] = []
        """``name: value`` of the first response's headers that show who answered."""
        """``server`` header values of the first response that had any, in order."""
        context = tls_context(access)
        if keylog_file:
            context.keylog_filename = keylog_file
        raw = open_socket(target, access.proxy, timeout_s)
        # Like curl: small HEADERS then DATA must not wait for a delayed ACK (Nagle).
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.sock = context.wrap_socket(raw, server_hostname=target.host)
        except (ssl.SSLError, OSError) as exc:
            raw.close()
            raise NetworkError(
                f"TLS handshake with {target.authority} failed: {exc}",
                hint="check --ca-file (or GIT_SSL_CAINFO / http.sslCAInfo) and that the "
                "certificate names this host",
                reference="tls-failed",
            ) from exc
        self.sampler = SocketSampler(self.sock, tcpinfo_sink)
        self.alpn = self.sock.selected_alpn_protocol() or "none"
        if self.alpn != "h2":
            self.sock.close()
            raise NetworkError(
                f"{target.authority} did not negotiate HTTP/2 (ALPN: {self.alpn})",
                hint="the server or edge must offer ALPN h2 for this probe",
                reference="no-h2",
            )
        self.conn = H2Connection(config=H2Configuration(client_side=True, header_encoding="utf-8"))
        if client_settings:
            self.conn.local_settings = Settings(client=True, initial_values=client_settings)
        self.client_settings = {
            _setting_name(code): int(value) for code, value in self.conn.local_settings.items()
        }
        self.conn.initiate_connection()
        self._flush()
        self.server_initial_window_bytes = HTTP2_DEFAULT_WINDOW_BYTES
        self._responses: dict[int, dict[str, Any]] = {}
        self.ping_acks: dict[bytes, int] = {}
        """PING payload -> t_ns its ACK arrived (:meth:`ping`)."""

    def close(self) -> None:
        try:
            self.conn.close_connection()
            self._flush()
        except (OSError, H2Error, NetworkError):  # the server closed first: nothing to say
            pass
        self.sock.close()

    def _flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            try:
                self.sock.sendall(data)
            except OSError as exc:
                raise NetworkError(
                    f"sending to {self.target.authority} failed: {exc}", reference="send-failed"
                ) from exc

    def _pump(self, timeout_s: float) -> bool:
        """Read and process what has arrived within ``timeout_s``; False if nothing did."""
        if not self.sock.pending():
            # poll, not select: select() refuses descriptors >= 1024 (FD_SETSIZE), which a
            # long-running caller with many open files reaches.
            poller = select.poll()
            poller.register(self.sock, select.POLLIN)
            if not poller.poll(timeout_s * 1000):
                return False
        try:
            data = self.sock.recv(65_536)
        except ssl.SSLWantReadError:
            return False
        except OSError as exc:
            raise NetworkError(
                f"reading from {self.target.authority} failed: {exc}", reference="recv-failed"
            ) from exc
        if not data:
            raise NetworkError(
                f"{self.target.authority} closed the connection", reference="connection-closed"
            )
        t_ns = self.recorder.now_ns()
        try:
            events = self.conn.receive_data(data)
        except H2Error as exc:
            raise NetworkError(f"HTTP/2 protocol error: {exc}", reference="h2-protocol") from exc
        for event in events:
            self._handle(event, t_ns)
        self._flush()
        return True

    def _handle(self, event: object, t_ns: int) -> None:
        if isinstance(event, RemoteSettingsChanged):
            changed = {
                _setting_name(code): int(item.new_value)
                for code, item in event.changed_settings.items()
            }
            self.recorder.server_settings.append((t_ns, changed))
            if "INITIAL_WINDOW_SIZE" in changed:
                self.server_initial_window_bytes = changed["INITIAL_WINDOW_SIZE"]
        elif isinstance(event, WindowUpdated):
            self.recorder.window_updates.append((t_ns, event.stream_id, int(event.delta)))
        elif isinstance(event, ResponseReceived):
            status = next(
                (_text(value) for name, value in event.headers if _text(name) == ":status"), "0"
            )
            entry = self._responses.setdefault(event.stream_id, {"body": bytearray()})
            entry["status"] = int(status)
            entry["headers"] = {
                _text(name).lower(): _text(value)
                for name, value in event.headers
                if not _text(name).startswith(":")
            }
            if not self.server_headers:  # who answered: every server header, edge's first
                self.server_headers = [_text(value) for name, value in event.headers
                                       if _text(name).lower() == "server"]
                self.identity_headers = [
                    f"{_text(name).lower()}: {_text(value)}" for name, value in event.headers
                    if _text(name).lower() in IDENTITY_HEADERS]
        elif isinstance(event, DataReceived):
            entry = self._responses.setdefault(event.stream_id, {"body": bytearray()})
            entry["body"] += event.data
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, PingAckReceived):
            self.ping_acks[bytes(event.ping_data)] = t_ns
        elif isinstance(event, StreamEnded):
            self._responses.setdefault(event.stream_id, {"body": bytearray()})["ended"] = True
        elif isinstance(event, StreamReset):
            raise NetworkError(
                f"the server reset stream {event.stream_id} (error {event.error_code})",
                reference="h2-stream-reset",
            )
        elif isinstance(event, ConnectionTerminated):
            raise NetworkError(
                f"the server closed the HTTP/2 connection (GOAWAY, error {event.error_code})",
                reference="h2-goaway",
            )

    def request(
        self,
        method: str,
        path: str,
        headers: Sequence[tuple[str, str]] = (),
        body: bytes = b"",
    ) -> Response:
        """Send one request (body honouring flow control exactly) and read the whole answer."""
        deadline = time.monotonic() + self.timeout_s
        stream_id = self.conn.get_next_available_stream_id()
        all_headers = [
            (":method", method),
            (":scheme", "https"),
            (":authority", self.target.authority),
            (":path", path),
            ("user-agent", USER_AGENT),
            *self.access.request_headers(),
            *headers,
        ]
        if body:
            all_headers.append(("content-length", str(len(body))))
        self.conn.send_headers(stream_id, all_headers, end_stream=not body)
        self.recorder.stream_opened[stream_id] = self.recorder.now_ns()
        self._flush()
        offset = 0
        view = memoryview(body)
        while offset < len(body):
            # Take in whatever arrived (WINDOW_UPDATEs) without waiting.
            while self._pump(0.0):
                pass
            credit = self.conn.local_flow_control_window(stream_id)
            size = min(credit, self.conn.max_outbound_frame_size, len(body) - offset)
            if size <= 0:
                self._wait(deadline, "flow-control credit (WINDOW_UPDATE)")
                continue
            self.conn.send_data(stream_id, bytes(view[offset : offset + size]))
            self.recorder.data_sent.append((self.recorder.now_ns(), stream_id, size))
            self._flush()
            self.sampler.poll()
            offset += size
        if body:
            self.conn.end_stream(stream_id)
            self._flush()
        while not self._responses.get(stream_id, {}).get("ended"):
            self._wait(deadline, "the response")
        entry = self._responses.pop(stream_id)
        return Response(
            stream_id=stream_id,
            status=int(entry.get("status", 0)),
            body=bytes(entry["body"]),
            headers=dict(entry.get("headers", {})),
        )

    def pump(self, timeout_s: float) -> bool:
        """Take in what arrives within ``timeout_s`` (answering the server's PINGs and
        SETTINGS); False when nothing did."""
        return self._pump(timeout_s)

    def ping(self, opaque: bytes, wait_s: float) -> float | None:
        """Send a PING with the 8-byte ``opaque`` and wait up to ``wait_s`` for its ACK:
        seconds from the send to the ACK, None when none came."""
        sent_ns = self.recorder.now_ns()
        self.conn.ping(opaque)
        self._flush()
        deadline = time.monotonic() + wait_s
        while opaque not in self.ping_acks:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self._pump(min(remaining, 0.05))
        return (self.ping_acks[opaque] - sent_ns) / 1e9

    def _wait(self, deadline: float, what: str) -> None:
        if self.stop is not None and self.stop.is_set():
            raise KeyboardInterrupt
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise NetworkError(
                f"timed out waiting for {what} from {self.target.authority}",
                hint="the server stopped granting credit or answering; see the ledger so far",
                reference="h2-timeout",
            )
        self._pump(min(remaining, 1.0))


def tls_context(access: HttpAccess) -> ssl.SSLContext:
    """TLS as git would verify: its CA bundle (or the system store), or no check at all."""
    try:
        context = ssl.create_default_context(cafile=access.ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(
            f"cannot read the CA bundle {access.ca_file} (from {access.ca_source}): {exc}",
            hint="point --ca-file, GIT_SSL_CAINFO or http.sslCAInfo at a PEM file",
            reference="bad-ca-file",
        ) from exc
    if not access.verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    return context


def open_socket(target: H2Remote, proxy: Proxy | None, timeout_s: float) -> socket.socket:
    """A TCP connection to the server, through the proxy's CONNECT tunnel or SOCKS tunnel
    if there is one (also the body probe's, :mod:`gitnetdiag.probe.bodyprobe`)."""
    host, port = (proxy.host, proxy.port) if proxy else (target.host, target.port)
    try:
        raw = socket.create_connection((host, port), timeout=timeout_s)
    except OSError as exc:
        via = f" through the proxy {proxy.display}" if proxy else ""
        raise NetworkError(
            f"cannot connect to {host}:{port}{via}: {exc.strerror or exc}",
            hint="check the host and port (and http.proxy / https_proxy), and that the server "
            "is up",
            reference="connect-failed",
        ) from exc
    if proxy is not None:
        try:
            if proxy.scheme == "http":
                _connect_tunnel(raw, target, proxy)
            else:
                from gitnetdiag.probe.socks import socks_connect
                socks_connect(raw, proxy.scheme, target.host, target.port,
                              display=proxy.display, username=proxy.username,
                              password=proxy.password)
        except BaseException:
            raw.close()
            raise
    return raw


def _connect_tunnel(raw: socket.socket, target: H2Remote, proxy: Proxy) -> None:
    authority = f"{target.host}:{target.port}"
    request = f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n"
    if proxy.authorization:
        request += f"Proxy-Authorization: {proxy.authorization}\r\n"
    raw.sendall((request + "\r\n").encode())
    reply = b""
    try:
        while b"\r\n\r\n" not in reply and len(reply) < PROXY_REPLY_LIMIT_BYTES:
            chunk = raw.recv(4096)
            if not chunk:
                break
            reply += chunk
    except OSError as exc:
        raise NetworkError(f"the proxy {proxy.display} failed: {exc}",
                           reference="proxy-failed") from exc
    status_line = reply.split(b"\r\n", 1)[0].decode("latin-1")
    fields = status_line.split()
    if len(fields) < 2 or fields[1] != "200":
        code = fields[1] if len(fields) >= 2 else "no answer"
        raise NetworkError(
            f"the proxy {proxy.display} refused CONNECT to {authority} ({code})",
            hint="check http.proxy / https_proxy and the proxy's credentials"
            if code == "407" else "check http.proxy / https_proxy",
            reference="proxy-auth-failed" if code == "407" else "proxy-failed",
        )
