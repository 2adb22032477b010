"""The cgroup CPU counters around a clone, read from fake /proc and cgroup trees."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gitnetdiag.pipeline._cpuquota import counter_at, cpu_quota
from gitnetdiag.probe.cgroupcpu import (
    CgroupCpuWatch,
    locate,
    parse_cgroup,
    parse_mountinfo,
    read_sample,
)
from gitnetdiag.rundir.cgroupcpu import CgroupCpuRecord, CpuStatSample
from gitnetdiag.serial import from_jsonable, to_jsonable

V2_STAT = ("usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 60\n"
           "nr_throttled 40\nthrottled_usec 3900000\nnr_bursts 0\nburst_usec 0\n")
V1_STAT = ("nr_periods 10\nnr_throttled 4\nthrottled_time 380000000\nnr_bursts 0\n"
           "burst_time 0\n")


def _proc(tmp: Path, own: str, mountinfo: str, pids: dict[int, str] | None = None) -> Path:
    proc = tmp / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text(own)
    (proc / "self" / "mountinfo").write_text(mountinfo)
    for pid, text in (pids or {}).items():
        (proc / str(pid)).mkdir()
        (proc / str(pid) / "cgroup").write_text(text)
    return proc


def _v2_tree(tmp: Path) -> tuple[Path, str]:
    """A v2 hierarchy mounted at tmp/cg2: /ci has a 50% quota, git runs in /ci/job."""
    root = tmp / "cg2"
    job = root / "ci" / "job"
    job.mkdir(parents=True)
    (root / "cpu.stat").write_text("usage_usec 99\n")
    (root / "ci" / "cpu.max").write_text("50000 100000\n")
    (root / "ci" / "cpu.stat").write_text(V2_STAT)
    (job / "cpu.max").write_text("max 100000\n")
    (job / "cpu.stat").write_text("usage_usec 7\nnr_periods 0\nnr_throttled 0\n"
                                  "throttled_usec 0\n")
    return root, f"30 23 0:29 / {root} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"


def test_v2_reads_the_nearest_ancestor_with_a_quota(tmp_path: Path) -> None:
    _, mounts = _v2_tree(tmp_path)
    proc = _proc(tmp_path, "0::/ci/job\n", mounts)
    files = locate("self", proc)
    assert not isinstance(files, str)
    assert (files.version, files.cgroup, files.stat_cgroup) == ("v2", "/ci/job", "/ci")
    assert (files.quota_us, files.period_us) == (50_000, 100_000)
    sample = read_sample(files, 1.5)
    assert sample is not None
    assert (sample.usage_usec, sample.nr_periods, sample.nr_throttled,
            sample.throttled_usec) == (2_500_000, 60, 40, 3_900_000)


def test_v2_without_a_quota_reads_git_s_own_cgroup(tmp_path: Path) -> None:
    root, mounts = _v2_tree(tmp_path)
    (root / "ci" / "cpu.max").write_text("max 100000\n")
    files = locate("self", _proc(tmp_path, "0::/ci/job\n", mounts))
    assert not isinstance(files, str)
    assert files.stat_cgroup == "/ci/job" and files.quota_us is None


def test_v1_cpu_hierarchy_mounted_elsewhere_with_a_quota(tmp_path: Path) -> None:
    """The lab's case: cpu mounted under its state directory (a path with a space),
    ``throttled_time`` in nanoseconds, no cpuacct beside it (usage not available)."""
    mount = tmp_path / "state dir" / "cpu"
    group = mount / "lab-client"
    group.mkdir(parents=True)
    (group / "cpu.stat").write_text(V1_STAT)
    (group / "cpu.cfs_quota_us").write_text("5000\n")
    (group / "cpu.cfs_period_us").write_text("100000\n")
    point = str(mount).replace(" ", "\\040")
    mounts = (f"40 30 0:50 / {point} rw,relatime - cgroup gnd-cpu rw,cpu\n"
              "41 30 0:51 / /x rw - cgroup2 cgroup2 rw\n")
    proc = _proc(tmp_path, "1:cpu:/\n0::/\n", mounts, {42: "1:cpu:/lab-client\n0::/\n"})
    files = locate(42, proc)
    assert not isinstance(files, str)
    assert (files.version, files.directory, files.quota_us) == ("v1", group, 5000)
    sample = read_sample(files, 0.0)
    assert sample is not None
    assert (sample.nr_throttled, sample.throttled_usec, sample.usage_usec) == (4, 380_000, None)
    (group / "cpuacct.usage").write_text("1234567000\n")  # cpu,cpuacct co-mounted
    assert read_sample(files, 0.0).usage_usec == 1_234_567  # type: ignore[union-attr]


def test_missing_files_are_said_not_guessed(tmp_path: Path) -> None:
    proc = _proc(tmp_path, "0::/gone\n", "")
    assert locate("self", proc) == "no cgroup mount with cpu.stat for v2 /gone"
    assert locate(7, proc).endswith("7/cgroup not readable")  # type: ignore[union-attr]
    assert "names no cpu" in locate("self", _proc(tmp_path / "b", "1:name=systemd:/\n", ""))  # type: ignore[operator]
    watch = CgroupCpuWatch(proc)
    watch.before_start()
    assert watch.see(99, 0.1, final=False)  # git gone before it was read
    record = watch.finish(1.0)
    assert record.version is None and record.before is None
    assert record.missing == "git exited before its cgroup was read"


def test_git_in_the_probe_s_cgroup_is_read_before_it_starts(tmp_path: Path) -> None:
    root, mounts = _v2_tree(tmp_path)
    proc = _proc(tmp_path, "0::/ci/job\n", mounts, {50: "0::/ci/job\n"})
    watch = CgroupCpuWatch(proc)
    watch.before_start()
    assert not watch.see(50, 0.01, final=False)  # the same cgroup: a wrapper may move it yet
    assert watch.see(50, 0.25, final=True)
    (root / "ci" / "cpu.stat").write_text(V2_STAT.replace("nr_throttled 40", "nr_throttled 70")
                                          .replace("throttled_usec 3900000",
                                                   "throttled_usec 6900000"))
    record = watch.finish(5.0)
    assert record.git_in_probe_cgroup and record.missing == ""
    assert record.before is not None and record.before.t_s == 0.0
    assert record.after is not None and record.after.t_s == 5.0
    quota = cpu_quota(from_jsonable(CgroupCpuRecord, to_jsonable(record), where="test"))
    assert quota is not None
    assert (quota.throttled_periods, quota.throttled_s, quota.quota_cores) == (30, 3.0, 0.5)
    assert quota.usage_s == 0.0
    assert quota.throttled_wall_s == pytest.approx(1.5)  # 30 periods x (0.1 - 0.05) s


def test_git_moved_by_a_wrapper_is_read_when_the_move_is_seen(tmp_path: Path) -> None:
    root, mounts = _v2_tree(tmp_path)
    (root / "other").mkdir()
    (root / "other" / "cpu.stat").write_text("usage_usec 5\n")
    proc = _proc(tmp_path, "0::/other\n", mounts, {51: "0::/ci/job\n"})
    watch = CgroupCpuWatch(proc)
    watch.before_start()
    assert watch.see(51, 0.004, final=False)
    (root / "ci" / "cpu.stat").unlink()  # gone before git exited
    record = watch.finish(2.0)
    assert not record.git_in_probe_cgroup and record.stat_cgroup == "/ci"
    assert record.before is not None and record.before.t_s == 0.004
    assert record.after is None and "not readable after" in record.missing
    assert cpu_quota(record) is None


def test_parsers_skip_what_they_do_not_know() -> None:
    assert parse_cgroup("garbage\n4:cpu,cpuacct:/a\n0::/b\n") == {
        "cpu": "/a", "cpuacct": "/a", "v2": "/b"}
    assert parse_mountinfo("1 2 0:1 / /proc rw - proc proc rw\nshort\n") == []


def _reading(t_s: float, throttled: int, periods: int) -> CpuStatSample:
    return CpuStatSample(t_s=t_s, usage_usec=periods * 5000, nr_periods=periods,
                         nr_throttled=throttled, throttled_usec=throttled * 95_000)


def test_the_checkout_s_throttling_is_left_out_of_the_span(tmp_path: Path) -> None:
    """Throttled 2 periods a second: 6 s of clone, then 4 s of checkout from t = 6 s; the
    span ends at the checkout's start, read between the samples at 5.9 and 6.1 s."""
    record = CgroupCpuRecord(version="v1", cgroup="/c", stat_cgroup="/c", stat_file="f",
                             quota_us=5000, period_us=100_000, git_in_probe_cgroup=False,
                             before=_reading(0.0, 0, 0), after=_reading(10.0, 20, 100))
    samples = [_reading(5.9, 11, 59), _reading(6.1, 13, 61), _reading(12.0, 99, 99)]
    quota = cpu_quota(record, samples, until_s=6.0)
    assert quota is not None and quota.readings == 4  # the reading past the end is not one
    assert quota.throttled_periods == pytest.approx(12.0)
    assert quota.throttled_s == pytest.approx(1.14) and quota.usage_s == pytest.approx(0.3)
    assert quota.checkout_throttled_s == pytest.approx(8 * 0.095)
    assert quota.throttled_wall_s == pytest.approx(12 * 0.095)
    assert quota.until_s == 6.0 and not quota.from_git_start
    whole = cpu_quota(record, samples)
    assert whole is not None and whole.throttled_periods == 20 and whole.until_s is None
    assert whole.waiting_throttled_periods is None and whole.priced_periods == 20
    # The server's wait, 5.9 s to 6.1 s: its 2 throttled periods are not priced (the clone
    # waits on the server there whatever its CPU); a wait past the span is cut at its end.
    waited = cpu_quota(record, samples, until_s=6.0, server_wait=(5.9, 6.1))
    assert waited is not None and waited.waiting_throttled_periods == pytest.approx(1.0)
    assert waited.throttled_wall_s == pytest.approx(11 * 0.095)
    inside = cpu_quota(record, samples, server_wait=(5.9, 6.1))
    assert inside is not None and inside.waiting_throttled_periods == pytest.approx(2.0)
    assert inside.throttled_wall_s == pytest.approx(18 * 0.095)
    # A counter the kernel does not give (v2 without the cpu controller) stays None.
    bare = replace(record, before=CpuStatSample(t_s=0.0, usage_usec=1),
                   after=CpuStatSample(t_s=10.0, usage_usec=9))
    unthrottled = cpu_quota(bare, (), until_s=6.0)
    assert unthrottled is not None and unthrottled.throttled_s is None
    assert unthrottled.throttled_wall_s is None
    assert unthrottled.usage_s == pytest.approx(4.8e-6)  # 8 us over 10 s, to 6 s
    assert counter_at([bare.before, bare.after], "usage_usec", 5.0) == 5.0  # type: ignore[list-item]
