"""cgroup v1 groups the lab's resource faults run processes in (``slowdisk``, ``slowclient``).

``ip netns exec`` replaces ``/sys`` (and with it ``/sys/fs/cgroup``) in the
namespaces it enters, so the lab mounts each controller's hierarchy a second
time under its state directory (``<state dir>/<controller>``): a mount under
``/run`` stays visible there, and a process already running in a lab
namespace can still join a group. A group is one directory of that mount.
"""

from __future__ import annotations

import time
from pathlib import Path

from gitnetdiag.errors import LabError
from gitnetdiag.proc import run

KERNEL_MOUNTS = Path("/sys/fs/cgroup")
"""Where this system mounts the cgroup v1 controllers."""


def group_dir(root: Path, controller: str, name: str) -> Path:
    """The group ``name`` of ``controller`` under the lab's own mount."""
    return root / controller / name


def make_group(root: Path, controller: str, name: str, needs: str, fault: str) -> Path:
    """Mount ``controller`` under ``root`` and create the group; ``needs`` is a control file
    the fault writes, checked in the kernel's own mount first."""
    if not (KERNEL_MOUNTS / controller / needs).exists():
        raise LabError(
            f"the {fault} fault needs the cgroup v1 {controller} controller",
            hint=f"{KERNEL_MOUNTS / controller} has no {needs} on this kernel",
            reference="lab-no-cgroup",
        )
    hierarchy = root / controller
    hierarchy.mkdir(exist_ok=True)
    run(["mount", "-t", "cgroup", "-o", controller, f"gnd-{controller}", str(hierarchy)],
        timeout_s=20)
    group = group_dir(root, controller, name)
    group.mkdir(exist_ok=True)
    return group


def remove_group(root: Path, controller: str, name: str, wait_s: float = 3.0) -> list[str]:
    """rmdir the group (waiting a moment for its last processes to be reaped) and unmount the
    lab's mount of the controller; safe when neither exists. Returns what it removed."""
    removed: list[str] = []
    group = group_dir(root, controller, name)
    deadline = time.monotonic() + wait_s
    while group.is_dir():
        try:
            group.rmdir()
            removed.append(f"cgroup {group}")
        except OSError:
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
    if (root / controller).is_mount():
        run(["umount", "-l", str(root / controller)], timeout_s=30, check=False)
    return removed


def in_cgroup(group: str, argv: list[str]) -> list[str]:
    """``argv`` started inside ``group``: the shell joins it, then becomes the program, so
    every process the program forks later is in the group too."""
    return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', group, *argv]
