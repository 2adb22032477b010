"""The JSON report validates against the schema documented in docs/report-schema.md."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gitnetdiag.diagnosis import CULPRITS, diagnose
from gitnetdiag.report import SCHEMA, render_json
from tests.diagnosis import examples

DOC = Path(__file__).resolve().parents[2] / "docs" / "report-schema.md"


def documented_schema() -> dict[str, Any]:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(r"## Machine-checked schema.*?```json\n(.*?)\n```", text, re.DOTALL)
    assert match, "schema block missing from docs/report-schema.md"
    schema: dict[str, Any] = json.loads(match.group(1))
    return schema


_TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}


def _is(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES[name])


def validate(value: Any, schema: dict[str, Any], root: dict[str, Any], where: str = "$") -> None:
    """A small JSON Schema subset validator (enough for the documented keywords)."""
    if "$ref" in schema:
        validate(value, root["definitions"][schema["$ref"]], root, where)
        return
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        assert any(_is(value, n) for n in names), f"{where}: {value!r} is not {names}"
    if "const" in schema:
        assert value == schema["const"], f"{where}: {value!r} != {schema['const']!r}"
    if "enum" in schema:
        assert value in schema["enum"], f"{where}: {value!r} not in {schema['enum']}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema:
            assert value >= schema["minimum"], f"{where}: {value} < minimum"
        if "maximum" in schema:
            assert value <= schema["maximum"], f"{where}: {value} > maximum"
    if isinstance(value, dict):
        for key in schema.get("required", []):
            assert key in value, f"{where}: missing {key}"
        props = schema.get("properties", {})
        for key, item in value.items():
            if key in props:
                validate(item, props[key], root, f"{where}.{key}")
            elif schema.get("additionalProperties") is False:
                raise AssertionError(f"{where}: undocumented key {key}")
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            validate(item, schema["items"], root, f"{where}[{index}]")


def test_documented_ids_match_the_catalogue() -> None:
    schema = documented_schema()
    ids = schema["definitions"]["culprit"]["properties"]["id"]["enum"]
    assert ids == [c.id for c in CULPRITS]


@pytest.mark.parametrize(
    "make", [examples.healthy, examples.slow_h2_edge, examples.git_daemon_backlog]
)
def test_report_validates(make: Any) -> None:
    report = json.loads(render_json(diagnose(make())))
    schema = documented_schema()
    validate(report, schema, schema)
    assert report["schema"] == SCHEMA


def test_validator_rejects_a_broken_report() -> None:
    """The validator is not vacuous: a culprit without fix or a bad verdict fails."""
    schema = documented_schema()
    report = json.loads(render_json(diagnose(examples.slow_h2_edge())))
    del report["culprits"][0]["fix"]
    with pytest.raises(AssertionError, match="missing fix"):
        validate(report, schema, schema)
    report = json.loads(render_json(diagnose(examples.healthy())))
    report["verdict"] = "fine"
    with pytest.raises(AssertionError, match="not in"):
        validate(report, schema, schema)


def test_culprits_in_rank_order_with_protocol_rates() -> None:
    report = json.loads(render_json(diagnose(examples.slow_h2_edge())))
    assert report["verdict"] == "degraded"
    ranks = [c["rank"] for c in report["culprits"]]
    assert ranks == list(range(1, len(ranks) + 1))
    impacts = [c["impact_s"] for c in report["culprits"]]
    assert impacts == sorted(impacts, reverse=True)
    assert report["culprits"][0]["id"] == "h2-flow-control-window"
    assert set(report["protocols"]) == {"h1", "h2", "ssh"}
    h2 = report["protocols"]["h2"]
    # two completed pushes of 24 MB in 29.2 s and 28.1 s: median of their rates, bytes/s
    expected = (24e6 / 29.2 + 24e6 / 28.1) / 2
    assert h2["rate_bytes_per_s"] == pytest.approx(expected)
    assert h2["failure_kinds"] == ["hung"]


def test_a_culprit_says_which_protocols_its_evidence_compares() -> None:
    """Issue 43: the A/B pair a rate-comparing culprit judged (HTTP/2 against SSH here) is in
    the JSON, so a reader can set it beside the report's per-protocol ``paths``."""
    report = json.loads(render_json(diagnose(examples.slow_h2_edge())))
    schema = documented_schema()
    validate(report, schema, schema)
    assert report["culprits"][0]["compares"] == ["h2", "ssh"]
    backlog = json.loads(render_json(diagnose(examples.git_daemon_backlog())))
    assert [(c["id"], c["compares"]) for c in backlog["culprits"]] == [
        ("listen-backlog-overflow", None)]


def test_healthy_report_has_no_culprits() -> None:
    report = json.loads(render_json(diagnose(examples.healthy())))
    assert report["verdict"] == "healthy"
    assert report["culprits"] == []


def test_uncounted_burst_handshakes_are_null_counted_none_are_zero() -> None:
    """null = not counted, 0 = counted none: the push report says it as the fetch report."""
    from dataclasses import replace

    from gitnetdiag.diagnosis.observations import BurstResult

    bursts = (BurstResult(protocol="git", concurrency=4, ok=4, handshakes_counted=False),
              BurstResult(protocol="ssh", concurrency=4, ok=4))
    report = json.loads(render_json(diagnose(replace(examples.healthy(), bursts=bursts))))
    uncounted, counted = report["observations"]["bursts"]
    assert [uncounted[k] for k in ("syn_retransmissions", "synack_retransmissions", "resets")] \
        == [None, None, None]
    assert [counted[k] for k in ("syn_retransmissions", "synack_retransmissions", "resets")] \
        == [0, 0, 0]
