"""Issue 36 item 3: a bare capture of a clone, from the client or the server side, is
diagnosed as a download (the direction from the request, else from the bytes each way),
its receive-window clamp ranked first, and what a capture cannot show is said."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitnetdiag.pipeline import diagnose_capture, observations_from_capture
from gitnetdiag.report.terminal import render_terminal
from tests.capture.craft import pcap_bytes
from tests.capture.test_sniff import client_hello
from tests.pipeline.bulkwire import bulk_frames

CLAMP = "client-tcp-receive-window-clamp"
UPLOAD_PACK = b"0032git-upload-pack /lab.git\0host=example\0"
RECEIVE_PACK = b"0033git-receive-pack /lab.git\0host=example\0"
HTTP_UPLOAD_PACK = b"POST /lab.git/git-upload-pack HTTP/1.1\r\nHost: example\r\n\r\n"
SIZE = 2_000_000
"""Big enough for the clamp to matter: 600 kB at 32 KiB a round trip lose 0.63 s to it (an
unclamped clone still slow-starts), under the 0.5 s of impact (cost x confidence) a finding
needs."""

CASES = {
    # request, server port, how the direction is told
    "git://": (UPLOAD_PACK, 9418, "the request names git-upload-pack"),
    "plain HTTP": (HTTP_UPLOAD_PACK, 8080, "the request names git-upload-pack"),
    "TLS": (client_hello("git.example.com", ["h2", "http/1.1"]), 443, "bytes each way"),
}


def _write(path: Path, *connections: list[tuple[int, bytes]]) -> Path:
    frames = sorted((f for c in connections for f in c), key=lambda f: f[0])
    path.write_bytes(pcap_bytes(frames))
    return path


@pytest.mark.parametrize("at", ["client", "server"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_clone_is_a_download_with_its_window_clamp_first(case: str, at: str,
                                                            tmp_path: Path) -> None:
    request, port, told = CASES[case]
    pcap = _write(tmp_path / "clone.pcap", bulk_frames(
        at=at, sender="s", request=request, size_bytes=SIZE, server_port=port))
    diagnosis, warnings = diagnose_capture(pcap)
    assert diagnosis.direction == "fetch"
    assert [f.id for f in diagnosis.findings][:1] == [CLAMP]
    measured_by = diagnosis.environment.measured_by
    assert told in measured_by and f"captured at the {at}" in measured_by
    # What a capture cannot show is said, in the report and on the terminal.
    assert "not in a capture: trace2 phases" in measured_by
    assert any("cannot show trace2 phases" in w for w in warnings)
    text = render_terminal(diagnosis, color=False)
    assert "clones ok/failed" in text and "pushes ok/failed" not in text


def test_the_clone_is_measured_from_the_servers_bytes(tmp_path: Path) -> None:
    pcap = _write(tmp_path / "clone.pcap", bulk_frames(
        at="client", sender="s", request=UPLOAD_PACK, size_bytes=SIZE))
    observations, _ = observations_from_capture(pcap)
    assert observations.run.transfer == "download"
    (clone,) = observations.transfers
    assert clone.moved_bytes == SIZE and clone.outcome == "ok"
    assert clone.tcp is not None and clone.tcp.advertised_window_max_bytes == 32768
    assert clone.path_rtt_s == pytest.approx(0.05, rel=0.01)
    # Never in a capture: the client's buffer and tcp_rmem, and trace2's phases.
    assert clone.tcp.receive_buffer_max_bytes is None and clone.client_rmem_max_bytes is None
    assert clone.phases.server_pack_generation_s is None


def test_a_push_named_by_its_request_stays_a_push(tmp_path: Path) -> None:
    pcap = _write(tmp_path / "push.pcap", bulk_frames(
        at="client", sender="c", request=RECEIVE_PACK, size_bytes=SIZE))
    diagnosis, _ = diagnose_capture(pcap)
    assert diagnosis.direction == "push"
    assert "clone" not in diagnosis.environment.measured_by


@pytest.mark.parametrize(("clone_bytes", "push_bytes", "diagnosed"),
                         [(SIZE, SIZE // 3, "fetch"), (SIZE // 3, SIZE, "push")])
def test_a_push_beside_a_clone_is_said_and_the_bigger_is_diagnosed(
        clone_bytes: int, push_bytes: int, diagnosed: str, tmp_path: Path) -> None:
    pcap = _write(
        tmp_path / "both.pcap",
        bulk_frames(at="client", sender="s", request=UPLOAD_PACK, size_bytes=clone_bytes),
        bulk_frames(at="client", sender="c", request=RECEIVE_PACK, size_bytes=push_bytes,
                    client_port=41001, t0_s=1.2))
    diagnosis, warnings = diagnose_capture(pcap)
    assert diagnosis.direction == diagnosed
    measured_by = diagnosis.environment.measured_by
    if diagnosed == "fetch":
        # The push's bytes up: its pack and its request line.
        assert f"a push too ({push_bytes + len(RECEIVE_PACK)} B up), not diagnosed" \
            in measured_by
        assert any("holds a push" in w for w in warnings)
    else:
        assert f"a clone too ({clone_bytes} B down), not diagnosed" in measured_by
