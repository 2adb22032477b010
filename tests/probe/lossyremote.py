"""A loopback smart-HTTP remote whose path loses answers, or whose edge has no backend.

It is :mod:`tests.httpremote` (Basic auth, a query token, ``git http-backend``) with
two faults of a receive-pack POST, each switched on by the test:

- ``lose_answers``: the request reaches ``git http-backend``, which applies it (a delete
  lands), but its answer never reaches the client: the connection is then held silent
  until the server is closed, as behind a stateful firewall that forgot the connection
  while the server's hook ran. New connections (``ls-remote``) are served as usual.
- ``status``: a receive-pack POST that carries a pack (not git's 4-byte probe request)
  is read to its end and answered with this status and an edge's HTML page, and
  receive-pack never runs, as behind an edge with no working backend.
"""

from __future__ import annotations

import io
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path

from tests.httpremote import BASIC, TOKEN, USER, HttpRemote, _handler, _read_body

ERROR_PAGE = b"<html><body><h1>503 Service Unavailable</h1>No server is available.</body></html>"


@dataclass
class LossyRemote(HttpRemote):
    lose_answers: threading.Event
    """Set: receive-pack POSTs are applied, their answers lost."""
    lost: threading.Event
    """Set once an answer was lost."""
    status: list[int]
    """A status for the pack POST instead of receive-pack (empty: receive-pack answers)."""


def serve_lossy_remote(tmp_path: Path) -> Iterator[LossyRemote]:
    """Serve an empty bare repository under ``tmp_path`` until the generator is closed."""
    root = tmp_path / "srv"
    bare = root / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    receiving, lose, lost, released = (threading.Event() for _ in range(4))
    status: list[int] = []
    base = _handler(root, receiving)

    class Lossy(base):  # type: ignore[misc, valid-type]
        def do_POST(self) -> None:
            pack = "git-receive-pack" in self.path and self.headers.get("Authorization") == BASIC
            small = int(self.headers.get("Content-Length") or 1 << 20) < 1024
            if pack and status and not small:
                _read_body(self)
                self.send_response(status[0])
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(ERROR_PAGE)))
                self.end_headers()
                self.wfile.write(ERROR_PAGE)
                return
            if pack and lose.is_set():
                wire, self.wfile = self.wfile, io.BytesIO()  # the answer goes nowhere
                base.do_POST(self)
                self.wfile = wire
                lost.set()
                released.wait()
                self.close_connection = True
                return
            base.do_POST(self)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Lossy)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    try:
        yield LossyRemote(url=f"http://{USER}:{TOKEN}@127.0.0.1:{port}/repo.git",
                          bare=bare, receiving=receiving, lose_answers=lose, lost=lost,
                          status=status)
    finally:
        released.set()
        server.shutdown()
        server.server_close()
