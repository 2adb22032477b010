"""No secret of the remote URL survives in a run directory, finished or interrupted.

The remote is a loopback smart-HTTP server (``git http-backend`` behind a small
threaded HTTP/1.1 server) that demands Basic auth, sets a session cookie and,
like GitLab, accepts the token as a ``private_token`` query value.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitnetdiag.probe.runner import ProbeOptions, run_probe
from gitnetdiag.rundir import load_run
from gitnetdiag.vocabulary import TransportKind
from tests.httpremote import COOKIE, QUERY_TOKEN, TOKEN, USER, HttpRemote, leaks


def _options(url: str, out: Path) -> ProbeOptions:
    return ProbeOptions(
        urls={TransportKind.H1: url}, protocols=(TransportKind.H1,),
        size_bytes=1024 * 1024, seed=5,
        repo=None, repeat=1, ca_file=None, insecure=False, ssh_command=None, out_dir=out,
        full=False, burst=0, timeout_s=60.0, capture=True,
    )


def _git_refs(bare: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(bare), "for-each-ref", "--format=%(refname)"],
                         capture_output=True, text=True, check=True).stdout
    return out.split()


def test_finished_run_keeps_no_secret(http_remote: HttpRemote, tmp_path: Path) -> None:
    """A push that authenticated with the token: every file of the run is clean,
    though git's trace2 and stderr, libcurl's trace and the capture all saw it."""
    out = tmp_path / "run"
    outcome = run_probe(_options(http_remote.url, out))
    assert outcome.error is None, outcome.error
    push = outcome.manifest.protocols[0].pushes[0]
    assert push.outcome == "ok" and push.cleanup == "deleted"
    assert {"trace2", "curl_trace", "stderr"} <= set(push.artifacts)
    assert leaks(out) == []
    trace2 = (out / push.artifacts["trace2"]).read_text()
    assert "http://***@127.0.0.1" in trace2 and "private_token=***" in trace2
    assert "Authorization: ***" in (out / push.artifacts["curl_trace"]).read_text()
    if os.geteuid() == 0:
        # The request line is inside the 128-byte snaplen: masked in place, same length.
        capture = (out / push.artifacts["capture"]).read_bytes()
        assert b"?private_token=" + b"*" * len(QUERY_TOKEN) in capture
    assert load_run(out) == outcome.manifest
    assert _git_refs(http_remote.bare) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_run_keeps_no_secret(
    http_remote: HttpRemote, tmp_path: Path, sig: signal.Signals
) -> None:
    """Ctrl-C or SIGTERM while the server runs a slow pre-receive hook: the run
    still ends with the redaction pass (the curl trace included)."""
    hook = http_remote.bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\ncat >/dev/null\nsleep 4\n")
    hook.chmod(0o755)
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitnetdiag", "probe", "--http", http_remote.url,
         "--protocols", "h1", "--size", "1MiB", "--no-native", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    try:
        assert http_remote.receiving.wait(60), "the push never reached receive-pack"
        time.sleep(0.5)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    manifest = load_run(out)
    assert manifest.status == "interrupted"
    assert any(p.name.endswith(".curl.txt") for p in out.iterdir())
    assert leaks(out) == [], sorted(p.name for p in out.iterdir())
    printed = stdout + stderr
    for secret in (TOKEN, QUERY_TOKEN, COOKIE):
        assert secret.encode() not in printed, printed.decode(errors="replace")


def test_failed_push_error_names_no_secret(tmp_path: Path) -> None:
    """git repeats the userinfo in its own words ("unable to look up user:TOKEN@host"),
    which no URL rule sees: the known secret still goes, in the returned error,
    the manifest and every file."""
    url = f"git://{USER}:{TOKEN}@127.0.0.1:1/repo.git?private_token={QUERY_TOKEN}"
    options = ProbeOptions(
        urls={TransportKind.GIT: url}, protocols=(TransportKind.GIT,),
        size_bytes=1024 * 1024, seed=5,
        repo=None, repeat=1, ca_file=None, insecure=False, ssh_command=None,
        out_dir=tmp_path / "run", full=False, burst=0, timeout_s=30.0, capture=False,
    )
    outcome = run_probe(options)
    assert outcome.error is not None
    line = outcome.error.one_line()
    assert "unable to look up user:***@127.0.0.1" in line, line
    assert TOKEN not in line and QUERY_TOKEN not in line
    assert leaks(tmp_path / "run") == []
    assert any("user:***@" in e.message for e in load_run(tmp_path / "run").errors)
