"""Reading in a forked child: same results as one process, and no child left behind."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.layers.inet import IP, TCP
from scapy.packet import Raw

from gitnetdiag.analysis.capture_analysis import analyze_capture
from gitnetdiag.capture import CaptureReader, read_capture
from gitnetdiag.capture import reader as reader_module
from gitnetdiag.capture.reader import PARALLEL_ENV, PARALLEL_MIN_BYTES, use_parallel
from gitnetdiag.errors import CaptureFormatError, EnvironmentProblem, ExitCode
from tests.capture.craft import (
    ETH_HEADER,
    Conversation,
    Interface,
    PcapngSection,
    pcap_bytes,
    pcapng_bytes,
    write,
)

ROOT = Path(__file__).resolve().parents[2]
RECORDED = sorted(p for p in (ROOT / "captures").glob("*/*.pcap*") if p.is_file())


def _both(path: Path, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    one = analyze_capture(path, parallel=False, **kwargs).to_dict()
    forked = analyze_capture(path, parallel=True, **kwargs).to_dict()
    return one, forked


def test_recorded_captures_are_there() -> None:
    assert len(RECORDED) >= 20


@pytest.mark.parametrize("path", RECORDED, ids=[f"{p.parent.name}/{p.name}" for p in RECORDED])
def test_recorded_captures_same_result_forked(path: Path) -> None:
    """Every recorded capture: identical to_dict(), in one chunk and in many."""
    one, forked = _both(path)
    assert forked == one
    assert one["tcp_segments"] > 0
    one, forked = _both(path, chunk_bytes=64 * 1024)
    assert forked == one


def _crafted(tmp_path: Path) -> dict[str, Path]:
    """Several connections (one 4-tuple reused), IPv6, pcapng with two interfaces."""
    out: dict[str, Path] = {}
    frames: list[tuple[int, bytes]] = []
    for port in (40000, 40001, 40000):
        conv = Conversation(client=("10.0.0.1", port), t_ns=1_700_000_000_000_000_000 +
                            len(frames) * 10_000_000)
        conv.handshake()
        for i in range(60):
            conv.segment("c", "PA", dt_s=0.001, payload=500 + i)
            if i % 3 == 2:
                conv.segment("s", "A", dt_s=0.0005, win=20 + i)
        conv.segment("c", "FA", dt_s=0.01)
        conv.segment("s", "FA", dt_s=0.01)
        frames += conv.frames
    out["multi"] = write(tmp_path / "multi.pcap", pcap_bytes(frames, snaplen=96))
    v6 = Conversation(ipv6=True, client=("2001:db8::1", 50000), server=("2001:db8::2", 22))
    v6.handshake()
    for i in range(40):
        v6.segment("c", "PA", dt_s=0.002, payload=1000)
        v6.segment("s", "A", dt_s=0.001, win=0 if i == 20 else 500)
    out["v6"] = v6.pcap(tmp_path / "v6.pcap", nano=True, big=True)
    sec = PcapngSection(interfaces=[Interface(1, 9), Interface(1, None)],
                        packets=[(i % 2, t, f, "epb") for i, (t, f) in enumerate(frames)])
    out["ng"] = write(tmp_path / "two.pcapng", pcapng_bytes([sec]))
    data = (tmp_path / "multi.pcap").read_bytes()
    out["cut"] = write(tmp_path / "cut.pcap", data[: len(data) * 2 // 3])
    bad = bytearray(data)
    rec = 24
    for _ in range(100):  # the 101st record claims an impossible length
        rec += 16 + struct.unpack_from("<I", bad, rec + 8)[0]
    bad[rec + 8 : rec + 12] = struct.pack("<I", 0x7FFFFFFF)
    out["bad-length"] = write(tmp_path / "bad.pcap", bytes(bad))
    ng = bytearray((tmp_path / "two.pcapng").read_bytes())
    ng[-4:] = struct.pack("<I", 12)
    out["ng-trailer"] = write(tmp_path / "bad.pcapng", bytes(ng))
    return out


@pytest.mark.parametrize("chunk_bytes", [300, 4096, 1 << 20])
def test_crafted_captures_same_result_forked(tmp_path: Path, chunk_bytes: int) -> None:
    files = _crafted(tmp_path)
    for name, path in files.items():
        one, forked = _both(path, chunk_bytes=chunk_bytes)
        assert forked == one, name
    damaged = _both(files["cut"], chunk_bytes=chunk_bytes)[1]
    assert damaged["truncated_at"] is not None and damaged["tcp_segments"] > 0
    assert any("packet record" in w for w in damaged["warnings"])
    assert _both(files["bad-length"], chunk_bytes=chunk_bytes)[1]["tcp_segments"] == 100
    assert len(_both(files["multi"], chunk_bytes=chunk_bytes)[1]["connections"]) == 3


def _error_fields(exc: CaptureFormatError) -> tuple[object, ...]:
    return (type(exc), str(exc), exc.message, exc.hint, exc.reference, exc.offset,
            exc.packets_read)


def test_strict_damage_is_the_same_error(tmp_path: Path) -> None:
    files = _crafted(tmp_path)
    for name in ("cut", "bad-length", "ng-trailer"):
        errors = []
        for parallel in (False, True):
            with pytest.raises(CaptureFormatError) as info:
                read_capture(files[name], chunk_bytes=500, strict=True, parallel=parallel)
            errors.append(_error_fields(info.value))
        assert errors[0] == errors[1], name
        assert errors[1][-1] > 0  # packets before the damage were read


def _small_valid() -> list[bytes]:
    conv = Conversation()
    conv.handshake()
    for i in range(8):
        conv.segment("c", "PA", dt_s=0.001, payload=40 * i)
        conv.segment("s", "A", dt_s=0.001, options=[("SAck", (1, 2))])
    ng = PcapngSection(interfaces=[Interface(1, 9)],
                       packets=[(0, t, f, "epb") for t, f in conv.frames])
    return [pcap_bytes(conv.frames), pcapng_bytes([ng])]


VALID = _small_valid()


def _outcome(path: Path, parallel: bool) -> tuple[object, ...]:
    try:
        r = read_capture(path, chunk_bytes=200, parallel=parallel)
    except CaptureFormatError as exc:
        return ("error", *_error_fields(exc))
    damage = None if r.damage is None else _error_fields(r.damage)
    return ("read", r.packets.tobytes(), tuple(r.connections), r.stats, damage)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, len(VALID) - 1),
       flips=st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 255)), max_size=6),
       cut=st.integers(0, 5000))
def test_damaged_files_same_outcome_forked(
    tmp_path: Path, which: int, flips: list[tuple[int, int]], cut: int
) -> None:
    data = bytearray(VALID[which])
    for pos, value in flips:
        data[pos % len(data)] = value
    path = write(tmp_path / "f.cap", bytes(data[: max(cut, 24)]))
    assert _outcome(path, True) == _outcome(path, False)


# -- the child process -----------------------------------------------------


def bulk_pcap(path: Path, records: int) -> Path:
    """A pcap of ``records`` copies of one data segment (times increasing), written fast."""
    frame = ETH_HEADER + bytes(IP(src="192.0.2.1", dst="192.0.2.2") /
                               TCP(sport=1111, dport=443, flags="PA", seq=1, ack=1) /
                               Raw(b"x" * 40))
    rec = np.frombuffer(struct.pack("<IIII", 0, 0, len(frame), len(frame)) + frame,
                        dtype=np.uint8)
    table = np.tile(rec, (records, 1))
    idx = np.arange(records, dtype=np.uint32)
    table[:, 0:4] = (1_700_000_000 + idx // 100_000).astype("<u4").view(np.uint8).reshape(-1, 4)
    table[:, 4:8] = ((idx % 100_000) * 10).astype("<u4").view(np.uint8).reshape(-1, 4)
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        out.write(table.tobytes())
    return path


def _gone(pid: int, wait_s: float = 3.0) -> bool:
    """The process no longer exists (reaped, not a zombie)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists():
            return True
        time.sleep(0.01)
    return False


