"""Fixture: two bare repositories served by one loopback ``git daemon`` that accepts pushes."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def remote_refs(url: str) -> dict[str, str]:
    """``git ls-remote URL`` as ``ref -> oid``."""
    out = subprocess.run(["git", "ls-remote", url], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    return {line.split("\t")[1]: line.split("\t")[0] for line in out.splitlines() if "\t" in line}


@pytest.fixture()
def two_repos(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """git:// URLs of ``a.git`` and ``b.git`` (each with a ``main`` branch) on 127.0.0.1."""
    base = tmp_path / "srv"
    seed = tmp_path / "seed"
    subprocess.run(["git", "init", "-q", "-b", "main", str(seed)], check=True, timeout=30)
    (seed / "README").write_text("load test\n")
    subprocess.run(["git", "-C", str(seed), "add", "README"], check=True, timeout=30)
    subprocess.run(["git", "-C", str(seed), "commit", "-qm", "seed"], check=True, env=GIT_ENV,
                   timeout=30)
    for name in ("a.git", "b.git"):
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(base / name)],
                       check=True, timeout=30)
        subprocess.run(["git", "-C", str(seed), "push", "-q", str(base / name), "main"],
                       check=True, timeout=30)
    port = _free_port()
    daemon = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", f"--base-path={base}", "--export-all",
         "--enable=receive-pack", "--listen=127.0.0.1", f"--port={port}", str(base)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"git://127.0.0.1:{port}/a.git", f"git://127.0.0.1:{port}/b.git"
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)
