"""A real host report through the adapter into the diagnosis engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitnetdiag.diagnosis.engine import diagnose
from gitnetdiag.diagnosis.observations import Observations
from gitnetdiag.errors import InputError
from gitnetdiag.pipeline import host_observation_from_report, load_host_report
from tests.diagnosis.examples import git_daemon_backlog
from tests.host.fakes import DATA

REPORT = DATA / "report_tiny_backlog_burst.json"


def _report() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(REPORT.read_text())
    return data


def test_adapter_maps_listeners_counters_sysctls_and_findings() -> None:
    """Recorded in the lab (tiny-backlog, h2-small-window, tcp-rmem-clamp) under 150 ls-remote."""
    host = host_observation_from_report(_report())
    git = next(item for item in host.listeners if item.port == 9418)
    assert (git.backlog, git.process) == (5, "git-daemon") and git.accept_queue >= 1
    assert host.counter_deltas["ListenOverflows"] > 0
    assert host.sysctls["net.ipv4.tcp_rmem"] == "4096 65536 65536"
    settings = {c.setting: c for c in host.config_findings}
    assert settings["tune.h2.initial-window-size"].line is None
    assert settings["net.ipv4.tcp_rmem"].line == 1
    assert load_host_report(REPORT) == host


def test_tiny_backlog_report_ranks_listen_backlog_overflow_first() -> None:
    """The client side (the burst) alone gives syn-drop; with the host report the backlog wins."""
    burst = git_daemon_backlog().bursts
    without_host = diagnose(Observations(bursts=burst))
    assert "listen-backlog-overflow" not in [f.id for f in without_host.findings]
    obs = Observations(bursts=burst, host=host_observation_from_report(_report()))
    diagnosis = diagnose(obs)
    assert diagnosis.findings[0].id == "listen-backlog-overflow"
    top = diagnosis.findings[0]
    assert "backlog of 5" in top.summary and "git daemon" in top.fix
    assert any("ListenOverflows" in e.what for e in top.evidence)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schema": "other/1"}, "schema"),
        ({"listeners": [{"port": "x", "backlog": 5}]}, "listeners[0].port"),
        ({"counters": {"ListenOverflows": "many"}}, "counters.ListenOverflows"),
        ({"config_findings": [{"setting": "a"}]}, "config_findings[0].value"),
        ({"kernel_log": "text"}, "kernel_log"),
    ],
)
def test_bad_reports_name_the_field(change: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as info:
        host_observation_from_report({**_report(), **change})
    assert message in info.value.message and info.value.hint


def test_unknown_backlog_is_skipped(tmp_path: Path) -> None:
    data = _report()
    data["listeners"] = [{"port": 22, "backlog": None, "accept_queue": 0, "process": ""}]
    assert host_observation_from_report(data).listeners == ()
    bad = tmp_path / "r.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="not JSON"):
        load_host_report(bad)
