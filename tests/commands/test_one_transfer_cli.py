"""ONE-TRANSFER.md "Where the copies disagree", settled through the real CLI: each cause is a
table with a row per direction, a recorded push run (``captures/healthy``,
``captures/firewall-reset``) and a recorded fetch run (``tests/data/fetch-healthy``: two
clones of a 2 MiB repository from a loopback git daemon, ``probe --direction fetch
--repeat 2``), damaged alike; both must answer alike.

- validation: negative, NaN, absurdly large or missing numbers are one ``bad-run-dir``
  line and exit 3 (the fetch side said ``healthy`` or printed a Python error);
- artifacts: a directory where an artifact file should be is no artifact (the fetch side
  raised ``IsADirectoryError``);
- exit codes: ``report`` and ``analyze RUN --diagnose`` exit 9 for a failed run and 8 for
  an inconclusive one (the fetch side exited 0), and ``--out DIR`` gets the reports;
- redaction: a secret in the run's error messages never reaches any format (the fetch
  side printed it as it was).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
RUNS = {"push": REPO / "captures" / "healthy", "fetch": REPO / "tests" / "data" / "fetch-healthy"}
FAILED_PUSH = REPO / "captures" / "firewall-reset"
RECORD = {"push": "manifest.json", "fetch": "fetch.json"}
FIRST = {"push": "manifest.protocols[0].pushes[0]", "fetch": "fetch.protocols[0].fetches[0]"}
BYTES = {"push": "pack_bytes", "fetch": "moved_bytes"}
NOUN = {"push": "push", "fetch": "clone"}
RUN_HINT = ("(hint: the run directory is damaged or was not written by gitnetdiag probe; "
            "run the probe again or ask for the original directory)")
DIRECTIONS = ("push", "fetch")
UNDAMAGED_EXIT = {"push": 0, "fetch": 8}
"""The undamaged runs' exits: the recorded fetch run has no TCP_INFO samples (its 2 MiB
clones ended before the first), so it is inconclusive (no-tcp-evidence) as such a push is."""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitnetdiag", *map(str, args)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1",
                               "COLUMNS": "200"})


def _copy(direction: str, tmp_path: Path, source: Path | None = None) -> Path:
    run = Path(shutil.copytree(source or RUNS[direction], tmp_path / "run"))
    # The push's saved diagnosis would be re-rendered as it was: derive it again.
    (run / "observations.json").unlink(missing_ok=True)
    return run


def _transfers(data: dict[str, Any], direction: str) -> list[dict[str, Any]]:
    key = "pushes" if direction == "push" else "fetches"
    return [t for protocol in data["protocols"] for t in protocol[key]]


def _edit(run: Path, direction: str, change: Callable[[dict[str, Any]], None]) -> None:
    path = run / RECORD[direction]
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _set_every(field: str, value: Any) -> Callable[[dict[str, Any], str], None]:
    def change(data: dict[str, Any], direction: str) -> None:
        for transfer in _transfers(data, direction):
            transfer[field.format(bytes=BYTES[direction])] = value
    return change


def _drop_every(field: str) -> Callable[[dict[str, Any], str], None]:
    def change(data: dict[str, Any], direction: str) -> None:
        for transfer in _transfers(data, direction):
            del transfer[field]
    return change


@dataclass(frozen=True)
class Bad:
    change: Callable[[dict[str, Any], str], None]
    says: str
    """After ``{record}: {first}.``: the field and what is wrong with it."""


VALIDATION: dict[str, Bad] = {
    "negative-bytes": Bad(_set_every("{bytes}", -5), "{bytes} must be a finite number >= 0, "
                          "got -5"),
    "nan-seconds": Bad(_set_every("wall_s", math.nan), "wall_s must be a finite number >= 0, "
                       "got nan"),
    "infinite-seconds": Bad(_set_every("wall_s", math.inf), "wall_s must be a finite number "
                            ">= 0, got inf"),
    "absurd-bytes": Bad(_set_every("{bytes}", 10**400), "{bytes} must be at most "
                        "9007199254740992, got 100000000000... (401 digits)"),
    "absurd-seconds": Bad(_set_every("wall_s", 1e300), "wall_s must be at most "
                          "9007199254740992, got 1e+300"),
    "measured-in-no-time": Bad(_set_every("wall_s", 0.0), "wall_s must be above 0 for a "
                               "{noun} with outcome 'ok', got 0.0"),
    "missing-seconds": Bad(_drop_every("wall_s"), "is missing field(s) wall_s"),
}


@pytest.mark.parametrize("command", [("report",), ("analyze", "--diagnose")])
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("cause", sorted(VALIDATION))
def test_a_run_record_with_impossible_values_is_one_bad_run_dir_line(
        cause: str, direction: str, command: tuple[str, ...], tmp_path: Path) -> None:
    bad = VALIDATION[cause]
    run = _copy(direction, tmp_path)
    # The push's record says "ok" for every push; make the fetch's say it of every clone.
    _edit(run, direction, lambda data: bad.change(data, direction))
    proc = _cli(command[0], run, *command[1:])
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-2000:]
    says = bad.says.format(bytes=BYTES[direction], noun=NOUN[direction])
    sep = " " if says.startswith("is ") else "."
    expected = (f"error [bad-run-dir]: {run}/{RECORD[direction]}: {FIRST[direction]}{sep}"
                f"{says} {RUN_HINT}")
    assert (proc.returncode, proc.stderr.splitlines()) == (3, [expected])


@pytest.mark.parametrize("line", [
    '{"t_s": 0.1}',
    '{"t_s": NaN, "stderr_bytes": 5, "received_bytes": 10}',
    '{"t_s": 0.1, "stderr_bytes": -5, "received_bytes": 10}',
    '{"t_s": 0.1, "stderr_bytes": 5, "received_bytes": 1e300}',
])
def test_a_clone_timeline_with_missing_or_impossible_fields_is_one_line(
        line: str, tmp_path: Path) -> None:
    """The fetch's own artifact read as a record (its rows give the phases' times): never
    ``healthy`` from it, never "TimelinePoint.__init__() missing 2 required ..."."""
    run = _copy("fetch", tmp_path)
    (run / "fetch-git-1.timeline.jsonl").write_text(line + "\n")
    proc = _cli("report", run)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 3 and len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"error [bad-run-dir]: {run}: fetch-git-1.timeline.jsonl line 1")
    assert "__init__" not in lines[0] and "Traceback" not in proc.stderr


ARTIFACTS = {"push": ("h1-1.trace2.json", "h1-1.stderr.txt", "h1-1.curl.txt"),
             "fetch": ("fetch-git-1.trace2.json", "fetch-git-1.stderr.txt",
                       "fetch-git-1.timeline.jsonl", "fetch-git-1.packet.txt")}


@pytest.mark.parametrize(("direction", "name"),
                         [(d, name) for d in DIRECTIONS for name in ARTIFACTS[d]])
def test_a_directory_where_an_artifact_file_should_be_is_no_artifact(
        direction: str, name: str, tmp_path: Path) -> None:
    """A run directory from anyone: the file is missing evidence, the report says less,
    exits as the whole run does, and nothing is read through the directory."""
    run = _copy(direction, tmp_path)
    (run / name).unlink()
    (run / name).mkdir()
    (run / name / "inside").write_text("x")
    proc = _cli("report", run)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-2000:]
    assert proc.returncode == UNDAMAGED_EXIT[direction], proc.stderr
    assert "verdict" in proc.stdout.lower()


def _fail_every_clone(data: dict[str, Any]) -> None:
    for clone in _transfers(data, "fetch"):
        clone.update(outcome="failed", failure_kind="refused", rate_bytes_per_s=None,
                     moved_bytes=0, measured_s=0.0,
                     last_line="127.0.0.1[0: 127.0.0.1]: errno=Connection refused")


def _failed(direction: str, tmp_path: Path) -> Path:
    """A run whose every transfer failed: the recorded firewall-reset push run; the fetch
    run with its clones refused."""
    if direction == "push":
        return _copy(direction, tmp_path, FAILED_PUSH)
    run = _copy(direction, tmp_path)
    _edit(run, direction, _fail_every_clone)
    return run


def _running(direction: str, tmp_path: Path) -> Path:
    """A run whose record still says ``running`` (the probe was killed): inconclusive."""
    run = _copy(direction, tmp_path)
    _edit(run, direction, lambda data: data.update(status="running", finished_at=None))
    return run


EXITS: dict[str, tuple[Callable[[str, Path], Path], int, str]] = {
    "failed": (_failed, 9, "error [not-measured]: verdict failed: "),
    "running": (_running, 8, "error [inconclusive]: verdict inconclusive: run-unfinished: "),
}


@pytest.mark.parametrize("command", [("report",), ("analyze", "--diagnose")])
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("state", sorted(EXITS))
def test_report_and_analyze_exit_by_the_verdict(state: str, direction: str,
                                                command: tuple[str, ...],
                                                tmp_path: Path) -> None:
    make, code, first = EXITS[state]
    run = make(direction, tmp_path)
    proc = _cli(command[0], run, *command[1:])
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error [")]
    assert proc.returncode == code, proc.stderr
    assert len(errors) == 1 and errors[0].startswith(first), proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_analyze_diagnose_out_writes_the_reports(direction: str, tmp_path: Path) -> None:
    """``analyze RUN --diagnose --out DIR``: the reports in DIR (the fetch side wrote none),
    the run directory untouched, the exit of the verdict."""
    run = _failed(direction, tmp_path)
    before = sorted(p.name for p in run.iterdir())
    out = tmp_path / "out"
    proc = _cli("analyze", run, "--diagnose", "--out", out)
    assert proc.returncode == 9, proc.stderr
    for name in ("report.md", "report.html", "report.json"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    verdict = json.loads((out / "report.json").read_text())["verdict"]
    assert verdict == "failed"
    assert sorted(p.name for p in run.iterdir()) == before


SECRET = "s3cretTOKEN9"
LEAKY = (f"GET https://probe:{SECRET}@git.example.com/team/x.git/info/refs answered 500; "
         f"Authorization: Bearer {SECRET}")


@pytest.mark.parametrize("fmt", ["terminal", "md", "json", "html"])
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_a_secret_in_the_run_never_reaches_a_report(direction: str, fmt: str,
                                                    tmp_path: Path) -> None:
    """A run directory written by hand (or by an older version) with a token in an error:
    every format passes through the push reports' redaction (the fetch's printed it)."""
    run = _copy(direction, tmp_path)

    def leak(data: dict[str, Any]) -> None:
        data["errors"].append({"stage": "native", "protocol": "h2", "reference": "no-h2",
                               "kind": None, "message": LEAKY})

    _edit(run, direction, leak)
    proc = _cli("report", run, "--format", fmt)
    assert proc.returncode == 8, proc.stderr  # a step failed and nothing ranks
    assert "git.example.com/team/x.git" in proc.stdout  # the message is there...
    assert SECRET not in proc.stdout + proc.stderr  # ...without its secret


CAPTURE = {"push": "h1-1.pcap", "fetch": "fetch-git-1.pcap"}


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_a_listed_capture_that_is_a_directory_is_missing_evidence(direction: str,
                                                                  tmp_path: Path) -> None:
    """The capture a run lists is its packet evidence: gone (a directory in its place), the
    run is inconclusive in both directions (the fetch side dropped it without a word)."""
    run = _copy(direction, tmp_path)
    name = CAPTURE[direction]
    if direction == "fetch":
        _edit(run, direction, lambda data: _transfers(data, direction)[0]["artifacts"].update(
            capture=name))
    else:
        (run / name).unlink()
    (run / name).mkdir()
    proc = _cli("report", run)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error [")]
    assert proc.returncode == 8, proc.stderr
    more = " (+1 more)" if direction == "fetch" else ""  # and no TCP evidence: UNDAMAGED_EXIT
    assert errors == [f"error [inconclusive]: verdict inconclusive: not-a-regular-file: {name}: "
                      f"{run}/{name} is a directory, not a regular file{more} (hint: the packet "
                      f"evidence of this "
                      f"{NOUN[direction]} is missing; keep the run directory whole or run the "
                      "probe again)"], proc.stderr
