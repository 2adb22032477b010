"""Issue 24: the README's commands leave the checkout as it was; ``-`` is stdout everywhere.

The offline commands of the README's "First thing to try" run against the
recorded runs in ``captures/`` themselves (as a new user types them): every file
there keeps its bytes, nothing is added, and ``git status`` says the same after
as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.httpremote import HttpRemote

REPO = Path(__file__).resolve().parents[2]
CAPTURES = REPO / "captures"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200", "NO_COLOR": "1"}


def gitnetdiag(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitnetdiag", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd, env=_env())


def readme_offline_commands() -> list[list[str]]:
    """The gitnetdiag commands of the README's code block under "First thing to try"."""
    text = (REPO / "README.md").read_text()
    section = text.split("## First thing to try", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    commands = []
    for line in block.splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith(".venv/bin/gitnetdiag "):
            commands.append(shlex.split(line)[1:])
    return commands


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _git_status() -> str | None:
    if not (REPO / ".git").exists() or not shutil.which("git"):
        return None
    return subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--ignored"],
                          capture_output=True, text=True, timeout=60, check=True).stdout


def test_readme_offline_commands_leave_the_checkout_alone() -> None:
    """Each README command exits 0 and changes no file of the checkout."""
    commands = readme_offline_commands()
    assert len(commands) >= 4, commands
    files, status = _tree(CAPTURES), _git_status()
    top = sorted(p.name for p in REPO.iterdir())
    for args in commands:
        proc = gitnetdiag(*args, cwd=REPO)
        assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert proc.returncode == 0, (args, proc.stderr[-2000:])
        assert _tree(CAPTURES) == files, f"{args} changed captures/"
        assert sorted(p.name for p in REPO.iterdir()) == top, f"{args} added a file"
        assert _git_status() == status, f"{args} changed what git status shows"


def test_analyze_out_writes_there_only(tmp_path: Path) -> None:
    """analyze RUN --diagnose --out DIR: the reports and observations in DIR, the run as it was."""
    before = _tree(CAPTURES / "h2-small-window")
    out = tmp_path / "reports"
    proc = gitnetdiag("analyze", str(CAPTURES / "h2-small-window"), "--diagnose", "--out",
                      str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(p.name for p in out.iterdir()) == [
        "observations.json", "report.html", "report.json", "report.md"]
    assert json.loads((out / "report.json").read_text())["culprits"][0]["id"] == (
        "h2-flow-control-window")
    assert _tree(CAPTURES / "h2-small-window") == before


def test_out_without_diagnose_is_refused(tmp_path: Path) -> None:
    proc = gitnetdiag("analyze", str(CAPTURES / "healthy" / "h1-1.pcap"), "--out",
                      str(tmp_path / "x"), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0] == (
        "error [usage]: --out goes with --diagnose on a run directory (hint: add --diagnose, "
        "or use --json OUT for a capture's analysis)")


@pytest.mark.parametrize("args", [
    ("report", "{healthy}", "-o", "-"),
    ("report", "{healthy}", "--format", "json", "--out", "-"),
    ("compare", "{healthy}", "{healthy}", "--format", "json", "-o", "-"),
    ("diagnose", "--capture", "{healthy}/h1-1.pcap", "--json", "-"),
    ("analyze", "{healthy}/h1-1.pcap", "--json", "-"),
])
def test_dash_is_stdout(args: tuple[str, ...], tmp_path: Path) -> None:
    """'-' as --json / -o / --out: the output on stdout, no file named '-'."""
    argv = [a.replace("{healthy}", str(CAPTURES / "healthy")) for a in args]
    proc = gitnetdiag(*argv, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not (tmp_path / "-").exists()
    if any("json" in arg for arg in args):
        json.loads(proc.stdout)
    else:
        assert proc.stdout.startswith("verdict: HEALTHY")


def test_load_json_dash_keeps_stdout_json(tmp_path: Path) -> None:
    """load --json -: the report JSON alone on stdout (its tables on stderr)."""
    results = {"format": "gitnetdiag-locust-results/1", "state": "stopped",
               "records": [{"op": "clone", "slot": 0, "start_epoch": 1.0, "wall_s": 1.0,
                            "ok": True}],
               "target": "git://h/r.git", "protocol": "git", "ops": ["clone"], "mix": [1],
               "timeout_s": 10, "started_epoch": 1.0, "stopped_epoch": 2.0, "users": 1,
               "workers": 1, "locust_counts": {}, "locust_failures": {}}
    (tmp_path / "locust.json").write_text(json.dumps(results))
    proc = gitnetdiag("load", "--locust-results", str(tmp_path / "locust.json"), "--json", "-",
                      cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)
    assert not (tmp_path / "-").exists()


def test_diagnose_json_dash_keeps_stdout_json(tmp_path: Path) -> None:
    """diagnose --json -: the summary JSON alone on stdout (the diagnosis on stderr)."""
    proc = gitnetdiag("diagnose", "--http", "https://127.0.0.1:1/x.git", "--no-capture",
                      "--no-native", "--size", "64KiB", "--timeout", "20", "--out",
                      str(tmp_path / "run"), "--json", "-", cwd=tmp_path)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 9, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)
    assert summary["status"] == "failed" and summary["errors"][0]["stage"] == "push"
    assert "verdict: FAILED" in proc.stderr
    assert not (tmp_path / "-").exists()


def test_https_to_a_plain_http_port_says_so(http_remote: HttpRemote, tmp_path: Path) -> None:
    """https:// to a port that answers plain HTTP: named as such, not a CA problem."""
    url = re.sub(r"^http:", "https:", http_remote.url)
    proc = gitnetdiag("probe", "--http", url, "--protocols", "h1", "--no-native",
                      "--no-capture", "--size", "64KiB", "--timeout", "20", "--out",
                      str(tmp_path / "run"), cwd=tmp_path)
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error")]
    assert proc.returncode != 0 and len(errors) == 1, proc.stderr[-2000:]
    assert errors[0].startswith("error [https-to-plain-http]: "), errors[0]
    assert errors[0].endswith("(hint: the port speaks plain HTTP, not TLS: use an http:// URL "
                              "for it, or the server's HTTPS port)"), errors[0]
    assert "--ca-file" not in errors[0]
