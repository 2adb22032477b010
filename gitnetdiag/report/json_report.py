"""JSON report with a versioned schema (docs/report-schema.md)."""

from __future__ import annotations

import json
from typing import Any

from gitnetdiag.diagnosis.model import Diagnosis, Finding
from gitnetdiag.report.redact import redact_diagnosis
from gitnetdiag.report.transfers import burst_json
from gitnetdiag.report.transfers import report_dict as fetch_report_dict
from gitnetdiag.serial import to_jsonable

SCHEMA = "gitnetdiag.report/4"
"""Schema id; bump the number on any incompatible change."""
BOTH_SCHEMA = "gitnetdiag.both-report/1"
"""Schema id of a ``both`` run's report: one ranking, each half's report in ``parts``."""


def _finding(rank: int | None, f: Finding) -> dict[str, Any]:
    return {
        "rank": rank,
        "id": f.id,
        "title": f.title,
        "score": f.score,
        "cost_s": f.cost_s,
        "impact_s": round(f.impact_s, 3),
        "summary": f.summary,
        "evidence": [to_jsonable(e) for e in f.evidence],
        "fix": f.fix,
        "cost_protocol": f.cost_protocol,
        "shares_with": f.shares_with,
        "compares": list(f.compares) if f.compares is not None else None,
    }


def _both_dict(d: Diagnosis) -> dict[str, Any]:
    """A redacted ``both`` diagnosis: its verdict, headline and one ranking, each culprit
    with its ``direction``; each half's own report under ``parts``, keyed by direction."""
    def culprit(rank: int | None, f: Finding) -> dict[str, Any]:
        return {"rank": rank, "direction": f.direction, **_finding(rank, f)}

    return {
        "schema": BOTH_SCHEMA,
        "direction": d.direction,
        "generated_by": f"gitnetdiag {d.environment.gitnetdiag_version}",
        "verdict": d.verdict,
        "headline": d.headline,
        "culprits": [culprit(i, f) for i, f in enumerate(d.findings, start=1)],
        "dropped": [culprit(None, f) for f in d.dropped],
        "parts": {part.direction: report_dict(part) for part in d.parts},
    }


def report_dict(diagnosis: Diagnosis) -> dict[str, Any]:
    """The report as plain JSON types (schema :data:`SCHEMA`, :data:`BOTH_SCHEMA` for a
    ``both`` run, or :data:`~gitnetdiag.report.transfers.TRANSFER_REPORT_SCHEMA` for
    a fetch run's clones)."""
    d = redact_diagnosis(diagnosis)
    if d.parts:
        return _both_dict(d)
    if d.fetch_details is not None:
        return fetch_report_dict(d)
    protocols = {s.protocol: {key: value for key, value in to_jsonable(s).items()
                              if key != "protocol"} for s in d.protocols}
    observations = d.observations.to_dict()
    if "bursts" in observations:
        observations["bursts"] = [burst_json(burst) for burst in observations["bursts"]]
    return {
        "schema": SCHEMA,
        "direction": d.direction,
        "generated_by": f"gitnetdiag {d.environment.gitnetdiag_version}",
        "verdict": d.verdict,
        "headline": d.headline,
        "requested_protocols": list(d.requested_protocols),
        "measured_protocols": list(d.measured_protocols),
        "measurement_failures": [to_jsonable(f) for f in d.measurement_failures],
        "culprits": [_finding(i, f) for i, f in enumerate(d.findings, start=1)],
        "dropped": [_finding(None, f) for f in d.dropped],
        "protocols": protocols,
        "environment": to_jsonable(d.environment),
        "observations": observations,
    }


def render_json(diagnosis: Diagnosis) -> str:
    """The report as indented JSON text (ends with a newline)."""
    return json.dumps(report_dict(diagnosis), indent=2, sort_keys=False) + "\n"
