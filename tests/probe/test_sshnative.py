"""The SSH push probe: window-adjust recording, and a real push in the lab."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import paramiko
import pytest

from gitnetdiag.errors import UsageError
from gitnetdiag.probe.sshnative import LedgerTransport, SshTarget, _recording_window_adjust
from tests.conftest import LabFactory


class _FakeChannel:
    """Just enough of a paramiko Channel for its window-adjust handler."""

    def __init__(self, transport: object) -> None:
        import threading

        self.transport = transport
        self.lock = threading.Lock()
        self.out_buffer_cv = threading.Condition(self.lock)
        self.out_window_size = 100
        self.ultra_debug = False

    def get_transport(self) -> object:
        return self.transport

    def get_id(self) -> int:
        return 7


def test_window_adjust_is_timestamped_and_still_applied() -> None:
    transport = LedgerTransport.__new__(LedgerTransport)
    transport.window_adjusts = {}
    channel = _FakeChannel(transport)
    message = paramiko.Message()
    message.add_int(65_536)
    message.rewind()
    _recording_window_adjust(channel, message)
    assert channel.out_window_size == 100 + 65_536
    ((t_ns, increment),) = transport.window_adjusts[7]
    assert increment == 65_536 and t_ns > 0


def test_transport_routes_window_adjust_through_the_recorder() -> None:
    from paramiko.common import MSG_CHANNEL_DATA, MSG_CHANNEL_WINDOW_ADJUST

    table = LedgerTransport._channel_handler_table
    assert table[MSG_CHANNEL_WINDOW_ADJUST] is _recording_window_adjust
    assert table[MSG_CHANNEL_DATA] is paramiko.Transport._channel_handler_table[MSG_CHANNEL_DATA]


def test_ssh_url_parsing() -> None:
    target = SshTarget.from_url("ssh://git@198.18.2.2:2222/srv/lab.git")
    assert (target.user, target.host, target.port, target.path) == (
        "git",
        "198.18.2.2",
        2222,
        "/srv/lab.git",
    )
    with pytest.raises(UsageError):
        SshTarget.from_url("https://example.invalid/x.git")


@pytest.mark.lab
@pytest.mark.lab_lane("idle")  # the channel's window and packet size as read: no rate
def test_lab_ssh_ledger_records_channel_window(shared_lab: LabFactory) -> None:
    state = shared_lab("h2-small-window")
    root = Path(__file__).resolve().parents[2]

    def ls_remote() -> str:
        return subprocess.run(
            ["ip", "netns", "exec", state.client_ns, "git", "ls-remote", state.endpoints.ssh],
            env={**os.environ, "GIT_SSH_COMMAND": state.ssh_command()},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout

    before = ls_remote()
    proc = subprocess.run(
        [
            "ip", "netns", "exec", state.client_ns, sys.executable,
            "-m", "gitnetdiag.commands.native", "ssh", "--url", state.endpoints.ssh,
            "--key", state.ssh_key, "--known-hosts", state.ssh_known_hosts,
            "--size-bytes", "1500000", "--no-series",
        ],
        capture_output=True, text=True, timeout=300, cwd=root,
    )  # fmt: skip
    result = json.loads(proc.stdout.splitlines()[-1])
    assert "error" not in result, result
    assert result["server_window_bytes"] > 0
    assert result["server_max_packet_bytes"] > 0
    assert result["server_banner"].startswith("SSH-2.0-")
    assert result["window_adjusts"] > 0
    assert result["channel"]["bytes_sent"] == result["request_bytes"]
    assert result["report"]["unpack_ok"] is True
    assert result["ref_deleted"] is True
    assert ls_remote() == before
