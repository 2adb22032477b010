"""Fixtures: a loopback git daemon accepting pushes, and the session's healthy lab."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gitnetdiag.model.lab.state import LabState
from tests.conftest import LabFactory


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def git_refs(url: str) -> dict[str, str]:
    """The remote's refs as ``git ls-remote`` shows them."""
    out = subprocess.run(
        ["git", "ls-remote", url], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return {line.split("\t")[1]: line.split("\t")[0] for line in out.splitlines() if "\t" in line}


@pytest.fixture()
def remote_refs() -> Callable[[str], dict[str, str]]:
    """``git ls-remote`` of a URL as ``ref -> oid``."""
    return git_refs


@pytest.fixture()
def git_daemon(tmp_path: Path) -> Iterator[str]:
    """git:// URL of a bare repository (with a ``main`` branch) served on loopback."""
    base = tmp_path / "srv"
    bare = base / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    seed = tmp_path / "seed"
    subprocess.run(["git", "init", "-q", "-b", "main", str(seed)], check=True)
    (seed / "README").write_text("existing\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "-C", str(seed), "add", "README"], check=True)
    subprocess.run(["git", "-C", str(seed), "commit", "-qm", "x"], check=True, env=env)
    subprocess.run(["git", "-C", str(seed), "push", "-q", str(bare), "main"], check=True)
    yield from serve_daemon(base, receive_pack=True)


def serve_daemon(base: Path, *, receive_pack: bool) -> Iterator[str]:
    """Serve the repositories under ``base`` with ``git daemon`` on a free loopback port
    (receive-pack only when asked: without it pushes are refused with 'access denied');
    yields ``git://127.0.0.1:PORT/repo.git`` once the port answers."""
    port = _free_port()
    daemon = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", f"--base-path={base}", "--export-all",
         *(["--enable=receive-pack"] if receive_pack else []), "--listen=127.0.0.1",
         f"--port={port}", str(base)],
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
        yield f"git://127.0.0.1:{port}/repo.git"
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


@pytest.fixture(scope="session")
def probe_lab(shared_lab: LabFactory) -> LabState:
    """The session's healthy lab at 5 ms RTT (``tests/conftest.py``): the probes push to
    throwaway branches and delete them."""
    return shared_lab("healthy", rtt_ms=5.0)
