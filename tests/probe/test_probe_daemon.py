"""End to end against a loopback git daemon: pushes, clean-up, run directory, errors."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from gitnetdiag.errors import NetworkError
from gitnetdiag.probe.runner import ProbeOptions, run_probe
from gitnetdiag.rundir import load_run
from gitnetdiag.vocabulary import TransportKind

RefsOf = Callable[[str], dict[str, str]]


def _options(url: str, out: Path, **changes: object) -> ProbeOptions:
    values: dict[str, object] = dict(
        urls={TransportKind.GIT: url}, protocols=(TransportKind.GIT,),
        size_bytes=1024 * 1024, seed=3,
        repo=None, repeat=2, ca_file=None, insecure=False, ssh_command=None, out_dir=out,
        full=False, burst=3, timeout_s=60.0, capture=True,
    )
    values.update(changes)
    return ProbeOptions(**values)  # type: ignore[arg-type]


def test_push_twice_cleans_up_and_writes_run_dir(
    git_daemon: str, tmp_path: Path, remote_refs: RefsOf
) -> None:
    before = remote_refs(git_daemon)
    assert "refs/heads/main" in before
    outcome = run_probe(_options(git_daemon, tmp_path / "run"))
    assert outcome.error is None
    assert remote_refs(git_daemon) == before

    manifest = load_run(tmp_path / "run")
    assert manifest == outcome.manifest
    assert manifest.status == "complete" and manifest.finished_at is not None
    assert manifest.repo is not None and manifest.repo.pack_bytes >= 1024 * 1024
    run = manifest.protocol("git")
    assert run is not None and len(run.pushes) == 2
    branches = {push.branch for push in run.pushes}
    assert len(branches) == 2
    for push in run.pushes:
        assert push.outcome == "ok" and push.cleanup == "deleted"
        assert push.branch.startswith("gitnetdiag/probe-")
        # commit, 2 trees, 1 blob
        assert push.phases is not None and push.phases.objects_written == 4
        assert push.rate_bytes_per_s is not None and push.rate_bytes_per_s > 0
        for relative in push.artifacts.values():
            assert (tmp_path / "run" / relative).is_file()
        assert {"trace2", "stderr", "cleanup_stderr"} <= set(push.artifacts)
        if os.geteuid() == 0:
            assert push.capture is not None and (push.capture.packets_captured or 0) > 10
    assert run.burst is not None and run.burst.ok_count == 3
    assert len(manifest.paths) == 1 and manifest.paths[0].connect_rtt_min_s is not None


def test_refused_port_is_a_network_error_and_keeps_the_manifest(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"git://127.0.0.1:{port}/repo.git"
    outcome = run_probe(_options(url, tmp_path / "run", repeat=3, burst=0, capture=False))
    assert isinstance(outcome.error, NetworkError)
    assert outcome.error.reference == "refused"
    manifest = load_run(tmp_path / "run")
    assert manifest.status == "failed"
    assert manifest.paths[0].error == "refused"
    run = manifest.protocol("git")
    assert run is not None and len(run.pushes) == 1  # no repeats after a refusal
    assert run.pushes[0].failure_kind == "refused"
    assert [e.kind for e in manifest.errors if e.stage == "push"] == ["refused"]


def test_cli_refused_port_one_line_and_exit_code(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "probe", "--git", f"git://127.0.0.1:{port}/r.git",
         "--size", "1MiB", "--no-capture", "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 5
    error_lines = [line for line in proc.stderr.splitlines() if line.startswith("error")]
    assert len(error_lines) == 1 and error_lines[0].startswith("error [refused]:")
    assert "Traceback" not in proc.stderr
    assert (tmp_path / "run" / "manifest.json").is_file()


def test_cli_bad_size_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "probe", "--git", "git://127.0.0.1:1/r.git",
         "--size", "lots", "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2
    assert "error [usage]: cannot read the size 'lots'" in proc.stderr
    assert not (tmp_path / "run").exists()
