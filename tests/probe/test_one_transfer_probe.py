"""Issue 34 items 4 and 7, a row per direction, against a loopback git daemon that serves a
2 MiB repository, takes pushes (``--enable=receive-pack``), and exports only what holds a
``git-daemon-export-ok`` file.

- hints (ONE-TRANSFER "hints"): the same failure, pushed or cloned, ends in the same
  specific hint (nothing listening, a repository git daemon does not export, too little to
  time: ``--size`` for a push, ``--fetch-seed`` for a clone), where the fetch side said
  "see the clone's stderr file" for every one;
- a full disk: the run directory's filesystem fills up while the second transfer is
  recorded; the run warns and keeps what it wrote (the fetch raised ``OSError: [Errno 28]
  No space left on device`` from ``safefile.replace_file``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gitnetdiag import safefile
from gitnetdiag.probe.fetchrun import run_fetch_probe
from gitnetdiag.probe.options import ProbeOptions
from gitnetdiag.probe.repo import generate_repo
from gitnetdiag.probe.runner import run_probe
from gitnetdiag.rundir import load_run
from gitnetdiag.rundir import manifest as manifest_module
from gitnetdiag.rundir.manifest import load_fetch_manifest
from gitnetdiag.vocabulary import TransportKind

REPO = Path(__file__).resolve().parents[2]
DIRECTIONS = ("push", "fetch")


@dataclass(frozen=True)
class Daemon:
    port: int
    base: Path

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    base = tmp_path_factory.mktemp("srv")
    generated = generate_repo(base / "src", 2 * 2**20, seed=5)
    for name in ("served.git", "hidden.git", "empty.git"):
        if name == "empty.git":
            subprocess.run(["git", "init", "-q", "--bare", str(base / name)], check=True)
        else:
            subprocess.run(["git", "clone", "-q", "--bare", str(generated.path),
                            str(base / name)], check=True, timeout=60)
        if name != "hidden.git":
            (base / name / "git-daemon-export-ok").touch()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    proc = subprocess.Popen(["git", "daemon", "--reuseaddr", f"--base-path={base}",
                             "--enable=receive-pack", "--listen=127.0.0.1", f"--port={port}",
                             str(base)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            time.sleep(0.05)
        yield Daemon(port=port, base=base)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitnetdiag", *args], capture_output=True,
                          text=True, timeout=180, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1",
                               "COLUMNS": "200"})


HINTS: dict[str, tuple[str, dict[str, str]]] = {
    # cause: (repository, or "" for a port nothing listens on; the hint's words per direction)
    "nothing-listening": ("", dict.fromkeys(DIRECTIONS, "nothing listens on that port")),
    "not-exported": ("hidden.git", dict.fromkeys(DIRECTIONS, "or does not export it")),
    "no-repository-there": ("nowhere.git", dict.fromkeys(DIRECTIONS, "check the URL's path")),
    "too-little-to-time": ("empty.git", {"push": "--size 1MiB", "fetch": "--fetch-seed 1MiB"}),
}


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("cause", sorted(HINTS))
def test_the_same_failure_gets_the_same_hint_pushed_or_cloned(
        cause: str, direction: str, daemon: Daemon, tmp_path: Path) -> None:
    repository, words = HINTS[cause]
    url = daemon.url(repository) if repository else "git://127.0.0.1:1/x.git"
    size = "1" if cause == "too-little-to-time" else "1MiB"  # an empty push is no push
    proc = _cli("diagnose", "--git", url, "--direction", direction, "--no-capture",
                "--no-native", "--size", size, "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error [")]
    assert proc.returncode in (5, 8, 9) and errors, proc.stderr[-3000:]
    assert words[direction] in errors[-1], errors[-1]
    assert "see the clone's stderr file" not in errors[-1]


def _fill_when_second_transfer_is_written(monkeypatch: pytest.MonkeyPatch, mount: Path
                                          ) -> None:
    """The filesystem of the run fills up as the second transfer's first file is written
    (every file the run writes goes through ``open_new_file``)."""
    real = safefile.open_new_file
    full = False

    def open_new_file(path: Path, mode: int = 0o644) -> int:
        nonlocal full
        if not full and "-2." in path.name:
            full = True
            with contextlib.suppress(OSError), (mount / "filler").open("wb") as filler:
                while True:
                    filler.write(b"\0" * 65536)
                    filler.flush()
        return real(path, mode)

    monkeypatch.setattr(safefile, "open_new_file", open_new_file)
    monkeypatch.setattr(manifest_module, "open_new_file", open_new_file)


@pytest.fixture()
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs (root only: mount)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a tmpfs")
    mount = tmp_path / "fs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)],
                          capture_output=True, timeout=30)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, timeout=30)


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_a_full_disk_warns_and_keeps_what_the_run_wrote(
        direction: str, daemon: Daemon, small_fs: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    _fill_when_second_transfer_is_written(monkeypatch, small_fs)
    out = small_fs / "run"
    options = ProbeOptions(
        urls={TransportKind.GIT: daemon.url("served.git")}, protocols=(TransportKind.GIT,),
        size_bytes=2**20, seed=1, repo=None, repeat=2, ca_file=None, insecure=False,
        ssh_command=None, out_dir=out, full=False, burst=0, timeout_s=60.0, capture=False)
    outcome = (run_probe if direction == "push" else run_fetch_probe)(options)  # no OSError
    warnings = [w for w in outcome.manifest.warnings if "No space left on device" in w]
    assert warnings, outcome.manifest.warnings
    assert "keeps the files written before" in warnings[0]
    # What was written before the disk filled stays readable: the first transfer's record.
    if direction == "push":
        kept = [push.repeat for run in load_run(out).protocols for push in run.pushes]
    else:
        fetched = load_fetch_manifest(out)
        assert fetched is not None
        kept = [clone.repeat for run in fetched.protocols for clone in run.fetches]
    assert kept == [1]
    stem = "git-1" if direction == "push" else "fetch-git-1"
    assert (out / f"{stem}.stderr.txt").is_file()
