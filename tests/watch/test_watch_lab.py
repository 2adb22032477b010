"""Issue 17's acceptance: a real Prometheus scrapes `gitnetdiag watch` probing two labs.

One lab has the small HTTP/2 window (Apache ``H2WindowSize 65535``, probed directly:
the HAProxy edge with that window sometimes hangs, LAB-NOTES), the other is healthy.
Prometheus's query API must return the push rate per protocol, the
``h2-flow-control-window`` score above 0.5 on the first and below it on the second.
Then the healthy lab's HTTPS edge is killed in the middle of a cycle:
``probe_success`` drops to 0 with the error kind as a label, and once the edge is back
the next cycle recovers without restarting the exporter. The server refs are the same
before and after: every throwaway branch was deleted.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gitnetdiag.model.lab.state import LabState
from tests.conftest import LabFactory

# The idle lane (tests/conftest.py): most of its minute is waiting for scrapes, the edge's
# failure and recovery; its 2 MiB pushes are small, and the window it scores binds at
# 1.3 MB/s against some 8 MB/s (the first run, beside measuring tests, passed).
pytestmark = [pytest.mark.lab, pytest.mark.lab_lane("fail")]

Vector = list[dict[str, Any]]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def server_refs(state: LabState) -> dict[str, str]:
    out = subprocess.run(
        ["git", "--git-dir", state.repo_path, "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True, text=True, check=True, timeout=30).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


@contextmanager
def running(argv: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Prometheus:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def query(self, expr: str) -> Vector:
        url = f"{self.base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        try:
            with urllib.request.urlopen(url, timeout=10) as answer:
                data = json.loads(answer.read())
        except OSError:
            return []
        result: Vector = data["data"]["result"]
        return result

    def wait(self, expr: str, ok: Callable[[Vector], bool], timeout_s: float,
             why: str) -> Vector:
        deadline = time.monotonic() + timeout_s
        result: Vector = []
        while time.monotonic() < deadline:
            result = self.query(expr)
            if ok(result):
                return result
            time.sleep(0.25)  # a query is cheap: four polls a scrape interval
        raise AssertionError(f"{why}: {expr} gave {result} after {timeout_s:.0f} s")


def by_target(result: Vector, key: str = "target") -> dict[str, float]:
    return {r["metric"][key]: float(r["value"][1]) for r in result}


def test_prometheus_scrapes_watch_against_the_lab(lab_factory: LabFactory,
                                                  tmp_path: Path) -> None:
    prometheus_exe = shutil.which("prometheus")
    assert prometheus_exe, "prometheus is missing: scripts/setup.sh installs it"
    small = lab_factory("h2-small-window", apache_h2_window=65535)
    healthy = lab_factory("healthy")
    refs_before = {lab.instance: server_refs(lab) for lab in (small, healthy)}
    exporter_port, prometheus_port = free_port(), free_port()
    (tmp_path / "watch.yaml").write_text(f"""
listen: 127.0.0.1:{exporter_port}
runs_dir: {tmp_path / "runs"}
keep_runs: 3
max_parallel: 2
targets:
  - name: small-window
    lab: {small.instance}
    lab_http: direct
    interval: 1s
    size: 2MiB
    timeout: 30s
  - name: healthy
    lab: {healthy.instance}
    interval: 1s
    size: 2MiB
    timeout: 30s
""")
    (tmp_path / "prometheus.yml").write_text(f"""
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: gitnetdiag
    static_configs:
      - targets: ["127.0.0.1:{exporter_port}"]
