"""The CPU counters of the cgroup a clone's git runs in, read before and after the clone.

A CI runner or a container gives git a CPU quota; the kernel counts what the quota did in
the cgroup's ``cpu.stat`` (periods, periods throttled, time throttled, CPU used). The
probe finds git's cgroup (``/proc/<pid>/cgroup``), the mount of its hierarchy
(``/proc/self/mountinfo``: under ``ip netns exec`` ``/sys/fs/cgroup`` is hidden and the
hierarchy may be mounted elsewhere, as the lab mounts it under its state directory) and
reads, raw, the counters and the quota of the nearest cgroup at or above git's that has a
quota (the one that throttles), else git's own:

- cgroup v2: ``cpu.stat`` (``usage_usec``, ``nr_periods``, ``nr_throttled``,
  ``throttled_usec``; the last three only with the ``cpu`` controller enabled) and
  ``cpu.max`` (``max 100000`` or ``QUOTA PERIOD``);
- cgroup v1 (the ``cpu`` controller's hierarchy, preferred when ``/proc/<pid>/cgroup``
  names one: on a hybrid system the v2 tree then has no ``cpu`` controller):
  ``cpu.stat`` (``throttled_time`` in ns), ``cpu.cfs_quota_us`` (``-1``: none),
  ``cpu.cfs_period_us``, and ``cpuacct.usage`` (ns) when ``cpuacct`` shares the hierarchy.

The counters are also read at each of the monitor's samples (``<stem>.cgroup-cpu.jsonl``),
so the pipeline can tell what the quota held before a phase (the checkout) from after it.
``before`` is read before git starts when git runs in the probe's own cgroup (a user's
container, a runner); when git moves to another cgroup (a wrapper that joins one, as the
lab's ``client-index-cpu`` does) the move is watched for during the first sample interval
and ``before`` read as soon as it is seen. Anything missing or unreadable is recorded as
not available (:attr:`CgroupCpuRecord.missing`), never guessed.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from gitnetdiag.rundir.cgroupcpu import CgroupCpuRecord, CgroupVersion, CpuStatSample

PROC = Path("/proc")
POLL_S = 0.005
"""How often the first sample interval looks for git's move to another cgroup."""


@dataclass(frozen=True)
class _Mount:
    root: str
    """The path inside the hierarchy that is mounted (``/`` for the whole tree)."""
    point: Path
    fstype: str
    options: frozenset[str]


@dataclass(frozen=True)
class CgroupFiles:
    """Where one cgroup's CPU counters are on this machine."""

    version: CgroupVersion
    cgroup: str
    """git's cgroup (``/proc/<pid>/cgroup``)."""
    stat_cgroup: str
    """The cgroup read: git's, or its nearest ancestor with a quota."""
    directory: Path
    quota_us: int | None
    period_us: int | None


def _unescape(field: str) -> str:
    """mountinfo's octal escapes (``\\040`` for a space)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> list[_Mount]:
    """The cgroup mounts (v1 ``cgroup``, v2 ``cgroup2``) of a ``mountinfo``."""
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        mounts.append(_Mount(root=_unescape(fields[3]), point=Path(_unescape(fields[4])),
                             fstype=tail[0], options=frozenset(tail[2].split(","))))
    return mounts


def parse_cgroup(text: str) -> dict[str, str]:
    """``/proc/<pid>/cgroup`` -> {``v2``: path} and {controller: path} of each v1 line."""
    paths: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if hierarchy == "0" and controllers == "":
            paths["v2"] = path
        for name in controllers.split(","):
            if name:
                paths[name] = path
    return paths


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def _quota(version: CgroupVersion, directory: Path) -> tuple[int | None, int | None]:
    """(quota, period) in microseconds; quota None when unlimited or unreadable."""
    if version == "v2":
        fields = (_read(directory / "cpu.max") or "").split()
        if len(fields) != 2:
            return None, None
        return (None if fields[0] == "max" else _int(fields[0])), _int(fields[1])
    quota = _int(_read(directory / "cpu.cfs_quota_us"))
    return (quota if quota is not None and quota > 0 else None,
            _int(_read(directory / "cpu.cfs_period_us")))


def _directory(mount: _Mount, cgroup: str) -> Path | None:
    """Where ``cgroup`` is under ``mount``; None when the mount does not hold it."""
    root, path = PurePosixPath(mount.root), PurePosixPath(cgroup)
    if path != root and root not in path.parents:
        return None
    return mount.point / path.relative_to(root)


def _throttling_group(version: CgroupVersion, mount: _Mount, cgroup: str
                      ) -> CgroupFiles | None:
    """git's cgroup, or its nearest ancestor inside ``mount`` that has a quota."""
    own = _directory(mount, cgroup)
    if own is None or not (own / "cpu.stat").is_file():
        return None
    path = PurePosixPath(cgroup)
    for candidate in (path, *path.parents):
        directory = _directory(mount, str(candidate))
        if directory is None:
            break
        quota, period = _quota(version, directory)
        if quota is not None and (directory / "cpu.stat").is_file():
            return CgroupFiles(version, cgroup, str(candidate), directory, quota, period)
    quota, period = _quota(version, own)
    return CgroupFiles(version, cgroup, cgroup, own, quota, period)


