"""Issue 11's acceptance for remotes that cannot be measured, through ``diagnose``
against the lab's authenticated way in: a wrong password and an unknown host key
give a non-zero exit, a verdict that is not healthy, and one error line naming
the cause, never a traceback (a refused port and an unsupported scheme are in
``tests/commands/test_verdict_cli.py`` and ``test_bad_input.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitnetdiag.errors import ExitCode
from tests.conftest import LabFactory

# The idle lane (tests/conftest.py): a refused credential and host key, failures not rates.
pytestmark = [pytest.mark.lab, pytest.mark.lab_lane("idle")]

REPO_ROOT = Path(__file__).resolve().parents[2]
WRONG = "WRONGpw4242"


def _diagnose(client_ns: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_CONFIG")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0", SSH_AUTH_SOCK="",
               COLUMNS="200", NO_COLOR="1")
    return subprocess.run(
        ["ip", "netns", "exec", client_ns, sys.executable, "-m", "gitnetdiag", "diagnose",
         "--size", "256KiB", "--timeout", "30", "--no-capture", *args],
        capture_output=True, text=True, timeout=300, env=env, cwd=REPO_ROOT)


def _one_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1, proc.stderr[-3000:]
    return errors[0]


def test_wrong_password_is_failed_and_named(shared_lab: LabFactory, tmp_path: Path) -> None:
    state = shared_lab("h2-small-window", "auth")
    url = state.endpoints.https_edge.replace("https://", f"https://probe:{WRONG}@", 1)
    proc = _diagnose(state.client_ns, "--http", url, "--ca-file", state.ca_file,
                     "--out", str(tmp_path / "run"))
    assert proc.returncode == ExitCode.NOT_MEASURED, proc.stderr[-3000:]
    assert proc.stdout.startswith("verdict: FAILED\n"), proc.stdout[:500]
    error = _one_error(proc)
    assert error.startswith("error [not-measured]: verdict failed: auth-failed: "), error
    assert "hint: check --ssh-key / the HTTP credentials" in error, error
    assert WRONG not in proc.stdout + proc.stderr
    print(error)


def test_unknown_host_key_is_failed_and_named(shared_lab: LabFactory, tmp_path: Path) -> None:
    state = shared_lab("h2-small-window", "auth")
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    proc = _diagnose(state.client_ns, "--ssh", state.endpoints.ssh, "--ssh-key", state.ssh_key,
                     "--ssh-known-hosts", str(empty), "--out", str(tmp_path / "run"))
    assert proc.returncode == ExitCode.NOT_MEASURED, proc.stderr[-3000:]
    assert proc.stdout.startswith("verdict: FAILED\n"), proc.stdout[:500]
    error = _one_error(proc)
    assert error.startswith("error [not-measured]: verdict failed: ssh-host-key: "), error
    assert "known_hosts" in error and "repository exists" not in error, error
    print(error)
