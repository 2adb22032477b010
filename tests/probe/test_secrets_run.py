"""No secret of the remote URL survives in a run directory, finished or interrupted.

The remote is a loopback smart-HTTP server (``git http-backend`` behind a small
threaded HTTP/1.1 server) that demands Basic auth, sets a session cookie and,
like GitLab, accepts the token as a ``private_token`` query value.
"""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

import pytest

from gitnetdiag.probe.gitpush import Protocol
from gitnetdiag.probe.runner import ProbeOptions, run_probe
from gitnetdiag.rundir import load_run

USER, TOKEN, QUERY_TOKEN = "user", "SECRETTOKEN", "SECRET2"
COOKIE = "COOKIESECRET123"
BASIC = "Basic " + base64.b64encode(f"{USER}:{TOKEN}".encode()).decode()


@dataclass
class HttpRemote:
    url: str
    """Remote URL with the user, the token and the query token."""
    bare: Path
    """The served bare repository."""
    receiving: threading.Event
    """Set when a receive-pack POST arrives."""


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("Transfer-Encoding", "").lower() != "chunked":
        return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
    chunks = []
    while True:
        size = int(handler.rfile.readline().split(b";")[0].strip(), 16)
        if size == 0:
            handler.rfile.readline()
            return b"".join(chunks)
        chunks.append(handler.rfile.read(size))
        handler.rfile.readline()


def _handler(root: Path, receiving: threading.Event) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return None

        def _serve(self) -> None:
            body = _read_body(self) if self.command == "POST" else b""
            if self.headers.get("Authorization") != BASIC:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="test"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            # git appends its own path and query to the URL's query string.
            raw = self.path.replace(f"?private_token={QUERY_TOKEN}", "")
            cut = min((i for i in (raw.find("?"), raw.find("&")) if i >= 0), default=len(raw))
            if raw.endswith("git-receive-pack") and self.command == "POST":
                receiving.set()
            env = {
                **os.environ, "GIT_PROJECT_ROOT": str(root), "GIT_HTTP_EXPORT_ALL": "1",
                "REMOTE_USER": USER, "REQUEST_METHOD": self.command,
                "PATH_INFO": raw[:cut], "QUERY_STRING": raw[cut + 1:],
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory",
                "GIT_CONFIG_VALUE_0": "*",
            }
            out = subprocess.run(["git", "http-backend"], input=body, env=env,
                                 capture_output=True, timeout=120).stdout
            head, _, payload = out.partition(b"\r\n\r\n")
            status = 200
            headers = []
            for line in head.decode().split("\r\n"):
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Set-Cookie", f"session={COOKIE}; HttpOnly")
            self.send_header("Content-Length", str(len(payload)))
            try:
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                self.close_connection = True  # the interrupted client went away

        do_GET = _serve
        do_POST = _serve

    return Handler


@pytest.fixture()
def http_remote(tmp_path: Path) -> Iterator[HttpRemote]:
    root = tmp_path / "srv"
    bare = root / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    receiving = threading.Event()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(root, receiving))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    url = f"http://{USER}:{TOKEN}@127.0.0.1:{port}/repo.git?private_token={QUERY_TOKEN}"
    try:
        yield HttpRemote(url=url, bare=bare, receiving=receiving)
    finally:
        server.shutdown()
        server.server_close()


def _forms(secret: str) -> list[bytes]:
    return [secret.encode(), quote(secret, safe="").encode(), secret.lower().encode()]


def _leaks(run_dir: Path) -> list[str]:
    """``file: secret`` for every secret (or encoded form) found in any file."""
    needles = [*_forms(TOKEN), *_forms(QUERY_TOKEN), BASIC.split()[1].encode()]
    found = []
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [f"{path.name}: {n.decode()}" for n in needles if n in data]
        # Captures hold the request line only (128-byte snaplen); text holds headers.
        if not path.name.endswith((".pcap", ".pcapng")) and COOKIE.encode() in data:
            found.append(f"{path.name}: {COOKIE}")
    return found


def _options(url: str, out: Path) -> ProbeOptions:
    return ProbeOptions(
        urls={Protocol.H1: url}, protocols=(Protocol.H1,), size_bytes=1024 * 1024, seed=5,
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
    assert _leaks(out) == []
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
    assert _leaks(out) == [], sorted(p.name for p in out.iterdir())
    printed = stdout + stderr
    for secret in (TOKEN, QUERY_TOKEN, COOKIE):
        assert secret.encode() not in printed, printed.decode(errors="replace")


def test_failed_push_error_names_no_secret(tmp_path: Path) -> None:
    """git repeats the userinfo in its own words ("unable to look up user:TOKEN@host"),
    which no URL rule sees: the known secret still goes, in the returned error,
    the manifest and every file."""
    url = f"git://{USER}:{TOKEN}@127.0.0.1:1/repo.git?private_token={QUERY_TOKEN}"
    options = ProbeOptions(
        urls={Protocol.GIT: url}, protocols=(Protocol.GIT,), size_bytes=1024 * 1024, seed=5,
        repo=None, repeat=1, ca_file=None, insecure=False, ssh_command=None,
        out_dir=tmp_path / "run", full=False, burst=0, timeout_s=30.0, capture=False,
    )
    outcome = run_probe(options)
    assert outcome.error is not None
    line = outcome.error.one_line()
    assert "unable to look up user:***@127.0.0.1" in line, line
    assert TOKEN not in line and QUERY_TOKEN not in line
    assert _leaks(tmp_path / "run") == []
    assert any("user:***@" in e.message for e in load_run(tmp_path / "run").errors)
