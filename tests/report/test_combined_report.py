"""A ``both`` run renders as one document in every format: the verdict, one ranking with a
direction tag per culprit, then each direction's report as it renders alone."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from gitnetdiag.diagnosis import Evidence, Finding
from gitnetdiag.diagnosis.combined import combine
from gitnetdiag.diagnosis.model import Diagnosis
from gitnetdiag.pipeline import diagnosis_from_saved
from gitnetdiag.report import RENDERERS
from gitnetdiag.report.json_report import BOTH_SCHEMA, report_dict
from gitnetdiag.report.terminal import render_terminal
from tests.report.test_report_json import documented_schema, validate

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def halves() -> tuple[Diagnosis, Diagnosis]:
    """A recorded push run (HTTP/2 window, degraded) and a recorded fetch run
    (inconclusive: no TCP evidence)."""
    return (diagnosis_from_saved(ROOT / "captures" / "h2-small-window"),
            diagnosis_from_saved(ROOT / "tests" / "data" / "fetch-healthy"))


@pytest.fixture(scope="module")
def both(halves: tuple[Diagnosis, Diagnosis]) -> Diagnosis:
    return combine(*halves)


def test_terminal_is_one_report_with_each_half_as_alone(
        both: Diagnosis, halves: tuple[Diagnosis, Diagnosis]) -> None:
    text = render_terminal(both)
    lines = text.splitlines()
    assert lines[0] == ("gitnetdiag report: both directions "
                        "(upload: pushes; download: clones)")
    assert lines[1] == "verdict: INCONCLUSIVE"
    assert lines[2].startswith("Download: Part of the evidence is missing")
    assert re.search(r"^1\s+upload\s+h2-flow-control-window\s+2\.5 s\s+0\.91$", text, re.M)
    assert text.count("verdict: ") == 3  # the run's, then each half's own
    push, fetch = halves
    assert render_terminal(push).rstrip("\n") in text
    assert render_terminal(fetch).rstrip("\n") in text
    assert text.index("=== Upload: pushes (direction push) ===") < text.index(
        "=== Download: clones (direction fetch) ===")


def test_markdown_nests_each_half_under_its_direction(
        both: Diagnosis, halves: tuple[Diagnosis, Diagnosis]) -> None:
    text = RENDERERS["md"](both)
    assert text.startswith("# gitnetdiag report: both directions\n")
    assert text.count("\n# ") == 0  # one title: the halves' own gave way
    assert "| 1 | upload | h2-flow-control-window | 2.5 s | 0.91 |" in text
    assert "## Upload: pushes (direction push)" in text
    assert "### Culprits" in text and "#### 1. `h2-flow-control-window`" in text
    push_md = RENDERERS["md"](halves[0])
    body = [line for line in push_md.splitlines() if line and not line.startswith("#")]
    assert all(line in text for line in body)


def test_html_is_one_page_with_a_section_per_direction(both: Diagnosis) -> None:
    page = RENDERERS["html"](both)
    assert page.count("<!DOCTYPE html>") == 1 and page.count("<body>") == 1
    assert page.count("<h1>") == 1
    # the ranked culprit links to its details in its direction's section
    assert ('<tr><td>1</td><td>upload</td><td><a href="#push-h2-flow-control-window">'
            "h2-flow-control-window</a></td><td>2.5 s</td><td>0.91</td></tr>") in page
    assert '<section class="culprit" id="push-h2-flow-control-window">' in page
    assert '<section class="direction" id="push"><h2>Upload: pushes (direction push)</h2>' \
        in page
    assert '<section class="direction" id="fetch">' in page
    assert "<h3>Clones</h3>" in page and "<h3>Pushes per protocol</h3>" in page
    assert '<p class="verdict inconclusive">Verdict: inconclusive</p>' in page


def test_json_ranks_with_directions_and_keeps_each_halfs_report(
        both: Diagnosis, halves: tuple[Diagnosis, Diagnosis]) -> None:
    data = json.loads(RENDERERS["json"](both))
    assert data["schema"] == BOTH_SCHEMA and data["direction"] == "both"
    assert data["verdict"] == "inconclusive"
    assert [(c["rank"], c["direction"], c["id"]) for c in data["culprits"]] == [
        (1, "push", "h2-flow-control-window")]
    assert all(c["rank"] is None and c["direction"] in ("push", "fetch")
               for c in data["dropped"])
    push, fetch = halves
    assert data["parts"] == {"push": report_dict(push), "fetch": report_dict(fetch)}
    schema = documented_schema()
    validate(data["parts"]["push"], schema, schema)


def test_one_culprit_in_both_directions_is_tagged_twice(
        halves: tuple[Diagnosis, Diagnosis]) -> None:
    """path-latency on the pushes and on the clones: two ranked lines, one per way."""
    latency = Finding(id="path-latency", title="Path latency", score=0.8, cost_s=3.0,
                      summary="s", evidence=(Evidence(what="RTT", value=0.2, unit="s"),),
                      fix="f")
    push, fetch = halves
    both = combine(replace(push, findings=(latency,)),
                   replace(fetch, findings=(replace(latency, cost_s=2.0),)))
    text = render_terminal(both)
    assert re.search(r"^1\s+upload\s+path-latency\s+3\.0 s", text, re.M)
    assert re.search(r"^2\s+download\s+path-latency\s+2\.0 s", text, re.M)
    md = RENDERERS["md"](both)
    assert "| 2 | download | path-latency | 2.0 s | 0.80 |" in md
    data = json.loads(RENDERERS["json"](both))
    assert [(c["direction"], c["id"]) for c in data["culprits"]] == [
        ("push", "path-latency"), ("fetch", "path-latency")]
    # The fetch half's own report stays a fetch report: no tag in its culprits.
    assert "direction" not in data["parts"]["fetch"]["culprits"][0]
    page = RENDERERS["html"](both)
    # two sections of one culprit, one id each; the clones' culprits have no anchor to link
    assert '<a href="#push-path-latency">' in page and 'id="push-path-latency"' in page
    assert "<td>download</td><td>path-latency</td>" in page
    assert page.count('id="') == len(set(re.findall(r'id="([^"]*)"', page)))


def test_nothing_ranked_is_said_once(halves: tuple[Diagnosis, Diagnosis]) -> None:
    push, fetch = halves
    both = combine(replace(push, findings=(), verdict="healthy"), fetch)
    assert "No culprit above the threshold in either direction." in render_terminal(both)
    assert "No culprit above the threshold in either direction." in RENDERERS["md"](both)
