"""Property tests: whatever the bytes, the reader returns packets or raises CaptureFormatError;
whatever the order and timestamps of the records, the analysis runs in bounded memory."""

from __future__ import annotations

import gzip
import tempfile
import tracemalloc
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from gitnetdiag.analysis.capture_analysis import analyze_capture
from gitnetdiag.analysis.tcp_state import MAX_SERIES_BINS
from gitnetdiag.capture import read_capture
from gitnetdiag.errors import CaptureFormatError
from tests.capture.craft import Conversation, Interface, PcapngSection, pcap_bytes, pcapng_bytes


def _valid_files() -> list[bytes]:
    conv = Conversation()
    conv.handshake()
    for i in range(6):
        conv.segment("c", "PA", dt_s=0.001, payload=50 * i,
                     options=[("NOP", None), ("NOP", None), ("Timestamp", (i, i))])
        conv.segment("s", "A", dt_s=0.001, options=[("SAck", (1, 2, 3, 4))])
    ng = PcapngSection(interfaces=[Interface(1, 9), Interface(1, None)],
                       packets=[(i % 2, conv.frames[i][0], conv.frames[i][1], "epb")
                                for i in range(len(conv.frames))])
    return [pcap_bytes(conv.frames), pcap_bytes(conv.frames, nano=True, big=True, snaplen=80),
            pcapng_bytes([ng])]


VALID = _valid_files()


def _read(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.cap"
        path.write_bytes(data)
        try:
            result = read_capture(path, chunk_bytes=256)
        except CaptureFormatError as exc:
            assert exc.offset is None or 0 <= exc.offset <= len(data)
            return
        assert len(result.packets) <= len(data) // 16
        if result.damage is not None:
            assert result.damage.offset is not None and 0 <= result.damage.offset <= len(data)


@settings(max_examples=150, deadline=None)
@given(which=st.integers(0, len(VALID) - 1), cut=st.integers(0, 4000))
def test_truncated_files(which: int, cut: int) -> None:
    data = VALID[which]
    _read(data[: min(cut, len(data))])


@settings(max_examples=150, deadline=None)
@given(which=st.integers(0, len(VALID) - 1),
       flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=8))
# Found by this test: a pcapng timestamp resolution of 10**-28 s overflowed the divisor.
@example(which=2, flips=[(48, 28)])
def test_corrupted_files(which: int, flips: list[tuple[int, int]]) -> None:
    data = bytearray(VALID[which])
    for pos, value in flips:
        data[pos % len(data)] = value
    _read(bytes(data))


@settings(max_examples=100, deadline=None)
@given(prefix=st.sampled_from([b"", b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1", b"\x0a\x0d\x0d\x0a",
                               b"\xa1\xb2\xc3\xd4"]),
       body=st.binary(max_size=600))
def test_random_bytes(prefix: bytes, body: bytes) -> None:
    _read(prefix + body)


# -- reordered records and timestamps that jump (issue 16) ------------------

_MAX_TS_NS = (2**32 - 1) * 1_000_000_000


def _busy_conversation() -> list[tuple[int, bytes]]:
    """Data both ways, a loss, a zero window with probes, a reset: every analysis path."""
    conv = Conversation()
    conv.handshake()
    for i in range(5):
        conv.segment("c", "PA", dt_s=0.001, payload=400)
        conv.segment("s", "PA", dt_s=0.01, payload=100 * i, win=0 if i == 3 else 800)
    conv.segment("c", "A", dt_s=0.2, seq=conv.nxt["c"], payload=1)
    conv.segment("c", "PA", dt_s=0.3, seq=conv.nxt["c"] - 400, payload=400)
    conv.segment("s", "A", dt_s=0.01, options=[("SAck", (1, 2))])
    conv.segment("s", "R", dt_s=0.01)
    return conv.frames


FRAMES = _busy_conversation()


def _analyse_bounded(data: bytes, *, compress: bool) -> None:
    """analyze_capture: the error tree or a result, and a small peak of traced memory."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("f.pcap.gz" if compress else "f.pcap")
        path.write_bytes(gzip.compress(data, compresslevel=1) if compress else data)
        tracemalloc.start()
        try:
            result = analyze_capture(path, chunk_bytes=512)
        except CaptureFormatError:
            return
        finally:
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        assert peak < 64 * 1024 * 1024
        for c in result.connections:
            assert c.duration_s >= 0
            assert all(len(s) <= MAX_SERIES_BINS for s in c.series.sent_bytes)
            for side in (c.a_to_b, c.b_to_a):
                assert side.zero_window_s >= 0
                assert min(side.limits.rwnd_s, side.limits.cwnd_s, side.limits.loss_s,
                           side.limits.self_s) >= 0


@settings(max_examples=60, deadline=None)
# Stamps strewn across the epoch: two bridged "clock steps" of 3.76e18 ns ran past int64
# into a negative connection duration (found by this test).
@example(order=list(range(len(FRAMES))),
         stamps=[(0, 3_761_686_018_124_838_000), (1, 0), (3, 3_761_686_018_124_838_000),
                 (4, 0)], cut=None, compress=False, ng=False)
@given(order=st.permutations(range(len(FRAMES))),
       stamps=st.lists(st.tuples(st.integers(0, len(FRAMES) - 1),
                                 st.one_of(st.integers(0, _MAX_TS_NS),
                                           st.sampled_from([0, _MAX_TS_NS]))),
                       max_size=6),
       cut=st.one_of(st.none(), st.integers(24, 4000)),
       compress=st.booleans(), ng=st.booleans())
def test_reordered_and_restamped_captures(order: list[int], stamps: list[tuple[int, int]],
                                          cut: int | None, compress: bool, ng: bool) -> None:
    """Records in any order, any of them stamped anywhere in the 32-bit epoch, maybe cut
    short and gzipped, pcap or pcapng: an analysis (or the error tree), in bounded memory."""
    frames = [FRAMES[i] for i in order]
    for index, ts in stamps:
        frames[index] = (ts, frames[index][1])
    if ng:
        section = PcapngSection(interfaces=[Interface(1, 9)],
                                packets=[(0, ts, frame, "epb") for ts, frame in frames])
        data = pcapng_bytes([section])
    else:
        data = pcap_bytes(frames)
    _analyse_bounded(data if cut is None else data[:cut], compress=compress)


@settings(max_examples=40, deadline=None)
@given(flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=8))
def test_corrupted_compressed_files(flips: list[tuple[int, int]]) -> None:
    """Bytes flipped inside the gzip stream itself (not the capture it holds)."""
    data = bytearray(gzip.compress(VALID[0], compresslevel=1))
    for pos, value in flips:
        data[pos % len(data)] = value
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.pcap.gz"
        path.write_bytes(bytes(data))
        try:
            result = read_capture(path, chunk_bytes=256)
        except CaptureFormatError:
            return
        assert len(result.packets) <= len(VALID[0]) // 16
