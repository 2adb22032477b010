"""The ``client-pack-cpu`` fault: the lab client's git runs on a small share of one core.

A CI runner or a laptop under load gives git little CPU; pushing fresh commits
then waits on pack-objects' delta search and compression before a byte is
sent. The lab reproduces that with the cgroup v1 ``cpu`` controller (this
kernel has no cgroup v2 ``cpu.max``; ``cpu.cfs_quota_us`` over
``cpu.cfs_period_us`` is the same limit):

    <state dir>/cpu/gitnetdiag-lab-<instance>-client/  cpu.cfs_quota_us / cpu.cfs_period_us
    <state dir>/client-bin/git                          joins that cgroup, then runs git

``gitnetdiag ... --lab`` puts ``client-bin`` first on ``PATH`` in the client
namespace, so every git the probe starts, and every process git starts
(pack-objects, ssh, the HTTPS remote helper), runs in the cgroup; the probe
itself does not. As with the blkio hierarchy of ``slowdisk``, the controller
is mounted under the state directory because ``ip netns exec`` hides
``/sys/fs/cgroup`` in the namespaces it enters.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from gitnetdiag.errors import LabError
from gitnetdiag.lab.cgroups import group_dir, make_group, remove_group

PERIOD_US = 100_000


def _group_name(instance: str) -> str:
    return f"gitnetdiag-lab-{instance}-client"


def cgroup_dir(root: Path, instance: str) -> Path:
    """The cgroup of the lab client's git, under the lab's own mount of the hierarchy."""
    return group_dir(root, "cpu", _group_name(instance))


def bin_dir(root: Path) -> Path:
    """The directory holding the client's ``git`` wrapper."""
    return root / "client-bin"


def git_wrapper(group: Path, git: str) -> str:
    """The client's ``git``: join the starved cgroup, then become the real git."""
    return f"""#!/bin/sh
# gitnetdiag lab: client-pack-cpu fault, git on a small share of one core
echo $$ > {group}/cgroup.procs && exec {git} "$@"
"""


def attach(root: Path, instance: str, share: float) -> str:
    """Make the cgroup limited to ``share`` of one core and the git wrapper; returns the
    directory to put first on the client's ``PATH``."""
    git = real_git()
    group = make_group(root, "cpu", _group_name(instance), needs="cpu.cfs_quota_us",
                       fault="client-pack-cpu")
    (group / "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
    (group / "cpu.cfs_quota_us").write_text(f"{max(1000, round(PERIOD_US * share))}\n")
    return install_wrapper(bin_dir(root), git_wrapper(group, git))


def real_git() -> str:
    """The git on ``PATH`` that a client fault's wrapper runs in the end."""
    git = shutil.which("git")
    if git is None:
        raise LabError("git is not installed", hint="install the Debian package 'git'")
    return git


def install_wrapper(wrappers: Path, script: str) -> str:
    """Write ``script`` as the executable ``git`` in ``wrappers``; returns the directory to
    put first on the client's ``PATH``."""
    wrappers.mkdir(exist_ok=True)
    wrapper = wrappers / "git"
    wrapper.write_text(script)
    wrapper.chmod(0o755)
    return str(wrappers)


def detach(root: Path, instance: str) -> list[str]:
    """Remove the cgroup and unmount the lab's cpu hierarchy; safe when nothing was made."""
    return remove_group(root, "cpu", _group_name(instance))
