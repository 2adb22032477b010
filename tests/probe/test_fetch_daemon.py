"""The fetch direction end to end against a loopback git daemon serving a real history:
read-only (the server's files byte for byte unchanged), the partial clone gone, phases seen."""

from __future__ import annotations

import hashlib
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitnetdiag.pipeline import diagnose_clones
from gitnetdiag.probe.fetchrun import run_fetch_probe
from gitnetdiag.probe.options import ProbeOptions
from gitnetdiag.vocabulary import TransportKind

PROJECT = Path(__file__).resolve().parents[2]


def tree_digest(root: Path) -> str:
    """Every path, mode and byte under ``root`` (refs, objects, config, everything)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(oct(path.lstat().st_mode).encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture()
def history_daemon(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """git:// URL of a bare clone of this project's own history, read-only, on loopback."""
    base = tmp_path / "srv"
    bare = base / "history.git"
    subprocess.run(["git", "clone", "-q", "--bare", "--no-local", str(PROJECT), str(bare)],
                   check=True, timeout=120)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    daemon = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", f"--base-path={base}", "--export-all",
         "--listen=127.0.0.1", f"--port={port}", str(base)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"git://127.0.0.1:{port}/history.git", bare
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


def test_fetch_is_read_only_and_leaves_no_clone(
        history_daemon: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A clone of a real history changes no byte on the server (its burst of ls-remotes
    neither), removes its partial clone, and its phases come out of trace2 and the progress
    lines; the burst is recorded in the protocol's run."""
    url, bare = history_daemon
    before = tree_digest(bare)
    refs = subprocess.run(["git", "ls-remote", url], capture_output=True, text=True,
                          check=True, timeout=60).stdout
    ref_names = {line.split("\t")[1] for line in refs.splitlines()} - {"HEAD"}
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    options = ProbeOptions(
        urls={TransportKind.GIT: url}, protocols=(TransportKind.GIT,),
        size_bytes=0, seed=0, repo=None,
        repeat=2, ca_file=None, insecure=False, ssh_command=None, out_dir=tmp_path / "run",
        full=False, burst=4, timeout_s=120.0, capture=False)
    outcome = run_fetch_probe(options)

    assert outcome.error is None, outcome.error
    assert tree_digest(bare) == before
    assert list(scratch.iterdir()) == []
    diagnosis = diagnose_clones(tmp_path / "run")
    assert diagnosis is not None and diagnosis.fetch_details is not None
    assert diagnosis.direction == "fetch" == diagnosis.fetch_details.record.direction
    assert len(diagnosis.observations.transfers) == 2
    for obs in diagnosis.observations.transfers:
        assert obs.outcome == "ok" and obs.rate_bytes_per_s
        phases = obs.phases
        assert phases.protocol_version == 2
        assert phases.ref_count == len(ref_names) + 1  # ls-refs also names HEAD
        assert phases.server_objects_counted and phases.server_objects_counted > 1000
        # the monitor samples every 250 ms and git rounds its count: within 2% of trace2's
        assert phases.received_bytes and abs(obs.moved_bytes - phases.received_bytes) < (
            0.02 * phases.received_bytes)
        assert phases.index_pack_s is not None and phases.checkout_s is not None
        assert (phases.ref_advertisement_s or 0) <= (phases.first_pack_byte_s or 0)
        assert obs.tcp is not None and obs.tcp.advertised_window_max_bytes
    for run in diagnosis.fetch_details.record.protocols:
        assert all(record.clone_removed for record in run.fetches)
        assert run.burst is not None and run.burst.concurrency == 4
        assert run.burst.ok_count == 4 and len(run.burst.connects) == 4
        assert all(op.error is None for op in run.burst.connects)
