"""Every renderer shows what could not be measured, with its hint, redacted."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from gitnetdiag.diagnosis import Diagnosis, diagnose
from gitnetdiag.diagnosis.observations import ProtocolObservation, PushObservation, RunProblem
from gitnetdiag.report import RENDERERS, render_json
from tests.diagnosis import examples
from tests.report.test_report_json import documented_schema, validate

SECRET = "s3cr3t-token"


def auth_failed() -> Diagnosis:
    """HTTP/2 rejected with 401 (URL with a token), the other protocols measured: failed
    (a requested protocol whose pushes all fail, issue 42; it was inconclusive)."""
    base = examples.healthy()
    h2 = ProtocolObservation(pushes=(PushObservation(duration_s=0.1, bytes=1, ok=False,
                                                error_kind="auth", error_message="HTTP 401"),))
    problem = RunProblem(stage="push", protocol="h2", reference="auth-failed", kind="auth",
                         message=f"https://user:{SECRET}@git.example.com/r.git: HTTP 401",
                         hint="check the HTTP credentials for this remote")
    return diagnose(replace(base, protocols={**base.protocols, "h2": h2}, problems=(problem,)))


@pytest.mark.parametrize("fmt", ["terminal", "md", "html", "json"])
def test_every_renderer_lists_the_failure_and_its_hint(fmt: str) -> None:
    text = RENDERERS[fmt](auth_failed())
    assert "auth-failed" in text
    assert "check the HTTP credentials for this remote" in text
    assert "failed" in text.lower() and "cause not identified" in text
    assert SECRET not in text


@pytest.mark.parametrize("fmt", ["terminal", "md", "html"])
def test_no_failure_section_when_everything_was_measured(fmt: str) -> None:
    assert "easurement failures" not in RENDERERS[fmt](diagnose(examples.healthy()))


def test_failed_report_validates_and_names_requested_and_measured() -> None:
    report = json.loads(render_json(auth_failed()))
    schema = documented_schema()
    validate(report, schema, schema)
    assert report["verdict"] == "failed"
    assert report["requested_protocols"] == ["h1", "h2", "ssh"]
    assert report["measured_protocols"] == ["h1", "ssh"]
    (failure,) = report["measurement_failures"]
    assert failure == {
        "protocol": "h2", "stage": "push", "reference": "auth-failed", "kind": "auth",
        "message": "https://***@git.example.com/r.git: HTTP 401",
        "hint": "check the HTTP credentials for this remote", "explained_by": None,
        "signatures": [], "candidates": [], "seen": "",
    }


def described() -> Diagnosis:
    """HTTP/1.1's pack POST refused with 411 (a catalogue entry), SSH failed with words no
    entry has, HTTP/2 measured."""
    from gitnetdiag.diagnosis.observations import HttpExchange

    base = examples.healthy()
    rpc = "error: RPC failed; HTTP 411 curl 22 The requested URL returned error: 411"
    h1 = ProtocolObservation(
        pushes=(PushObservation(duration_s=1.0, bytes=1, ok=False, error_kind="http-status",
                           error_message=rpc),),
        http_requests=(HttpExchange(method="POST", path="/r.git/git-receive-pack",
                                    status=411, push=1, streamed=True),))
    ssh = ProtocolObservation(pushes=(PushObservation(duration_s=1.0, bytes=1, ok=False,
                                                 error_kind="other",
                                                 error_message="fatal: something new"),))
    return diagnose(replace(base, protocols={**base.protocols, "h1": h1, "ssh": ssh}))


@pytest.mark.parametrize("fmt", ["terminal", "md", "html", "json"])
def test_every_renderer_shows_the_failure_signature_or_its_absence(fmt: str) -> None:
    text = " ".join(RENDERERS[fmt](described()).split())  # the terminal wraps long lines
    assert "http-411" in text and "streamed-body-refused" in text
    assert "POST git-receive-pack answered 411" in text
    assert "SSH push: git said: fatal: something new; gitnetdiag has no entry for it" in text


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_the_signature_column_appears_only_for_described_failures(fmt: str) -> None:
    assert "failure signature" in RENDERERS[fmt](described())
    assert "failure signature" not in RENDERERS[fmt](auth_failed())


def test_described_report_validates_against_the_schema() -> None:
    report = json.loads(render_json(described()))
    schema = documented_schema()
    validate(report, schema, schema)
    h1 = next(f for f in report["measurement_failures"] if f["protocol"] == "h1")
    assert h1["signatures"] == ["http-411"] and h1["candidates"] == ["streamed-body-refused"]
