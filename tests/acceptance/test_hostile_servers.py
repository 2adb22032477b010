"""Issue 24's acceptance over hostile servers: one table, small loopback fixtures.

Each case runs the real CLI (``python -m gitnetdiag probe``) in a subprocess under its
own time limit against a server that misbehaves: 500, 404, a slow first byte, a body
cut mid-way, garbage instead of pkt-lines, a pack taken and never answered, a 5 s
pre-receive hook, a rejecting hook, and ``--timeout 2`` behind the 5 s hook over
HTTP/1.1 and HTTP/2 (one TLS server speaking both). For each: the exact first line,
the exit code, no traceback, the bare repository's refs before and after (no
``gitnetdiag/probe-*`` branch unless the output names it with its remove command),
and the token (given in the URL and as an ``http.extraHeader`` of the user's git
config) in no run file, nothing under ``$TMPDIR``, no output and no process's
command line sampled every 20 ms.
"""

from __future__ import annotations

import json
import os
import re
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.httpremote import BASIC, TOKEN, _handler, _read_body
from tests.probe.h2server import H2GitServer, _serve_connection
from tests.probe.test_ways_out import _ArgvSampler, _grep
from tests.tlsutil import make_tls_files

HEADER_TOKEN = "HEADERSECRET987"
HOOK_S = 5
SLOW_S = 8
TOOL = [sys.executable, "-m", "gitnetdiag", "probe", "--no-native", "--size", "256KiB",
        "--cleanup-wait", "10"]


@dataclass
class Remote:
    url: str
    bare: Path
    ca_file: str | None = None
    headers: list[str] = field(default_factory=list)
    """The X-Probe-Token header of every HTTP/1.1 request ("" when absent)."""


def _hook(bare: Path, body: str) -> None:
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\n{body}\n")
    hook.chmod(0o755)


def _misbehave(base: type[BaseHTTPRequestHandler], mode: str, remote: Remote,
               released: threading.Event) -> type[BaseHTTPRequestHandler]:
    """``base`` (git http-backend behind Basic auth) with one way of going wrong."""

    class Hostile(base):  # type: ignore[misc, valid-type]
        def _plain(self, status: int, body: bytes, ctype: str = "text/plain") -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _hostile(self) -> bool:
            if mode == "500":
                self._plain(500, b"Internal Server Error\n")
            elif mode == "404":
                self._plain(404, b"Not Found\n")
            elif mode == "slow":
                time.sleep(SLOW_S)
                return False
            elif mode == "cut":
                self.send_response(200)
                self.send_header("Content-Type", "application/x-git-receive-pack-advertisement")
                self.send_header("Content-Length", "4096")
                self.end_headers()
                self.wfile.write(b"001f# service=git-receive-pack\n0000009")
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
            elif mode == "garbage":
                self._plain(200, b"<html>hello, this is not a pkt-line</html>\n" * 20,
                            "application/x-git-receive-pack-advertisement")
            elif mode == "muted" and self.command == "POST" and int(
                    self.headers.get("Content-Length") or 1 << 20) >= 1024:
                _read_body(self)
                released.wait(120)
                self.close_connection = True
            else:
                return False
            return True

        def do_GET(self) -> None:
            remote.headers.append(self.headers.get("X-Probe-Token", ""))
            if self.headers.get("Authorization") == BASIC and self._hostile():
                return
            base.do_GET(self)  # type: ignore[attr-defined]

        def do_POST(self) -> None:
            remote.headers.append(self.headers.get("X-Probe-Token", ""))
            if self.headers.get("Authorization") == BASIC and self._hostile():
                return
            base.do_POST(self)  # type: ignore[attr-defined]

    return Hostile


def _bare(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "srv"
    bare = root / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True, timeout=30)
    return root, bare


