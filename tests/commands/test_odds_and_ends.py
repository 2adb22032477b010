"""Issue 34, item 8, through the real CLI on loopback: bounds on ``--repeat`` and ``--size``,
a token in a URL fragment kept from git's command lines, credentials in SSH and git:// URLs
named as such, a fetch whose stdout reader went away ending as the push does, and the
scratch directories of a fetch removed by the guardian after SIGKILL."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitnetdiag.rundir import load_run
from tests.httpremote import TOKEN, HttpRemote
from tests.ports import closed_port as _closed_port
from tests.ports import free_port

REPO = Path(__file__).resolve().parents[2]
FRAGMENT = "FRAGSECRET4711"


def _env(tmp_path: Path) -> dict[str, str]:
    scratch = tmp_path / "tmpdir"
    scratch.mkdir(exist_ok=True)
    return {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200", "NO_COLOR": "1",
            "TMPDIR": str(scratch)}


def gitnetdiag(tmp_path: Path, *args: str, timeout_s: float = 120
               ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitnetdiag", *args], capture_output=True,
                          text=True, timeout=timeout_s, cwd=tmp_path, env=_env(tmp_path))


@pytest.mark.parametrize(("args", "first_line"), [
    (("--repeat", "100000"), "error [usage]: Invalid value for '--repeat': Input should be "
     "less than or equal to 100"),
    (("--size", "100T"), "error [size-too-large]: --size 100T is more than the 4 GiB a probe "
     "generates (hint: give --size 4GiB or less"),
])
def test_repeat_and_size_are_bounded(tmp_path: Path, args: tuple[str, ...],
                                     first_line: str) -> None:
    """Before: --repeat 100000 ran a push after a push, --size 100T wrote 1 MiB files
    until the disk was full and ended in a traceback."""
    proc = gitnetdiag(tmp_path, "probe", "--http", f"http://127.0.0.1:{_closed_port()}/r.git",
                      "--no-native", "--no-capture", "--out", str(tmp_path / "run"), *args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(first_line), proc.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("option", "url", "words"), [
    ("--ssh", "ssh://git:hunter2pw@127.0.0.1:{port}/r.git",
     "--ssh URL carries a password: SSH authenticates with keys, not a password in the URL"),
    ("--ssh", "git:hunter2pw@127.0.0.1:r.git",
     "--ssh URL carries a password: SSH authenticates with keys, not a password in the URL"),
    ("--git", "git://bob:hunter2pw@127.0.0.1:{port}/r.git",
     "--git URL carries a user or password: git:// has no authentication"),
])
def test_a_password_in_an_ssh_or_git_url_is_named(tmp_path: Path, option: str, url: str,
                                                  words: str) -> None:
    """Before: git handed ``git:hunter2pw@host`` to ssh or the resolver as a host name, and
    the hint said to check the host name."""
    proc = gitnetdiag(tmp_path, "probe", option, url.format(port=_closed_port()),
                      "--no-native", "--no-capture", "--out", str(tmp_path / "run"))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error [credentials-in-url]: {words}"), lines
    assert "hint: " in lines[0] and "hunter2pw" not in proc.stdout + proc.stderr
    assert "host name" not in lines[0]


class _ArgvSampler(threading.Thread):
    """Every process's command line every 10 ms: those holding ``needle``."""

    def __init__(self, needle: str) -> None:
        super().__init__(daemon=True)
        self.needle = needle.encode()
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
                if self.needle in argv and b"gitnetdiag\0probe" not in argv:
                    self.hits.add(argv.replace(b"\0", b" ").decode(errors="replace"))
            self.samples += 1
            time.sleep(0.01)


