"""Every renderer shows what could not be measured, with its hint, redacted."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from gitnetdiag.diagnosis import Diagnosis, diagnose
from gitnetdiag.diagnosis.observations import ProtocolObservation, PushResult, RunProblem
from gitnetdiag.report import RENDERERS, render_json
from tests.diagnosis import examples
from tests.report.test_report_json import documented_schema, validate

SECRET = "s3cr3t-token"


def inconclusive() -> Diagnosis:
    """HTTP/2 rejected with 401 (URL with a token), the other protocols measured."""
    base = examples.healthy()
    h2 = ProtocolObservation(pushes=(PushResult(duration_s=0.1, bytes=1, ok=False,
                                                error_kind="auth", error_message="HTTP 401"),))
    problem = RunProblem(stage="push", protocol="h2", reference="auth-failed", kind="auth",
                         message=f"https://user:{SECRET}@git.example.com/r.git: HTTP 401",
                         hint="check the HTTP credentials for this remote")
    return diagnose(replace(base, protocols={**base.protocols, "h2": h2}, problems=(problem,)))


@pytest.mark.parametrize("fmt", ["terminal", "md", "html", "json"])
def test_every_renderer_lists_the_failure_and_its_hint(fmt: str) -> None:
    text = RENDERERS[fmt](inconclusive())
    assert "auth-failed" in text
    assert "check the HTTP credentials for this remote" in text
    assert "inconclusive" in text.lower()
    assert SECRET not in text


@pytest.mark.parametrize("fmt", ["terminal", "md", "html"])
def test_no_failure_section_when_everything_was_measured(fmt: str) -> None:
    assert "easurement failures" not in RENDERERS[fmt](diagnose(examples.healthy()))


def test_inconclusive_report_validates_and_names_requested_and_measured() -> None:
    report = json.loads(render_json(inconclusive()))
    schema = documented_schema()
    validate(report, schema, schema)
    assert report["verdict"] == "inconclusive"
    assert report["requested_protocols"] == ["h1", "h2", "ssh"]
    assert report["measured_protocols"] == ["h1", "ssh"]
    (failure,) = report["measurement_failures"]
    assert failure == {
        "protocol": "h2", "stage": "push", "reference": "auth-failed", "kind": "auth",
        "message": "https://***@git.example.com/r.git: HTTP 401",
        "hint": "check the HTTP credentials for this remote", "explained_by": None,
    }