""")
    exporter_argv = [sys.executable, "-m", "gitnetdiag", "watch", "--config",
                     str(tmp_path / "watch.yaml")]
    prometheus_argv = [prometheus_exe, f"--config.file={tmp_path / 'prometheus.yml'}",
                       f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                       f"--web.listen-address=127.0.0.1:{prometheus_port}"]
    with running(exporter_argv, tmp_path / "watch.log") as exporter, \
            running(prometheus_argv, tmp_path / "prometheus.log"):
        prom = Prometheus(prometheus_port)
        scores = prom.wait(
            'gitnetdiag_culprit_score{culprit="h2-flow-control-window"}',
            lambda r: len(r) == 2, 150, "no h2-flow-control-window score for both targets")
        assert by_target(scores)["small-window"] > 0.5, scores
        assert by_target(scores)["healthy"] < 0.5, scores
        # Every push has a rate, except an HTTP/2 push that libcurl 7.88.1 hung for good
        # under the 64 KiB window (docs/culprits.md; a fresh-clone run saw it in every cycle
        # of 55 s): that one must be named hung, with no rate.
        everything = {(t, p) for t in ("small-window", "healthy") for p in ("h1", "h2", "ssh")}

        def named(vector: Vector) -> set[tuple[str, str]]:
            return {(r["metric"]["target"], r["metric"]["protocol"]) for r in vector}

        def hung_small_h2() -> bool:
            return bool(prom.query('gitnetdiag_probe_success{target="small-window",'
                                   'protocol="h2",error_kind=~"hung|timeout"} == 0'))

        rates = prom.wait(
            'gitnetdiag_last_transfer_rate_bytes_per_second{direction="push"}',
            lambda r: named(r) == everything or (
                everything - named(r) == {("small-window", "h2")} and hung_small_h2()),
            90, "no push rate (or hung HTTP/2 push) for every protocol")
        assert named(rates) <= everything
        assert everything - named(rates) <= {("small-window", "h2")}
        assert all(float(r["value"][1]) > 0 for r in rates), rates
        # Degraded while its HTTP/2 push passes; failed when that push (the protocol's only
        # one of the cycle) hung: a protocol whose transfers all failed fails the run.
        # A 2 MiB push's window cost sits near the verdict's noticeable time: a loaded
        # fresh-clone run's cycle (HTTP/1.1 2.07 MB/s, HTTP/2 1.57 MB/s) priced the window at
        # 0.51 s and dropped it, healthy. So the verdict is awaited over the next cycles.

        def verdict_shown(vector: Vector) -> bool:
            verdicts = {r["metric"]["verdict"] for r in vector}
            return verdicts == {"degraded"} or (verdicts == {"failed"} and hung_small_h2())

        prom.wait('gitnetdiag_verdict{target="small-window"} == 1', verdict_shown, 60,
                  "small-window's verdict neither degraded nor failed with a hung HTTP/2 push")
        assert prom.query('gitnetdiag_h2_window_bytes{target="small-window",window="stream"}')[
            0]["value"][1] == "65535"
        rate_histogram = prom.query(
            'gitnetdiag_transfer_rate_bytes_per_second_count{target="healthy",direction="push",'
            'protocol="h2"}')
        assert rate_histogram and float(rate_histogram[0]["value"][1]) >= 1

        # Kill the healthy lab's HTTPS edge while one of its cycles is running.
        target_dir = tmp_path / "runs" / "healthy"
        logs_before = set(target_dir.glob("*.log"))
        deadline = time.monotonic() + 60
        while not set(target_dir.glob("*.log")) - logs_before and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)
        os.kill(healthy.pids["haproxy"], signal.SIGKILL)
        failed = prom.wait(
            'gitnetdiag_probe_success{target="healthy",protocol="h2"} == 0',
            lambda r: bool(r), 120, "probe_success did not drop with the edge down")
        failed_kinds = {r["metric"].get("error_kind") for r in failed}
        assert failed_kinds <= {"refused", "reset", "hung", "timeout"}, failed
        ssh_ok = prom.query('gitnetdiag_probe_success{target="healthy",protocol="ssh"}')
        assert ssh_ok and ssh_ok[0]["value"][1] == "1", ssh_ok  # only the edge is down

        edge = subprocess.Popen(
            ["ip", "netns", "exec", healthy.server_ns, "haproxy", "-f",
             str(Path(healthy.state_dir) / "haproxy.cfg"), "-db"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            prom.wait('gitnetdiag_probe_success{target="healthy",protocol="h2",error_kind=""}'
                      ' == 1', lambda r: bool(r), 120, "no recovery after the edge came back")
            assert exporter.poll() is None, "the exporter exited"
            failures = prom.query('gitnetdiag_probes_total{target="healthy",result="failure"}')
            assert float(failures[0]["value"][1]) >= 1
        finally:
            edge.terminate()
            edge.wait(timeout=30)
    assert {lab.instance: server_refs(lab) for lab in (small, healthy)} == refs_before
    print(f"error kinds seen with the edge down: {sorted(failed_kinds)}")
