"""Shared fixtures: lab instances for integration tests (root only).

Bringing a lab up costs seconds per test (namespaces, Apache, HAProxy, sshd, git
daemon, the fault); the lab suite runs one test at a time, so ``make test``'s time is
mostly labs going up and pushes. Two fixtures give a test its lab:

``shared_lab(*faults, **options)``
    The lab of that fault set and those options, brought up by the first test that
    asks for it and kept until the end of the session: every later test asking for
    the same faults and options (order of faults ignored) gets the same lab. Use it
    when the test leaves the lab as it found it:

    * pushes go to refs the test creates and deletes, or to branch names no other
      test uses (the probes delete their refs themselves);
    * counters are compared as before/after deltas, never as absolute values;
    * it never changes the lab's configuration (``lab fix``, editing a config,
      restarting a server) and never relies on a once-per-socket event (the kernel's
      "SYN flooding" warning is printed once per listening socket, so a test that
      looks for it in the log needs a fresh lab).

``lab_factory(*faults, **options)``
    A fresh lab for this test alone, taken down when it ends. Use it for everything
    the rules above exclude.

A new fault's tests: ask ``shared_lab(fault)`` in each test that only reads or
pushes, as :mod:`tests.acceptance.test_diagnose_lab` does for its faults without a
``lab fix``; the lab then goes up once for all of them. Keep pushes only as large as
the assertion needs (a few MB).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gitnetdiag.lab import manager
from gitnetdiag.lab.spec import build_spec
from gitnetdiag.model.lab.state import LabState
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
