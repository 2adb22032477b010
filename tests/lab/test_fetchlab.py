"""The download faults' repository seeding (real git, no namespaces) and their spec."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from pathlib import Path

from gitnetdiag.lab.config import LabPaths
from gitnetdiag.lab.fetchlab import seed_history
from gitnetdiag.lab.inetd import _relay
from gitnetdiag.lab.servers import _server_command
from gitnetdiag.lab.spec import (
    CLIENT_RMEM_CLAMP,
    FAULTS,
    FETCH_FAULT_CULPRIT,
    FETCH_FAULT_FIX_NAMES,
    build_spec,
)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={repo}", *args], capture_output=True, text=True,
                          check=True, timeout=60).stdout.strip()


def _bare_with_main(tmp_path: Path) -> Path:
    repo = tmp_path / "lab.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(repo)], check=True)
    tree = _git(repo, "hash-object", "-t", "tree", "-w", "/dev/null")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    commit = subprocess.run(
        ["git", f"--git-dir={repo}", "commit-tree", tree, "-m", "initial"], check=True,
        capture_output=True, text=True, env=env).stdout.strip()
    _git(repo, "update-ref", "refs/heads/main", commit)
    return repo


def test_similar_history_is_loose_and_on_main(tmp_path: Path) -> None:
    """Similar blobs stored loose on top of main: pack-objects has them all to count."""
    repo = _bare_with_main(tmp_path)
    parent = _git(repo, "rev-parse", "main")
    commit = seed_history(repo, "similar", count=50, size_bytes=0, scratch=tmp_path / "s")
    assert _git(repo, "rev-parse", "main") == commit
    assert _git(repo, "rev-parse", f"{commit}^") == parent
    counts = dict(line.split(": ") for line in _git(repo, "count-objects", "-v").splitlines())
    assert int(counts["count"]) >= 52 and int(counts["in-pack"]) == 0
    assert len(_git(repo, "ls-tree", commit).splitlines()) == 50
    assert not list((tmp_path / "s").iterdir())


def test_random_history_holds_the_bytes(tmp_path: Path) -> None:
    """Random data of the size asked, so a fetch can reach a steady rate."""
    repo = _bare_with_main(tmp_path)
    commit = seed_history(repo, "random", count=0, size_bytes=600_000, scratch=tmp_path / "s")
    sizes = [int(line.split()[3]) for line in _git(repo, "ls-tree", "-l", commit).splitlines()]
    assert sum(sizes) == 600_000


def test_fetch_faults_in_the_spec() -> None:
    """Each download fault sets its knob and its history, and names its culprit and fix."""
    assert set(FETCH_FAULT_CULPRIT) == set(FETCH_FAULT_FIX_NAMES) <= set(FAULTS)
    clamp = build_spec(instance="x", faults=["client-rmem-clamp"])
    assert clamp.client_rmem == CLIENT_RMEM_CLAMP and clamp.fetch_history == "random"
    slow = build_spec(instance="x", faults=["slow-pack-generation"])
    assert slow.server_cpu_share and slow.fetch_history == "similar"
    healthy = build_spec(instance="x", faults=["healthy"])
    assert healthy.client_rmem is None and healthy.fetch_history is None


def test_sender_and_client_fetch_faults_in_the_spec() -> None:
    """server-sndbuf-clamp clamps the server's tcp_wmem; client-index-cpu starves the client's
    git over a delta-heavy history."""
    sndbuf = build_spec(instance="x", faults=["server-sndbuf-clamp"])
    assert sndbuf.server_wmem is not None and sndbuf.server_wmem[2] == 65536
    assert sndbuf.fetch_history == "random" and sndbuf.client_rmem is None
    index = build_spec(instance="x", faults=["client-index-cpu"])
    assert index.client_cpu_share == 0.05 and index.fetch_history == "similar"
    assert index.server_cpu_share is None
    assert build_spec(instance="x", faults=["healthy"]).server_wmem is None


def test_git_daemon_s_output_is_relayed_only_under_the_send_buffer_clamp() -> None:
    """Under ``server-sndbuf-clamp`` the lab's inetd relays git daemon's output (poll, then
    send), so the clamp holds git:// as it holds sshd and HAProxy (gitnetdiag/lab/inetd.py)."""
    paths = LabPaths(root=Path("/lab"))
    for faults, relayed in ((["server-sndbuf-clamp"], True), (["healthy"], False),
                            (["client-rmem-clamp"], False)):
        argv, log, _ = _server_command("git", paths, build_spec(instance="x", faults=faults), {})
        assert log == "git-inetd.log" and ("--relay" in argv) == relayed, (faults, argv)


def test_the_relay_copies_every_byte_and_ends_with_its_source() -> None:
    """The relay's copy: 1 MiB written to a pipe arrives whole at the socket's peer, and the
    relay returns when the pipe's writer closes it."""
    payload = os.urandom(1 << 20)
    read_end, write_end = os.pipe()
    ours, theirs = socket.socketpair()

    def feed() -> None:
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(payload)

    received = bytearray()

    def drain() -> None:
        while chunk := theirs.recv(65536):
            received.extend(chunk)

    threads = [threading.Thread(target=feed), threading.Thread(target=drain)]
    for thread in threads:
        thread.start()
    _relay(read_end, ours)
    ours.shutdown(socket.SHUT_WR)
    for thread in threads:
        thread.join(timeout=10)
    os.close(read_end)
    ours.close()
    theirs.close()
    assert bytes(received) == payload
