"""load_run: damaged or foreign manifests give one clear InputError."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gitnetdiag.errors import InputError
from gitnetdiag.rundir import SCHEMA, load_run, to_jsonable


@pytest.mark.parametrize(
    ("content", "reference"),
    [
        (None, "no-manifest"),
        ("{not json", "bad-run-dir"),
        (json.dumps({"schema": "other/1"}), "bad-run-dir"),
        (json.dumps({"schema": SCHEMA, "run_id": "x"}), "bad-run-dir"),
        (json.dumps({"schema": SCHEMA, "tool_version": "0", "run_id": "x", "started_at": "t",
                     "finished_at": None, "status": "running", "options": {},
                     "environment": None, "repo": None, "capture_enabled": False,
                     "protocols": [{"protocol": "h1"}], "paths": [], "errors": [],
                     "warnings": []}), "bad-run-dir"),
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
    assert to_jsonable(manifest)["protocols"][0]["url"] == "https://h/r"


def _manifest_with_push(**push_fields: object) -> dict[str, object]:
    push = {"protocol": "h1", "repeat": 1, "branch": "gitnetdiag/probe-x", "started_at": "t",
            "outcome": "ok", "failure_kind": None, "last_line": "", "wall_s": 1.0,
            "pack_bytes": 10, "rate_bytes_per_s": 10.0, "http_version": None, "alpn": None,
            "post_s": None, "curl_last_info": None, "phases": None, "capture": None,
            **push_fields}
    return {"schema": SCHEMA, "tool_version": "0", "run_id": "x", "started_at": "t",
            "finished_at": "t", "status": "complete", "options": {}, "environment": None,
            "repo": None, "capture_enabled": True,
            "protocols": [{"protocol": "h1", "url": "https://h/r", "endpoint": "h:443",
                           "pushes": [push]}],
            "paths": [], "errors": [], "warnings": []}


_CAPTURE = {"filter": "tcp", "snaplen": 128, "packets_captured": 1, "packets_dropped": 0}


@pytest.mark.parametrize(
    ("push_fields", "message"),
    [
        ({"wall_s": "slow"}, "manifest.protocols[0].pushes[0].wall_s must be a number, "
                             "got 'slow'"),
        ({"pack_bytes": 1.5}, "pack_bytes must be an integer, got 1.5"),
        ({"artifacts": ["x"]}, "artifacts must be an object, got list"),
        ({"capture": {"path": "../../etc/passwd", **_CAPTURE}},
         "capture.path '../../etc/passwd' points outside the run directory"),
        ({"capture": {"path": "/etc/passwd", **_CAPTURE}},
         "capture.path '/etc/passwd' is not a path inside the run directory"),
        ({"artifacts": {"stderr": "sub/../../x"}},
         "artifacts.stderr 'sub/../../x' points outside the run directory"),
    ],
)
def test_wrong_types_and_escaping_paths_are_refused(
    tmp_path: Path, push_fields: dict[str, object], message: str
) -> None:
    """Values read back are checked field by field; paths stay inside the run directory."""
    (tmp_path / "manifest.json").write_text(json.dumps(_manifest_with_push(**push_fields)))
    with pytest.raises(InputError) as info:
        load_run(tmp_path)
    assert info.value.reference == "bad-run-dir"
    assert message in info.value.message


@pytest.mark.parametrize(
    ("run_fields", "message"),
    [
        ({"protocol": "h3"}, "manifest.protocols[0] has unknown protocol 'h3'"),
        ({"endpoint": "h:https"}, "manifest.protocols[0].endpoint 'h:https' is not host:port"),
    ],
)
def test_values_the_types_allow_but_a_run_cannot_have(
    tmp_path: Path, run_fields: dict[str, object], message: str
) -> None:
    data = _manifest_with_push()
    data["protocols"][0].update(run_fields)  # type: ignore[index]
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match=re.escape(message)):
        load_run(tmp_path)


def test_capture_path_inside_the_run_directory_is_accepted(tmp_path: Path) -> None:
    data = _manifest_with_push(capture={"path": "h1-1.pcap", **_CAPTURE},
                               artifacts={"stderr": "h1-1.stderr.txt"})
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    push = load_run(tmp_path).protocols[0].pushes[0]
    assert push.capture is not None and push.capture.path == "h1-1.pcap"
