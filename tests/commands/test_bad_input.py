"""Bad input through the real CLI: one line ``error [ref]: message (hint: ...)``, no traceback.

Every case runs ``python -m gitnetdiag`` in a subprocess (the console script's
``cli.main``), so click's usage errors, our error tree and anything that
escapes both show exactly as a user would see them. The table gives the
exit code and the exact first line of stderr; ``{run}`` and ``{tmp}`` stand for
the case's run directory and scratch directory.

Files the commands write (``--json``, ``--out``) get their missing parent
directories created; a path that cannot be written is one usage error.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
HEALTHY = REPO / "captures" / "healthy"
RUN_HINT = ("(hint: the run directory is damaged or was not written by gitnetdiag probe; "
            "run the probe again or ask for the original directory)")
URL_HINT = "(hint: give a URL such as https://git.example.com/team/repo.git)"
LOCUST_HINT = "(hint: give the results of a master running gitnetdiag's locustfile)"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200", "NO_COLOR": "1"}


def gitnetdiag(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitnetdiag", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd, env=_env())


def _edit_json(path: Path, change: Callable[[Any], Any]) -> None:
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


def _first_push(manifest: dict[str, Any]) -> dict[str, Any]:
    push: dict[str, Any] = manifest["protocols"][0]["pushes"][0]
    return push


def _set_push(**fields: Any) -> Callable[[Path], None]:
    def setup(run: Path) -> None:
        def change(data: dict[str, Any]) -> dict[str, Any]:
            _first_push(data).update(fields)
            return data
        _edit_json(run / "manifest.json", change)
    return setup


def _set_capture_path(path: str) -> Callable[[Path], None]:
    def setup(run: Path) -> None:
        def change(data: dict[str, Any]) -> dict[str, Any]:
            _first_push(data)["capture"]["path"] = path
            return data
        _edit_json(run / "manifest.json", change)
    return setup


def _set_key(name: str, key: str, value: Any) -> Callable[[Path], None]:
    def setup(run: Path) -> None:
        _edit_json(run / name, lambda data: {**data, key: value})
    return setup


def _write(name: str, text: str) -> Callable[[Path], None]:
    def setup(run: Path) -> None:
        (run / name).write_text(text)
    return setup


def _locust(payload: Any) -> Callable[[Path], None]:
    def setup(run: Path) -> None:
        (run / "locust.json").write_text(json.dumps(payload))
    return setup


_LOCUST_OK = {"format": "gitnetdiag-locust-results/1", "state": "stopped", "records": [],
              "target": "git://h/r.git", "protocol": "git", "ops": ["clone"], "mix": [1],
              "timeout_s": 10, "started_epoch": 1.0, "stopped_epoch": 2.0, "users": 1,
              "workers": 1, "locust_counts": {}, "locust_failures": {}}


def _without(data: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != key}


def _nothing(_run: Path) -> None:
    return None


@dataclass(frozen=True)
class Case:
    """One bad input: how to damage a copy of a recorded run, the command, what it says."""

    args: tuple[str, ...]
    code: int
    first_line: str
    setup: Callable[[Path], None] = _nothing
    extra: tuple[str, ...] = field(default=())


CASES: dict[str, Case] = {
    # --- typer/click usage errors: one line, not a box
    "unknown-option": Case(("report", "{run}", "--bogus"), 2,
                           "error [usage]: No such option: --bogus (Possible options: --out) "
                           "(hint: see 'gitnetdiag report --help')"),
    "missing-argument": Case(("report",), 2,
                             "error [usage]: Missing argument 'run_dir'. "
                             "(hint: see 'gitnetdiag report --help')"),
    "bad-choice": Case(("report", "{run}", "--format", "pdf"), 2,
                       "error [usage]: Invalid value for '--format' / '-f': 'pdf' is not one of "
                       "'terminal', 'md', 'html', 'json'. (hint: see 'gitnetdiag report --help')"),
    "bad-integer": Case(("probe", "--repeat", "many"), 2,
                        "error [usage]: Invalid value for '--repeat': Input should be a valid "
                        "integer, unable to parse string as an integer "
                        "(hint: see 'gitnetdiag probe --help')"),
    "unknown-command": Case(("frobnicate",), 2,
                            "error [usage]: No such command 'frobnicate'. "
                            "(hint: see 'gitnetdiag --help')"),
    # --- URLs and keys, refused before anything runs
    "malformed-url": Case(("diagnose", "--http", "http://[::1/x.git"), 2,
                          "error [bad-url]: --http http://[::1/x.git is not a valid URL: "
                          f"Invalid IPv6 URL {URL_HINT}"),
    "unsupported-scheme": Case(("diagnose", "--http", "ftp://user:secret@host/x.git"), 2,
                               "error [unsupported-url]: --http ftp://***@host/x.git has scheme "
                               "'ftp'; --http takes http:// or https:// URLs " + URL_HINT),
    "port-out-of-range": Case(("probe", "--http", "https://host:99999/x.git"), 2,
                              "error [bad-url]: --http https://host:99999/x.git is not a valid "
                              f"URL: Port out of range 0-65535 {URL_HINT}"),
    "public-ssh-key": Case(("probe", "--ssh", "ssh://git@host/x.git", "--ssh-key",
                            "{tmp}/id_ed25519.pub"), 2,
                           "error [ssh-public-key]: --ssh-key {tmp}/id_ed25519.pub is a public "
                           "key (hint: give the private key ({tmp}/id_ed25519) or leave "
                           "--ssh-key out to use ssh-agent)"),
    # --- outputs that cannot be written
    "report-out-under-a-file": Case(("report", "{run}", "--out", "{run}/manifest.json/r.md"), 2,
                                    "error [cannot-write]: cannot write "
                                    "{run}/manifest.json/r.md: {run}/manifest.json is not a "
                                    "directory (hint: choose a "
                                    "writable file path (missing directories are created))"),
    "analyze-json-under-a-file": Case(("analyze", "{run}/h1-1.pcap", "--json",
                                       "{run}/h1-1.pcap/a.json"), 2,
                                      "error [cannot-write]: cannot write "
                                      "{run}/h1-1.pcap/a.json: {run}/h1-1.pcap is not a "
                                      "directory (hint: choose a "
                                      "writable file path (missing directories are created))"),
    # --- run directories with wrong types or crafted paths
    "manifest-wrong-type": Case(("report", "{run}"), 3,
                                "error [bad-run-dir]: {run}/manifest.json: "
                                "manifest.protocols[0].pushes[0].wall_s must be a number, got "
                                f"'fast' {RUN_HINT}", _set_push(wall_s="fast")),
    "manifest-unknown-outcome": Case(("report", "{run}"), 3,
                                     "error [bad-run-dir]: {run}/manifest.json: "
                                     "manifest.protocols[0].pushes[0].outcome must be one of "
                                     "'ok', 'bounded', 'stalled', 'hung', 'failed', "
                                     f"'interrupted', 'no-data', got 'exploded' {RUN_HINT}",
                                     _set_push(outcome="exploded")),
    "manifest-unknown-failure-kind": Case(("analyze", "{run}"), 3,
                                          "error [bad-run-dir]: {run}/manifest.json: "
                                          "manifest.protocols[0].pushes[0].failure_kind must "
                                          "be one of 'hung', 'timeout', 'refused', "
                                          "'unreachable', 'reset', 'tls', 'plain-http', 'auth', "
                                          "'host-key', 'http-status', 'server-error', 'rejected', "
                                          "'interrupted', "
                                          f"'other', got 'gremlins' {RUN_HINT}",
                                          _set_push(failure_kind="gremlins")),
    "manifest-unknown-cleanup": Case(("report", "{run}"), 3,
                                     "error [bad-run-dir]: {run}/manifest.json: "
                                     "manifest.protocols[0].pushes[0].cleanup must be one of "
                                     "'deleted', 'never-created', 'leftover', 'unconfirmed', "
                                     f"'not-run', 'failed', got 'maybe' {RUN_HINT}",
                                     _set_push(cleanup="maybe")),
    "manifest-list-for-object": Case(("analyze", "{run}"), 3,
                                     "error [bad-run-dir]: {run}/manifest.json: "
                                     "manifest.protocols[0].pushes[0].artifacts must be an "
                                     f"object, got list {RUN_HINT}", _set_push(artifacts=[])),
    "manifest-not-json": Case(("report", "{run}"), 3,
                              "error [bad-run-dir]: {run}/manifest.json is not JSON: Expecting "
                              f"value: line 1 column 1 (char 0) {RUN_HINT}",
                              _write("manifest.json", "garbage")),
    "capture-path-escapes": Case(("analyze", "{run}"), 3,
                                 "error [bad-run-dir]: {run}/manifest.json: "
                                 "protocols.h1.pushes[1].capture.path '../../etc/passwd' points "
                                 f"outside the run directory {RUN_HINT}",
                                 _set_capture_path("../../etc/passwd")),
    "capture-path-absolute": Case(("report", "{run}", "--reanalyze"), 3,
                                  "error [bad-run-dir]: {run}/manifest.json: "
                                  "protocols.h1.pushes[1].capture.path '/etc/passwd' is not a "
                                  f"path inside the run directory {RUN_HINT}",
                                  _set_capture_path("/etc/passwd")),
    "native-h2-wrong-type": Case(("report", "{run}", "--reanalyze"), 3,
                                 "error [bad-run-dir]: native-h2.json."
                                 "server_initial_window_bytes must be an integer, got '64k' "
                                 + RUN_HINT,
                                 _set_key("native-h2.json", "server_initial_window_bytes", "64k")),
    "native-h2-nested-wrong-type": Case(("analyze", "{run}", "--diagnose"), 3,
                                        "error [bad-run-dir]: native-h2.json.stream must be an "
                                        f"object, got list {RUN_HINT}",
                                        _set_key("native-h2.json", "stream", [1, 2])),
    "native-ssh-wrong-type": Case(("report", "{run}", "--reanalyze"), 3,
                                  "error [bad-run-dir]: native-ssh.json.window_adjusts must be "
                                  f"an integer, got [1] {RUN_HINT}",
                                  _set_key("native-ssh.json", "window_adjusts", [1])),
    "native-h2-a-list": Case(("report", "{run}", "--reanalyze"), 3,
                             "error [bad-run-dir]: {run}/native-h2.json must hold a JSON "
                             f"object, got list {RUN_HINT}", _write("native-h2.json", "[]")),
    "host-json-wrong-type": Case(("report", "{run}", "--reanalyze"), 3,
                                 "error [bad-host-report]: host report: counters.ListenOverflows "
                                 "is 'lots', not an integer (hint: pass the JSON written by "
                                 "`gitnetdiag host --json FILE`)",
                                 _write("host.json", json.dumps(
                                     {"schema": "gitnetdiag.host/1",
                                      "counters": {"ListenOverflows": "lots"}}))),
    "observations-wrong-type": Case(("report", "{run}"), 3,
                                    "error [bad-observations]: observations field "
                                    "observations.run.rtt_s must be a number, got 'slow' (hint: "
                                    "compare it with the fields documented in "
                                    "gitnetdiag/diagnosis/observations.py)",
                                    lambda run: _edit_json(
                                        run / "observations.json",
                                        lambda d: {**d, "run": {**d["run"], "rtt_s": "slow"}})),
    # --- load --locust-results
    "locust-missing-key": Case(("load", "--locust-results", "{run}/locust.json"), 3,
                               "error [bad-locust-results]: Locust results: missing key "
                               f"'records' {LOCUST_HINT}",
                               _locust(_without(_LOCUST_OK, "records"))),
    "locust-a-list": Case(("load", "--locust-results", "{run}/locust.json"), 3,
                          "error [bad-locust-results]: Locust results: expected a JSON object, "
                          f"got list {LOCUST_HINT}", _locust([_LOCUST_OK])),
    "locust-record-wrong-type": Case(("load", "--locust-results", "{run}/locust.json"), 3,
                                     "error [bad-locust-results]: Locust results: records[0]: "
                                     f"wall_s is str, expected int or float {LOCUST_HINT}",
                                     _locust({**_LOCUST_OK, "records": [
                                         {"op": "clone", "slot": 0, "start_epoch": 1.0,
                                          "wall_s": "1s", "ok": True}]})),
}


@pytest.fixture
def run_copy(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(HEALTHY, run)
    return run


def _fill(text: str, run: Path, tmp: Path) -> str:
    return text.replace("{run}", str(run)).replace("{tmp}", str(tmp))


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_one_line_with_exit_code(name: str, run_copy: Path, tmp_path: Path) -> None:
    """The exact first stderr line and exit code of each bad input; never a traceback."""
    case = CASES[name]
    case.setup(run_copy)
    (tmp_path / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (tmp_path / "id_ed25519.pub").write_text("ssh-ed25519 AAAAC3Nza test\n")
    proc = gitnetdiag(*(_fill(arg, run_copy, tmp_path) for arg in case.args), cwd=tmp_path)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.splitlines()
    assert lines, f"nothing on stderr (exit {proc.returncode})"
    assert (proc.returncode, lines[0]) == (case.code, _fill(case.first_line, run_copy, tmp_path))
    assert [line for line in lines if line.startswith("error")] == lines[:1]


def test_outputs_into_missing_directories_are_created(run_copy: Path, tmp_path: Path) -> None:
    """--json / --out of analyze and report: the parents are made, the files written."""
    report = tmp_path / "new" / "deeper" / "report.md"
    proc = gitnetdiag("report", str(run_copy), "--format", "md", "--out", str(report),
                      cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert report.read_text().startswith("# gitnetdiag report")
    analysis = tmp_path / "other" / "analysis.json"
    proc = gitnetdiag("analyze", str(run_copy / "h1-1.pcap"), "--json", str(analysis),
                      cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(analysis.read_text())["connections"]
    run_json = tmp_path / "more" / "run.json"
    proc = gitnetdiag("analyze", str(run_copy), "--json", str(run_json), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(run_json.read_text())["captures"]) == {
        "h1-1.pcap", "h2-1.pcap", "ssh-1.pcap"}


def test_probe_summary_json_into_a_missing_directory(tmp_path: Path) -> None:
    """probe --json creates its parents too; the refused push is the one error line."""
    summary = tmp_path / "a" / "b" / "summary.json"
    proc = gitnetdiag("probe", "--http", "https://127.0.0.1:1/x.git", "--protocols", "h1",
                      "--no-capture", "--no-native", "--size", "64KiB", "--timeout", "20",
                      "--out", str(tmp_path / "new" / "run"), "--json", str(summary),
                      cwd=tmp_path)
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error")]
    assert proc.returncode != 0 and len(errors) == 1, proc.stderr
    data = json.loads(summary.read_text())
    assert data["status"] == "failed" and data["errors"][0]["stage"] == "push"


# --- a read-only run directory, as another user --------------------------------------------


def _nobody_python() -> list[str] | None:
    """A command that runs this checkout as ``nobody``, or ``None`` when that is impossible.

    The venv's interpreter lives under root's home (not executable by nobody);
    Debian's python3 of the same minor version can use the venv's packages.
    """
    site = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
    system = Path("/usr/bin/python3")
    if os.geteuid() != 0 or not shutil.which("runuser") or not system.is_file() or not site:
        return None
    argv = ["runuser", "-u", "nobody", "--", "env", "HOME=/tmp",
            f"PYTHONPATH={REPO}:{site[0]}", str(system)]
    probe = subprocess.run([*argv, "-c", "import numpy, typer, gitnetdiag"],
                           capture_output=True, text=True, timeout=60)
    return argv if probe.returncode == 0 else None


@pytest.fixture
def readonly_run() -> Iterator[Path]:
    # pytest's tmp_path is private to root; nobody must be able to reach and read this one.
    base = Path(tempfile.mkdtemp(prefix="gitnetdiag-ro-"))
    try:
        base.chmod(0o755)
        run = base / "run"
        shutil.copytree(HEALTHY, run)
        (run / "observations.json").unlink()
        run.chmod(0o555)
        yield run
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_read_only_run_directory_as_another_user(readonly_run: Path) -> None:
    """Another user's run directory: diagnosed all the same; only an explicit --out into
    it tries to write there, and the unsaved files are then warnings."""
    argv = _nobody_python()
    if argv is None:
        pytest.skip("needs root, runuser and a /usr/bin/python3 that can import the venv")
    proc = subprocess.run([*argv, "-m", "gitnetdiag", "analyze", str(readonly_run),
                           "--diagnose"], capture_output=True, text=True, timeout=120,
                          cwd="/tmp", env={**_env(), "HOME": "/tmp"})
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr  # nothing is written: nothing to warn about
    assert "verdict: HEALTHY" in proc.stdout
    proc = subprocess.run([*argv, "-m", "gitnetdiag", "analyze", str(readonly_run),
                           "--diagnose", "--out", str(readonly_run)], capture_output=True,
                          text=True, timeout=120, cwd="/tmp", env={**_env(), "HOME": "/tmp"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == (f"warning: observations.json not saved in {readonly_run}: Permission "
                        "denied (the diagnosis below is complete; copy the run directory to "
                        "keep it)")
    assert any(line.startswith(f"warning: reports not saved in {readonly_run}: Permission denied")
               for line in lines)
    assert "verdict: HEALTHY" in proc.stdout
    assert not (readonly_run / "observations.json").exists()
