"""``gitnetdiag load`` against a remote that wants a token: no secret in its run
directory or its output, finished or stopped by SIGTERM, and no branch left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.httpremote import COOKIE, QUERY_TOKEN, TOKEN, HttpRemote, leaks
from tests.load.conftest import GIT_ENV


def _seed(remote: HttpRemote, tmp_path: Path) -> None:
    """A ``main`` branch, pushed straight into the bare repository (no HTTP)."""
    seed = tmp_path / "seed"
    subprocess.run(["git", "init", "-q", "-b", "main", str(seed)], check=True, timeout=30)
    (seed / "README").write_text("load test\n")
    subprocess.run(["git", "-C", str(seed), "add", "README"], check=True, timeout=30)
    subprocess.run(["git", "-C", str(seed), "commit", "-qm", "seed"], check=True, env=GIT_ENV,
                   timeout=30)
    subprocess.run(["git", "-C", str(seed), "push", "-q", str(remote.bare), "main"], check=True,
                   timeout=30)


def _refs(bare: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(bare), "for-each-ref", "--format=%(refname)"],
                         capture_output=True, text=True, check=True, timeout=30).stdout
    return out.split()


def _load(url: str, out: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen(
        [sys.executable, "-m", "gitnetdiag", "load", url, "--no-live", "--out", str(out),
         "--json", str(out.parent / "load-summary.json"), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def _assert_no_secret(printed: bytes, out: Path) -> None:
    assert leaks(out) == [], sorted(p.name for p in out.iterdir())
    summary = (out.parent / "load-summary.json").read_bytes()
    for secret in (TOKEN, QUERY_TOKEN, COOKIE):
        assert secret.encode() not in printed, printed.decode(errors="replace")
        assert secret.encode() not in summary


def test_finished_load_keeps_no_secret(http_remote: HttpRemote, tmp_path: Path) -> None:
    """Clones and pushes authenticate with the token in the URL; the run
    directory, the --json file and the terminal hold no form of it."""
    _seed(http_remote, tmp_path)
    out = tmp_path / "run"
    proc = _load(http_remote.url, out, "--ops", "clone,push", "--concurrency", "2",
                 "--duration", "3s", "--timeout", "60")
    stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 0, stderr.decode()
    report = json.loads((out / "load.json").read_text())
    step = report["steps"][0]
    # The toy server sometimes drops a connection under concurrency: some ops suffice.
    assert step["ok"] > 0, step
    assert {"load.json", "load.md", "load.html", "ops.jsonl"} <= {p.name for p in out.iterdir()}
    _assert_no_secret(stdout + stderr, out)
    assert _refs(http_remote.bare) == ["refs/heads/main"]


def test_sigterm_during_slow_hook_leaves_no_branch_and_no_secret(
    http_remote: HttpRemote, tmp_path: Path
) -> None:
    """SIGTERM while a slow pre-receive hook holds a push: load waits for the
    server, removes the branch, writes the redacted reports and exits 130."""
    _seed(http_remote, tmp_path)
    hook = http_remote.bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\ncat >/dev/null\nsleep 4\n")
    hook.chmod(0o755)
    out = tmp_path / "run"
    proc = _load(http_remote.url, out, "--ops", "push", "--concurrency", "1",
                 "--duration", "60s", "--timeout", "60", "--cleanup-wait", "30")
    try:
        assert http_remote.receiving.wait(60), "the push never reached receive-pack"
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr.decode()
    assert json.loads((out / "load.json").read_text())["interrupted"] is True
    _assert_no_secret(stdout + stderr, out)
    assert _refs(http_remote.bare) == ["refs/heads/main"]
