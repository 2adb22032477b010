"""``gitnetdiag.proc``: every child's failure comes back as one error of our tree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest

from gitnetdiag.errors import EnvironmentProblem, ExternalCommandError, NetworkError
from gitnetdiag.proc import kill_group, map_process_errors, run, run_binary, start


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
                   timeout_s=0.2, timeout_error=NetworkError, timeout_reference="helper-timeout")
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
