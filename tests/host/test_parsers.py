"""Pure parsers on recorded server output: ss, /proc/net counters, dmesg, sysctls."""

from __future__ import annotations

import pytest

from gitnetdiag.host.kernlog import last_stamp, matching_lines, parse_dmesg
from gitnetdiag.host.netstat import (
    KEY_COUNTERS,
    CounterFormatError,
    counter_deltas,
    parse_proc_counters,
)
from gitnetdiag.model.host.listeners import merge_samples, parse_ss_listeners
from gitnetdiag.model.host.sysctl import lint_sysctls, normalise
from tests.host.fakes import recorded


def test_ss_lab_listeners_carry_backlog_queue_and_process() -> None:
    """The lab's `ss -ltnpH`: git-daemon on 9418 with backlog 5; apache's first pid is kept."""
    found = {item.port: item for item in parse_ss_listeners(recorded("ss_ltnp_lab.txt"))}
    assert set(found) == {8080, 8443, 9418, 22, 443}
    git = found[9418]
    assert (git.address, git.backlog, git.accept_queue) == ("198.18.2.2", 5, 0)
    assert (git.process, git.pid) == ("git-daemon", 30393)
    assert git.small_backlog and not found[443].small_backlog
    assert found[8080].process == "apache2" and found[8080].pid == 30716


def test_ss_during_a_burst_shows_the_accept_queue() -> None:
    """Recorded while 150 ls-remote ran: Recv-Q of the git daemon listener is non-zero."""
    found = {item.port: item for item in parse_ss_listeners(recorded("ss_ltnp_burst.txt"))}
    assert found[9418].accept_queue >= 1


def test_ss_ipv6_scoped_and_processless_lines() -> None:
    """Header lines are skipped, [::]:22 and 127.0.0.53%lo:53 parse, missing users: is empty."""
    text = (
        "State  Recv-Q Send-Q Local Address:Port Peer Address:Port Process\n"
        "LISTEN 0      4096   127.0.0.53%lo:53   0.0.0.0:*\n"
        'LISTEN 2      128    [::]:22            [::]:*    users:(("sshd",pid=812,fd=4))\n'
        "LISTEN 0      511    *:80               *:*\n"
    )
    items = parse_ss_listeners(text)
    assert [(i.address, i.port, i.backlog, i.accept_queue) for i in items] == [
        ("127.0.0.53%lo", 53, 4096, 0),
        ("::", 22, 128, 2),
        ("*", 80, 511, 0),
    ]
    assert items[0].process == "" and items[0].pid is None and items[1].process == "sshd"


def test_merge_samples_keeps_the_peak_accept_queue() -> None:
    first = parse_ss_listeners(recorded("ss_ltnp_lab.txt"))
    burst = parse_ss_listeners(recorded("ss_ltnp_burst.txt"))
    merged = {item.port: item for item in merge_samples(first, [burst, first])}
    peak = {item.port: item.accept_queue for item in burst}[9418]
    assert merged[9418].accept_queue == 0 and merged[9418].accept_queue_max == peak


def test_counter_deltas_of_the_recorded_burst() -> None:
    """150 concurrent ls-remote against backlog 5: overflows and SYN cookies counted."""
    before = parse_proc_counters(recorded("netstat_before.txt"))
    before |= parse_proc_counters(recorded("snmp_before.txt"))
    after = parse_proc_counters(recorded("netstat_after.txt"))
    after |= parse_proc_counters(recorded("snmp_after.txt"))
    deltas = counter_deltas(before, after)
    assert deltas["ListenOverflows"] == after["ListenOverflows"] - before["ListenOverflows"] > 0
    assert deltas["ListenOverflows"] == 103 and deltas["TCPReqQFullDoCookies"] == 47
    assert deltas["SyncookiesSent"] == 41
    assert all(name in deltas for name in KEY_COUNTERS if name in before)
    assert "RetransSegs" in deltas and "TCPTimeouts" in deltas  # Tcp and TcpExt keys are bare
    assert "CurrEstab" not in before  # a gauge, not a counter
    assert any(key.startswith("IpExt.") for key in before)


@pytest.mark.parametrize(
    "text",
    [
        "TcpExt: A B\n",
        "TcpExt: A B\nIpExt: 1 2\n",
        "TcpExt: A B\nTcpExt: 1\n",
        "TcpExt: A B\nTcpExt: 1 x\n",
    ],
)
def test_malformed_counter_files_are_rejected(text: str) -> None:
    with pytest.raises(CounterFormatError):
        parse_proc_counters(text)


def test_dmesg_keeps_syn_flood_firewall_and_conntrack_lines() -> None:
    lines = parse_dmesg(recorded("dmesg_mixed.txt"))
    kept = matching_lines(lines)
    assert len(kept) == 5
    assert sum("Possible SYN flooding" in line for line in kept) == 3
    assert any("UFW BLOCK" in line for line in kept) and any("table full" in line for line in kept)
    assert not any("promiscuous" in line for line in kept)


def test_dmesg_interval_takes_only_later_lines() -> None:
    lines = parse_dmesg(recorded("dmesg_mixed.txt"))
    mark = last_stamp(lines[:4])
    assert mark == 650.5
    later = matching_lines(lines, after_s=mark)
    assert len(later) == 2 and all(line.startswith("[  9") for line in later)


def test_real_dmesg_tail_finds_the_lab_syn_flood_line() -> None:
    kept = matching_lines(parse_dmesg(recorded("dmesg_tail.txt")))
    assert kept and all(":9418" in line for line in kept)


def test_sysctl_lint_flags_the_rmem_clamp_and_nothing_on_defaults() -> None:
    healthy = {
        "net.ipv4.tcp_rmem": normalise("4096\t131072\t33554432\n"),
        "net.core.somaxconn": "4096",
        "net.ipv4.tcp_window_scaling": "1",
        "net.ipv4.tcp_syncookies": "1",
        "net.ipv4.tcp_max_syn_backlog": "2048",
    }
    assert lint_sysctls(healthy) == []
    clamped = lint_sysctls({**healthy, "net.ipv4.tcp_rmem": "4096 65536 65536"})
    assert [f.setting for f in clamped] == ["net.ipv4.tcp_rmem"]
    assert clamped[0].window_bytes == 65536 and clamped[0].file == "/proc/sys/net/ipv4/tcp_rmem"
    assert "65536 B/RTT = 5.2 Mbit/s at 100 ms" in clamped[0].effect
    bad = lint_sysctls(
        {
            **healthy,
            "net.ipv4.tcp_window_scaling": "0",
            "net.core.somaxconn": "128",
            "net.ipv4.tcp_syncookies": "0",
            "net.ipv4.tcp_max_syn_backlog": "64",
        }
    )
    assert {f.setting for f in bad} == {
        "net.ipv4.tcp_window_scaling",
        "net.core.somaxconn",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.tcp_max_syn_backlog",
    }
