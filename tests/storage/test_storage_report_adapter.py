"""storage.json in a run directory -> the engine's storage observation (pure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitnetdiag.errors import InputError
from gitnetdiag.pipeline import load_storage_report, storage_observation_from_report


def _report(fio: object) -> dict[str, object]:
    return {"check": {"path": "/srv/git", "fio": fio}, "verdict": {"grade": "slow"}}


def test_fio_iops_become_the_storage_observation(tmp_path: Path) -> None:
    """The figures `gitnetdiag storage --json` wrote, as the slow-storage culprit reads them."""
    path = tmp_path / "storage.json"
    path.write_text(json.dumps(_report({"read": {"iops": 30.2}, "write": {"iops": 12}})))
    result = load_storage_report(path)
    assert (result.read_iops, result.write_iops) == (30.2, 12.0)
    assert result.path == "/srv/git" and result.reference_iops == 1000.0


def test_a_check_without_fio_has_no_iops() -> None:
    result = storage_observation_from_report(_report(None))
    assert result.read_iops is None and result.write_iops is None


@pytest.mark.parametrize("data", [[], {"check": 3}, _report({"read": {"iops": "fast"}})])
def test_bad_reports_are_input_errors_naming_the_field(data: object) -> None:
    with pytest.raises(InputError, match="storage report: check"):
        storage_observation_from_report(data)  # type: ignore[arg-type]


def test_unreadable_and_non_json_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read storage report"):
        load_storage_report(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(InputError, match="is not JSON"):
        load_storage_report(tmp_path / "bad.json")
