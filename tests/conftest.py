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

Three lanes
-----------
``make test`` runs the lab tests on three pytest-xdist workers with ``--dist loadgroup``:
each lab test is put in one of three ``xdist_group`` lanes, and each lane runs on its own
worker, one test at a time, so exactly one test of each lane runs at once (xdist's own
``loadgroup`` no longer sees groups under pytest 9.2: :mod:`tests.xdist_lanes` schedules
them).

``busy`` (the default)
    Tests that measure rates or times the machine's CPU could bend: pushes and fetches
    whose throughput, ranking or predicted gain is the assertion.
``idle``
    Tests that spend their time waiting, not computing, or whose culprit is named from
    failures rather than a rate: a fault under a CPU quota of 5 % of one core
    (``client-pack-cpu``, ``client-index-cpu``, ``slow-pack-generation``), a throttled
    disk (``slow-storage``), sleeps (``slow-hook``, ``slow-auth``), stall timeouts
    (``pmtu-blackhole``, ``h2-client-stall``), SYN retransmission waits (``syn-drop``,
    ``tiny-backlog``), resets and refusals (``firewall-reset``, ``ssh-maxstartups``,
    ``edge-backend-errors``, ``request-body-limit``, ``streamed-body-refused``), an edge
    timeout during a sleeping hook (``edge-idle-timeout``), a lab's own set-up, fixes
    and teardown.
``fail``
    Tests of transfers that fail and are named by what was seen (issue 42: statuses, an
    edge's or a path's timeout, a dead port): they spend their time in sleeping hooks,
    timeouts and the lab's set-up, assert no rate, and use labs of their own
    (``lab_factory``), so a third worker adds no second copy of another lane's shared lab;
    also tests that wait on their own labs or none, moved from the idle lane to balance
    the two (pushes that stall or hang, watch cycles, lost answers: a fresh-clone run gave
    idle 1202 s, fail 531 s, busy 1166 s before); and tests whose assertion is an order,
    a clean server or no culprit rather than a rate, moved off the busy lane when it was the
    longest (a load ramp, a healthy listener's load, a seed branch, a both run's steps:
    busy 1095 s, idle 833 s, fail 652 s before, 2026-12-03; a lab of the shared ones it
    asks for then goes up once more, in 1.6 s). Only a test marked
    ``@pytest.mark.lab_lane("fail")`` runs there.

The rule, in one place (:func:`lab_lane`): a test's own ``@pytest.mark.lab_lane("idle")``
or ``lab_lane("busy")`` (closest marker wins, so a module can set a lane and one test
override it); otherwise ``idle`` when one of its parameters is a fault in
:data:`IDLE_FAULTS`; otherwise ``busy``. A new test or a new fault is busy until it is
shown to wait. A test that fails because of what runs beside it moves lanes; its
assertion is not loosened. Every test of a lab that reads the host's global kernel log
(``dmesg``: the "SYN flooding" lines of ``tiny-backlog``) or needs a loop device is idle,
so such tests never run at the same time. Each worker has its own ``shared_lab``
instances (a lab two lanes both ask for goes up twice, under different names); labs
share no address, port, cgroup or iptables chain across instances, and
:mod:`gitnetdiag.lab.manager` serializes the files they do share. At the end a line per
lane gives its test count and summed time (setup, call and teardown), for balancing.
Measured on this 2-core machine with other work running: one test at a time took 1726 s;
the two lanes 811 s (87 passed; busy 801 s, idle 782 s of summed test time).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gitnetdiag.lab import manager
from gitnetdiag.lab.spec import build_spec
from gitnetdiag.model.lab.state import LabState
from tests import xdist_lanes
from tests.httpremote import HttpRemote, serve_http_remote

LabFactory = Callable[..., LabState]

IDLE_LANE = "idle"
BUSY_LANE = "busy"
FAIL_LANE = "fail"
LANES = (BUSY_LANE, IDLE_LANE, FAIL_LANE)
IDLE_FAULTS = frozenset({
    "client-index-cpu", "client-pack-cpu", "slow-pack-generation",  # 5 % of one core
    "slow-storage",  # 30 IOPS, 1 MiB/s
    "edge-response-buffering",  # the edge's temp files on a 30 IOPS, 1 MiB/s loop device
    "slow-hook", "slow-auth",  # sleeps of seconds
    "pmtu-blackhole", "h2-client-stall",  # transfers that hang until a stall timeout
    "syn-drop", "tiny-backlog",  # SYN retransmission timeouts
    # named from failures, not rates: resets, refused SSH, an edge's redirects
    "firewall-reset", "ssh-maxstartups", "edge-backend-errors",
    # issue 33: a 413, a 411, an edge timeout during a sleeping hook
    "request-body-limit", "streamed-body-refused", "edge-idle-timeout",
})
"""Faults whose lab tests wait or fail rather than measure a rate: a test parametrized with
one runs in the idle lane."""


