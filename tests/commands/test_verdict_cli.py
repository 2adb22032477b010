"""The verdict through the real CLI: what was not measured is named, and the exit code says so.

Loopback only: a refused port, a recorded run with a failed push written into
its manifest, and a git daemon behind a small proxy that swallows the first
push (a stall) but lets the clean-up through.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def gitnetdiag(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "gitnetdiag", *args], capture_output=True,
                          text=True, timeout=180, cwd=cwd, env=env)


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error")]


def test_refused_port_is_failed_not_healthy(tmp_path: Path) -> None:
    """Nothing listens: verdict FAILED on stdout, one error line, exit 9, reports kept; the
    port refused the path check's connects and git's, so ``firewall-reset`` names it with
    both causes (nothing measured tells them apart)."""
    run = tmp_path / "run"
    proc = gitnetdiag("diagnose", "--http", "https://127.0.0.1:1/x.git", "--no-capture",
                      "--no-native", "--size", "64KiB", "--timeout", "20", "--out", str(run),
                      cwd=tmp_path)
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.returncode == 9, proc.stderr
    # Both requested protocols' pushes fail: the headline says so, what was seen (the port
    # refused every connect) and that nothing here tells a closed port from a filter.
    words = " ".join(proc.stdout.split()[:60])
    assert words.startswith("verdict: FAILED HTTP/1.1 and HTTP/2 pushes fail (firewall-reset): "
                            "HTTP/1.1 and HTTP/2 (127.0.0.1:1): every connection refused"), words
    assert "nothing listens on that port, or a firewall rejects it" in words
    (error,) = _errors(proc.stderr)
    assert error.startswith("error [not-measured]: verdict failed: ")
    report = json.loads((run / "report.json").read_text())
    assert report["verdict"] == "failed"
    assert report["requested_protocols"] == ["h1", "h2"] and report["measured_protocols"] == []
    assert [f["protocol"] for f in report["measurement_failures"]] == ["h1", "h2"]


def _with_failed_h2_push(run: Path) -> None:
    manifest: dict[str, Any] = json.loads((run / "manifest.json").read_text())
    h2 = next(p for p in manifest["protocols"] if p["protocol"] == "h2")
    h2["pushes"][0].update(outcome="failed", failure_kind="auth", rate_bytes_per_s=None,
                           last_line="fatal: Authentication failed for 'https://h/r.git/'")
    manifest["errors"].append({
        "stage": "push", "protocol": "h2", "reference": "auth-failed", "kind": "auth",
        "message": "https://198.18.2.2:8443/lab.git: fatal: Authentication failed"})
    manifest["status"] = "failed"
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "observations.json").unlink()


@pytest.mark.parametrize("command", [("report",), ("analyze", "--diagnose")])
def test_a_push_rejected_by_auth_fails_the_run(command: tuple[str, ...],
                                               tmp_path: Path) -> None:
    """A recorded healthy run whose only HTTP/2 push got 401: FAILED (a requested protocol
    whose pushes all fail, issue 42; it was INCONCLUSIVE, exit 8) with the hint, exit 9."""
    run = tmp_path / "run"
    shutil.copytree(REPO / "captures" / "healthy", run)
    _with_failed_h2_push(run)
    proc = gitnetdiag(command[0], str(run), *command[1:], cwd=tmp_path)
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.returncode == 9, proc.stderr
    assert "verdict: FAILED\nHTTP/2 pushes fail (auth: fatal: Authentication failed" in proc.stdout
    assert "hint: check --ssh-key / the HTTP credentials for this remote" in proc.stdout
    assert _errors(proc.stderr) == [
        "error [not-measured]: verdict failed: auth-failed: https://198.18.2.2:8443/lab.git: "
        "fatal: Authentication failed (hint: check --ssh-key / the HTTP credentials for this "
        "remote)"]


def test_a_capture_that_cannot_be_read_is_missing_evidence(tmp_path: Path) -> None:
    """The HTTP/1.1 capture is gone: pushes were measured, the packet evidence was not."""
    run = tmp_path / "run"
    shutil.copytree(REPO / "captures" / "healthy", run)
    (run / "h1-1.pcap").unlink()
    proc = gitnetdiag("report", str(run), "--reanalyze", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 8, proc.stderr
    report = json.loads(proc.stdout)
    assert report["verdict"] == "inconclusive"
    assert report["measured_protocols"] == ["h1", "h2", "ssh"]
    assert [(f["protocol"], f["stage"], f["reference"]) for f in
            report["measurement_failures"]] == [("h1", "capture", "capture-not-found")]


def test_corrupt_manifest_is_never_healthy_even_with_saved_observations(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(REPO / "captures" / "healthy", run)
    (run / "manifest.json").write_text('{"schema": "gitnetdiag.run/1", "status": 3}')
    proc = gitnetdiag("report", str(run), cwd=tmp_path)
    assert proc.returncode == 3
    assert "HEALTHY" not in proc.stdout
    assert proc.stderr.startswith("error [bad-run-dir]: ")


# --- a push that stalls ----------------------------------------------------------------------


class StallFirstPush:
    """A TCP proxy to a git daemon that holds the first receive-pack forever (no reply)
    and forwards everything else: the push hangs, the clean-up delete works."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stalled: list[socket.socket] = []
        self.lock = threading.Lock()
        self.done = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.listener.settimeout(0.2)
        while not self.done.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        first = _read_request(client)
        if not first:
            client.close()
            return
        with self.lock:
            stall = b"git-receive-pack" in first and not self.stalled
            if stall:
                self.stalled.append(client)  # keep it open, say nothing
        if stall:
            return
        upstream = socket.create_connection(("127.0.0.1", self.upstream))
        upstream.sendall(first)
        client.settimeout(None)
        for src, dst in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pipe, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.done.set()
        self.listener.close()
        for sock in self.stalled:
            sock.close()


