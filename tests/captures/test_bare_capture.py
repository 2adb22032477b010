"""Issue 16: the recorded lab captures diagnosed as bare files (no run directory)."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gitnetdiag.cli import app
from gitnetdiag.pipeline import diagnose_capture, observations_from_capture

ROOT = Path(__file__).resolve().parents[2] / "captures"

CASES = [
    ("h2-small-window/h2-1.pcap", "h2-flow-control-window"),
    ("tcp-rmem-clamp/h1-1.pcap", "tcp-receive-window-clamp"),
    ("tcp-rmem-clamp/h2-1.pcap", "tcp-receive-window-clamp"),
    ("loss/h1-1.pcap", "packet-loss"),
    ("loss/h2-1.pcap", "packet-loss"),
    ("loss/ssh-1.pcap", "packet-loss"),
    ("firewall-reset/ssh-1.pcap", "firewall-reset"),
]


@pytest.mark.parametrize(("capture", "culprit"), CASES)
def test_first_culprit_of_a_bare_capture(capture: str, culprit: str) -> None:
    diagnosis, _ = diagnose_capture(ROOT / capture)
    # A transfer cut by the reset failed: the run fails, explained (issue 33).
    assert diagnosis.verdict == ("failed" if culprit == "firewall-reset" else "degraded")
    assert diagnosis.findings[0].id == culprit


@pytest.mark.parametrize("capture", ["healthy/h1-1.pcap", "healthy/h2-1.pcap",
                                     "healthy/ssh-1.pcap"])
def test_healthy_captures_stay_healthy(capture: str) -> None:
    diagnosis, _ = diagnose_capture(ROOT / capture)
    assert diagnosis.verdict == "healthy"


def _from_first_server_packet(src: Path, dst: Path, server_port: int) -> None:
    """A capture started mid-push, as on a server that began tcpdump late: every
    record before the server's first data segment dropped (no SYN, the server first)."""
    data = src.read_bytes()
    out, off, started = bytearray(data[:24]), 24, False
    linktype = struct.unpack_from("<I", data, 20)[0]
    l2 = {1: 14, 113: 16, 276: 20}[linktype]
    while off + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, off + 8)[0]
        frame = data[off + 16: off + 16 + caplen]
        ihl = (frame[l2] & 0x0F) * 4
        sport = struct.unpack_from(">H", frame, l2 + ihl)[0]
        total = struct.unpack_from(">H", frame, l2 + 2)[0]
        doff = (frame[l2 + ihl + 12] >> 4) * 4
        if not started and sport == server_port and total - ihl - doff > 0:
            started = True
        if started:
            out += data[off: off + 16 + caplen]
        off += 16 + caplen
    dst.write_bytes(bytes(out))


def test_capture_begun_after_the_syn_takes_the_inbound_direction(tmp_path: Path) -> None:
    """The server spoke first in the file: the upload is still client -> server."""
    cut = tmp_path / "server-late.pcap"
    _from_first_server_packet(ROOT / "loss/ssh-1.pcap", cut, 22)
    observations, _ = observations_from_capture(cut)
    ssh = observations.protocols["ssh"]
    assert ssh.capture is not None and "48002->22" in ssh.capture.source
    assert ssh.pushes[0].bytes > 3_000_000  # the upload, not the server's replies
    assert ssh.capture.advertised_window_max_bytes is None  # scale unknown: not used
    diagnosis, _ = diagnose_capture(cut)
    assert diagnosis.findings[0].id == "packet-loss"


def test_nothing_git_like_is_never_healthy(tmp_path: Path) -> None:
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    diagnosis, _ = diagnose_capture(empty)
    assert diagnosis.verdict != "healthy"
    result = CliRunner().invoke(app, ["analyze", str(empty), "--diagnose"])
    assert result.exit_code != 0


