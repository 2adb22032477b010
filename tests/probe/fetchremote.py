"""Loopback smart-HTTP remotes to clone from: the minimal one, and the fetch-hostile ones.

:func:`serve_fetch_remote` is :mod:`tests.httpremote` (``git http-backend`` behind
Python's ``http.server``, Basic auth) with a repository in it: ``size`` bytes of random
data in ``files`` files, one commit on ``main``. With ``mode`` set its upload-pack answer
goes wrong one way (the ref advertisement stays honest, so each failure is of the pack):

    500        the upload-pack POST gets ``500 Internal Server Error``
    truncated  the real answer, cut after half of it (the connection closed, no length
               given: HTTP sees a whole answer, git a pack that ends early)
    garbage    ``200`` with an HTML page where pkt-lines belong
    slow       nothing for :data:`SLOW_S` before the real answer
    no-pack    ``NAK``, then upload-pack's progress (``Enumerating objects``, 0.1 MiB of
               ``Counting objects`` that advances, then stops) and, as upload-pack does while
               pack-objects is silent, an empty keepalive packet every 0.5 s; never a pack
    progress   ``NAK``, then ``Counting objects`` that advances by one object every
               :data:`PROGRESS_S`, forever (issue 42: 300 s of progress, never a pack)

Nothing here writes into the bare repository after it is built: a clone must leave it
byte for byte as it was (:func:`tree_digest`).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.httpremote import BASIC, TOKEN, USER, _handler, _read_body

SLOW_S = 30.0
"""The slow server's wait before its first byte: far beyond any stall timeout used."""
NO_PACK_PROGRESS_BYTES = 100 * 1024
"""Progress the no-pack server sends before it stops advancing (past the monitor's 64 KiB
preamble, as the issue's server did)."""
KEEPALIVE_S = 0.5
PROGRESS_S = 0.2
"""The progress server's pace: a new line well within every sample interval and stall."""
MODES = ("ok", "500", "truncated", "garbage", "slow", "no-pack", "progress")


def pkt(data: bytes) -> bytes:
    """One pkt-line."""
    return b"%04x" % (len(data) + 4) + data


def fill_bare(bare: Path, work: Path, size: int, files: int = 10) -> None:
    """Commit ``size`` bytes of random data in ``files`` files to ``main`` of ``bare``."""
    subprocess.run(["git", "init", "-q", str(work)], check=True, timeout=30)
    for i in range(files):
        (work / f"data-{i}.bin").write_bytes(os.urandom(size // files))
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "add", "."], check=True, timeout=60)
    subprocess.run([*git, "commit", "-qm", "data"], check=True, timeout=60)
    subprocess.run([*git, "push", "-q", str(bare), "HEAD:refs/heads/main"], check=True,
                   timeout=120)
    subprocess.run(["git", "-C", str(bare), "symbolic-ref", "HEAD", "refs/heads/main"],
                   check=True, timeout=30)


