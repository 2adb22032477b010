"""The Locust user with several remotes, on loopback: the master's URLs reach the workers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

from gitnetdiag.model.load.records import LoadReport
from tests.load.conftest import remote_refs

VENV_BIN = Path(sys.executable).parent
LOCUSTFILE = Path(__file__).resolve().parents[2] / "gitnetdiag" / "load" / "locustfile.py"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_locust_refuses_a_protocol_mix_in_one_line() -> None:
    proc = subprocess.run(
        [str(VENV_BIN / "locust"), "-f", str(LOCUSTFILE), "--headless", "-u", "1", "-t", "1s",
         "--git-url", "git://127.0.0.1:1/a.git", "https://127.0.0.1:1/b.git"],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if "gitnetdiag locustfile" in line]
    assert len(lines) == 1 and "usage: the URLs mix protocols" in lines[0]
    assert "Traceback" not in proc.stderr


def test_master_spreads_a_worker_over_two_remotes(
    two_repos: tuple[str, str], tmp_path: Path
) -> None:
    """The worker is given no --git-url: both URLs come from the master."""
    before = [remote_refs(url) for url in two_repos]
    web_port, master_port = _free_port(), _free_port()
    logs = tmp_path / "worker-log"
    # -t: the workers' set-up (cloning both remotes) eats into the run; 2 s gave 31 operations
    # on a quiet 2-core machine but 7-13 with two CPU hogs, 6 s gives 30-62 there.
    # --autoquit: the collector needs the master up until stop + FINAL_REPORT_WAIT_S (4 s)
    # plus its polls; 6 s lost that race under load ("Connection refused").
    master = subprocess.Popen(
        [str(VENV_BIN / "locust"), "-f", str(LOCUSTFILE), "--master",
         "--master-bind-host", "127.0.0.1", "--master-bind-port", str(master_port),
         "--web-host", "127.0.0.1", "--web-port", str(web_port), "--autostart",
         "--autoquit", "12", "-u", "4", "-r", "4", "-t", "6s", "--expect-workers", "1",
         "--git-url", *two_repos, "--git-protocol", "git",
         "--git-ops", "clone,fetch,push,ls-remote", "--git-timeout", "20"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = subprocess.Popen(
        [str(VENV_BIN / "locust"), "-f", str(LOCUSTFILE), "--worker",
         "--master-host", "127.0.0.1", "--master-port", str(master_port)],
        env={**os.environ, "GITNETDIAG_LOCUST_WORKER_LOG": str(logs)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        collect = subprocess.run(
            [sys.executable, "-m", "gitnetdiag", "load", "--locust-master",
             f"127.0.0.1:{web_port}", "--wait", "60", "--json", str(tmp_path / "l.json")],
            capture_output=True, text=True, timeout=90)
        assert collect.returncode == 0, collect.stderr[-3000:]
        for proc in (master, worker):
            proc.wait(timeout=60)
    finally:
        for proc in (master, worker):
            if proc.poll() is None:
                proc.kill()
    report = LoadReport.from_dict(json.loads((tmp_path / "l.json").read_text()))
    assert report.targets == two_repos
    made = [json.loads(line) for path in logs.glob("worker-*.jsonl")
            for line in path.read_text().splitlines()]
    step = report.steps[0]
    assert step.ops == len(made) > 8 and step.failed == 0
    made_by_target = Counter(r["target"] for r in made)
    assert {t.target: t.ops for t in step.by_target} == made_by_target
    for share in step.by_target:
        assert share.url == two_repos[share.target]
        assert set(share.ops_by_op) == {"clone", "fetch", "push", "ls-remote"}
    assert [remote_refs(url) for url in two_repos] == before
