"""The collector on a recorded server (FakeAccess): intervals, and what it could not read."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from gitnetdiag.host.access import CommandResult, LocalAccess
from gitnetdiag.host.collect import collect_report
from gitnetdiag.host.netstat import parse_proc_counters
from gitnetdiag.model.host.listeners import ListenerInfo
from tests.host.fakes import FakeAccess, ok, recorded, sysctl_files

LAB_CONFIG = "/run/lab/haproxy.cfg"


class Clock:
    """Fake time: ``sleep`` advances ``now``."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def __call__(self) -> float:
        return self.now


def _sequence(*texts: str) -> Iterator[str]:
    yield from texts
    while True:
        yield texts[-1]


def lab_server(**changes: object) -> FakeAccess:
    """The tiny-backlog lab server: counters and dmesg advance between the two reads."""
    netstat = _sequence(recorded("netstat_before.txt"), recorded("netstat_after.txt"))
    snmp = _sequence(recorded("snmp_before.txt"), recorded("snmp_after.txt"))
    dmesg_lines = recorded("dmesg_mixed.txt").splitlines(keepends=True)
    dmesg = _sequence("".join(dmesg_lines[:5]), "".join(dmesg_lines))
    ss = _sequence(recorded("ss_ltnp_lab.txt"), recorded("ss_ltnp_burst.txt"))
    files: dict[str, object] = {
        **sysctl_files(),
        "/proc/net/netstat": lambda: next(netstat),
        "/proc/net/snmp": lambda: next(snmp),
        LAB_CONFIG: recorded("haproxy_lab_default_window.cfg"),
        "/etc/ssh/sshd_config": recorded("sshd_config_lab"),
        "/etc/apache2/apache2.conf": recorded("apache2_lab.conf"),
        "/etc/apache2/sites-available/unused.conf": "Protocols h2\nH2WindowSize 100\n",
    }
    commands: dict[str, object] = {
        "ss": lambda: ok(next(ss)),
        "dmesg": lambda: ok(next(dmesg)),
        "haproxy": ok("HAProxy version 2.6.12-1+deb12u4 2026/10/17 - https://haproxy.org/\n"),
        "hostname": ok("gitserver\n"),
    }
    for key, value in changes.items():
        (files if key.startswith("/") else commands)[key] = value
    return FakeAccess(commands=commands, files=files)  # type: ignore[arg-type]


def test_interval_report_names_backlog_process_overflows_and_kernel_line() -> None:
    clock = Clock()
    report = collect_report(
        lab_server(), during_s=3.5, config_paths=[LAB_CONFIG], sleep=clock.sleep, clock=clock
    )
    assert clock.sleeps == [1.0, 1.0, 1.0, 0.5]
    git = next(item for item in report.listeners if item.port == 9418)
    assert (git.backlog, git.process, git.small_backlog) == (5, "git-daemon", True)
    assert git.accept_queue_max >= 1
    assert report.counters["ListenOverflows"] == 103
    assert (
        report.counter_totals["ListenOverflows"]
        == parse_proc_counters(recorded("netstat_after.txt"))["ListenOverflows"]
    )
    assert len(report.kernel_log) == 2  # only lines stamped after the first read
    assert all("SYN flooding" in line for line in report.kernel_log)
    settings = {(f.setting, f.file) for f in report.config_findings}
    assert ("tune.h2.initial-window-size", LAB_CONFIG) in settings
    assert ("MaxStartups", "/etc/ssh/sshd_config") in settings
    # apache: the lab sets H2WindowSize 16 MiB; sites-available is not active
    assert not any(f.product == "apache" for f in report.config_findings)
    assert {c.file for c in report.configs_checked} >= {"/etc/apache2/apache2.conf", LAB_CONFIG}
    assert report.haproxy_version == "2.6.12-1+deb12u4"
    assert report.unreadable == () and report.is_root is True and report.hostname == "gitserver"
    data = report.to_dict()
    assert data["schema"] == "gitnetdiag.host/1"
    assert data["listeners"][2]["small_backlog"] is True


