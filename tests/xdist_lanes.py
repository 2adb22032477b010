"""``--dist loadgroup`` that works with this pytest: each ``xdist_group`` on one worker.

pytest-xdist 3.8 marks a test's group by appending ``@<group>`` to ``item._nodeid`` on
the worker; pytest 9.2 builds ``item.nodeid`` from ``item._id`` instead, so the suffix
never shows, the controller sees no group and ``loadgroup`` spreads tests one by one,
like ``load`` (two tests of the same group ran at once). Here the workers write each
test's group to a file the controller named, and the controller's scheduler, xdist's own
``LoadScopeScheduling``, takes a test's group as its scope: a group is one work unit,
run on one worker in collection order; a test without a group is a unit of its own.
The lanes of ``tests/conftest.py`` are two such groups.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from xdist.scheduler import LoadScopeScheduling
from xdist.workermanage import WorkerController

KEY = "gnd_groups_file"
"""The ``workerinput`` key naming the file (set by the controller, read by the workers)."""


def item_group(item: pytest.Item) -> str | None:
    """The test's ``xdist_group`` names joined as xdist joins them, or None."""
    names = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                    for mark in item.iter_markers("xdist_group")})
    return "_".join(names) if names else None


class GroupScheduling(LoadScopeScheduling):
    """``LoadScopeScheduling`` whose scope is the test's group, read from the workers' file."""

    def __init__(self, config: pytest.Config, groups_file: Path, log: object = None) -> None:
        super().__init__(config, log)  # type: ignore[arg-type]
        self._groups_file = groups_file
        self._groups: dict[str, str] | None = None

    def groups(self) -> dict[str, str]:
        if self._groups is None:
            text = self._groups_file.read_text() if self._groups_file.exists() else "{}"
            self._groups = json.loads(text)
        return self._groups

    def _split_scope(self, nodeid: str) -> str:
        return self.groups().get(nodeid, nodeid)


def configure(config: pytest.Config) -> None:
    """On the controller under ``--dist loadgroup``: the directory of the groups file."""
    if not hasattr(config, "workerinput") and config.getoption("dist", "no") == "loadgroup":
        config.stash[_DIR] = Path(tempfile.mkdtemp(prefix="gnd-xdist-groups-"))


def unconfigure(config: pytest.Config) -> None:
    if _DIR in config.stash:
        shutil.rmtree(config.stash[_DIR], ignore_errors=True)


def groups_file(config: pytest.Config) -> Path | None:
    return config.stash[_DIR] / "groups.json" if _DIR in config.stash else None


def configure_node(node: WorkerController) -> None:
    """Tell the worker where to write the groups."""
    path = groups_file(node.config)
    if path is not None:
        node.workerinput[KEY] = str(path)


def make_scheduler(config: pytest.Config, log: object) -> GroupScheduling | None:
    path = groups_file(config)
    return GroupScheduling(config, path, log) if path is not None else None


def record(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker: write every grouped test's group (each worker writes the same map)."""
    workerinput = getattr(config, "workerinput", None)
    if not workerinput or KEY not in workerinput:
        return
    groups = {item.nodeid: group for item in items if (group := item_group(item))}
    path = Path(workerinput[KEY])
    tmp = path.with_name(f"{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(groups))
    os.replace(tmp, path)


def recorded(config: pytest.Config) -> dict[str, str]:
    """On the controller: the groups the workers wrote ({} before they did)."""
    path = groups_file(config)
    if path is None or not path.exists():
        return {}
    groups: dict[str, str] = json.loads(path.read_text())
    return groups


_DIR = pytest.StashKey[Path]()
