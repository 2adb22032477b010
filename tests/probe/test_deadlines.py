"""Ctrl-C keeps what it promises (issue 34, item 6), against a loopback server that takes
the pack and then answers nothing at all, ``ls-remote`` included: the clean-up it
announces ("waiting up to N s") ends within 5 s of N, and the push's progress line says
what it waits for, not "waiting for the server's status" any more."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitnetdiag.rundir import load_run
from tests.httpremote import TOKEN, HttpRemote
from tests.probe.mutedremote import serve_muted_remote

WAIT_S = 10
"""--cleanup-wait: what the first Ctrl-C promises."""


@pytest.fixture()
def deaf_remote(tmp_path: Path) -> Iterator[HttpRemote]:
    yield from serve_muted_remote(tmp_path, deaf=True)


def _read(master: int, seen: bytearray, until_s: float) -> None:
    """Read the terminal's output into ``seen`` for up to ``until_s`` seconds."""
    end = time.monotonic() + until_s
    while time.monotonic() < end:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            seen += chunk


def _screen(raw: bytes) -> str:
    """The terminal output without its escape sequences."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\r", "", raw.decode(errors="replace"))


def test_ctrl_c_on_a_server_that_never_answers_ends_within_what_it_promised(
    deaf_remote: HttpRemote, tmp_path: Path
) -> None:
    """On a terminal (a pty, so the spinner is live) Ctrl-C after the pack went: the tool
    says it waits up to 10 s, its spinner says it cleans up, and it exits 130 within 5 s of
    those 10 s with the branch ``unconfirmed`` and both commands (never "None"). Before:
    four ls-remote runs of at least 10 s each, 40 s and more."""
    run_dir = tmp_path / "run"
    pid, master = pty.fork()
    if pid == 0:  # the child: the probe on the pty
        os.environ["TMPDIR"] = str(tmp_path)
        os.environ["COLUMNS"] = "400"
        os.execv(sys.executable, [
            sys.executable, "-m", "gitnetdiag", "probe", "--protocols", "h1", "--size", "1MiB",
            "--no-native", "--no-capture", "--cleanup-wait", str(WAIT_S), "--stall-timeout", "0",
            "--http", deaf_remote.url.split("?", 1)[0], "--out", str(run_dir)])
    seen = bytearray()
    try:
        assert deaf_remote.receiving.wait(60), "the push never reached receive-pack"
        _read(master, seen, 2.0)
        assert "waiting for the server's status" in _screen(bytes(seen))
        os.write(master, b"\x03")  # Ctrl-C, as the terminal sends it
        pressed = time.monotonic()
        status = None
        while time.monotonic() - pressed < 60:
            _read(master, seen, 0.2)
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
        took = time.monotonic() - pressed
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(master)
    screen = _screen(bytes(seen))
    assert status is not None, f"still running 60 s after Ctrl-C:\n{screen[-2000:]}"
    assert os.waitstatus_to_exitcode(status) == 130, screen[-2000:]
    assert f"waiting up to {WAIT_S} s for gitnetdiag/probe-" in screen
    # The spinner's last frames say the clean-up, not the phase before it.
    cleaning = f"; cleaning up: waiting up to {WAIT_S} s for the branch, to delete it"
    assert screen.rfind("waiting for the server's status") < screen.rfind(cleaning), screen
    assert took <= WAIT_S + 5, f"{took:.1f} s after Ctrl-C, {WAIT_S} s promised"
    assert "Traceback" not in screen and TOKEN not in screen
    assert "check with: None" not in screen
    push = load_run(run_dir).protocols[0].pushes[0]
    assert push.outcome == "interrupted" and push.cleanup == "unconfirmed", push
    assert (push.cleanup_check_command or "").startswith("git ls-remote "), push
