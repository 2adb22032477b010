"""The CPU quota of the cgroup a clone's git ran in, as its counters stood before and after.

``CloneRecord.cgroup_cpu``: the probe (:mod:`gitnetdiag.probe.cgroupcpu`) reads the
kernel's files raw (``cpu.stat``, ``cpu.max`` on cgroup v2; ``cpu.stat``,
``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` and ``cpuacct.usage`` on v1) and records the
counters as the kernel gave them; the pipeline takes the differences. A file that was
missing or unreadable is a field left None, with the reason in ``missing``: never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CgroupVersion = Literal["v1", "v2"]
"""``v2``: the unified hierarchy (``cpu.stat``, ``cpu.max``); ``v1``: the ``cpu``
controller's own hierarchy (``cpu.stat``, ``cpu.cfs_quota_us``, ``cpu.cfs_period_us``)."""


@dataclass(frozen=True, kw_only=True)
class CpuStatSample:
    """One reading of a cgroup's CPU counters (cumulative since the cgroup was made)."""

    t_s: float
    """When it was read, seconds from git's start (negative: before git started)."""
    usage_usec: int | None = None
    """CPU time the cgroup's processes used (v2 ``usage_usec``; v1 ``cpuacct.usage`` in
    nanoseconds / 1000 when the ``cpuacct`` controller shares the hierarchy); None when the
    file does not say it."""
    nr_periods: int | None = None
    """Enforcement periods that elapsed with runnable processes (``nr_periods``)."""
    nr_throttled: int | None = None
    """Periods in which the cgroup ran out of its quota and was throttled (``nr_throttled``)."""
    throttled_usec: int | None = None
    """Time its run queues spent throttled, summed over CPUs (v2 ``throttled_usec``; v1
    ``throttled_time`` in nanoseconds / 1000)."""


@dataclass(frozen=True, kw_only=True)
class CgroupCpuRecord:
    """The cgroup a clone's git ran in and its CPU counters around the clone."""

    version: CgroupVersion | None = None
    """Which hierarchy the counters come from; None when none was found."""
    cgroup: str = ""
    """The cgroup git ran in, as ``/proc/<pid>/cgroup`` names it (``/ci/job-42``)."""
    stat_cgroup: str = ""
    """The cgroup whose counters were read: git's own, or the nearest ancestor with a CPU
    quota (the one that throttles)."""
    stat_file: str = ""
    """The ``cpu.stat`` read, as a path of this machine's mounts."""
    quota_us: int | None = None
    """CPU time allowed per period (``cpu.max``'s first field, ``cpu.cfs_quota_us``); None
    when no quota is set (``max``, ``-1``) or the file could not be read."""
    period_us: int | None = None
    """The period the quota applies to (``cpu.max``'s second field, ``cpu.cfs_period_us``)."""
    git_in_probe_cgroup: bool = True
    """git ran in the probe's own cgroup: ``before`` was read before git started. False: git
    moved to another cgroup (a wrapper, as the lab's), read as soon as the move was seen."""
    before: CpuStatSample | None = None
    """The counters before the clone (or when git was first seen in its cgroup)."""
    after: CpuStatSample | None = None
    """The counters once git had exited."""
    missing: str = ""
    """What could not be read and why (``no cgroup mount with cpu.stat for /x``); empty when
    everything was read."""