def test_leaving_the_loop_early_stops_the_child(tmp_path: Path) -> None:
    path = bulk_pcap(tmp_path / "b.pcap", 100_000)
    reader = CaptureReader(path, chunk_bytes=64 * 1024, parallel=True)
    chunks = reader.chunks()
    assert len(next(chunks)) > 0
    pid = reader.child_pid
    assert pid is not None and Path(f"/proc/{pid}").exists()
    chunks.close()
    assert reader.child_pid is None
    assert _gone(pid)
    reader.close()


def test_interrupt_in_the_consumer_stops_the_child(tmp_path: Path) -> None:
    path = bulk_pcap(tmp_path / "b.pcap", 100_000)
    pid = None
    with pytest.raises(KeyboardInterrupt), CaptureReader(
        path, chunk_bytes=64 * 1024, parallel=True
    ) as reader:
        for _ in reader.chunks():
            pid = reader.child_pid
            raise KeyboardInterrupt
    assert pid is not None and _gone(pid)
    assert reader.child_pid is None


def test_child_killed_is_an_environment_problem(tmp_path: Path) -> None:
    """More tables than the pipe holds: the child is still writing when it dies."""
    path = bulk_pcap(tmp_path / "b.pcap", 100_000)
    with CaptureReader(path, chunk_bytes=64 * 1024, parallel=True) as reader:
        chunks = reader.chunks()
        next(chunks)
        pid = reader.child_pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(EnvironmentProblem, match="killed by signal 9"):
            for _ in chunks:
                pass
        assert reader.child_pid is None
    assert _gone(pid)


