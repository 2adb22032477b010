"""The lab suite's lane rule (tests/conftest.py) and the group scheduling behind it."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import BUSY_LANE, FAIL_LANE, IDLE_FAULTS, IDLE_LANE, lab_lane
from tests.xdist_lanes import GroupScheduling


def _item(*marks: Any, params: dict[str, object] | None = None) -> pytest.Item:
    by_name = {}
    for mark in marks:  # the first one given is the closest
        by_name.setdefault(mark.name, mark)
    item = SimpleNamespace(nodeid="tests/x.py::test_x",
                           get_closest_marker=lambda name: by_name.get(name))
    if params is not None:
        item.callspec = SimpleNamespace(params=params)
    return item  # type: ignore[return-value]


LAB = pytest.mark.lab.mark


def test_a_unit_test_has_no_lane() -> None:
    assert lab_lane(_item()) is None


def test_a_new_lab_test_is_busy() -> None:
    assert lab_lane(_item(LAB)) == BUSY_LANE
    assert lab_lane(_item(LAB, params={"fault": "a-fault-added-tomorrow"})) == BUSY_LANE


def test_an_idle_fault_parameter_makes_it_idle() -> None:
    assert "slow-hook" in IDLE_FAULTS and "loss" not in IDLE_FAULTS
    assert lab_lane(_item(LAB, params={"fault": "slow-hook", "size": 3})) == IDLE_LANE
    assert lab_lane(_item(LAB, params={"fault": "loss"})) == BUSY_LANE


def test_the_closest_marker_wins_over_the_fault() -> None:
    busy = pytest.mark.lab_lane("busy").mark
    idle = pytest.mark.lab_lane("idle").mark
    assert lab_lane(_item(busy, LAB, params={"fault": "slow-hook"})) == BUSY_LANE
    assert lab_lane(_item(idle, LAB)) == IDLE_LANE


def test_the_fail_lane_is_taken_only_by_its_marker() -> None:
    fail = pytest.mark.lab_lane("fail").mark
    assert lab_lane(_item(fail, LAB, params={"fault": "slow-hook"})) == FAIL_LANE
    assert FAIL_LANE not in {lab_lane(_item(LAB, params={"fault": f})) for f in IDLE_FAULTS}


def test_an_unknown_lane_is_a_usage_error() -> None:
    with pytest.raises(pytest.UsageError, match="lab_lane takes"):
        lab_lane(_item(pytest.mark.lab_lane("fast").mark, LAB))


def test_a_group_is_one_scope_and_an_ungrouped_test_its_own(tmp_path: Path) -> None:
    groups = tmp_path / "groups.json"
    groups.write_text(json.dumps({"t.py::a": "idle", "t.py::b": "idle", "t.py::c": "busy"}))
    options = {"tx": ["popen", "popen"], "numprocesses": 2, "dist": "loadgroup"}
    config = SimpleNamespace(getvalue=options.get, option=SimpleNamespace(**options))
    sched = GroupScheduling(config, groups)  # type: ignore[arg-type]
    assert [sched._split_scope(n) for n in ("t.py::a", "t.py::b", "t.py::c", "t.py::d")] == [
        "idle", "idle", "busy", "t.py::d"]
