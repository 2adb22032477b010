"""load_run: damaged or foreign manifests give one clear InputError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitnetdiag.errors import InputError
from gitnetdiag.probe.rundir import SCHEMA, load_run


@pytest.mark.parametrize(
    ("content", "reference"),
    [
        (None, "no-manifest"),
        ("{not json", "bad-manifest"),
        (json.dumps({"schema": "other/1"}), "bad-manifest"),
        (json.dumps({"schema": SCHEMA, "run_id": "x"}), "bad-manifest"),
        (json.dumps({"schema": SCHEMA, "tool_version": "0", "run_id": "x", "started_at": "t",
                     "finished_at": None, "status": "running", "options": {},
                     "environment": None, "repo": None, "capture_enabled": False,
                     "protocols": [{"protocol": "h1"}], "paths": [], "errors": [],
                     "warnings": []}), "bad-manifest"),
    ],
)
def test_bad_manifests(tmp_path: Path, content: str | None, reference: str) -> None:
    if content is not None:
        (tmp_path / "manifest.json").write_text(content)
    with pytest.raises(InputError) as info:
        load_run(tmp_path)
    assert info.value.reference == reference


def test_minimal_running_manifest_loads(tmp_path: Path) -> None:
    data = {"schema": SCHEMA, "tool_version": "0", "run_id": "x", "started_at": "t",
            "finished_at": None, "status": "running", "options": {"size_bytes": 1},
            "environment": None, "repo": None, "capture_enabled": False,
            "protocols": [{"protocol": "h1", "url": "https://h/r", "endpoint": "h:443"}],
            "paths": [], "errors": [], "warnings": [], "future_key": 1}
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    manifest = load_run(tmp_path / "manifest.json")
    assert manifest.status == "running"
    assert manifest.protocols[0].pushes == () and manifest.protocols[0].burst is None
    assert manifest.to_dict()["protocols"][0]["url"] == "https://h/r"