def _serve_plain(tmp_path: Path, mode: str) -> Iterator[Remote]:
    root, bare = _bare(tmp_path)
    remote, released = Remote("", bare), threading.Event()
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), _misbehave(_handler(root, threading.Event()), mode, remote, released))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    remote.url = f"http://user:{TOKEN}@127.0.0.1:{server.server_address[1]}/repo.git"
    try:
        yield remote
    finally:
        released.set()
        server.shutdown()
        server.server_close()


def _serve_tls_h1_h2(tmp_path: Path) -> Iterator[Remote]:
    """HTTPS on loopback, HTTP/1.1 (git http-backend) or HTTP/2 (git receive-pack behind
    tests.probe.h2server) as ALPN chose, both behind Basic auth on one bare repository."""
    root, bare = _bare(tmp_path)
    cert, key = make_tls_files(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["h2", "http/1.1"])
    listener = socket.create_server(("127.0.0.1", 0))
    remote = Remote(f"https://user:{TOKEN}@127.0.0.1:{listener.getsockname()[1]}/repo.git",
                    bare, str(cert))
    h1 = _misbehave(_handler(root, threading.Event()), "ok", remote, threading.Event())
    h2 = H2GitServer(url="", ca_file=str(cert), repo=bare, thread=threading.Thread(),
                     listener=listener)

    def serve(raw: socket.socket, peer: tuple[str, int]) -> None:
        try:
            with context.wrap_socket(raw, server_side=True) as tls:
                if tls.selected_alpn_protocol() == "h2":
                    _serve_connection(tls, h2, 65_535, 0.0, BASIC, push_only=False)
                else:
                    h1(tls, peer, None)  # type: ignore[arg-type]
        except Exception:
            return  # a client gone mid-request ends that connection only

    def accept() -> None:
        while True:
            try:
                raw, peer = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(raw, peer), daemon=True).start()

    h2.thread = threading.Thread(target=accept, daemon=True)
    h2.thread.start()
    try:
        yield remote
    finally:
        h2.stop()


@dataclass(frozen=True)
class Case:
    """A hostile server, the probe's extra arguments, and what the probe must print:
    the first line of stdout (run id as ``<id>``) and the one error line (None: none),
    both with :func:`_normal` applied."""

    serve: Callable[[Path], Iterator[Remote]]
    args: tuple[str, ...]
    code: int
    head: str
    error: str | None
    limit_s: float = 60.0
    never: tuple[str, ...] = ()


def _mode(mode: str, hook: str = "") -> Callable[[Path], Iterator[Remote]]:
    def serve(tmp_path: Path) -> Iterator[Remote]:
        for remote in _serve_plain(tmp_path, mode):
            if hook:
                _hook(remote.bare, hook)
            yield remote
    return serve


def _tls(hook: str) -> Callable[[Path], Iterator[Remote]]:
    def serve(tmp_path: Path) -> Iterator[Remote]:
        for remote in _serve_tls_h1_h2(tmp_path):
            _hook(remote.bare, hook)
            yield remote
    return serve


REJECT = "cat >/dev/null; echo 'denied by policy' >&2; exit 1"
SLOW = f'read old new ref; case "$new" in *[!0]*) sleep {HOOK_S};; esac'
"""Slow for the push, not for the clean-up's delete (its new object id is all zeros)."""


H1 = ("--protocols", "h1", "--no-capture", "--stall-timeout", "3")
AT = "error [{kind}]: http://***@127.0.0.1:{{port}}/repo.git: "
GIT_FAILED = AT.format(kind="git-failed")
STALLED = AT.format(kind="push-stalled") + "1 of 1 push(es) made no progress "
SEE_RANKED = " (hint: the stall is evidence, not noise: see it ranked with 'gitnetdiag " \
    "analyze RUN --diagnose')"