def locate(pid: int | str, proc: Path = PROC) -> CgroupFiles | str:
    """The CPU counters' files of the cgroup ``pid`` runs in, or why there are none."""
    text = _read(proc / str(pid) / "cgroup")
    if text is None:
        return f"{proc / str(pid) / 'cgroup'} not readable"
    paths = parse_cgroup(text)
    mounts = parse_mountinfo(_read(proc / "self" / "mountinfo") or "")
    wanted: list[tuple[CgroupVersion, str, list[_Mount]]] = []
    if "cpu" in paths:
        wanted.append(("v1", paths["cpu"], [m for m in mounts if m.fstype == "cgroup"
                                            and "cpu" in m.options]))
    if "v2" in paths:
        wanted.append(("v2", paths["v2"], [m for m in mounts if m.fstype == "cgroup2"]))
    if not wanted:
        return f"{proc / str(pid) / 'cgroup'} names no cpu or cgroup v2 hierarchy"
    for version, cgroup, candidates in wanted:
        for mount in candidates:
            found = _throttling_group(version, mount, cgroup)
            if found is not None:
                return found
    return ("no cgroup mount with cpu.stat for "
            + ", ".join(f"{version} {cgroup}" for version, cgroup, _ in wanted))


def read_sample(files: CgroupFiles, t_s: float) -> CpuStatSample | None:
    """The cgroup's counters now; None when ``cpu.stat`` cannot be read."""
    text = _read(files.directory / "cpu.stat")
    if text is None:
        return None
    stat = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        number = _int(value)
        if number is not None:
            stat[key] = number
    if files.version == "v2":
        return CpuStatSample(t_s=t_s, usage_usec=stat.get("usage_usec"),
                             nr_periods=stat.get("nr_periods"),
                             nr_throttled=stat.get("nr_throttled"),
                             throttled_usec=stat.get("throttled_usec"))
    usage = _int(_read(files.directory / "cpuacct.usage"))
    ns = stat.get("throttled_time")
    return CpuStatSample(t_s=t_s, usage_usec=usage // 1000 if usage is not None else None,
                         nr_periods=stat.get("nr_periods"),
                         nr_throttled=stat.get("nr_throttled"),
                         throttled_usec=ns // 1000 if ns is not None else None)


class CgroupCpuWatch:
    """One clone's readings: :meth:`before_start`, :meth:`settle` during the first sample
    interval, :meth:`finish` once git exited (see the module doc)."""

    def __init__(self, proc: Path = PROC) -> None:
        self.proc = proc
        self.own_text = _read(proc / "self" / "cgroup")
        self.own: CgroupFiles | str = "not read"
        self.own_before: CpuStatSample | None = None
        self.files: CgroupFiles | str | None = None
        """git's cgroup once known (or why it is not); None until then."""
        self.before: CpuStatSample | None = None
        self.moved = False
        self.samples: list[CpuStatSample] = []
        """The counters at each of the monitor's samples while git ran (the pipeline reads
        them where a phase began: the checkout)."""

    def before_start(self, t_s: float = 0.0) -> None:
        """Read the probe's own cgroup, where git starts."""
        self.own = locate("self", self.proc)
        if isinstance(self.own, CgroupFiles):
            self.own_before = read_sample(self.own, t_s)

    def see(self, pid: int, t_s: float, *, final: bool) -> bool:
        """Look at git's cgroup once; True when it is known. A cgroup other than the
        probe's is taken at once; the probe's own only when ``final`` (a wrapper may not
        have moved git yet)."""
        if self.files is not None:
            return True
        text = _read(self.proc / str(pid) / "cgroup")
        if text is not None and text != self.own_text:
            self.files, self.moved = locate(pid, self.proc), True
            if isinstance(self.files, CgroupFiles):
                self.before = read_sample(self.files, t_s)
        elif text is not None and final:
            self.files, self.before = self.own, self.own_before
        elif text is None:
            self.files = "git exited before its cgroup was read"
        return self.files is not None

    def settle(self, pid: int, alive: Callable[[], bool], interval_s: float,
               clock: Callable[[], float]) -> None:
        """Wait ``interval_s`` (the first sample interval), looking for git's cgroup."""
        deadline = time.monotonic() + interval_s
        while time.monotonic() < deadline:
            if self.see(pid, clock(), final=False) or not alive():
                break
            time.sleep(POLL_S)
        self.see(pid, clock(), final=True)
        time.sleep(max(0.0, deadline - time.monotonic()))

    def sample(self, t_s: float) -> None:
        """Read the counters once more while git runs (nothing before its cgroup is known)."""
        if isinstance(self.files, CgroupFiles):
            found = read_sample(self.files, t_s)
            if found is not None:
                self.samples.append(found)

    def finish(self, t_s: float) -> CgroupCpuRecord:
        """The record, with the counters read now (git has exited)."""
        files = self.files if self.files is not None else "git's cgroup was never read"
        if isinstance(files, str):
            return CgroupCpuRecord(missing=files)
        after = read_sample(files, t_s)
        missing = [f"{files.directory / 'cpu.stat'} not readable {when}"
                   for when, sample in (("before", self.before), ("after", after))
                   if sample is None]
        if files.quota_us is None:
            missing.append("no CPU quota set (or its file not readable)")
        return CgroupCpuRecord(
            version=files.version, cgroup=files.cgroup, stat_cgroup=files.stat_cgroup,
            stat_file=str(files.directory / "cpu.stat"), quota_us=files.quota_us,
            period_us=files.period_us, git_in_probe_cgroup=not self.moved,
            before=self.before, after=after, missing="; ".join(missing))