def _read_request(client: socket.socket) -> bytes:
    """The git:// request: one whole pkt-line, or b"" if the client sent none.

    git writes the 4-byte length and the payload in two writes, so a single recv
    may return just ``b"0031"``: the push would then be forwarded, and the clean-up's
    receive-pack stalled instead."""
    client.settimeout(30)
    data = b""
    try:
        while len(data) < 4 or len(data) < int(data[:4], 16):
            chunk = client.recv(65536)
            if not chunk:
                return b""
            data += chunk
    except (OSError, ValueError):
        return b""
    return data


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return int(sock.getsockname()[1])


@pytest.fixture
def stalling_remote(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """git:// URL of a bare repository whose first push stalls; yields (url, repository)."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    base = tmp_path / "srv"
    repo = base / "x.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True, timeout=30)
    port = _free_port()
    daemon = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
         f"--base-path={base}", "--listen=127.0.0.1", f"--port={port}", str(base)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    proxy = StallFirstPush(port)
    try:
        yield f"git://127.0.0.1:{proxy.port}/x.git", repo
    finally:
        proxy.close()
        daemon.terminate()
        daemon.wait(timeout=10)


def test_probe_whose_push_hung_is_stalled_not_complete(
        stalling_remote: tuple[str, Path], tmp_path: Path) -> None:
    """The stall is named (status stalled, push-stalled) and the exit code is not 0."""
    url, repo = stalling_remote
    run = tmp_path / "run"
    proc = gitnetdiag("probe", "--git", url, "--no-capture", "--size", "64KiB", "--timeout", "3",
                      "--out", str(run), "--json", str(tmp_path / "summary.json"), cwd=tmp_path)
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.returncode == 5, proc.stderr
    (error,) = _errors(proc.stderr)
    assert error.startswith(f"error [push-stalled]: {url}: 1 of 1 push(es) made no progress "
                            "within 3 s (")
    # what the stalled push had seen comes with it (issue 13), then the hint
    assert "bytes moved" in error and "git 2." in error
    assert "(hint: the stall is evidence" in error
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "stalled"
    assert [(e["reference"], e["kind"]) for e in manifest["errors"]] == [("push-stalled", "hung")]
    assert json.loads((tmp_path / "summary.json").read_text())["status"] == "stalled"
    refs = subprocess.run(["git", "-C", str(repo), "for-each-ref"], capture_output=True,
                          text=True, check=True, timeout=30).stdout
    assert refs == ""
    # Diagnosed later, the stall of the only protocol's only push fails the run (issue 42;
    # it was inconclusive, exit 8).
    report = gitnetdiag("report", str(run), cwd=tmp_path)
    assert report.returncode == 9
    assert report.stdout.startswith("verdict: FAILED\ngit:// pushes fail ("), report.stdout