CURL = "the push's curl trace (<protocol>-<n>.curl.txt)"
CASES: dict[str, Case] = {
    "500": Case(_mode("500"), H1, 5, "gitnetdiag probe <id> (failed)",
                AT.format(kind="http-status") + "fatal: unable to access "
                "'http://127.0.0.1:{port}/repo.git/': The requested URL returned error: 500 "
                "(hint: an HTTP server on the way answered with that status: see which request "
                "got it in the push's curl trace (<protocol>-<n>.curl.txt))"),
    "404": Case(_mode("404"), H1, 5, "gitnetdiag probe <id> (failed)",
                GIT_FAILED + "fatal: repository 'http://127.0.0.1:{port}/repo.git/' not found "
                "(hint: no repository answers at that path (git says so for an HTTP 404, or for "
                "one your credentials may not see): check the URL's path and the account's "
                "access to it)"),
    "slow-first-byte": Case(_mode("slow"), (*H1, "--timeout", "2"), 5,
                            "gitnetdiag probe <id> (stalled)",
                            STALLED + "within 2 s (<n> bytes moved; <versions>)" + SEE_RANKED),
    "cut-mid-body": Case(_mode("cut"), H1, 5, "gitnetdiag probe <id> (failed)",
                         GIT_FAILED + "fatal: unable to access 'http://127.0.0.1:{port}/repo.git/"
                         "': transfer closed with 4058 bytes remaining to read (hint: the "
                         "server or a proxy closed the connection before the end of its answer "
                         "(it said how long it would be): see which request and its "
                         "Content-Length in " + CURL + ")"),
    "garbage": Case(_mode("garbage"), H1, 5, "gitnetdiag probe <id> (failed)",
                    GIT_FAILED + "fatal: protocol error: bad line length character: <htm "
                    "(GET info/refs answered 200, Content-Type "
                    "application/x-git-receive-pack-advertisement) (hint: the answer is not "
                    "git's protocol (an HTML page from a proxy, captive portal or login wall); "
                    "it began with '<htm': see the response's first bytes "
                    "in " + CURL + ", with its status and Content-Type; over SSH, text the "
                    "server's shell prints (a banner, .bashrc output) does the same)"),
    "never-answers": Case(_mode("muted"), (*H1, "--size", "1MiB", "--cleanup-wait", "1"), 5,
                          "gitnetdiag probe <id> (stalled)",
                          STALLED + "for 3 s (the whole pack was sent and the server never "
                          "answered; <n> bytes moved; last: '<progress>'; <versions>)"
                          + SEE_RANKED),
    "hook-5s-h1-h2": Case(_tls(SLOW), ("--protocols", "h1,h2", "--no-capture"),
                          0, "gitnetdiag probe <id> (complete)", None),
    "hook-rejects": Case(_mode("ok", REJECT), H1, 5, "gitnetdiag probe <id> (failed)",
                         AT.format(kind="push-rejected") + "remote: denied by policy (hint: the "
                         "server refused the throwaway branch; allow gitnetdiag/probe-*)"),
    "hook-rejects-h2": Case(_tls(REJECT), ("--protocols", "h2", "--no-capture"), 5,
                            "gitnetdiag probe <id> (failed)",
                            "error [push-rejected]: https://***@127.0.0.1:{port}/repo.git: "
                            "remote: denied by policy (hint: the server refused the throwaway "
                            "branch; allow gitnetdiag/probe-*)"),
    # Issue 24: both protocols hung behind the hook, yet h2-flow-control-window was blamed.
    # Issue 42: every push of both hung, so the run failed (it was inconclusive, exit 8).
    "timeout-2-behind-hook-h1-h2": Case(
        _tls(SLOW), ("--protocols", "h1,h2", "--timeout", "2", "--diagnose"), 9,
        "verdict: FAILED",
        "error [not-measured]: verdict failed: push-stalled: https://***@127.0.0.1:{port}/"
        "repo.git: 1 of 1 push(es) made no progress within 2 s (<n> bytes moved; last: "
        "'<progress>'; <versions>) "
        "(+1 more) (hint: HTTP/1.1 and HTTP/2 stalled alike, so the cause is common to them, "
        "most likely the server (a slow pre-receive hook, receive-pack): run with a --timeout "
        "above the server's time, and add 'gitnetdiag host' evidence with --host-report)",
        limit_s=90, never=("h2-flow-control-window",)),
}