def test_a_token_in_the_url_fragment_never_reaches_gits_command_lines(
    http_remote: HttpRemote, tmp_path: Path
) -> None:
    """The fragment is dropped before git sees the URL: the push works, and no git, remote
    helper or credential helper process has it on its command line (before: ``git
    remote-http`` did), nor any file of the run."""
    url = http_remote.url.split("?", 1)[0] + "#" + FRAGMENT
    sampler = _ArgvSampler(FRAGMENT)
    sampler.start()
    try:
        proc = gitnetdiag(tmp_path, "probe", "--http", url, "--protocols", "h1", "--size",
                          "1MiB", "--no-native", "--no-capture", "--out", str(tmp_path / "run"))
    finally:
        sampler.stop.set()
        sampler.join()
    assert proc.returncode == 0, proc.stderr
    push = load_run(tmp_path / "run").protocols[0].pushes[0]
    assert push.outcome in ("ok", "bounded") and push.cleanup == "deleted", push
    assert sampler.samples > 10 and sampler.hits == set(), sampler.hits
    assert FRAGMENT not in proc.stdout + proc.stderr and TOKEN not in proc.stderr
    assert [p for p in (tmp_path / "run").rglob("*")
            if p.is_file() and FRAGMENT.encode() in p.read_bytes()] == []


@pytest.fixture()
def empty_daemon(tmp_path: Path) -> Iterator[int]:
    """A loopback git daemon serving an empty base path: every repository is missing."""
    base = tmp_path / "srv"
    base.mkdir()
    port = free_port()  # the daemon listens on it
    daemon = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", f"--base-path={base}", "--export-all",
         "--listen=127.0.0.1", f"--port={port}", str(base)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield port
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


def test_a_fetch_whose_stdout_reader_left_exits_as_the_push_does(
    empty_daemon: int, tmp_path: Path
) -> None:
    """``--json - | head -c 10``, with the reader gone before anything is written: the
    failed fetch still says why on stderr and exits 9 (before: exit 1 and nothing)."""
    read, write = os.pipe()
    os.close(read)  # the reader left: every write to stdout is EPIPE
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "gitnetdiag", "probe", "--direction", "fetch", "--git",
             f"git://127.0.0.1:{empty_daemon}/nope.git", "--no-capture", "--out",
             str(tmp_path / "run"), "--json", "-"],
            stdout=write, stderr=subprocess.PIPE, text=True, timeout=120, cwd=tmp_path,
            env=_env(tmp_path))
    finally:
        os.close(write)
    assert proc.returncode == 9, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error [") and "hint: " in last, proc.stderr
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr


@pytest.fixture()
def silent_server() -> Iterator[tuple[int, threading.Event]]:
    """A loopback TCP server that accepts and never says a word (a git daemon hung before
    its ref advertisement): a clone waits on it."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)
            if len(held) >= 2:  # the path check's connection, then the clone's
                accepted.set()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield server.getsockname()[1], accepted
    finally:
        server.close()
        for conn in held:
            conn.close()


def _scratch(tmpdir: Path) -> list[str]:
    return sorted(p.name for p in tmpdir.iterdir() if p.name.startswith("gitnetdiag-"))


def test_sigkill_mid_clone_leaves_no_scratch_directory(
    silent_server: tuple[int, threading.Event], tmp_path: Path
) -> None:
    """SIGKILL runs none of the tool's code: the guardian removes the fetch's and the
    clone's scratch directories (before: both stayed in TMPDIR)."""
    port, accepted = silent_server
    env = _env(tmp_path)
    tmpdir = Path(env["TMPDIR"])
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitnetdiag", "probe", "--direction", "fetch", "--git",
         f"git://127.0.0.1:{port}/r.git", "--no-capture", "--out", str(tmp_path / "run")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path, env=env)
    try:
        # The path measurement connects first; the clone is the second connection: git runs
        # and is registered with the guardian (a SIGKILL between the clone's start and its
        # registration leaves it unguarded, as proc.start says: on a busy machine the test
        # once landed there, and the unguarded git made its directory again).
        assert accepted.wait(60), "git's clone never connected"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
                name.startswith("gitnetdiag-clone-") for name in _scratch(tmpdir)):
            time.sleep(0.05)
        seen = _scratch(tmpdir)
        assert any(n.startswith("gitnetdiag-clone-") for n in seen), seen
        assert any(n.startswith("gitnetdiag-fetch-") for n in seen), seen
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    # the guardian's own wait (it runs at the test's priority: nice 19 beside the lab tests)
    deadline = time.monotonic() + 30
    while _scratch(tmpdir) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _scratch(tmpdir) == []
