"""A loopback HTTP/2 smart-HTTP server in front of ``git receive-pack``, for probe tests.

It speaks h2 over TLS, runs ``git receive-pack --stateless-rpc`` on a real
bare repository, grants flow-control credit only after a delay (a stand-in for
the round trip) with a configurable stream window, and can demand an exact
``Authorization`` header (401 with a Basic challenge otherwise).

With ``stall_uploads`` it is the hung HTTP/2 push of LAB-NOTES, made
reproducible: the stream window is 0, a POST that announces a small
``content-length`` (git's 4-byte probe request) gets exactly that much credit,
and the large ``git-receive-pack`` POST (chunked, no length) gets none: its
request headers arrive, no DATA ever can ("Using Stream ID: 5", then nothing).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import DataReceived, RequestReceived, StreamEnded
from h2.settings import SettingCodes, Settings

from gitnetdiag.probe.receivepack import pkt_line
from tests.tlsutil import make_tls_files


@dataclass
class H2GitServer:
    """A running loopback server; :meth:`stop` ends it (the thread too)."""

    url: str
    ca_file: str
    repo: Path
    thread: threading.Thread
    listener: socket.socket
    seen_authorization: list[str | None] = field(default_factory=list)
    """The Authorization header of every request, in order (None when absent)."""
    errors: list[str] = field(default_factory=list)
    """What went wrong while serving a connection (the server keeps accepting)."""
    stalled_streams: list[int] = field(default_factory=list)
    """``stall_uploads``: POST streams left without credit (negative: probes credited)."""

    def refs(self) -> dict[str, str]:
        out = subprocess.run(
            ["git", "-C", str(self.repo), "for-each-ref", "--format=%(refname) %(objectname)"],
            capture_output=True, text=True, check=True, timeout=30,
        ).stdout
        return dict(line.split(" ", 1) for line in out.splitlines())

    def stop(self) -> None:
        # close() alone leaves a thread blocked in accept() holding the old socket
        # open; shutdown() wakes it so nothing of this server outlives the test.
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.thread.join(timeout=10)


def _has_window_update(out: bytes) -> bool:
    """True when the serialized frames in ``out`` include a WINDOW_UPDATE (type 8)."""
    offset = 0
    while offset + 9 <= len(out):
        if out[offset + 3] == 0x8:
            return True
        offset += 9 + int.from_bytes(out[offset : offset + 3], "big")
    return False


STALL_PROBE_MAX_BYTES = 1024
"""Stalling server: POSTs announcing at most this many bytes still get their credit."""


def _serve_connection(sock: ssl.SSLSocket, server: H2GitServer, window_bytes: int,
                      update_delay_s: float, authorization: str | None, push_only: bool,
                      stall_uploads: bool = False) -> None:
    conn = H2Connection(config=H2Configuration(client_side=False, header_encoding="utf-8"))
    conn.local_settings = Settings(
        client=False,
        initial_values={SettingCodes.INITIAL_WINDOW_SIZE: 0 if stall_uploads else window_bytes},
    )
    conn.initiate_connection()
    if window_bytes > 65_535:
        conn.increment_flow_control_window(window_bytes - 65_535)
    sock.sendall(conn.data_to_send())
    requests: dict[int, dict[str, object]] = {}
    while True:
        data = sock.recv(65_536)
        if not data:
            return
        for event in conn.receive_data(data):
            if isinstance(event, RequestReceived):
                requests[event.stream_id] = {"headers": dict(event.headers), "body": bytearray()}
                length = dict(event.headers).get("content-length")
                if stall_uploads and length and 0 < int(length) <= STALL_PROBE_MAX_BYTES:
                    server.stalled_streams.append(-event.stream_id)  # credited, not stalled
                    conn.increment_flow_control_window(int(length), event.stream_id)
                elif stall_uploads and dict(event.headers).get(":method") == "POST":
                    server.stalled_streams.append(event.stream_id)
            elif isinstance(event, DataReceived):
                body = requests[event.stream_id]["body"]
                assert isinstance(body, bytearray)
                body += event.data
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, StreamEnded):
                request = requests.pop(event.stream_id)
                headers = request["headers"]
                assert isinstance(headers, dict)
                given = headers.get("authorization")
                server.seen_authorization.append(given)
                guarded = not push_only or str(headers[":path"]).endswith("/git-receive-pack")
                if authorization is not None and guarded and given != authorization:
                    conn.send_headers(event.stream_id, [
                        (":status", "401"), ("www-authenticate", 'Basic realm="git"'),
                    ], end_stream=True)
                else:
                    _answer(conn, event.stream_id, request, server.repo)
        out = conn.data_to_send()
        if out:
            if update_delay_s and _has_window_update(out):
                time.sleep(update_delay_s)  # WINDOW_UPDATE first: credit arrives one "RTT" late
            sock.sendall(out)


def _answer(conn: H2Connection, stream_id: int, request: dict[str, object], repo: Path) -> None:
    headers = request["headers"]
    assert isinstance(headers, dict)
    path = str(headers[":path"])
    body = bytes(request["body"])  # type: ignore[call-overload]
    if path.endswith(("/info/refs?service=git-receive-pack",
                      "/info/refs?service=git-upload-pack")):
        service = path.rsplit("=", 1)[1]  # ls-remote (the clean-up's look) reads the refs too
        adv = subprocess.run(
            ["git", service.removeprefix("git-"), "--stateless-rpc", "--advertise-refs",
             str(repo)],
            capture_output=True, check=True, timeout=30,
        ).stdout
        payload = pkt_line(f"# service={service}\n".encode()) + b"0000" + adv
        ctype = f"application/x-{service}-advertisement"
    elif path.endswith("/git-receive-pack"):
        payload = subprocess.run(
            ["git", "receive-pack", "--stateless-rpc", str(repo)],
            input=body, capture_output=True, check=True, timeout=30,
        ).stdout
        ctype = "application/x-git-receive-pack-result"
    else:
        conn.send_headers(stream_id, [(":status", "404")], end_stream=True)
        return
    conn.send_headers(stream_id, [(":status", "200"), ("content-type", ctype),
                                  ("server", "gnd-test/1.0"), ("via", "1.1 testhop"),
                                  ("x-unrelated", "not kept")])
    # Answers are small; the client's window (>= 65535) always has room.
    for start in range(0, len(payload), 16_384):
        conn.send_data(stream_id, payload[start : start + 16_384])
    conn.end_stream(stream_id)


def start_h2_git_server(directory: Path, *, window_bytes: int, update_delay_s: float,
                        authorization: str | None = None, push_only: bool = False,
                        stall_uploads: bool = False) -> H2GitServer:
    """Serve a new bare repository in ``directory``; demand ``authorization`` if given
    (for the receive-pack POST only with ``push_only``, as git-http-backend's docs do)."""
    cert, key = make_tls_files(directory)
    repo = directory / "served.git"
    subprocess.run(["git", "init", "--bare", "-q", str(repo)], check=True, timeout=30)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["h2"])
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = H2GitServer(
        url=f"https://127.0.0.1:{port}/git/served.git", ca_file=str(cert), repo=repo,
        thread=threading.Thread(daemon=True), listener=listener,
    )

    def accept_loop() -> None:
        while True:
            try:
                raw, _ = listener.accept()
            except OSError:
                return
            # Any failure ends this connection only: a dead accept loop would leave the
            # client's next connection (the probe's delete) hanging in its TLS handshake.
            try:
                with context.wrap_socket(raw, server_side=True) as tls:
                    _serve_connection(tls, server, window_bytes, update_delay_s, authorization,
                                      push_only, stall_uploads)
            except Exception as exc:
                server.errors.append(f"{type(exc).__name__}: {exc}")

    server.thread = threading.Thread(target=accept_loop, daemon=True)
    server.thread.start()
    return server
