"""Issue 24: a push too small to give a rate is ``too-small``, never healthy (a real
git daemon on loopback, ``diagnose --size 1``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_one_byte_push_is_too_small_not_healthy(
        git_daemon: str, remote_refs: Callable[[str], dict[str, str]], tmp_path: Path) -> None:
    """A 1-byte repository pushes a pack of a few hundred bytes: verdict failed, exit 9,
    the size to use in the hint, and the server's refs as they were."""
    before = remote_refs(git_daemon)
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--git", git_daemon, "--size", "1",
         "--no-capture", "--timeout", "30", "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200", "NO_COLOR": "1"})
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.returncode == 9, proc.stderr[-2000:]
    assert proc.stdout.startswith("verdict: FAILED\nNothing was measured: too-small: git://: "
                                  "the push moved "), proc.stdout[:400]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and errors[0].startswith(
        "error [not-measured]: verdict failed: too-small: git://: the push moved "), errors
    assert errors[0].endswith("(hint: push a larger pack: --size 1MiB or more (with --repo, a "
                              "repository whose HEAD packs to 1MiB or more, or leave --repo "
                              "out))"), errors[0]
    assert remote_refs(git_daemon) == before
