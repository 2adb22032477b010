"""``gitnetdiag.proc``: every child's failure comes back as one error of our tree."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Literal

import pytest

from gitnetdiag.errors import EnvironmentProblem, ExternalCommandError, NetworkError
from gitnetdiag.proc import OnTimeout, kill_group, map_process_errors, run, run_binary, start


def test_missing_program_is_an_environment_problem() -> None:
    with pytest.raises(EnvironmentProblem) as info:
        run(["gitnetdiag-no-such-program", "x"], missing_hint="install it")
    assert info.value.reference == "missing-program"
    assert info.value.message == "the program 'gitnetdiag-no-such-program' is not installed"
    assert info.value.hint == "install it"


def test_timeout_names_the_command_and_takes_the_callers_error() -> None:
    with pytest.raises(ExternalCommandError) as info:
        run([sys.executable, "-c", "import time; time.sleep(5)"], timeout_s=0.2, what="sleeper")
    assert info.value.reference == "command-timeout"
    assert info.value.message == "'sleeper' did not finish within 0 s"
    with pytest.raises(NetworkError) as network:
        run_binary([sys.executable, "-c", "import time; time.sleep(5)"], what="helper",
                   timeout_s=0.2,
                   on_timeout=OnTimeout(error=NetworkError, reference="helper-timeout"))
    assert network.value.reference == "helper-timeout"


def test_failure_under_check_carries_the_last_line_of_stderr() -> None:
    code = ("import sys; print('first', file=sys.stderr); print('boom', file=sys.stderr); "
            "sys.exit(3)")
    with pytest.raises(ExternalCommandError) as info:
        run([sys.executable, "-c", code], what="py")
    assert info.value.message == "'py' failed: boom"
    assert run([sys.executable, "-c", code], check=False).returncode == 3


def test_a_program_that_cannot_run_is_mapped_not_raised(tmp_path: Path) -> None:
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(ExternalCommandError, match="cannot run"):
        run_binary([str(script)], what="not-executable")
    with pytest.raises(ExternalCommandError), map_process_errors("x"):
        raise PermissionError(13, "Permission denied")


@pytest.mark.parametrize("isolate", ["session", "group"])
def test_started_child_is_stopped_with_its_group(isolate: Literal["session", "group"]) -> None:
    child = start([sys.executable, "-c", "import time; time.sleep(60)"],
                  isolate=isolate, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert os.getpgid(child.pid) == child.pid
    kill_group(child)
    assert child.poll() is not None


def test_children_in_their_own_group_die_with_a_killed_parent(tmp_path: Path) -> None:
    """SIGKILL of the parent runs none of its code, yet the guardian stops the child's
    whole group: the child and the grandchild it started (git's remote helper, ssh)."""
    marker = tmp_path / "pids"
    parent = (
        "import sys, time\n"
        "from gitnetdiag.proc import start\n"
        "proc = start(['sh', '-c', 'sleep 300 & echo $! $$ > " + str(marker) + "; wait'],"
        " isolate='session')\n"
        "print('started', flush=True)\n"
        "time.sleep(300)\n"
    )
    tool = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    # start() has returned (the child is registered) before the kill: a kill while
    # start() runs is the window its docstring names. Under load the child can write
    # its pids before its parent is scheduled again to register it.
    assert tool.stdout is not None and tool.stdout.readline() == "started\n"
    # Generous waits: on a loaded 2-core machine the child's start-up alone can take
    # seconds; the assertion is about what happens, not how fast.
    for _ in range(600):
        if marker.exists() and len(marker.read_text().split()) == 2:
            break
        time.sleep(0.05)
    pids = [int(p) for p in marker.read_text().split()]
    tool.kill()
    tool.wait(timeout=10)
    deadline = time.monotonic() + 20
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids)


def test_a_server_meant_to_outlive_us_is_left_alone(tmp_path: Path) -> None:
    """``outlive`` (the lab's servers): the guardian does not stop it when we end."""
    marker = tmp_path / "pid"
    parent = (
        "from gitnetdiag.proc import start\n"
        "start(['sh', '-c', 'echo $$ > " + str(marker) + "; exec sleep 30'],"
        " isolate='session', outlive=True)\n"
    )
    subprocess.run([sys.executable, "-c", parent], timeout=30, check=True)
    time.sleep(1.0)
    pid = int(marker.read_text())
    try:
        assert _alive(pid)
    finally:
        os.kill(pid, 9)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"