def test_cli_analyze_file_diagnose() -> None:
    result = CliRunner().invoke(app, ["analyze", str(ROOT / "h2-small-window/h2-1.pcap"),
                                      "--diagnose"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "verdict: DEGRADED"
    assert lines[1].startswith("h2-flow-control-window costs an estimated")


SERVER_SIDE = Path(__file__).resolve().parent / "data"


SERVER_SIDE_CASES = [
    ("server-side-tcp-rmem-clamp-h1.pcap", "tcp-receive-window-clamp"),
    ("server-side-h2-small-window.pcap", "h2-flow-control-window"),
    ("server-side-loss-ssh.pcap.gz", "packet-loss"),
    ("server-side-firewall-reset-ssh.pcap.gz", "firewall-reset"),
]


@pytest.mark.parametrize(("capture", "culprit"), SERVER_SIDE_CASES)
def test_server_side_capture(capture: str, culprit: str) -> None:
    """Recorded in the lab's server namespace (tcpdump -i any -s 128, see
    tests/captures/twosides.py) during a push: the upload is the inbound direction, and
    what the client had in flight is estimated from the arrival rate x the handshake RTT.
    The loss and reset files are gzip-compressed, as captures are often mailed."""
    observations, _ = observations_from_capture(SERVER_SIDE / capture)
    (proto,) = observations.protocols.values()
    assert proto.capture is not None and "server side" in proto.capture.source
    diagnosis, _ = diagnose_capture(SERVER_SIDE / capture)
    assert diagnosis.verdict == ("failed" if culprit == "firewall-reset" else "degraded")
    assert diagnosis.findings[0].id == culprit


@pytest.mark.parametrize(("capture", "culprit"), SERVER_SIDE_CASES)
@pytest.mark.parametrize("command", [["analyze", "{}", "--diagnose"],
                                     ["diagnose", "--capture", "{}"]])
def test_server_side_capture_from_the_command_line(capture: str, culprit: str,
                                                   command: list[str], tmp_path: Path) -> None:
    """Both ways in a support engineer types it give the fault as the first culprit."""
    out = tmp_path / "diagnosis.json"
    argv = [a.format(SERVER_SIDE / capture) for a in command] + ["--json", str(out)]
    result = CliRunner().invoke(app, argv)
    if culprit == "firewall-reset":
        # The reset made the push fail: exit 9 (the error the CLI's entry point maps to
        # its exit code) and a headline that says what fails.
        assert getattr(result.exception, "exit_code", None) == 9, result.output
        assert result.stdout.splitlines()[0] == "verdict: FAILED"
        assert result.stdout.splitlines()[1].startswith("SSH pushes fail (firewall-reset): ")
    else:
        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines()[0] == "verdict: DEGRADED"
        assert result.stdout.splitlines()[1].startswith(f"{culprit} costs an estimated")
    assert json.loads(out.read_text())["culprits"][0]["id"] == culprit


def test_firewall_cut_mid_push_seen_from_both_sides() -> None:
    """The lab's ``firewall-reset --reset-after 1MiB``: the SSH push runs, then the router
    resets both ends. The server had been sending channel-window adjustments all along
    (data after the client's last segment), yet the push failed: the RST stranded
    upload bytes the server never acknowledged. Each side names who reset it first."""
    seen = {}
    for side in ("client", "server"):
        observations, _ = observations_from_capture(
            SERVER_SIDE / f"{side}-side-firewall-reset-ssh.pcap.gz")
        (push,) = observations.protocols["ssh"].pushes
        assert not push.ok and push.error_kind == "reset"
        assert push.bytes > 500_000  # the cut came mid-upload, not at the SYN
        seen[side] = push.error_message or ""
        diagnosis, _ = diagnose_capture(SERVER_SIDE / f"{side}-side-firewall-reset-ssh.pcap.gz")
        assert diagnosis.findings[0].id == "firewall-reset"
    assert "reset by the server side" in seen["client"]
    assert "reset by the client side" in seen["server"]
    assert all("of the upload unacknowledged" in m for m in seen.values())


def test_cli_diagnose_capture(tmp_path: Path) -> None:
    out = tmp_path / "diagnosis.json"
    result = CliRunner().invoke(app, ["diagnose", "--capture",
                                      str(SERVER_SIDE / "server-side-tcp-rmem-clamp-h1.pcap"),
                                      "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "verdict: DEGRADED"
    assert '"tcp-receive-window-clamp"' in out.read_text()


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_secrets_in_the_pcapng_add_the_http2_ledger() -> None:
    """ALPN h2 seen on a random port; the DSB secrets decrypt the HTTP/2 ledger."""
    from gitnetdiag.tools import tshark

    path = Path(__file__).resolve().parents[1] / "analysis/data/h2_small_window_push.pcapng"
    observations, _ = observations_from_capture(
        path, h2_ledgers=tshark.h2_ledgers_from_capture(path, None))
    h2 = observations.protocols["h2"]
    assert h2.capture is not None and "ALPN h2" in h2.capture.source
    assert h2.h2_ledger is not None
    assert h2.h2_ledger.server_initial_window_bytes == 65535
    assert "(decrypted)" in h2.h2_ledger.source


def test_many_connections_are_read_as_a_burst() -> None:
    """The tiny-backlog burst of git:// clones: no push, but SYN drops across connections
    (the accept queue itself is only visible on the host: syn-drop, not the backlog)."""
    diagnosis, _ = diagnose_capture(ROOT / "tiny-backlog/burst-git.pcap")
    assert diagnosis.verdict == "degraded"
    assert diagnosis.findings[0].id == "syn-drop"


def test_server_think_time_from_a_bare_capture() -> None:
    diagnosis, _ = diagnose_capture(ROOT / "slow-hook/h2-1.pcap")
    assert diagnosis.findings[0].id == "server-processing"
