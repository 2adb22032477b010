"""A loopback smart-HTTP remote that behaves like a real host about secrets.

``git http-backend`` behind a small threaded HTTP/1.1 server that demands
Basic auth, sets a session cookie and, like GitLab, accepts the token as a
``private_token`` query value. The fixture ``http_remote`` (in
``tests/conftest.py``) serves one; :func:`leaks` greps a run directory for
every form of its secrets.
"""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

USER, TOKEN, QUERY_TOKEN = "user", "SECRETTOKEN", "SECRET2"
COOKIE = "COOKIESECRET123"
BASIC = "Basic " + base64.b64encode(f"{USER}:{TOKEN}".encode()).decode()


@dataclass
class HttpRemote:
    url: str
    """Remote URL with the user, the token and the query token."""
    bare: Path
    """The served bare repository."""
    receiving: threading.Event
    """Set when a receive-pack POST arrives."""


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("Transfer-Encoding", "").lower() != "chunked":
        return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
    chunks = []
    while True:
        size = int(handler.rfile.readline().split(b";")[0].strip(), 16)
        if size == 0:
            handler.rfile.readline()
            return b"".join(chunks)
        chunks.append(handler.rfile.read(size))
        handler.rfile.readline()


def _handler(root: Path, receiving: threading.Event) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return None

        def _serve(self) -> None:
            body = _read_body(self) if self.command == "POST" else b""
            if self.headers.get("Authorization") != BASIC:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="test"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            # git appends its own path and query to the URL's query string.
            raw = self.path.replace(f"?private_token={QUERY_TOKEN}", "")
            cut = min((i for i in (raw.find("?"), raw.find("&")) if i >= 0), default=len(raw))
            if raw.endswith("git-receive-pack") and self.command == "POST":
                receiving.set()
            env = {
                **os.environ, "GIT_PROJECT_ROOT": str(root), "GIT_HTTP_EXPORT_ALL": "1",
                "REMOTE_USER": USER, "REQUEST_METHOD": self.command,
                "PATH_INFO": raw[:cut], "QUERY_STRING": raw[cut + 1:],
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory",
                "GIT_CONFIG_VALUE_0": "*",
            }
            out = subprocess.run(["git", "http-backend"], input=body, env=env,
                                 capture_output=True, timeout=120).stdout
            head, _, payload = out.partition(b"\r\n\r\n")
            status = 200
            headers = []
            for line in head.decode().split("\r\n"):
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Set-Cookie", f"session={COOKIE}; HttpOnly")
            self.send_header("Content-Length", str(len(payload)))
            try:
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                self.close_connection = True  # the interrupted client went away

        do_GET = _serve
        do_POST = _serve

    return Handler


def serve_http_remote(tmp_path: Path) -> Iterator[HttpRemote]:
    """Serve an empty bare repository under ``tmp_path`` until the generator is closed."""
    root = tmp_path / "srv"
    bare = root / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    receiving = threading.Event()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(root, receiving))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    url = f"http://{USER}:{TOKEN}@127.0.0.1:{port}/repo.git?private_token={QUERY_TOKEN}"
    try:
        yield HttpRemote(url=url, bare=bare, receiving=receiving)
    finally:
        server.shutdown()
        server.server_close()


def _forms(secret: str) -> list[bytes]:
    return [secret.encode(), quote(secret, safe="").encode(), secret.lower().encode()]


def leaks(run_dir: Path) -> list[str]:
    """``file: secret`` for every secret (or encoded form) found in any file."""
    needles = [*_forms(TOKEN), *_forms(QUERY_TOKEN), BASIC.split()[1].encode()]
    found = []
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [f"{path.name}: {n.decode()}" for n in needles if n in data]
        # Captures hold the request line only (128-byte snaplen); text holds headers.
        if not path.name.endswith((".pcap", ".pcapng")) and COOKIE.encode() in data:
            found.append(f"{path.name}: {COOKIE}")
    return found
