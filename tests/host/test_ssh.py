"""`gitnetdiag host --ssh`: a real sshd on loopback (root), and the paramiko layer with fakes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from gitnetdiag.errors import NetworkError, UsageError
from gitnetdiag.host.access import CommandResult, SshAccess, parse_ssh_target
from gitnetdiag.host.collect import collect_report
from tests.host.fakes import DATA, recorded, sysctl_files


def test_parse_ssh_target() -> None:
    assert parse_ssh_target("admin@git.example.test") == ("admin", "git.example.test", None)
    assert parse_ssh_target("git.example.test:2222") == (None, "git.example.test", 2222)
    assert parse_ssh_target("root@[::1]:22") == ("root", "::1", 22)
    with pytest.raises(UsageError):
        parse_ssh_target("root@host:port")
    with pytest.raises(UsageError):
        parse_ssh_target("root@")


class ScriptedSsh(SshAccess):
    """SshAccess without a connection: each exec is answered from recorded outputs."""

    def __init__(self, outputs: dict[str, CommandResult]) -> None:  # no super(): no network
        self.description = "ssh test@server"
        self.outputs = outputs
        self.commands: list[list[str]] = []

    def _exec(self, argv: Sequence[str], timeout_s: float) -> CommandResult:
        self.commands.append(list(argv))
        if argv[0] in ("head",):
            path = argv[-1]
            files = {
                **sysctl_files(),
                "/proc/net/netstat": recorded("netstat_after.txt"),
                "/proc/net/snmp": recorded("snmp_after.txt"),
                "/etc/ssh/sshd_config": recorded("sshd_config_lab"),
            }
            if path in files:
                return CommandResult(returncode=0, stdout=files[path], stderr="")
            return CommandResult(returncode=1, stdout="", stderr=f"head: cannot open '{path}'")
        if argv[0] == "find":
            found = "/etc/ssh/sshd_config\n" if argv[1] == "/etc/ssh/sshd_config" else ""
            return CommandResult(returncode=0 if found else 1, stdout=found, stderr="")
        return self.outputs.get(
            argv[0], CommandResult(returncode=127, stdout="", stderr="command not found")
        )


def test_remote_collection_retries_sbin_and_reads_files_with_head() -> None:
    """A non-login shell's PATH lacks /usr/sbin: `ss` is retried there; nothing is installed."""
    remote = ScriptedSsh(
        {
            "/usr/sbin/ss": CommandResult(
                returncode=0, stdout=recorded("ss_ltnp_lab.txt"), stderr=""
            ),
            "id": CommandResult(returncode=0, stdout="0\n", stderr=""),
            "hostname": CommandResult(returncode=0, stdout="gitserver\n", stderr=""),
            "dmesg": CommandResult(returncode=0, stdout=recorded("dmesg_mixed.txt"), stderr=""),
        }
    )
    report = collect_report(remote)
    assert report.via == "ssh test@server" and report.is_root is True
    assert ["ss", "-ltnpH"] in remote.commands and ["/usr/sbin/ss", "-ltnpH"] in remote.commands
    assert [(i.port, i.backlog) for i in report.listeners if i.port == 9418] == [(9418, 5)]
    assert report.sysctls["net.core.somaxconn"] == "4096"
    assert any(f.setting == "MaxStartups" for f in report.config_findings)
    assert {c[0] for c in remote.commands} <= {
        "id",
        "head",
        "ss",
        "/usr/sbin/ss",
        "/sbin/ss",
        "dmesg",
        "haproxy",
        "/usr/sbin/haproxy",
        "/sbin/haproxy",
        "find",
        "hostname",
    }


def test_unreachable_ssh_target_is_a_network_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connection refused
        with pytest.raises(NetworkError) as info:
            SshAccess(f"root@127.0.0.1:{port}", connect_timeout_s=5)
    assert info.value.hint


@pytest.fixture
def loopback_sshd(tmp_path: Path) -> Iterator[tuple[int, Path, Path]]:
    """An sshd of our own on 127.0.0.1 accepting a fresh key for root; stopped afterwards."""
    for name in ("host", "client"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / name)],
            check=True,
            timeout=30,
        )
    (tmp_path / "authorized_keys").write_text((tmp_path / "client.pub").read_text())
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp_path / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {tmp_path / 'host'}\n"
        f"PidFile {tmp_path / 'sshd.pid'}\nAuthorizedKeysFile {tmp_path / 'authorized_keys'}\n"
        "UsePAM no\nStrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\nAllowUsers root\n"
    )
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {(tmp_path / 'host.pub').read_text()}")
    Path("/run/sshd").mkdir(exist_ok=True)
    proc = subprocess.Popen(
        ["/usr/sbin/sshd", "-D", "-e", "-f", str(config)], stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield port, tmp_path / "client", known
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.lab
@pytest.mark.lab_lane("fail")  # a loopback sshd, no lab, no rate (tests/conftest.py)
def test_host_over_ssh_against_a_loopback_sshd(loopback_sshd: tuple[int, Path, Path]) -> None:
    """End to end with paramiko: the remote report sees the sshd's own listener and lints."""
    port, key, known = loopback_sshd
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gitnetdiag",
            "host",
            "--ssh",
            f"root@127.0.0.1:{port}",
            "--ssh-key",
            str(key),
            "--ssh-known-hosts",
            str(known),
            "--no-standard-configs",
            "--config",
            str(DATA / "haproxy_lab_default_window.cfg"),
            "--json",
            "-",
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["via"] == f"ssh root@127.0.0.1:{port}" and report["is_root"] is True
    ours = [item for item in report["listeners"] if item["port"] == port]
    assert ours and ours[0]["process"] == "sshd"
    assert report["counter_totals"]["ListenOverflows"] >= 0
    assert any(f["setting"] == "tune.h2.initial-window-size" for f in report["config_findings"])


@pytest.mark.lab
@pytest.mark.lab_lane("fail")  # a loopback sshd, no lab, no rate (tests/conftest.py)
def test_unknown_host_key_is_refused(loopback_sshd: tuple[int, Path, Path], tmp_path: Path) -> None:
    port, key, _known = loopback_sshd
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    env = {**os.environ, "HOME": str(tmp_path)}  # no ~/.ssh/known_hosts either
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gitnetdiag",
            "host",
            "--ssh",
            f"root@127.0.0.1:{port}",
            "--ssh-key",
            str(key),
            "--ssh-known-hosts",
            str(empty),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 5 and "known" in proc.stderr and "Traceback" not in proc.stderr
