"""The first hop through a real forward proxy (Debian's tinyproxy, on loopback): it names
itself to the probe's plain request, and git's words when it refuses a CONNECT are the ones
``proxy-refused-tunnel`` reads."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitnetdiag.diagnosis.culprits.proxytunnel import REFUSED_CONNECT
from gitnetdiag.diagnosis.proxies import path_hops
from gitnetdiag.probe.firsthop import first_hop

pytestmark = pytest.mark.skipif(shutil.which("tinyproxy") is None,
                                reason="tinyproxy not installed (scripts/setup.sh installs it)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def tinyproxy(tmp_path: Path) -> Iterator[int]:
    """tinyproxy on 127.0.0.1 allowing CONNECT to port 443 only (``ConnectPort 443``)."""
    port = _free_port()
    conf = tmp_path / "tinyproxy.conf"
    conf.write_text(f"Port {port}\nListen 127.0.0.1\nTimeout 600\nMaxClients 10\n"
                    "Allow 127.0.0.1\nConnectPort 443\n")
    proc = subprocess.Popen(["tinyproxy", "-d", "-c", str(conf)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(50):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=5)


def _env(port: int, home: Path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0",
            "https_proxy": f"http://127.0.0.1:{port}"}


def test_tinyproxy_names_itself_and_is_identified(tinyproxy: int, tmp_path: Path) -> None:
    hop = first_hop("h2", "https://git.example/r.git", env=_env(tinyproxy, tmp_path))
    assert hop.answer is not None and hop.answer.status == 400
    assert hop.answer.server.startswith("tinyproxy/")
    (shown,) = path_hops((hop,))
    assert shown.product == "tinyproxy"
    assert shown.text == f"client -> proxy 127.0.0.1:{tinyproxy} ({hop.answer.server}) -> server"


def test_git_says_the_refused_connect_in_the_words_the_culprit_reads(
        tinyproxy: int, tmp_path: Path) -> None:
    """A CONNECT to port 22 (not a ConnectPort): tinyproxy answers 403, git says so."""
    done = subprocess.run(["git", "ls-remote", "https://127.0.0.1:22/r.git"],
                          env=_env(tinyproxy, tmp_path), capture_output=True, text=True,
                          timeout=30, check=False)
    assert done.returncode != 0
    match = REFUSED_CONNECT.search(done.stderr)
    assert match is not None, done.stderr
    assert match.group(1) == "403"
