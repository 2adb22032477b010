"""``probe --cleanup-wait``: how long a cut push's clean-up waits for a slow hook."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitnetdiag.rundir import load_run
from tests.httpremote import HttpRemote

HOOK_S = 5


def _refs(bare: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(bare), "for-each-ref", "--format=%(refname)"],
                         capture_output=True, text=True, check=True, timeout=30).stdout
    return out.split()


def _probe(url: str, out: Path, wait: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "probe", "--http", url, "--protocols", "h1",
         "--size", "1MiB", "--no-native", "--no-capture", "--timeout", "2",
         "--cleanup-wait", wait, "--out", str(out)],
        capture_output=True, text=True, timeout=120, env=env)


@pytest.fixture()
def slow_remote(http_remote: HttpRemote) -> HttpRemote:
    hook = http_remote.bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ncat >/dev/null\nsleep {HOOK_S}\n")
    hook.chmod(0o755)
    return http_remote


def test_cleanup_waits_for_the_hook_then_deletes(slow_remote: HttpRemote, tmp_path: Path) -> None:
    """The push times out at 2 s while the hook runs 5 s: a 30 s wait sees the branch
    land, deletes it, and the run says ``deleted``; the server's refs are as before."""
    proc = _probe(slow_remote.url, tmp_path / "run", "30")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    push = load_run(tmp_path / "run").protocols[0].pushes[0]
    assert push.outcome == "hung" and push.cleanup == "deleted", push
    assert _refs(slow_remote.bare) == []


def test_zero_wait_says_unconfirmed_with_the_remove_command(
    slow_remote: HttpRemote, tmp_path: Path
) -> None:
    """``--cleanup-wait 0``: the branch is not there yet, and the run says so
    (``unconfirmed`` and the command), not ``deleted``; it lands afterwards."""
    proc = _probe(slow_remote.url, tmp_path / "run", "0")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    manifest = load_run(tmp_path / "run")
    push = manifest.protocols[0].pushes[0]
    assert push.cleanup == "unconfirmed", push
    assert (push.cleanup_command or "").startswith(
        "git push --force-with-lease=refs/heads/gitnetdiag/probe-"), push.cleanup_command
    deadline = time.monotonic() + 3 * HOOK_S
    while not _refs(slow_remote.bare) and time.monotonic() < deadline:
        time.sleep(0.2)
    landed = _refs(slow_remote.bare)
    assert len(landed) == 1 and landed[0].startswith("refs/heads/gitnetdiag/probe-"), landed
    subprocess.run(["git", "-C", str(slow_remote.bare), "update-ref", "-d", landed[0]],
                   check=True, timeout=30)


def test_negative_wait_is_a_usage_error(tmp_path: Path) -> None:
    proc = _probe("https://127.0.0.1:1/x.git", tmp_path / "run", "-1")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error [usage]: Invalid value for '--cleanup-wait'"), proc.stderr