def tree_digest(root: Path) -> str:
    """Every path, mode and byte under ``root``."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(oct(path.lstat().st_mode).encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _no_pack_body() -> Iterator[bytes]:
    """What a server stuck in its pack phase says: NAK, progress that advances to
    :data:`NO_PACK_PROGRESS_BYTES`, then only keepalives (yielded one by one)."""
    head = [pkt(b"NAK\n"), pkt(b"\x02Enumerating objects: 100000, done.\n")]
    sent, n = 0, 0
    while sent < NO_PACK_PROGRESS_BYTES:
        n += 1
        line = pkt(b"\x02Counting objects: %3d%% (%d/100000)\r" % (n * 100 // 100000, n))
        head.append(line)
        sent += len(line)
    yield b"".join(head)
    while True:
        yield b"0005\x01"


def _progress_body() -> Iterator[bytes]:
    """What a server that counts on and never packs says: NAK, then a new ``Counting
    objects`` line at a time, forever."""
    yield pkt(b"NAK\n") + pkt(b"\x02Enumerating objects: 100000, done.\n")
    n = 0
    while True:
        n += 1
        yield pkt(b"\x02Counting objects: %3d%% (%d/100000)\r" % (n * 100 // 100000, n))


def _hostile(base: type[BaseHTTPRequestHandler], mode: str,
             released: threading.Event) -> type[BaseHTTPRequestHandler]:
    class Hostile(base):  # type: ignore[misc, valid-type]
        def _raw(self, status: int, ctype: str, body: bytes, *, length: bool = True) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            if length:
                self.send_header("Content-Length", str(len(body)))
            else:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()

        def _upload_pack(self) -> bool:
            """Misbehave on the upload-pack POST; False: serve it as git would."""
            result = "application/x-git-upload-pack-result"
            if mode == "500":
                _read_body(self)
                self._raw(500, "text/plain", b"Internal Server Error\n")
            elif mode == "garbage":
                _read_body(self)
                self._raw(200, result, b"<html>hello, this is not a pkt-line</html>\n" * 20)
            elif mode == "slow":
                released.wait(SLOW_S)
                return False
            elif mode == "truncated":
                self.close_connection = True
                self.wfile = _Cut(self.wfile)  # type: ignore[assignment]
                return False
            elif mode in ("no-pack", "progress"):
                _read_body(self)
                self.close_connection = True
                self.send_response(200)
                self.send_header("Content-Type", result)
                self.send_header("Connection", "close")
                self.end_headers()
                body, pace = ((_no_pack_body(), KEEPALIVE_S) if mode == "no-pack"
                              else (_progress_body(), PROGRESS_S))
                for chunk in body:
                    self.wfile.write(chunk)
                    self.wfile.flush()
                    if released.wait(pace):
                        return True
            else:
                return False
            return True

        def do_POST(self) -> None:
            if (self.path.split("?")[0].endswith("/git-upload-pack")
                    and self.headers.get("Authorization") == BASIC):
                try:
                    if self._upload_pack():
                        return
                except OSError:
                    self.close_connection = True  # the client went away
                    return
            base.do_POST(self)  # type: ignore[attr-defined]

    return Hostile


class _Cut:
    """A response stream that sends the headers and half of the body, then closes the
    connection: no Content-Length goes out, so HTTP sees a whole answer."""

    def __init__(self, raw: object) -> None:
        self.raw = raw
        self.head = b""

    def write(self, data: bytes) -> int:
        if not self.head.endswith(b"\r\n\r\n"):
            self.head += data
            if self.head.endswith(b"\r\n\r\n"):
                lines = [line for line in self.head.split(b"\r\n")
                         if not line.lower().startswith(b"content-length")]
                self.raw.write(b"\r\n".join(lines))  # type: ignore[attr-defined]
            return len(data)
        self.raw.write(data[: len(data) // 2])  # type: ignore[attr-defined]
        self.raw.flush()  # type: ignore[attr-defined]
        raise OSError("cut")

    def flush(self) -> None:
        self.raw.flush()  # type: ignore[attr-defined]

    def close(self) -> None:
        self.raw.close()  # type: ignore[attr-defined]

    @property
    def closed(self) -> bool:
        return bool(self.raw.closed)  # type: ignore[attr-defined]


def serve_fetch_remote(tmp_path: Path, *, size: int, mode: str = "ok", files: int = 10
                       ) -> Iterator[tuple[str, Path]]:
    """``(url, bare)`` of a loopback smart-HTTP remote serving ``size`` bytes of random data
    (user and token in the URL), answering upload-pack as ``mode`` says, until closed."""
    assert mode in MODES, mode
    root = tmp_path / "srv"
    bare = root / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True, timeout=30)
    fill_bare(bare, tmp_path / "work", size, files)
    released = threading.Event()
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), _hostile(_handler(root, threading.Event()), mode, released))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://{USER}:{TOKEN}@127.0.0.1:{server.server_address[1]}/repo.git"
    try:
        yield url, bare
    finally:
        released.set()
        server.shutdown()
        server.server_close()

