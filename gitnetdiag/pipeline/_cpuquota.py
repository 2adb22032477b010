"""A clone's cgroup CPU counters (``CloneRecord.cgroup_cpu`` and ``<stem>.cgroup-cpu.jsonl``)
-> :class:`~gitnetdiag.diagnosis.transfers.CpuQuota`: the counters' differences from
before git started to the start of its checkout (what ``compare`` times of a clone), and
the throttled time of the checkout after it.

The counters are cumulative and read at the monitor's samples (0.25 s apart); a counter's
value at the checkout's start is interpolated linearly between the two readings around it.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from gitnetdiag.diagnosis.transfers import CpuQuota
from gitnetdiag.rundir.cgroupcpu import CgroupCpuRecord, CpuStatSample

_COUNTERS = ("usage_usec", "nr_periods", "nr_throttled", "throttled_usec")


def counter_at(readings: Sequence[CpuStatSample], name: str, t_s: float) -> float | None:
    """One counter at ``t_s``, linear between the readings around it (the last reading at
    or after the end); None when a reading around it lacks the counter."""
    points = [(r.t_s, float(value)) for r in readings
              if (value := getattr(r, name)) is not None]
    if len(points) != sum(1 for _ in readings) or not points:
        return None
    points.sort()
    if t_s <= points[0][0]:
        return points[0][1]
    for (t0, v0), (t1, v1) in pairwise(points):
        if t0 <= t_s <= t1:
            return v0 + (v1 - v0) * ((t_s - t0) / (t1 - t0) if t1 > t0 else 1.0)
    return points[-1][1]


def cpu_quota(record: CgroupCpuRecord | None, samples: Sequence[CpuStatSample] = (),
              until_s: float | None = None,
              server_wait: tuple[float, float] | None = None) -> CpuQuota | None:
    """The counters' differences from ``before`` to ``until_s`` (the checkout's start; None:
    to ``after``); None without both readings. A counter missing from a reading, or one that
    went backwards (a cgroup made again), is None. ``server_wait``: the fetch request sent
    and the first pack byte on the same clock, whose throttled periods are counted apart."""
    if record is None or record.before is None or record.after is None:
        return None
    before, after = record.before, record.after
    readings = [before, *(s for s in samples if before.t_s < s.t_s < after.t_s), after]
    end = after.t_s if until_s is None else min(max(until_s, before.t_s), after.t_s)

    def delta(name: str, start: float, stop: float) -> float | None:
        a, b = counter_at(readings, name, start), counter_at(readings, name, stop)
        return b - a if a is not None and b is not None and b >= a else None

    spans = {name: delta(name, before.t_s, end) for name in _COUNTERS}
    throttled, usage = spans["throttled_usec"], spans["usage_usec"]
    rest = delta("throttled_usec", end, after.t_s) if until_s is not None else None
    waiting = None
    if server_wait is not None and server_wait[1] > server_wait[0]:
        start, stop = (min(max(t, before.t_s), end) for t in server_wait)
        waiting = delta("nr_throttled", start, stop)
    return CpuQuota(
        source=f"{record.stat_file}, cgroup {record.version} {record.stat_cgroup}",
        quota_us=record.quota_us, period_us=record.period_us,
        periods=spans["nr_periods"], throttled_periods=spans["nr_throttled"],
        throttled_s=throttled / 1e6 if throttled is not None else None,
        usage_s=usage / 1e6 if usage is not None else None,
        from_git_start=record.git_in_probe_cgroup,
        until_s=end if until_s is not None else None,
        checkout_throttled_s=rest / 1e6 if rest is not None else None,
        readings=len(readings), waiting_throttled_periods=waiting)
