"""A loopback smart-HTTP remote that takes the whole pack and never answers.

It is :mod:`tests.httpremote` (Basic auth, a query token, ``git http-backend``)
except for the receive-pack POST: the body is read to its end, then the
request is held open with no status until the server is closed, like a
server whose hook or backend hangs.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

from tests.httpremote import BASIC, HttpRemote, _handler, _read_body

USER_TOKEN_URL = "http://user:SECRETTOKEN@127.0.0.1:{port}/repo.git?private_token=SECRET2"


def serve_muted_remote(tmp_path: Path, *, deaf: bool = False) -> Iterator[HttpRemote]:
    """Serve an empty bare repository whose receive-pack never answers; ``deaf``: once
    it holds the pack, no request gets an answer any more (``ls-remote`` included), like
    a single-threaded server stuck in its backend."""
    root = tmp_path / "srv"
    bare = root / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    receiving = threading.Event()
    released = threading.Event()
    base = _handler(root, receiving)

    class Muted(base):  # type: ignore[misc, valid-type]
        def do_GET(self) -> None:
            if deaf and receiving.is_set():
                released.wait()
                self.close_connection = True
                return
            base.do_GET(self)

        def do_POST(self) -> None:
            if deaf and receiving.is_set():
                released.wait()
                self.close_connection = True
                return
            # A pack above http.postBuffer comes after a small probe request ("0000"),
            # which is answered: the pack itself is what gets no answer.
            small = int(self.headers.get("Content-Length") or 1 << 20) < 1024
            if ("git-receive-pack" in self.path and self.headers.get("Authorization") == BASIC
                    and not small):
                _read_body(self)
                receiving.set()
                released.wait()
                self.close_connection = True
                return
            base.do_POST(self)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Muted)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = USER_TOKEN_URL.format(port=server.server_address[1])
    try:
        yield HttpRemote(url=url, bare=bare, receiving=receiving)
    finally:
        released.set()
        server.shutdown()
        server.server_close()
