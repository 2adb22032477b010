"""Issue 43 item 3: a bare capture taken at the server of a clone shows the sender's view.
Its bytes in flight held flat at a level below the client's window (a clamped send buffer)
rank ``server-send-buffer`` first over git://, plain HTTP, TLS and SSH, saying what the
capture cannot show; a healthy clone captured there (slow start up to a large window) stays
healthy; a flight held at the client's own window is that window's, not the buffer's.

The captures are crafted here (:mod:`tests.pipeline.bulkwire`, scapy): 50 ms RTT, the
receiver acknowledging every second segment as it arrives."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gitnetdiag.analysis.capture_analysis import analyze_capture
from gitnetdiag.analysis.plateau import flight_plateau
from gitnetdiag.diagnosis.culprits.sendbuffer import server_send_buffer
from gitnetdiag.pipeline import diagnose_capture, observations_from_capture
from tests.diagnosis.transfer_cases import on
from tests.pipeline.bulkwire import bulk_frames
from tests.pipeline.test_capture_flow import CASES, _write

SEND_BUFFER = "server-send-buffer"
SERVER_CASES = {**CASES, "SSH": (b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", 22, "bytes each way")}
"""Each transport as the capture tells it: the request line (git://, plain HTTP), the
ClientHello or the SSH banner (the direction from the bytes each way)."""
BUFFER = 65536
"""What the sender keeps in flight per round trip: a 64 KiB ``tcp_wmem`` maximum."""
WINDOW = 1 << 20
"""The window the client advertises all through: 16 times that."""
SIZE = 2_000_000
"""31 round trips at 64 KiB: 1.5 s held at the plateau, past the 1 s the rule asks."""


def _clamped(tmp_path: Path, case: str, **options: int) -> Path:
    request, port, _ = SERVER_CASES[case]
    return _write(tmp_path / "server.pcap", bulk_frames(
        at="server", sender="s", request=request, size_bytes=options.pop("size", SIZE),
        server_port=port, window_bytes=options.pop("window", WINDOW),
        flight_bytes=options.pop("flight", BUFFER)))


@pytest.mark.parametrize("case", list(SERVER_CASES))
def test_a_flat_flight_below_the_window_is_the_send_buffer(case: str, tmp_path: Path) -> None:
    pcap = _clamped(tmp_path, case)
    diagnosis, warnings = diagnose_capture(pcap)
    assert diagnosis.direction == "fetch" and diagnosis.verdict != "healthy"
    assert [f.id for f in diagnosis.findings][:1] == [SEND_BUFFER]
    assert "captured at the server" in diagnosis.environment.measured_by
    assert SERVER_CASES[case][2] in diagnosis.environment.measured_by
    top = diagnosis.findings[0]
    # The sender's own flight against the client's window, and the queue-free round trips.
    level = next(e for e in top.evidence if "level they held" in e.what)
    assert level.unit == "B" and BUFFER <= (level.value or 0) <= 1.1 * BUFFER
    assert level.threshold == pytest.approx(WINDOW / 2)
    assert any("data-to-ACK RTT" in e.what and e.unit == "s" for e in top.evidence)
    # What a capture cannot show is said: the buffer's setting, and a look-alike.
    assert "Not in a capture" in top.summary and "net.ipv4.tcp_wmem" in top.summary
    assert "would look the same" in top.summary
    assert "net.ipv4.tcp_wmem" in top.fix
    assert any("cannot show trace2 phases" in w for w in warnings)


@pytest.fixture(scope="module")
def git_clamped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The git:// clone through a 64 KiB buffer, captured at the server (crafted once)."""
    return _clamped(tmp_path_factory.mktemp("sndbuf"), "git://")


def test_the_plateau_is_read_from_the_servers_direction(git_clamped: Path) -> None:
    """The series swap with the ends: a clone's client-first connection, read from the
    server, gives the server's flight (before, its median read the client's requests and
    ACKs: 38 B in flight on the lab's clamped 6 MB clone)."""
    observations, _ = observations_from_capture(git_clamped)
    (clone,) = observations.transfers
    assert clone.capture is not None and clone.capture.plateau is not None
    assert clone.capture.bytes_in_flight_median == pytest.approx(BUFFER, rel=0.1)
    plateau = clone.capture.plateau
    assert plateau.window_bytes == WINDOW and plateau.held_share >= 0.9
    assert plateau.held_s >= 1.0 and plateau.growth == pytest.approx(1.0, abs=0.1)
    # The observations round-trip through JSON with the plateau (run directories, replay).
    again = type(observations).from_dict(json.loads(json.dumps(observations.to_dict())))
    assert again.transfers[0].capture is not None
    assert again.transfers[0].capture.plateau == plateau


def test_a_healthy_clone_captured_at_the_server_stays_healthy(tmp_path: Path) -> None:
    """Slow start from ten segments up to a 512 KiB window: the flight grows each round
    trip and holds no level for long."""
    request, port, _ = SERVER_CASES["TLS"]
    pcap = _write(tmp_path / "server.pcap", bulk_frames(
        at="server", sender="s", request=request, size_bytes=SIZE, server_port=port,
        window_bytes=512 * 1024, slow_start=True))
    diagnosis, _ = diagnose_capture(pcap)
    assert diagnosis.verdict == "healthy", [(f.id, f.score) for f in diagnosis.findings]
    assert "captured at the server" in diagnosis.environment.measured_by
    observations, _ = observations_from_capture(pcap)
    plateau = observations.transfers[0].capture.plateau  # type: ignore[union-attr]
    assert plateau is not None and plateau.held_s < 1.0 and plateau.growth > 1.5


def test_a_flight_at_the_clients_window_is_not_the_send_buffer(tmp_path: Path) -> None:
    """The sender's flight at the window itself (the client's clamp): the capture at the
    sender clears the send buffer."""
    pcap = _clamped(tmp_path, "git://", window=65536)
    observations, _ = observations_from_capture(pcap)
    assert server_send_buffer(observations) is None
    diagnosis, _ = diagnose_capture(pcap)
    assert [f.id for f in diagnosis.findings][:1] == ["client-tcp-receive-window-clamp"]


def test_the_capture_rule_needs_a_long_plateau_and_no_queue(git_clamped: Path) -> None:
    observations, _ = observations_from_capture(git_clamped)
    (clone,) = observations.transfers
    assert clone.capture is not None and clone.capture.plateau is not None
    assert server_send_buffer(on([clone])) is not None
    short = replace(clone.capture.plateau, held_s=0.6)
    assert server_send_buffer(on([replace(clone, capture=replace(
        clone.capture, plateau=short))])) is None
    now_and_then = replace(clone.capture.plateau, held_share=0.3)
    assert server_send_buffer(on([replace(clone, capture=replace(
        clone.capture, plateau=now_and_then))])) is None
    queued = replace(clone.capture, median_rtt_s=0.2)  # a bottleneck's queue, 4x the minimum
    assert server_send_buffer(on([replace(clone, capture=queued)])) is None
    growing = replace(clone.capture.plateau, growth=2.3)  # a congestion window opening
    assert server_send_buffer(on([replace(clone, capture=replace(
        clone.capture, plateau=growing))])) is None
    # A server that trickled progress for 25 s before its pack (a CPU-starved upload-pack):
    # its flight as flat, the bulk a small share of the time it sent data.
    producing = replace(clone, measured_s=clone.measured_s + 25.0)
    assert server_send_buffer(on([producing])) is None
    large = replace(clone.capture.plateau, flight_bytes=400_000.0)  # more than a clamp keeps
    assert server_send_buffer(on([replace(clone, capture=replace(
        clone.capture, plateau=large))])) is None


def test_flight_plateau_of_each_direction(git_clamped: Path) -> None:
    analysis = analyze_capture(git_clamped)
    (conn,) = analysis.connections
    server = flight_plateau(conn.series, 1)  # the responder sends the pack
    assert server is not None and server.flight_bytes == pytest.approx(BUFFER, rel=0.1)
    assert server.window_bytes == WINDOW
    client = flight_plateau(conn.series, 0)  # one request: no bulk held at any level
    assert client is None or client.held_s < 1.0
