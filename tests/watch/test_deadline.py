"""``watch``'s deadline covers the clean-up (issue 34, item 6): ``/probe`` of a target whose
server takes the pack and then answers nothing at all (no status, no ``ls-remote``)
answers within 5 s of the deadline, and the branch whose end the cycle could not confirm
in time is counted, not waited for."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gitnetdiag.rundir import load_run
from tests.httpremote import TOKEN, HttpRemote
from tests.probe.mutedremote import serve_muted_remote

DEADLINE_S = 12


@pytest.fixture()
def deaf_remote(tmp_path: Path) -> Iterator[HttpRemote]:
    yield from serve_muted_remote(tmp_path, deaf=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _get(url: str, timeout_s: float) -> str:
    with urllib.request.urlopen(url, timeout=timeout_s) as answer:
        return str(answer.read().decode())


def _value(text: str, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return None


def test_probe_answers_within_its_deadline_and_counts_the_unconfirmed_branch(
    deaf_remote: HttpRemote, tmp_path: Path
) -> None:
    """Before: the cycle got SIGTERM at the deadline, then waited 30 s and more for the
    branch, and ``/probe`` answered a minute late."""
    port = _free_port()
    config = tmp_path / "watch.yaml"
    config.write_text(
        f"listen: 127.0.0.1:{port}\nruns_dir: {tmp_path / 'runs'}\ntargets:\n"
        f"  - name: muted\n    urls: {{h1: '{deaf_remote.url.split('?', 1)[0]}'}}\n"
        f"    size: 1MiB\n    interval: 0\n    deadline: {DEADLINE_S}s\n"
        "    capture: false\n    native: false\n")
    proc = subprocess.Popen([sys.executable, "-m", "gitnetdiag", "watch", "--config",
                             str(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        ready = time.monotonic() + 30
        while True:
            try:
                _get(f"http://127.0.0.1:{port}/metrics", 5)
                break
            except OSError:
                assert time.monotonic() < ready, "the exporter did not come up"
                time.sleep(0.2)
        asked = time.monotonic()
        answer = _get(f"http://127.0.0.1:{port}/probe?target=muted", 90)
        took = time.monotonic() - asked
        metrics = _get(f"http://127.0.0.1:{port}/metrics", 10)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    assert deaf_remote.receiving.is_set(), "the push never reached receive-pack"
    assert took <= DEADLINE_S + 5, f"/probe answered after {took:.1f} s, deadline {DEADLINE_S} s"
    assert _value(answer, "gitnetdiag_probe_success", target="muted", protocol="h1",
                  error_kind="deadline") == 0.0, answer
    assert _value(metrics, "gitnetdiag_exporter_cycle_failures_total", target="muted",
                  kind="deadline") == 1.0, metrics
    assert _value(metrics, "gitnetdiag_cleanup_failures_total", target="muted",
                  protocol="h1") == 1.0, metrics
    (run_dir,) = [p for p in (tmp_path / "runs" / "muted").iterdir() if p.is_dir()]
    manifest = load_run(run_dir)
    push = manifest.protocols[0].pushes[0]
    assert push.cleanup == "unconfirmed" and push.cleanup_check_command, push
    assert TOKEN not in answer + metrics + stderr and "Traceback" not in stderr


class SilentHttp:
    """An HTTP server that accepts, reads the requests and never answers."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}/team/r.git"
        self.asked = threading.Event()
        """git's first request of a clone (``info/refs?service=git-upload-pack``) came."""


def _read(conn: socket.socket, remote: SilentHttp) -> None:
    seen = b""
    try:
        while chunk := conn.recv(4096):
            seen = (seen + chunk)[-4096:]
            if b"info/refs?service=git-upload-pack" in seen:
                remote.asked.set()
    except OSError:  # closed at the fixture's end
        return


@pytest.fixture()
def silent_http() -> Iterator[SilentHttp]:
    remote = SilentHttp()
    server = remote.server
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)
            threading.Thread(target=_read, args=(conn, remote), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield remote
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    server.close()


def test_fetch_cycle_stops_at_its_deadline_and_removes_its_clone(
    silent_http: SilentHttp, tmp_path: Path
) -> None:
    """A read-only target's clone that never gets an answer is stopped before the deadline:
    ``/probe`` answers in time with a ``deadline`` sample labelled ``direction="fetch"``,
    no branch is counted (a clone makes none) and the scratch clone directory is gone."""
    port = _free_port()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    config = tmp_path / "watch.yaml"
    config.write_text(
        f"listen: 127.0.0.1:{port}\nruns_dir: {tmp_path / 'runs'}\ntargets:\n"
        f"  - name: mirror\n    urls: {{h1: '{silent_http.url}'}}\n    direction: fetch\n"
        f"    interval: 0\n    timeout: 60s\n    deadline: {DEADLINE_S}s\n"
        "    capture: false\n    native: false\n")
    proc = subprocess.Popen([sys.executable, "-m", "gitnetdiag", "watch", "--config",
                             str(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "TMPDIR": str(scratch)})
    try:
        ready = time.monotonic() + 30
        while True:
            try:
                _get(f"http://127.0.0.1:{port}/metrics", 5)
                break
            except OSError:
                assert time.monotonic() < ready, "the exporter did not come up"
                time.sleep(0.2)
        asked = time.monotonic()
        answer = _get(f"http://127.0.0.1:{port}/probe?target=mirror", 90)
        took = time.monotonic() - asked
        metrics = _get(f"http://127.0.0.1:{port}/metrics", 10)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    assert silent_http.asked.is_set(), "the clone never asked for the refs"
    assert took <= DEADLINE_S + 5, f"/probe answered after {took:.1f} s, deadline {DEADLINE_S} s"
    assert _value(answer, "gitnetdiag_probe_success", target="mirror", direction="fetch",
                  protocol="h1", error_kind="deadline") == 0.0, answer
    assert _value(metrics, "gitnetdiag_exporter_cycle_failures_total", target="mirror",
                  kind="deadline") == 1.0, metrics
    assert "gitnetdiag_cleanup_failures_total{" not in metrics
    (run_dir,) = [p for p in (tmp_path / "runs" / "mirror").iterdir() if p.is_dir()]
    fetch = json.loads((run_dir / "fetch.json").read_text())
    assert fetch["status"] == "interrupted", fetch["status"]
    assert list(scratch.iterdir()) == [], "the scratch clone was left behind"
    print(f"/probe of the fetch target answered after {took:.1f} s (deadline {DEADLINE_S} s)")
    assert "Traceback" not in stderr
