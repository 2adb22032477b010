"""Shared fixtures: lab instances for integration tests (root only)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gitnetdiag.lab import manager
from gitnetdiag.lab.spec import build_spec
from gitnetdiag.lab.state import LabState
from tests.httpremote import HttpRemote, serve_http_remote

LabFactory = Callable[..., LabState]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Lab tests need root; without it they fail loudly instead of passing silently."""
    if os.geteuid() == 0:
        return
    for item in items:
        if item.get_closest_marker("lab"):
            item.add_marker(pytest.mark.xfail(reason="lab tests need root", run=False,
                                              strict=True))


@pytest.fixture
def lab_factory() -> Iterator[LabFactory]:
    """Bring up lab instances with unique names; every one is taken down afterwards."""
    made: list[str] = []

    def make(*faults: str, **options: object) -> LabState:
        name = "t" + uuid.uuid4().hex[:6]
        spec = build_spec(instance=name, faults=list(faults) or ["healthy"], **options)  # type: ignore[arg-type]
        made.append(name)
        return manager.up(spec)

    yield make
    for name in made:
        manager.down(name)


@pytest.fixture(scope="session")
def shared_lab() -> Iterator[LabFactory]:
    """Lab instances shared by the whole session, one per distinct set of faults/options.

    Tests that only read from the lab (or push to throwaway branches and clean up)
    use this to avoid bringing up the same lab again and again.
    """
    made: dict[tuple[object, ...], LabState] = {}

    def get(*faults: str, **options: object) -> LabState:
        key = (tuple(sorted(faults)), tuple(sorted(options.items())))
        if key not in made:
            name = "s" + uuid.uuid4().hex[:6]
            spec = build_spec(instance=name, faults=list(faults) or ["healthy"], **options)  # type: ignore[arg-type]
            made[key] = manager.up(spec)
        return made[key]

    yield get
    for state in made.values():
        manager.down(state.instance)


@pytest.fixture()
def http_remote(tmp_path: Path) -> Iterator[HttpRemote]:
    """A loopback smart-HTTP remote demanding Basic auth and a query token
    (:mod:`tests.httpremote`)."""
    yield from serve_http_remote(tmp_path)