def _normal(line: str) -> str:
    """Without what changes from run to run or machine to machine."""
    line = re.sub(r"^\s*gitnetdiag probe [0-9a-f]{8} ", "gitnetdiag probe <id> ", line)
    line = re.sub(r"\d+ bytes moved", "<n> bytes moved", line)
    line = re.sub(r"last: '[^']*'", "last: '<progress>'", line)
    line = re.sub(r"push\(es\) hung \(.*?\); no culprit", "push(es) hung (<last>); no culprit",
                  line)
    return re.sub(r"git [\d.]+, libcurl [^,]+, nghttp2 [^)]+", "<versions>", line).rstrip()


def _refs(bare: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(bare), "for-each-ref", "--format=%(refname)"],
                         capture_output=True, text=True, check=True, timeout=30).stdout
    return out.split()


def _env(tmp_path: Path) -> dict[str, str]:
    """TMPDIR of the test's own; the user's git config holds the extraHeader token."""
    scratch, config = tmp_path / "tmpdir", tmp_path / "gitconfig"
    scratch.mkdir()
    config.write_text(f"[http]\n\textraHeader = X-Probe-Token: {HEADER_TOKEN}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_CONFIG")}
    return {**env, "TMPDIR": str(scratch), "GIT_CONFIG_GLOBAL": str(config),
            "GIT_TERMINAL_PROMPT": "0", "COLUMNS": "200", "NO_COLOR": "1"}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_server(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    for remote in case.serve(tmp_path):
        port = remote.url.rsplit(":", 1)[1].split("/", 1)[0]
        extra = ("--ca-file", remote.ca_file) if remote.ca_file else ()
        before = _refs(remote.bare)
        samplers = [_ArgvSampler(TOKEN, port), _ArgvSampler(HEADER_TOKEN, "")]
        for sampler in samplers:
            sampler.start()
        started = time.monotonic()
        try:
            proc = subprocess.run(
                [*TOOL, "--http", remote.url, *case.args, *extra, "--out",
                 str(tmp_path / "run")], capture_output=True, text=True, errors="replace",
                timeout=case.limit_s, env=_env(tmp_path), cwd=tmp_path)
        finally:
            for sampler in samplers:
                sampler.stop.set()
                sampler.join()
        took = time.monotonic() - started
        after = _refs(remote.bare)
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output, output[-3000:]
    head = _normal(proc.stdout.splitlines()[0]) if proc.stdout else ""
    errors = [_normal(line) for line in proc.stderr.splitlines() if line.startswith("error")]
    want = [case.error.format(port=port)] if case.error else []
    assert (proc.returncode, head, errors) == (case.code, case.head, want), output[-3000:]
    print(f"{name}: exit {proc.returncode} in {took:.1f} s, refs after: {after}")
    assert before == []
    probes = [ref for ref in after if ref.startswith("refs/heads/gitnetdiag/probe-")]
    for ref in probes:  # a branch left must be named with its remove command
        assert f"remove it with: git push --force-with-lease={ref}:" in output, output[-3000:]
    report = tmp_path / "run" / "report.json"
    culprits = [c["id"] for c in json.loads(report.read_text())["culprits"]] \
        if report.exists() else []
    for text in case.never:  # not blamed: neither printed nor ranked (listed as dropped)
        assert text not in output and text not in culprits, culprits
    if "h2" not in case.args:  # it did reach the server (HTTP/1.1 requests are recorded)
        assert HEADER_TOKEN in remote.headers, remote.headers
    assert all(s.samples > 5 and s.hits == set() for s in samplers)
    for needle in (TOKEN, HEADER_TOKEN):
        assert needle not in output
        assert _grep(tmp_path / "run", needle) == []
        assert _grep(tmp_path / "tmpdir", needle) == []
