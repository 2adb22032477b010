"""``report RUN`` and ``analyze RUN`` of a fetch run directory: the fetch report again, in every
format, from a real clone of a loopback git daemon; a damaged one is one line and exit != 0."""

from __future__ import annotations

import contextlib
import html
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gitnetdiag.probe.fetchrun import run_fetch_probe
from gitnetdiag.probe.options import ProbeOptions
from gitnetdiag.report.plots import WINDOW_TITLE
from gitnetdiag.report.transfers import TRANSFER_REPORT_SCHEMA, direction_line
from gitnetdiag.vocabulary import TransportKind
from tests.probe.test_fetch_daemon import history_daemon

REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitnetdiag", *args], capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"})


@pytest.fixture(scope="module")
def cloned_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real fetch run (a clone of this project's history from a loopback git daemon)."""
    tmp = tmp_path_factory.mktemp("fetchrun")
    daemon = contextlib.contextmanager(history_daemon.__wrapped__)  # type: ignore[attr-defined]
    with daemon(tmp) as (url, _):
        out = tmp / "run"
        outcome = run_fetch_probe(ProbeOptions(
            urls={TransportKind.GIT: url}, protocols=(TransportKind.GIT,), size_bytes=0, seed=0,
            repo=None, repeat=1, ca_file=None, insecure=False, ssh_command=None, out_dir=out,
            full=False, burst=0, timeout_s=120.0, capture=False))
    assert outcome.error is None
    return out


@pytest.fixture()
def fetch_run(cloned_run: Path, tmp_path: Path) -> Path:
    """A copy of the fetch run this test may damage."""
    return Path(shutil.copytree(cloned_run, tmp_path / "run"))


def test_report_rerenders_a_fetch_run_in_every_format(fetch_run: Path) -> None:
    """Each format names the direction and shows the clone; HTML carries the window plot."""
    texts = {}
    for fmt in ("terminal", "md", "html", "json"):
        proc = _cli("report", str(fetch_run), "--format", fmt)
        assert proc.returncode == 0, proc.stderr
        texts[fmt] = proc.stdout
    report = json.loads(texts["json"])
    assert report["schema"] == TRANSFER_REPORT_SCHEMA and report["direction"] == "fetch"
    assert report["seed"] is None
    assert report["verdict"] in ("healthy", "degraded") and report["measurement_failures"] == []
    (fetch,) = report["fetches"]
    assert fetch["protocol"] == "git" and fetch["outcome"] == "ok" and fetch["moved_bytes"] > 0
    for fmt in ("terminal", "md"):
        assert direction_line("fetch") in texts[fmt]
        assert "git #1" in texts[fmt] and "nothing was written on the server" in texts[fmt]
    assert "| protocol | outcome |" in texts["md"]
    assert "download direction (fetch)" in texts["html"]
    assert f'alt="{html.escape(WINDOW_TITLE)}"' in texts["html"]
    assert "data:image/png;base64," in texts["html"]


def test_analyze_of_a_fetch_run_prints_its_report(fetch_run: Path, tmp_path: Path) -> None:
    proc = _cli("analyze", str(fetch_run), "--json", str(tmp_path / "a.json"))
    assert proc.returncode == 0, proc.stderr
    assert direction_line("fetch") in proc.stdout
    assert json.loads((tmp_path / "a.json").read_text())["direction"] == "fetch"
    proc = _cli("analyze", str(fetch_run), "--json", "-")
    assert json.loads(proc.stdout)["direction"] == "fetch"


@pytest.mark.parametrize("damage", ["not json", '{"schema": "gitnetdiag.fetch/1"}', "[]"])
def test_a_damaged_fetch_run_is_one_line_and_fails(fetch_run: Path, damage: str) -> None:
    (fetch_run / "fetch.json").write_text(damage)
    for command in ("report", "analyze"):
        proc = _cli(command, str(fetch_run))
        assert proc.returncode != 0
        assert "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "bad-run-dir" in lines[0], proc.stderr


def test_missing_and_garbled_artifacts_still_render(fetch_run: Path) -> None:
    """A clone's files lost or garbled: the report says less, it does not crash (its only
    clone's TCP_INFO garbled, the run has no TCP evidence: inconclusive, as a push's)."""
    for path in fetch_run.glob("fetch-git-1.*"):
        if path.name.endswith("tcpinfo.jsonl"):
            path.write_text('{"t_s": "x"}\nnot json\n{"counters": 5}\n')
        else:
            path.unlink()
    proc = _cli("report", str(fetch_run), "--format", "html")
    assert proc.returncode == 8 and "no-tcp-evidence" in proc.stderr, proc.stderr
    assert "no clone was measured" not in proc.stdout
    shutil.rmtree(fetch_run)
    proc = _cli("report", str(fetch_run))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
