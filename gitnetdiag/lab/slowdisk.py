"""The ``slow-storage`` fault: the server's repositories on a throttled block device.

This kernel has neither device-mapper (no ``delay`` target) nor cgroup v2's
``io.max``, but it has cgroup v1's ``blkio`` controller. The lab therefore
puts the served repositories on their own ext4 file system in a loop device
and limits that device, for every process of the lab's servers, with
``blkio.throttle.{read,write}_{iops,bps}_device``:

    <state dir>/disk.img --losetup--> /dev/loopN --mkfs.ext4, mount--> <state dir>/srv
    <state dir>/blkio/gitnetdiag-lab-<instance>/   (Apache, HAProxy, sshd and git's
        blkio.throttle.*_device  "MAJ:MIN <limit>"  service start inside it, so every
                                                     receive-pack they run does too)

cgroup v1 throttles I/O that a process submits itself: direct I/O and the
write-back an ``fsync`` forces, not the flusher's background write-back. The
repository therefore syncs what it receives (``core.fsync = committed``, as a
host that must not lose an acknowledged push sets), and the storage check that
gives the evidence runs fio with direct I/O inside the same cgroup.

``edge-response-buffering`` mounts the same kind of device under the nginx edge's
temp paths instead, with ``-o sync``: each write nginx makes to a temp file is
on the device before ``write`` returns, submitted by nginx itself, so the
throttle applies to it (buffered writes would land in the page cache and the
flusher's write-back is not throttled). It stands for an edge whose page cache
cannot absorb its temp files: a small VM on a starved network volume.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gitnetdiag.lab.cgroups import make_group, remove_group
from gitnetdiag.proc import run

IMAGE_BYTES = 256 * 1024 * 1024
"""Size of the file system the repositories live on (room for fio's test file and pushes)."""


@dataclass(frozen=True, kw_only=True)
class DiskLimits:
    """What the throttled device allows per second."""

    iops: int
    """Read and write operations per second, each."""
    bytes_per_s: int
    """Read and write bytes per second, each."""


def _group_name(instance: str) -> str:
    return f"gitnetdiag-lab-{instance}"


def _image(root: Path) -> Path:
    return root / "disk.img"


def attach(root: Path, mount_point: Path, instance: str, limits: DiskLimits, *,
           sync: bool = False, fault: str = "slow-storage") -> str:
    """Make the throttled file system, mount it at ``mount_point`` (``sync``: every write
    reaches the device before it returns); returns the cgroup dir."""
    group = make_group(root, "blkio", _group_name(instance),
                       needs="blkio.throttle.write_iops_device", fault=fault)
    image = _image(root)
    with open(image, "wb") as f:
        f.truncate(IMAGE_BYTES)
    device = run(["losetup", "--find", "--show", str(image)], timeout_s=20).stdout.strip()
    run(["mkfs.ext4", "-q", "-F", device], timeout_s=60)
    mount_point.mkdir(parents=True, exist_ok=True)
    run(["mount", *(["-o", "sync"] if sync else []), device, str(mount_point)], timeout_s=20)
    numbers = Path(f"/sys/block/{Path(device).name}/dev").read_text().strip()
    for kind in ("read", "write"):
        (group / f"blkio.throttle.{kind}_iops_device").write_text(f"{numbers} {limits.iops}\n")
        (group / f"blkio.throttle.{kind}_bps_device").write_text(
            f"{numbers} {limits.bytes_per_s}\n")
    return str(group)


def detach(root: Path, mount_points: Sequence[Path], instance: str) -> list[str]:
    """Unmount (whichever of ``mount_points`` is mounted), free the loop device, remove the
    cgroup; safe when nothing was made."""
    removed: list[str] = []
    image = _image(root)
    for mount_point in mount_points:
        if mount_point.is_mount():
            run(["umount", "-l", str(mount_point)], timeout_s=30, check=False)
            removed.append(f"mount {mount_point}")
    if image.exists():
        listing = run(["losetup", "-j", str(image)], timeout_s=10, check=False).stdout
        for line in listing.splitlines():
            device = line.split(":", 1)[0]
            run(["losetup", "-d", device], timeout_s=10, check=False)
            removed.append(f"loop device {device}")
    return removed + remove_group(root, "blkio", _group_name(instance))
