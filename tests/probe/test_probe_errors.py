"""Probe errors as a user meets them: one line, the run directory kept, nothing left behind.

Unreachable host (in a lab), tcpdump missing and not running as root (both
against a loopback git daemon): always through the real CLI in a subprocess,
so a traceback or a wrong exit code would show.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gitnetdiag.model.lab.state import LabState
from gitnetdiag.rundir import load_run
from tests.conftest import LabFactory

RefsOf = Callable[[str], dict[str, str]]

UNROUTED_IP = "198.18.9.9"
"""In the lab's benchmark range but on no lab link: the client's default route
sends it to the router, which has no route for it and answers at once with
ICMP net-unreachable."""


def _probe_refs(refs: dict[str, str]) -> list[str]:
    return [ref for ref in refs if ref.startswith("refs/heads/gitnetdiag/")]


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error")]


def _lab_refs(lab: LabState) -> dict[str, str]:
    out = subprocess.run(
        ["ip", "netns", "exec", lab.client_ns, "git", "ls-remote", lab.endpoints.git],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout
    return {line.split("\t")[1]: line.split("\t")[0] for line in out.splitlines() if "\t" in line}


@pytest.mark.lab
@pytest.mark.lab_lane("idle")  # its lab is tiny-backlog's, as its neighbours'
def test_unreachable_host_one_line_and_manifest_kept(shared_lab: LabFactory,
                                                     tmp_path: Path) -> None:
    """A git:// remote at an address nothing routes to, from the lab's client namespace.

    198.18.9.9 fails fast and the same way every time: the router has routes
    only for the lab's two links, so the connect gets ICMP net-unreachable
    within one RTT (no SYN timeout, unlike a filtered port, which would wait
    for git's connect timeout). The lab's real remote must be untouched.
    """
    lab = shared_lab("tiny-backlog", rtt_ms=5.0)
    before = _lab_refs(lab)
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "probe", "--lab", "--lab-instance", lab.instance,
         "--git", f"git://{UNROUTED_IP}/lab.git", "--protocols", "git", "--repeat", "2",
         "--size", "1MiB", "--timeout", "30", "--out", str(run_dir)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 5, proc.stderr[-2000:]
    errors = _error_lines(proc.stderr)
    assert len(errors) == 1 and errors[0].startswith("error [unreachable]: "), proc.stderr
    assert UNROUTED_IP in errors[0] and "\n" not in errors[0]
    assert "Traceback" not in proc.stderr + proc.stdout

    assert (run_dir / "manifest.json").is_file()
    manifest = load_run(run_dir)
    assert manifest.status == "failed" and manifest.finished_at is not None
    assert manifest.paths[0].error == "unreachable"
    run = manifest.protocol("git")
    assert run is not None and len(run.pushes) == 1  # no second try after "unreachable"
    push = run.pushes[0]
    assert push.outcome == "failed" and push.failure_kind == "unreachable"
    for relative in push.artifacts.values():  # what was gathered is listed and kept
        assert (run_dir / relative).is_file()
    assert {"stderr", "trace2"} <= set(push.artifacts)
    assert [e.kind for e in manifest.errors if e.stage == "push"] == ["unreachable"]
    after = _lab_refs(lab)
    assert after == before and not _probe_refs(after)


@pytest.fixture()
def world_dir() -> Iterator[Path]:
    """A directory an unprivileged user can write into (pytest's tmp_path is root-only)."""
    path = Path(tempfile.mkdtemp(prefix="gitnetdiag-test-"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "gitnetdiag", "probe", *args, "--size", "1MiB",
            "--timeout", "60"]


def _warning_lines(stderr: str) -> list[str]:
    return [line.strip() for line in stderr.splitlines() if line.strip().startswith("warning")]


def _assert_pushed_without_capture(run_dir: Path, reason: str) -> None:
    manifest = load_run(run_dir)
    assert manifest.status == "complete", manifest.errors
    assert manifest.capture_enabled is False
    assert manifest.warnings == (reason,)
    assert manifest.errors == ()
    run = manifest.protocol("git")
    assert run is not None and len(run.pushes) == 1
    push = run.pushes[0]
    assert push.outcome == "ok" and push.cleanup == "deleted", push
    assert push.capture is None and "capture" not in push.artifacts
    assert not list(run_dir.glob("*.pcap*"))


def test_missing_tcpdump_warns_once_and_pushes(git_daemon: str, tmp_path: Path,
                                              remote_refs: RefsOf) -> None:
    """PATH holds every program the probe runs except tcpdump.

    The probe starts tcpdump by name (PATH lookup), so a PATH without it is
    what a machine without tcpdump looks like to it, whether root or not.
    """
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("git", "ssh", "ip", "editcap", "tshark", "dpkg-query", "uname", "curl"):
        found = shutil.which(name)
        if found:
            (bin_dir / name).symlink_to(found)
    assert shutil.which("tcpdump", path=str(bin_dir)) is None
    before = remote_refs(git_daemon)
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        _cli("--git", git_daemon, "--out", str(run_dir)),
        capture_output=True, text=True, timeout=180,
        env={**os.environ, "PATH": str(bin_dir), "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr + proc.stdout
    assert not _error_lines(proc.stderr)
    warnings = _warning_lines(proc.stderr)
    assert warnings == ["warning: tcpdump is not installed: captures are off"], proc.stderr
    _assert_pushed_without_capture(run_dir, "tcpdump is not installed: captures are off")
    after = remote_refs(git_daemon)
    assert after == before and not _probe_refs(after)


def test_not_root_warns_once_and_pushes(git_daemon: str, world_dir: Path,
                                        remote_refs: RefsOf) -> None:
    """As user nobody (setpriv drops uid, gid and groups): tcpdump exists but cannot
    capture, so the probe must not even try; the push itself needs no privilege."""
    if os.geteuid() != 0:
        pytest.fail("this test drops root privileges, so it must start as root")
    before = remote_refs(git_daemon)
    run_dir = world_dir / "run"
    proc = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
         *_cli("--git", git_daemon, "--out", str(run_dir))],
        capture_output=True, text=True, timeout=180, cwd=world_dir,
        env={**os.environ, "HOME": str(world_dir), "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr + proc.stdout
    assert not _error_lines(proc.stderr)
    assert _warning_lines(proc.stderr) == ["warning: not root: captures are off"], proc.stderr
    assert run_dir.stat().st_uid == 65534
    _assert_pushed_without_capture(run_dir, "not root: captures are off")
    after = remote_refs(git_daemon)
    assert after == before and not _probe_refs(after)