def test_snapshot_without_interval_has_no_deltas_but_the_whole_log() -> None:
    report = collect_report(lab_server(), sleep=Clock().sleep)
    assert report.counters == {} and report.counter_totals
    assert len(report.kernel_log) == 3  # every matching line of the one dmesg read


def test_since_totals_make_deltas_between_two_snapshots() -> None:
    first = collect_report(lab_server(), sleep=Clock().sleep)
    server = lab_server(
        **{
            "/proc/net/netstat": recorded("netstat_after.txt"),
            "/proc/net/snmp": recorded("snmp_after.txt"),
        }
    )
    second = collect_report(server, since_totals=first.counter_totals)
    assert second.counters["ListenOverflows"] == 103


def test_not_root_no_ss_and_restricted_kernel_log_are_reported() -> None:
    denied = CommandResult(
        returncode=1,
        stdout="",
        stderr="dmesg: read kernel buffer failed: Operation not permitted\n",
    )
    server = lab_server(dmesg=denied)
    del server.commands["ss"]
    server._euid = 1000
    server._netlink = None
    clock = Clock()
    report = collect_report(server, during_s=1, sleep=clock.sleep, clock=clock)
    why = {item.what: item.why for item in report.unreadable}
    assert "ss is not installed" in why["listeners"]
    assert "Operation not permitted" in why["kernel log"] and "dmesg_restrict" in why["kernel log"]
    assert report.listeners == () and report.kernel_log == () and report.is_root is False
    assert report.counters["ListenOverflows"] == 103  # counters stay readable


def test_no_ss_falls_back_to_netlink_and_says_so() -> None:
    server = lab_server()
    del server.commands["ss"]
    server._netlink = [ListenerInfo(address="0.0.0.0", port=9418, backlog=5, process="git-daemon")]
    server._euid = 1000
    report = collect_report(server)
    assert [(i.port, i.backlog) for i in report.listeners] == [(9418, 5)]
    what = [item.what for item in report.unreadable]
    assert what == ["listeners via ss"]  # the process is known: nothing hidden


def test_processes_hidden_when_not_root() -> None:
    server = lab_server(ss=ok("LISTEN 0 5 0.0.0.0:9418 0.0.0.0:*\n"))
    server._euid = 1000
    report = collect_report(server)
    why = {item.what: item.why for item in report.unreadable}
    assert "not root (uid 1000)" in why["listener processes"]


def test_missing_config_and_unknown_config_are_listed() -> None:
    server = lab_server(**{"/tmp/notes.txt": "hello\n"})
    report = collect_report(server, config_paths=["/nope.cfg", "/tmp/notes.txt"])
    why = {item.what: item.why for item in report.unreadable}
    assert "No such file" in why["/nope.cfg"] and "not recognised" in why["/tmp/notes.txt"]


def test_sysctl_clamp_from_the_server_is_a_finding() -> None:
    files = sysctl_files(**{"net.ipv4.tcp_rmem": "4096\t65536\t65536"})
    report = collect_report(lab_server(**files), standard_configs=False)
    rmem = [f for f in report.config_findings if f.setting == "net.ipv4.tcp_rmem"]
    assert rmem and rmem[0].value == "4096 65536 65536" and rmem[0].window_bytes == 65536


def test_netlink_reads_a_real_listener_with_its_backlog() -> None:
    """LocalAccess.netlink_listeners against this kernel: a loopback socket with backlog 7."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(7)
        port = sock.getsockname()[1]
        found = LocalAccess().netlink_listeners()
    assert found is not None
    mine = [item for item in found if item.port == port]
    assert [(i.address, i.backlog, i.accept_queue) for i in mine] == [("127.0.0.1", 7, 0)]
    assert mine[0].process and mine[0].pid is not None


def test_local_access_reports_missing_programs_as_127(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    result = LocalAccess().run(["ss", "-ltnH"])
    assert result.returncode == 127
