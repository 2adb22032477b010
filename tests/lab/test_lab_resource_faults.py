"""slow-storage and client-pack-cpu: the throttles are real, and lab down removes them."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from gitnetdiag.lab import manager
from gitnetdiag.lab.spec import build_spec

# The idle lane (tests/conftest.py): a throttled loop device, 5 % of a core.
pytestmark = [pytest.mark.lab, pytest.mark.lab_lane("idle")]


def _cgroup_line(text: str, controller: str) -> str:
    return next(line for line in text.splitlines() if line.split(":")[1] == controller)


def test_throttled_disk_and_starved_client_git_then_nothing_left() -> None:
    """The repositories are on the throttled ext4 loop device and the servers in its blkio
    cgroup; the client's git (first on --lab's PATH) runs in the CPU-quota cgroup; a synced
    1 MiB write in the blkio cgroup takes about a second (1 MiB/s); lab down unmounts,
    frees the loop device and removes both cgroups."""
    spec = build_spec(instance="tres", faults=["slow-storage", "client-pack-cpu"], rtt_ms=10.0)
    state = manager.up(spec)
    root = Path(state.state_dir)
    image = root / "disk.img"
    try:
        fstype = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "--target", state.repo_path],
                                capture_output=True, text=True, check=True).stdout.strip()
        assert fstype == "ext4"
        assert "/dev/loop" in subprocess.run(["losetup", "-j", str(image)], capture_output=True,
                                             text=True, check=True).stdout
        apache = Path(f"/proc/{state.pids['apache']}/cgroup").read_text()
        assert _cgroup_line(apache, "blkio").endswith("/gitnetdiag-lab-tres")

        git_cgroup = subprocess.run(
            ["ip", "netns", "exec", state.client_ns, f"{state.client_path}/git",
             "-c", "alias.cg=!cat /proc/self/cgroup", "cg"],
            capture_output=True, text=True, check=True).stdout
        assert _cgroup_line(git_cgroup, "cpu").endswith("/gitnetdiag-lab-tres-client")
        quota = root / "cpu" / "gitnetdiag-lab-tres-client" / "cpu.cfs_quota_us"
        assert int(quota.read_text()) == 5000

        target = Path(state.repo_path).parent / "sync-test"
        started = time.monotonic()
        subprocess.run(["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"',
                        state.storage_cgroup, "dd", "if=/dev/zero", f"of={target}", "bs=64k",
                        "count=16", "conv=fsync", "status=none"], check=True, timeout=60)
        assert time.monotonic() - started >= 0.7
        target.unlink()
    finally:
        removed = manager.down("tres")
    assert any(item.startswith("mount ") for item in removed), removed
    assert any(item.startswith("loop device") for item in removed), removed
    mounts = Path("/proc/self/mounts").read_text()
    assert str(root) not in mounts
    assert not image.exists()
    assert not root.exists()
    assert manager.down("tres") == []