def lab_lane(item: pytest.Item) -> str | None:
    """The lane of a lab test (None for a unit test): see the module's docstring."""
    if not item.get_closest_marker("lab"):
        return None
    mark = item.get_closest_marker("lab_lane")
    if mark is not None:
        if len(mark.args) != 1 or mark.args[0] not in LANES:
            raise pytest.UsageError(f"{item.nodeid}: lab_lane takes one of "
                                    f"{', '.join(LANES)}, not {mark.args!r}")
        return str(mark.args[0])
    callspec = getattr(item, "callspec", None)
    params = callspec.params.values() if callspec is not None else ()
    if any(isinstance(value, str) and value in IDLE_FAULTS for value in params):
        return IDLE_LANE
    return BUSY_LANE


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "lab_lane(name): the lab test's lane, busy, idle or fail (tests/conftest.py)")
    xdist_lanes.configure(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    xdist_lanes.unconfigure(config)


def pytest_configure_node(node: xdist_lanes.WorkerController) -> None:
    xdist_lanes.configure_node(node)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object
                                ) -> xdist_lanes.GroupScheduling | None:
    """``--dist loadgroup`` as xdist means it (:mod:`tests.xdist_lanes`)."""
    return xdist_lanes.make_scheduler(config, log)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each lab test gets its lane as its xdist group. Lab tests need root; without it they
    fail loudly instead of passing silently."""
    root = os.geteuid() == 0
    for item in items:
        lane = lab_lane(item)
        if lane is None:
            continue
        item.add_marker(pytest.mark.xdist_group(lane))
        if not root:
            item.add_marker(pytest.mark.xfail(reason="lab tests need root", run=False,
                                              strict=True))
    xdist_lanes.record(config, items)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Under ``--dist loadgroup``, one line per lane: its tests and their summed setup, call
    and teardown time."""
    groups = xdist_lanes.recorded(terminalreporter.config)
    seconds: dict[str, float] = {}
    tests: dict[str, set[str]] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            nodeid = getattr(report, "nodeid", "")
            lane = groups.get(nodeid, "")
            if lane not in LANES or not hasattr(report, "when"):
                continue
            seconds[lane] = seconds.get(lane, 0.0) + float(getattr(report, "duration", 0.0))
            tests.setdefault(lane, set()).add(nodeid)
    for lane in sorted(seconds):
        terminalreporter.write_line(
            f"lab lane {lane}: {len(tests[lane])} tests, {seconds[lane]:.0f} s")


def _down_all(instances: list[str]) -> None:
    """Take the labs down four at a time (each down mostly waits on ``ip netns`` and on its
    servers' exit; a lane ends with some 30 shared labs up)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(manager.down, instances))


@pytest.fixture(autouse=True)
def _environment_restored() -> Iterator[None]:
    """Every test leaves ``os.environ`` as it found it. The code under test may change it on
    purpose (``lab.netns.apply_client_env``: the lab client's ``https_proxy`` and ``PATH``,
    as the user's shell sets them); left behind, that proxy sent a later test's clone of a
    closed port through a CONNECT that answered 404 (a fresh-clone run, 2026-12-03)."""
    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)


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
    _down_all(made)


@pytest.fixture(scope="session")
def shared_lab() -> Iterator[LabFactory]:
    """Lab instances shared by the whole session, one per distinct set of faults/options.

    Tests that only read from the lab (or push to throwaway branches and clean up)
    use this to avoid bringing up the same lab again and again.
    """
    made: dict[tuple[object, ...], LabState] = {}

    def get(*faults: str, **options: object) -> LabState:
        # No fault is the healthy lab (build_spec): one key, so one lab, for both spellings.
        key = (tuple(sorted(faults or ("healthy",))), tuple(sorted(options.items())))
        if key not in made:
            name = "s" + uuid.uuid4().hex[:6]
            spec = build_spec(instance=name, faults=list(faults) or ["healthy"], **options)  # type: ignore[arg-type]
            made[key] = manager.up(spec)
        return made[key]

    yield get
    _down_all([state.instance for state in made.values()])


@pytest.fixture()
def http_remote(tmp_path: Path) -> Iterator[HttpRemote]:
    """A loopback smart-HTTP remote demanding Basic auth and a query token
    (:mod:`tests.httpremote`)."""
    yield from serve_http_remote(tmp_path)
