"""Property tests: whatever the bytes, the reader returns packets or raises CaptureFormatError."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

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
