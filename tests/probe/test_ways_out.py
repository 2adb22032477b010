"""Every way a probe ends, against small local servers: a server that takes the pack and
never answers, SIGHUP and SIGKILL behind a slow hook, secrets in argv and on disk, and
git's own timing of fast pushes."""

from __future__ import annotations

import contextlib
import os
import pty
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitnetdiag.rundir import load_run
from tests.httpremote import TOKEN, HttpRemote
from tests.probe.mutedremote import serve_muted_remote

HOOK_S = 5
TOOL = [sys.executable, "-m", "gitnetdiag", "probe", "--protocols", "h1", "--size", "1MiB",
        "--no-native"]


def _refs(bare: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(bare), "for-each-ref", "--format=%(refname)"],
                         capture_output=True, text=True, check=True, timeout=30).stdout
    return out.split()


def _plain(url: str) -> str:
    """The fixture URL without its query token: the user:token form only (a token in the
    query string has no other way to reach git; docs/watch.md says so)."""
    return url.split("?", 1)[0]


def _env(tmp_path: Path) -> dict[str, str]:
    scratch = tmp_path / "tmpdir"
    scratch.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(scratch)}


@pytest.fixture()
def muted_remote(tmp_path: Path) -> Iterator[HttpRemote]:
    yield from serve_muted_remote(tmp_path)


@pytest.fixture()
def slow_remote(http_remote: HttpRemote) -> HttpRemote:
    hook = http_remote.bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ncat >/dev/null\nsleep {HOOK_S}\n")
    hook.chmod(0o755)
    return http_remote


