"""``gitnetdiag compare`` through the real CLI on the recorded lab runs in ``captures/``.

Offline: each recorded run directory holds its manifest, captures and
observations, so the comparison is the one a support engineer gets from two
directories a customer sent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.commands.test_bad_input import REPO, RUN_HINT, gitnetdiag

CAPTURES = REPO / "captures"


def test_compare_recorded_runs_before_and_after(tmp_path: Path) -> None:
    """The slow edge against the healthy lab: the culprit is gone and HTTP/2 gained time."""
    proc = gitnetdiag("compare", str(CAPTURES / "h2-small-window"), str(CAPTURES / "healthy"),
                      "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    pair = data["pairs"][0]
    assert pair["slower"] == "A" and pair["deciding_protocol"] == "h2"
    assert {c["id"]: c["status"] for c in pair["culprits"]}["h2-flow-control-window"] == "gone"
    gain = pair["gain"]
    assert gain["culprit_id"] == "h2-flow-control-window" and gain["measured_gain_s"] > 1.0
    # One push per protocol in the recorded runs: said, not tested.
    assert {row["noise_test"] for row in pair["protocols"]} == {"too-few-repeats"}


@pytest.mark.parametrize("fmt", ["terminal", "md", "html"])
def test_compare_writes_every_format(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / "sub" / f"compare.{fmt}"
    proc = gitnetdiag("compare", str(CAPTURES / "h2-small-window"), str(CAPTURES / "healthy"),
                      str(CAPTURES / "tcp-rmem-clamp"), "--format", fmt, "--out", str(out),
                      cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "h2-flow-control-window" in text and "tcp-receive-window-clamp" in text
    assert "A -&gt; C" in text or "A &rarr; C" in text or "A -> C" in text


def _damaged_observations(run: Path) -> None:
    (run / "observations.json").write_text('{"run": ')


def _damaged_manifest(run: Path) -> None:
    (run / "manifest.json").write_text("[]")


@pytest.mark.parametrize(("args", "code", "line"), [
    (("{a}",), 2, "error [usage]: compare needs at least two run directories (hint: give the "
                  "run before and the run after: gitnetdiag compare A B)"),
    (("{a}", "{tmp}/nowhere"), 3, "error [no-manifest]: {tmp}/nowhere is not a directory (hint: "
                                  "give run directories written by 'gitnetdiag diagnose' or "
                                  "'probe')"),
    (("{a}", "{tmp}"), 3, "error [no-manifest]: {tmp}/manifest.json does not exist (hint: give "
                          "a run directory written by 'gitnetdiag probe')"),
    (("{a}", "{b}"), 3, "error [bad-run-dir]: {b}/observations.json is not JSON: Expecting "
                        "value: line 1 column 9 (char 8) " + RUN_HINT),
])
def test_bad_input_is_one_line(args: tuple[str, ...], code: int, line: str,
                               tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(CAPTURES / "healthy", a)
    shutil.copytree(CAPTURES / "healthy", b)
    _damaged_observations(b)
    names = {"a": str(a), "b": str(b), "tmp": str(tmp_path)}
    proc = gitnetdiag("compare", *(arg.format(**names) for arg in args), cwd=tmp_path)
    assert proc.returncode == code
    assert proc.stderr.splitlines() == [line.format(**names)]
    assert proc.stdout == ""


def test_damaged_manifest_is_named(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(CAPTURES / "healthy", a)
    shutil.copytree(CAPTURES / "healthy", b)
    _damaged_manifest(b)
    proc = gitnetdiag("compare", str(a), str(b), cwd=tmp_path)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"error [bad-run-dir]: {b}/manifest.json has schema None")
    assert len(proc.stderr.splitlines()) == 1
