"""A clone run's saved reports and a ``both`` probe's one summary (issue 44 item 4), against
the loopback git daemon (``git_daemon``), seeded with 1 MiB so the clones measure a pack.

- ``diagnose --direction fetch --format json --json F``: the run directory keeps
  ``report.md``, ``report.html`` and ``report.json`` as a push run does, whatever
  ``--format`` printed; F and stdout hold the same report.
- ``probe --direction both`` (no diagnosis): one summary on stdout, the pushes' table and the
  clones' after it, never the clones' whole report; ``--json F`` writes F alone, the clones
  under its ``fetch`` key; RUN-fetch keeps the clones' reports.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gitnetdiag.rundir.files import REPORT_FILES


def _gitnetdiag(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "gitnetdiag", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_a_clone_run_saves_its_reports_whatever_the_format(git_daemon: str,
                                                           tmp_path: Path) -> None:
    run, out = tmp_path / "run", tmp_path / "f.json"
    proc = _gitnetdiag(tmp_path, "diagnose", "--git", git_daemon, "--direction", "fetch",
                       "--fetch-seed", "1MiB", "--format", "json", "--json", str(out),
                       "--out", str(run), "--no-capture")
    printed = json.loads(proc.stdout)
    assert printed["direction"] == "fetch", printed
    assert sorted(p.name for p in run.iterdir() if p.name.startswith("report.")) == sorted(
        REPORT_FILES.values())
    saved = json.loads((run / "report.json").read_text())
    assert saved == printed == json.loads(out.read_text())
    assert "git://" in (run / "report.md").read_text()
    assert (run / "report.html").read_text().lstrip().lower().startswith("<!doctype html")


def test_a_both_probe_without_diagnosis_is_one_summary_and_one_file(git_daemon: str,
                                                                   tmp_path: Path) -> None:
    run, out = tmp_path / "run", tmp_path / "s.json"
    proc = _gitnetdiag(tmp_path, "probe", "--git", git_daemon, "--direction", "both",
                       "--size", "1MiB", "--fetch-seed", "1MiB", "--json", str(out),
                       "--out", str(run), "--no-capture")
    assert proc.stdout.count("gitnetdiag probe ") == 1, proc.stdout
    assert proc.stdout.count("clones run-fetch (") == 1, proc.stdout
    assert f"clones' run directory: {tmp_path / 'run-fetch'}\n" in proc.stdout, proc.stdout
    assert "gitnetdiag report" not in proc.stdout, proc.stdout  # no clones' whole report
    assert proc.stdout.index("gitnetdiag probe ") < proc.stdout.index("clones ")
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["s.json"]
    summary = json.loads(out.read_text())
    assert summary["run_dir"] == str(run) and summary["protocols"][0]["protocol"] == "git"
    fetch = summary["fetch"]
    assert fetch["run_dir"] == str(tmp_path / "run-fetch")
    (clone,) = fetch["protocols"]
    assert clone["protocol"] == "git" and clone["pushes_ok"] >= 1 and clone["bytes"] > 2**20
    assert (tmp_path / "run-fetch" / "report.json").is_file()
    assert fetch["verdict"] == json.loads(
        (tmp_path / "run-fetch" / "report.json").read_text())["verdict"]