def test_unexpected_child_failure_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in the child comes back as an error with its traceback, not as a hang."""
    path = write(tmp_path / "x.pcap", VALID[0])

    def broken(*_args: object) -> None:
        raise ValueError("decoder exploded")

    monkeypatch.setattr(reader_module, "decode_tcp", broken)
    with pytest.raises(ValueError, match="decoder exploded"):
        read_capture(path, parallel=False)
    with pytest.raises(RuntimeError, match=r"(?s)capture reader process failed.*decoder exploded"):
        read_capture(path, parallel=True)


def test_ctrl_c_on_the_command_leaves_no_child(tmp_path: Path) -> None:
    """SIGINT to the whole process group (what a terminal does) while the child reads."""
    # Big enough that the analysis outlasts a test descheduled between seeing the child
    # and sending the signal (400,000 packets take only ~0.25 s with the faster reader).
    path = bulk_pcap(tmp_path / "big.pcap", 2_000_000)
    env = {**os.environ, PARALLEL_ENV: "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitnetdiag", "analyze", str(path), "--json", "-"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
        # A terminal's process gets SIGINT at its default; an xdist worker may have it
        # ignored, and a child inherits that (seen twice in fresh-clone suites: exit 0).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    child = None
    deadline = time.monotonic() + 30
    while child is None and time.monotonic() < deadline and proc.poll() is None:
        try:
            found = children.read_text().split()
        except OSError:
            found = []
        if found:
            child = int(found[0])
        else:
            time.sleep(0.002)
    assert child is not None, "the forked reader was never seen"
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == ExitCode.INTERRUPTED, err
    assert _gone(child)


def test_when_the_child_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PARALLEL_ENV, raising=False)
    cpus = len(os.sched_getaffinity(0))
    assert use_parallel(PARALLEL_MIN_BYTES + 1) is (cpus > 1)
    assert use_parallel(PARALLEL_MIN_BYTES) is False
    assert use_parallel(1000, parallel=True) is True
    assert use_parallel(PARALLEL_MIN_BYTES * 4, parallel=False) is False
    monkeypatch.setenv(PARALLEL_ENV, "0")
    assert use_parallel(PARALLEL_MIN_BYTES * 4) is False
    monkeypatch.setenv(PARALLEL_ENV, "1")
    assert use_parallel(1000) is True
    assert use_parallel(1000, parallel=False) is False