def _helpers_of(marker: str) -> list[str]:
    """Command lines of running processes that mention ``marker`` (a port, a path)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if marker in argv and state != "Z":
            found.append(f"{entry}: {argv}")
    return found


class _ArgvSampler(threading.Thread):
    """Reads every process's command line every 20 ms, keeping those holding ``needle``,
    apart from the tool's own (the user typed that one) and other tests' (other ports)."""

    def __init__(self, needle: str, port: str) -> None:
        super().__init__(daemon=True)
        self.needle = needle.encode()
        self.port = port.encode()
        self.hits: set[str] = set()
        self.samples = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            for entry in os.listdir("/proc"):
                try:
                    argv = Path(f"/proc/{entry}/cmdline").read_bytes()
                except OSError:
                    continue
                if self.needle in argv and self.port in argv and b"gitnetdiag\0probe" not in argv:
                    self.hits.add(argv.replace(b"\0", b" ").decode(errors="replace"))
            self.samples += 1
            time.sleep(0.02)


def _grep(root: Path, needle: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_server_that_never_answers_is_stalled_at_the_server(
    muted_remote: HttpRemote, tmp_path: Path
) -> None:
    """The whole pack is taken, no status ever comes: the push ends ``stalled`` (at the
    server) within the stall timeout and a few seconds, not at the 300 s timeout; a
    non-terminal stderr shows the phase it stopped in."""
    started = time.monotonic()
    proc = subprocess.run(
        [*TOOL, "--http", _plain(muted_remote.url), "--no-capture", "--stall-timeout", "3",
         "--cleanup-wait", "1", "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=120, env=_env(tmp_path))
    took = time.monotonic() - started
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    push = load_run(tmp_path / "run").protocols[0].pushes[0]
    assert push.outcome == "stalled" and push.stopped == "server-stall", push
    assert (push.moved_bytes or 0) >= 1_000_000
    assert took < 3 + 1 + 12, took
    assert "push h1 #1: pack sent (1.0 MiB, 4 objects): waiting for the server's status" \
        in proc.stderr
    assert "stalled at the server" in proc.stderr


def _start_behind_hook(remote: HttpRemote, tmp_path: Path,
                       *extra: str) -> tuple[subprocess.Popen[str], Path]:
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [*TOOL, "--http", _plain(remote.url), "--out", str(run_dir), "--timeout", "60", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(tmp_path),
        start_new_session=True)
    assert remote.receiving.wait(60), "the push never reached receive-pack"
    time.sleep(0.5)  # git waits for the hook now; tcpdump runs
    return proc, run_dir


def _port(remote: HttpRemote) -> str:
    return remote.url.split("@", 1)[1].split("/", 1)[0]


def test_sighup_behind_a_slow_hook_deletes_the_branch_and_leaves_no_helper(
    slow_remote: HttpRemote, tmp_path: Path
) -> None:
    """A closed terminal (SIGHUP) mid-push: the clean-up waits for the hook, deletes the
    branch, the manifest says how the run ended, and no git or tcpdump is left."""
    proc, run_dir = _start_behind_hook(slow_remote, tmp_path)
    assert _helpers_of(_port(slow_remote)), "git push should be running"
    proc.send_signal(signal.SIGHUP)
    _out, err = proc.communicate(timeout=90)
    assert proc.returncode != 0 and "Traceback" not in err, err
    manifest = load_run(run_dir)
    assert manifest.status == "interrupted" and manifest.ended_by == "SIGHUP"
    push = manifest.protocols[0].pushes[0]
    assert push.outcome == "interrupted" and push.cleanup == "deleted", push
    assert _refs(slow_remote.bare) == []
    assert _helpers_of(_port(slow_remote)) == [] and _helpers_of(str(run_dir)) == []


def test_sigkill_behind_a_slow_hook_leaves_no_helper_and_no_secret(
    slow_remote: HttpRemote, tmp_path: Path
) -> None:
    """SIGKILL runs no clean-up of ours, yet git, its remote helper and tcpdump die with
    the tool, and the temporary directory holds no token."""
    proc, run_dir = _start_behind_hook(slow_remote, tmp_path)
    assert _helpers_of(str(run_dir)), "tcpdump should be capturing"
    proc.kill()
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 5
    while (_helpers_of(_port(slow_remote)) or _helpers_of(str(run_dir))) and (
            time.monotonic() < deadline):
        time.sleep(0.1)
    assert _helpers_of(_port(slow_remote)) == [] and _helpers_of(str(run_dir)) == []
    assert _grep(tmp_path / "tmpdir", TOKEN) == []


def test_token_is_never_in_argv_nor_on_disk(http_remote: HttpRemote, tmp_path: Path) -> None:
    """The token of the URL and of an http.extraHeader reach git, yet no process's
    command line (sampled every 20 ms), no run file and nothing under TMPDIR holds it."""
    header_token = "HEADERSECRET987"
    env = {**_env(tmp_path), "GIT_CONFIG_COUNT": "1",
           "GIT_CONFIG_KEY_0": "http.extraHeader",
           "GIT_CONFIG_VALUE_0": f"X-Probe-Token: {header_token}"}
    sampler = _ArgvSampler(TOKEN, _port(http_remote))
    header_sampler = _ArgvSampler(header_token, "")
    sampler.start()
    header_sampler.start()
    proc = subprocess.run(
        [*TOOL, "--http", _plain(http_remote.url), "--no-capture", "--out",
         str(tmp_path / "run")], capture_output=True, text=True, timeout=120, env=env)
    sampler.stop.set()
    header_sampler.stop.set()
    sampler.join()
    header_sampler.join()
    assert proc.returncode == 0, proc.stderr
    push = load_run(tmp_path / "run").protocols[0].pushes[0]
    assert push.outcome in ("ok", "bounded") and push.cleanup == "deleted", push
    assert sampler.samples > 10
    assert sampler.hits == set() and header_sampler.hits == set()
    for needle in (TOKEN, header_token):
        assert _grep(tmp_path / "run", needle) == []
        assert _grep(tmp_path / "tmpdir", needle) == []


def test_fast_push_wall_time_is_gits_own(http_remote: HttpRemote, tmp_path: Path) -> None:
    """A fast push's wall_s is within 20 ms of git's trace2 duration, not rounded up to
    the 0.25 s sampling step."""
    proc = subprocess.run(
        [*TOOL, "--http", _plain(http_remote.url), "--no-capture", "--repeat", "3", "--out",
         str(tmp_path / "run")], capture_output=True, text=True, timeout=120,
        env=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    pushes = load_run(tmp_path / "run").protocols[0].pushes
    assert len(pushes) == 3
    for push in pushes:
        assert push.outcome == "ok" and push.phases is not None, push
        assert push.phases.total_s is not None
        assert abs(push.wall_s - push.phases.total_s) <= 0.02, push


def test_ctrl_c_says_what_the_cleanup_waits_for_and_a_second_stops_it(
    muted_remote: HttpRemote, tmp_path: Path
) -> None:
    """Ctrl-C while the server holds the pack: at once, a line on what the clean-up waits
    for and how long; a second Ctrl-C ends the wait and prints the branch, its URL
    (redacted) and the command that removes it."""
    proc = subprocess.Popen(
        [*TOOL, "--http", _plain(muted_remote.url), "--no-capture", "--cleanup-wait", "60",
         "--out", str(tmp_path / "run")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(tmp_path),
        start_new_session=True)
    assert muted_remote.receiving.wait(60)
    time.sleep(0.5)
    assert proc.stderr is not None
    os.set_blocking(proc.stderr.fileno(), False)
    proc.send_signal(signal.SIGINT)
    seen = b""
    deadline = time.monotonic() + 5
    while b"Ctrl-C again to stop waiting" not in seen and time.monotonic() < deadline:
        seen += proc.stderr.read() or b""
        time.sleep(0.05)
    assert b"cleaning up: the server has the whole pack and has not answered: waiting up " \
        b"to 60 s for gitnetdiag/probe-" in seen
    stopped_at = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=15)
    assert time.monotonic() - stopped_at < 5
    rest = seen + (proc.stderr.read() or b"")
    text = rest.decode()
    assert "Traceback" not in text and proc.returncode != 0
    assert "stopped waiting: gitnetdiag/probe-" in text
    assert "remove it with: git push --force-with-lease=refs/heads/gitnetdiag/probe-" in text
    assert "http://***@127.0.0.1" in text and TOKEN not in text
    manifest = load_run(tmp_path / "run")
    assert manifest.ended_by == "SIGINT"
    assert manifest.protocols[0].pushes[0].cleanup == "unconfirmed"


def test_a_closed_terminal_cleans_up_like_sigterm(slow_remote: HttpRemote, tmp_path: Path) -> None:
    """The real thing behind SIGHUP: the probe's terminal (a pty) is closed mid-push. The
    kernel sends SIGHUP and every later write fails (EIO), yet the clean-up waits for the
    hook and deletes the branch, the manifest says SIGHUP, and the exit code is 130."""
    pid, master = pty.fork()
    if pid == 0:  # the child: session leader with the pty as its terminal
        os.environ["TMPDIR"] = _env(tmp_path)["TMPDIR"]
        os.execv(sys.executable, [*TOOL, "--http", _plain(slow_remote.url), "--timeout",
                                  "60", "--no-capture", "--out", str(tmp_path / "run")])
    assert slow_remote.receiving.wait(60)
    time.sleep(0.5)
    with contextlib.suppress(OSError):
        os.read(master, 65536)
    os.close(master)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        pytest.fail("the probe did not end after its terminal closed")
    assert os.waitstatus_to_exitcode(status) == 130
    manifest = load_run(tmp_path / "run")
    assert manifest.status == "interrupted" and manifest.ended_by == "SIGHUP"
    assert manifest.protocols[0].pushes[0].cleanup == "deleted"
    assert _refs(slow_remote.bare) == []
