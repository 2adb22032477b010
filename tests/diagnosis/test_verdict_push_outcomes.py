"""The verdict against the push outcomes and clean-up results the probe records.

Crafted from the recorded healthy run (``captures/healthy``): its manifest is
edited the way the probe writes a ``no-data`` or ``interrupted`` push, or a
``leftover`` branch, and the run directory is diagnosed as a support engineer
would (``report``), in-process.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gitnetdiag.diagnosis.verdict import verdict_error
from gitnetdiag.pipeline import diagnose_run
from gitnetdiag.report import RENDERERS
from gitnetdiag.report.terminal import render_terminal

REPO = Path(__file__).resolve().parents[2]
BRANCH = "gitnetdiag/probe-178b503e"
COMMAND = (f"git push --force-with-lease=refs/heads/{BRANCH}:{'b' * 40} "
           f"https://***@git.example.com/r.git :refs/heads/{BRANCH}")
Edit = Callable[[dict[str, Any]], None]


def _run(tmp_path: Path, edit: Edit) -> Path:
    run = tmp_path / "run"
    shutil.copytree(REPO / "captures" / "healthy", run)
    (run / "observations.json").unlink()
    manifest = json.loads((run / "manifest.json").read_text())
    edit(manifest)
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def _h2_pushes(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    pushes: list[dict[str, Any]] = next(
        p for p in manifest["protocols"] if p["protocol"] == "h2")["pushes"]
    return pushes


def _no_data(push: dict[str, Any]) -> None:
    push.update(outcome="no-data", rate_bytes_per_s=None, pack_written_bytes=200,
                pack_objects=0)


def _interrupted(push: dict[str, Any]) -> None:
    push.update(outcome="interrupted", rate_bytes_per_s=None, last_line="")


NO_DATA_ERROR = {"stage": "push", "protocol": "h2", "reference": "push-sent-no-data",
                 "kind": None, "message": "https://git.example.com/r.git: the push sent 0 "
                 "objects, 200 bytes of the planned 3146449: the server already had them, "
                 "no rate measured"}


def only_no_data(manifest: dict[str, Any]) -> None:
    _no_data(_h2_pushes(manifest)[0])
    manifest["errors"].append(NO_DATA_ERROR)


def only_interrupted(manifest: dict[str, Any]) -> None:
    _interrupted(_h2_pushes(manifest)[0])
    manifest["status"] = "interrupted"


@pytest.mark.parametrize("edit", [only_no_data, only_interrupted])
def test_an_unmeasured_push_is_no_measurement(edit: Edit, tmp_path: Path) -> None:
    """HTTP/2's one push sent nothing (or was cut by Ctrl-C): HTTP/2 was not measured,
    no rate is shown for it, the verdict is inconclusive and the exit code says so."""
    diagnosis, _ = diagnose_run(_run(tmp_path, edit))
    assert diagnosis.verdict == "inconclusive"
    assert "h2" not in diagnosis.measured_protocols
    (failure,) = [f for f in diagnosis.measurement_failures if f.protocol == "h2"]
    assert failure.stage == "push" and failure.explained_by is None
    if edit is only_no_data:
        assert failure.reference == "push-sent-no-data"
    else:
        assert failure.message == "HTTP/2: interrupted before the push ended"
    h2 = json.loads(RENDERERS["json"](diagnosis))["protocols"]["h2"]
    assert (h2["pushes_ok"], h2["pushes_failed"], h2["rate_bytes_per_s"]) == (0, 1, None), h2
    error = verdict_error(diagnosis.verdict, diagnosis.measurement_failures)
    assert error is not None and error.reference == "inconclusive"


def test_a_measured_push_beside_a_no_data_one_measures_the_protocol(tmp_path: Path) -> None:
    """A second HTTP/2 push sent its pack: HTTP/2 is measured (healthy), and only the
    real push counts."""
    def edit(manifest: dict[str, Any]) -> None:
        pushes = _h2_pushes(manifest)
        second = json.loads(json.dumps(pushes[0]))
        _no_data(pushes[0])
        second.update(repeat=2)
        pushes.append(second)
        manifest["errors"].append(NO_DATA_ERROR)

    diagnosis, _ = diagnose_run(_run(tmp_path, edit))
    assert "h2" in diagnosis.measured_protocols
    assert diagnosis.verdict == "healthy", diagnosis.measurement_failures
    h2 = json.loads(RENDERERS["json"](diagnosis))["protocols"]["h2"]
    assert h2["pushes_ok"] == 1 and h2["rate_min_bytes_per_s"] == h2["rate_max_bytes_per_s"], h2


def with_leftover(manifest: dict[str, Any]) -> None:
    push = _h2_pushes(manifest)[0]
    push.update(cleanup="leftover", cleanup_detail="delete: timed out", cleanup_command=COMMAND)
    manifest["errors"].append({
        "stage": "cleanup", "protocol": "h2", "reference": "probe-ref-leftover", "kind": None,
        "message": f"{BRANCH} is still on https://***@git.example.com/r.git: delete: timed out"})


def test_a_leftover_branch_is_listed_in_every_format_with_its_remove_command(
    tmp_path: Path
) -> None:
    """Measured fine, but the branch stayed: the verdict stands (healthy), every report
    lists the branch with the command that removes it, and the command exits non-zero."""
    diagnosis, _ = diagnose_run(_run(tmp_path, with_leftover))
    assert diagnosis.verdict == "healthy"
    (failure,) = diagnosis.measurement_failures
    assert failure.reference == "probe-ref-leftover" and failure.stage == "cleanup"
    assert failure.hint == f"delete it by hand: {COMMAND}"
    rendered = {fmt: render(diagnosis) for fmt, render in RENDERERS.items()}
    rendered["terminal"] = render_terminal(diagnosis, width=400, color=False)
    for fmt, text in rendered.items():
        assert BRANCH in text, fmt
        shown = text.replace("&#x27;", "'").replace("&amp;", "&").replace("\\u2019", "'")
        assert COMMAND.split(" https://")[0] in shown, fmt
    error = verdict_error(diagnosis.verdict, diagnosis.measurement_failures)
    assert error is not None and error.reference == "probe-ref-leftover"
    assert error.hint == f"delete it by hand: {COMMAND}"
