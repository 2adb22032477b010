"""A loopback HTTP/2 smart-HTTP server in front of ``git upload-pack``, honouring the client's
window, for the native download ledger's tests.

It speaks h2 over TLS, runs ``git upload-pack --stateless-rpc`` on a real bare
repository (``GIT_PROTOCOL`` from the ``git-protocol`` header, as Apache passes it
when configured to), and sends each answer only as far as the client's flow-control
window allows, more as WINDOW_UPDATEs arrive. Each batch of frames from the client
is taken in ``credit_delay_s`` late: a stand-in for the round trip a refill takes.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import DataReceived, RequestReceived, StreamEnded, StreamReset, WindowUpdated
from h2.exceptions import StreamClosedError

from tests.tlsutil import make_tls_files


@dataclass
class H2UploadServer:
    """A running server; :meth:`stop` ends it."""

    url: str
    ca_file: str
    listener: socket.socket
    thread: threading.Thread
    errors: list[str] = field(default_factory=list)
    resets: list[int] = field(default_factory=list)
    """Streams the client cancelled."""
    authorization: str | None = None
    """The ``Authorization`` every request must carry (401 with a Basic challenge
    otherwise); None: no authentication."""
    seen_authorization: list[str | None] = field(default_factory=list)
    """Each request's ``Authorization`` header, in order."""

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.thread.join(timeout=10)


def _answer(repo: Path, headers: dict[str, str], body: bytes) -> tuple[str, bytes]:
    env = {**os.environ}
    if headers.get("git-protocol"):
        env["GIT_PROTOCOL"] = headers["git-protocol"]
    path = headers[":path"]
    if path.endswith("/info/refs?service=git-upload-pack"):
        out = subprocess.run(["git", "upload-pack", "--stateless-rpc", "--advertise-refs",
                              str(repo)], capture_output=True, check=True, env=env,
                             timeout=30).stdout
        return "200", out
    if path.endswith("/git-upload-pack"):
        out = subprocess.run(["git", "upload-pack", "--stateless-rpc", str(repo)], input=body,
                             capture_output=True, check=True, env=env, timeout=60).stdout
        return "200", out
    return "404", b""


def _send_pending(conn: H2Connection, pending: dict[int, memoryview]) -> None:
    for stream_id in list(pending):
        view = pending[stream_id]
        while view:
            credit = min(conn.local_flow_control_window(stream_id), conn.max_outbound_frame_size)
            if credit <= 0:
                break
            conn.send_data(stream_id, bytes(view[:credit]))
            view = view[credit:]
        if view:
            pending[stream_id] = view
        else:
            del pending[stream_id]
            conn.end_stream(stream_id)


def _serve(sock: ssl.SSLSocket, server: H2UploadServer, repo: Path,
           credit_delay_s: float) -> None:
    conn = H2Connection(config=H2Configuration(client_side=False, header_encoding="utf-8"))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    requests: dict[int, tuple[dict[str, str], bytearray]] = {}
    pending: dict[int, memoryview] = {}
    while True:
        data = sock.recv(65_536)
        if not data:
            return
        if pending and credit_delay_s:
            time.sleep(credit_delay_s)  # the refill reaches the sender one "RTT" late
        for event in conn.receive_data(data):
            if isinstance(event, RequestReceived):
                requests[event.stream_id] = (dict(event.headers), bytearray())
            elif isinstance(event, DataReceived):
                requests[event.stream_id][1].extend(event.data)
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, StreamEnded):
                headers, body = requests.pop(event.stream_id)
                server.seen_authorization.append(headers.get("authorization"))
                if server.authorization not in (None, headers.get("authorization")):
                    conn.send_headers(event.stream_id, [
                        (":status", "401"), ("www-authenticate", 'Basic realm="git"')],
                        end_stream=True)
                    continue
                status, payload = _answer(repo, headers, bytes(body))
                conn.send_headers(event.stream_id, [(":status", status)],
                                  end_stream=not payload)
                if payload:
                    pending[event.stream_id] = memoryview(payload)
            elif isinstance(event, StreamReset):
                server.resets.append(event.stream_id)
                pending.pop(event.stream_id, None)
            elif isinstance(event, WindowUpdated):
                pass
        with contextlib.suppress(StreamClosedError):
            _send_pending(conn, pending)
        out = conn.data_to_send()
        if out:
            sock.sendall(out)


def start_h2_upload_server(directory: Path, repo: Path, *, credit_delay_s: float,
                           authorization: str | None = None) -> H2UploadServer:
    """Serve ``repo`` (a bare repository) for fetches over HTTP/2 on loopback; demand
    ``authorization`` of every request if given."""
    cert, key = make_tls_files(directory)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["h2"])
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = H2UploadServer(url=f"https://127.0.0.1:{port}/git/{repo.name}",
                            ca_file=str(cert), listener=listener,
                            thread=threading.Thread(daemon=True), authorization=authorization)

    def accept_loop() -> None:
        while True:
            try:
                raw, _ = listener.accept()
            except OSError:
                return
            try:
                with context.wrap_socket(raw, server_side=True) as tls:
                    _serve(tls, server, repo, credit_delay_s)
            except Exception as exc:
                server.errors.append(f"{type(exc).__name__}: {exc}")

    server.thread = threading.Thread(target=accept_loop, daemon=True)
    server.thread.start()
    return server
