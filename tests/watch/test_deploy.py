"""The alert rules, the Grafana dashboard and the example configs in deploy/watch/.

promtool (Debian ``prometheus``, installed by scripts/setup.sh) parses every rule and
every dashboard query, and runs the alerts' unit tests; every metric name they use must
be one the exporter registers.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gitnetdiag.watch.config import parse_config
from gitnetdiag.watch.metrics import WatchMetrics, metric_names
from gitnetdiag.watch.sample import ProbeSample

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "watch"
NAME_RE = re.compile(r"\b((?:gitnetdiag|process)_[a-z0-9_]+)\b")
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$target": ".*",
                     "$job": ".*", "$direction": ".*"}


def promtool(*args: str, cwd: Path = DEPLOY) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("promtool")
    assert exe, "promtool is missing: scripts/setup.sh installs Debian's prometheus"
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def known_names() -> frozenset[str]:
    """What the exporter declares, plus the process_* series of its ProcessCollector."""
    metrics = WatchMetrics(["t"])
    metrics.record(ProbeSample(target="t", started_unix_s=0.0, duration_s=1.0))
    rendered = set(NAME_RE.findall(metrics.render().decode()))
    return metric_names() | {n for n in rendered if n.startswith("process_")}


def dashboard_queries() -> list[str]:
    dashboard = json.loads((DEPLOY / "grafana-dashboard.json").read_text())
    queries = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", ())]
    queries += [v["definition"] for v in dashboard["templating"]["list"] if "definition" in v]
    return queries


def test_alert_rules_check_and_their_unit_tests_pass() -> None:
    checked = promtool("check", "rules", "alerts.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = promtool("test", "rules", "alerts.test.yml")
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_alerts_cover_the_issue_and_use_registered_names() -> None:
    rules = yaml.safe_load((DEPLOY / "alerts.yml").read_text())["groups"][0]["rules"]
    exprs = {r["alert"]: r["expr"] for r in rules}
    assert {"GitHttp2FarSlowerThanHttp1", "GitProbeFailing", "GitCulpritFound"} <= set(exprs)
    assert "0.5" in exprs["GitCulpritFound"]
    # The rate comparison pairs HTTP/2 with HTTP/1.1 of the same direction, never across.
    assert "on (target, direction)" in exprs["GitHttp2FarSlowerThanHttp1"]
    used = {name for expr in exprs.values() for name in NAME_RE.findall(expr)}
    assert used and used <= known_names(), used - known_names()


def test_dashboard_queries_parse_and_use_registered_names(tmp_path: Path) -> None:
    """Each query (variables filled in) goes through promtool as a recording rule."""
    queries = dashboard_queries()
    assert len(queries) >= 10
    names = known_names()
    rules = []
    for i, query in enumerate(queries):
        used = set(NAME_RE.findall(query))
        assert used, f"query without a gitnetdiag metric: {query}"
        assert used <= names, f"unknown metric {used - names} in {query}"
        if query.startswith("label_values("):
            continue
        for variable, value in GRAFANA_VARIABLES.items():
            query = query.replace(variable, value)
        assert "$" not in query, query
        rules.append({"record": f"dashboard:query_{i}", "expr": query})
    (tmp_path / "dashboard.rules.yml").write_text(
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    checked = promtool("check", "rules", "dashboard.rules.yml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_dashboard_shows_the_issue_s_metrics() -> None:
    text = " ".join(dashboard_queries())
    for name in ("gitnetdiag_last_transfer_rate_bytes_per_second", "gitnetdiag_probe_success",
                 "gitnetdiag_culprit_score", "gitnetdiag_h2_window_bytes",
                 "gitnetdiag_ssh_channel_window_bytes", "gitnetdiag_flow_control_stall_seconds",
                 "gitnetdiag_rtt_seconds", "gitnetdiag_verdict",
                 "gitnetdiag_transfer_duration_seconds_bucket", "gitnetdiag_probes_total"):
        assert name in text, name


def test_alert_tests_cover_both_directions() -> None:
    """The promtool suite fires each transfer alert for pushes and for clones."""
    suite = yaml.safe_load((DEPLOY / "alerts.test.yml").read_text())
    fired = {(alert["alertname"], expected["exp_labels"].get("direction"))
             for test in suite["tests"] for alert in test["alert_rule_test"]
             for expected in alert["exp_alerts"]}
    for name in ("GitHttp2FarSlowerThanHttp1", "GitProbeFailing", "GitCulpritFound"):
        assert {(name, "push"), (name, "fetch")} <= fired, name


def test_dashboard_shows_both_directions() -> None:
    """Every transfer panel can be narrowed to a direction and names it in its legend."""
    dashboard = json.loads((DEPLOY / "grafana-dashboard.json").read_text())
    assert "direction" in {v["name"] for v in dashboard["templating"]["list"]}
    for panel in dashboard["panels"]:
        for query in panel.get("targets", ()):
            if re.search(r"transfer_|probe_success|culprit_score|verdict", query["expr"]):
                assert 'direction=~"$direction"' in query["expr"], query["expr"]
                assert "{{direction}}" in query["legendFormat"], query


@pytest.mark.parametrize("name", ["prometheus.example.yml"])
def test_example_prometheus_config_checks(name: str, tmp_path: Path) -> None:
    for file in (name, "alerts.yml"):
        shutil.copy(DEPLOY / file, tmp_path / file)
    checked = promtool("check", "config", name, cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_example_watch_config_and_unit() -> None:
    config = parse_config((DEPLOY / "watch.example.yaml").read_text())
    assert [(t.name, t.direction) for t in config.targets] == [
        ("edge", "push"), ("lab", "push"), ("mirror", "fetch")]
    unit = (DEPLOY / "gitnetdiag-watch.service").read_text()
    assert re.search(r"^ExecStart=\S+/gitnetdiag watch --config \S+$", unit, re.MULTILINE)
    assert "KillSignal=SIGTERM" in unit
