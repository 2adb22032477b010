"""native-body.json: the body probe's answers round-trip into ``ProtocolObservation.body_limit``,
and a damaged file is one ``bad-run-dir`` line, never a traceback."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gitnetdiag.diagnosis.observations import BodyLimitProbe
from gitnetdiag.errors import InputError, UsageError
from gitnetdiag.pipeline._native import body_limit
from gitnetdiag.rundir.bodyprobe import (
    BodyExchange,
    BodyProbeRecord,
    body_probe_record,
)
from gitnetdiag.rundir.files import NATIVE_BODY_FILE
from gitnetdiag.rundir.manifest import write_json_once
from gitnetdiag.serial import to_jsonable

REPO = Path(__file__).resolve().parents[2]
HEALTHY = REPO / "captures" / "healthy"
SERVER = "Apache/2.4.71 (Debian)"


def _post(purpose: str, version: str, *, answer: str = "status", status: int | None = 200,
          length: int | None = 4, server: str | None = SERVER, at: float = 0.0
          ) -> BodyExchange:
    return BodyExchange(purpose=purpose, http_version=version,  # type: ignore[arg-type]
                        content_length_bytes=length, body_sent_bytes=0 if purpose == "limit"
                        else 4, answer=answer, status=status,  # type: ignore[arg-type]
                        server=server, started_s=at, elapsed_s=0.01)


def _limit(size: int, refused: bool, at: float) -> BodyExchange:
    if refused:
        return _post("limit", "HTTP/1.1", status=413, length=size, at=at)
    return _post("limit", "HTTP/1.1", answer="continue", status=None, length=size,
                 server=None, at=at)


def _record() -> BodyProbeRecord:
    """A 1 MiB limit bracketed; an edge answering 411 to HTTP/1.1 streamed and resetting
    the HTTP/2 stream; one 401 before the credential."""
    exchanges = (
        _post("sized", "HTTP/1.1", status=401, at=0.0),
        _post("sized", "HTTP/1.1", at=0.1),
        _post("streamed", "HTTP/1.1", status=411, length=None, server=None, at=0.2),
        _post("sized", "HTTP/2", at=0.2),
        _post("streamed", "HTTP/2", answer="reset", status=None, length=None, server=None,
              at=0.2),
        _limit(26_214_400, True, 0.3), _limit(65_536, False, 0.4),
        _limit(1_310_720, True, 0.5), _limit(1_037_211, False, 0.6),
        _limit(1_086_915, True, 0.7),
    )
    return BodyProbeRecord(target="h:443", path="/r/git-receive-pack", protocols=("h1", "h2"),
                           trigger="h1 push #1: POST git-receive-pack answered 413",
                           upper_bound_bytes=26_214_400, answer_wait_s=2.0,
                           exchanges=exchanges, duration_s=0.8, auth="credential-helper",
                           tls_ca="option", proxy=None,
                           notes=("the limit bracket stopped at its 20 s budget",))


def test_the_record_round_trips_into_each_protocols_observation(tmp_path: Path) -> None:
    write_json_once(tmp_path / NATIVE_BODY_FILE, _record())
    h1 = body_limit(tmp_path, "h1")
    assert h1.value == BodyLimitProbe(
        source="native body probe of h:443", requests=10, largest_accepted_bytes=1_037_211,
        smallest_refused_bytes=1_086_915, refused_status=413, sized_status=200,
        streamed_status=411, streamed_reset=False, server=SERVER)
    assert h1.notes == ("native-body.json: the limit bracket stopped at its 20 s budget",)
    h2 = body_limit(tmp_path, "h2")
    assert h2.value is not None and h2.notes == ()
    assert (h2.value.sized_status, h2.value.streamed_status, h2.value.streamed_reset) == (
        200, None, True)
    assert h2.value.smallest_refused_bytes == 1_086_915
    assert body_limit(tmp_path, "ssh").value is None


def test_no_file_or_another_protocols_url_is_no_probe(tmp_path: Path) -> None:
    assert body_limit(tmp_path, "h1").value is None
    record = _record()
    write_json_once(tmp_path / NATIVE_BODY_FILE, replace(record, protocols=("h1",)))
    assert body_limit(tmp_path, "h2").value is None
    with pytest.raises(UsageError, match="refusing to write through it"):  # written once
        write_json_once(tmp_path / NATIVE_BODY_FILE, record)


def _data() -> dict[str, Any]:
    data: dict[str, Any] = to_jsonable(_record())
    return data


def _exchange_with(**fields: Any) -> dict[str, Any]:
    data = _data()
    data["exchanges"][0].update(fields)
    return data


BAD: dict[str, tuple[dict[str, Any], str]] = {
    "schema": ({**_data(), "schema": "gitnetdiag.native-body/9"},
               "native-body.json has schema 'gitnetdiag.native-body/9', expected "
               "'gitnetdiag.native-body/1'"),
    "negative": ({**_data(), "duration_s": -1.0},
                 "native-body.json.duration_s must be a finite number >= 0, got -1.0"),
    "nan": ({**_data(), "answer_wait_s": float("nan")},
            "native-body.json.answer_wait_s must be a finite number >= 0, got nan"),
    "answer": (_exchange_with(answer="maybe"),
               "native-body.json.exchanges[0].answer must be one of 'continue', 'status', "
               "'closed', 'reset', 'silent', 'failed', got 'maybe'"),
    "status-range": (_exchange_with(status=999),
                     "native-body.json.exchanges[0].status must be an HTTP status (100-599), "
                     "got 999"),
    "status-missing": (_exchange_with(status=None),
                       "native-body.json.exchanges[0]: answer 'status' with status None"),
    "streamed-length": (_exchange_with(purpose="streamed"),
                        "native-body.json.exchanges[0]: a streamed POST with "
                        "content_length_bytes 4"),
    "exchanges-type": ({**_data(), "exchanges": {"a": 1}},
                       "native-body.json.exchanges must be a list, got dict"),
    "protocol": ({**_data(), "protocols": ["ssh"]},
                 "native-body.json.protocols[0] must be one of 'h1', 'h2', got 'ssh'"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_damaged_record_is_one_bad_run_dir_line(name: str) -> None:
    data, message = BAD[name]
    with pytest.raises(InputError) as caught:
        body_probe_record(data, NATIVE_BODY_FILE)
    assert caught.value.reference == "bad-run-dir"
    assert caught.value.message == message


def _gitnetdiag(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitnetdiag", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin",
                               "COLUMNS": "200", "NO_COLOR": "1"})


def test_analyze_reads_the_record_and_names_a_damaged_one(tmp_path: Path) -> None:
    """Through the CLI: observations.json carries the bracket; a bad value is exit 3 and
    one error line."""
    run = tmp_path / "run"
    shutil.copytree(HEALTHY, run)
    write_json_once(run / NATIVE_BODY_FILE, _record())
    proc = _gitnetdiag("analyze", str(run), "--diagnose", "--out", str(tmp_path / "out"),
                       cwd=tmp_path)
    assert "Traceback" not in proc.stderr
    observations = json.loads((tmp_path / "out" / "observations.json").read_text())
    probe = observations["protocols"]["h1"]["body_limit"]
    assert (probe["largest_accepted_bytes"], probe["smallest_refused_bytes"]) == (1_037_211,
                                                                                  1_086_915)
    assert observations["protocols"]["ssh"]["body_limit"] is None
    data = _data()
    data["exchanges"][5]["content_length_bytes"] = "big"
    (run / NATIVE_BODY_FILE).write_text(json.dumps(data))
    proc = _gitnetdiag("analyze", str(run), "--diagnose", cwd=tmp_path)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error")]
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    assert errors == [
        "error [bad-run-dir]: native-body.json.exchanges[5].content_length_bytes must be an "
        "integer, got 'big' (hint: the run directory is damaged or was not written by "
        "gitnetdiag probe; run the probe again or ask for the original directory)"]
