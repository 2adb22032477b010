"""The columns path of the reader and the analysis (issue 25): exactly the table's values.

``analyze_capture`` feeds :meth:`CaptureReader.column_chunks` to
:meth:`TcpAnalyzer.feed_columns`; everything else reads :meth:`CaptureReader.chunks`
and :meth:`TcpAnalyzer.feed`. Both must give the same values and the same analysis.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gitnetdiag.analysis.tcp import TcpAnalyzer
from gitnetdiag.capture import CaptureReader
from gitnetdiag.capture.reader import PACKET_DTYPE
from tests.capture.craft import Conversation, pcap_bytes, write

ROOT = Path(__file__).resolve().parents[2]
RECORDED = sorted(p for p in (ROOT / "captures").glob("*/*.pcap*") if p.is_file())


def _two_connections(tmp_path: Path) -> Path:
    frames = []
    for port in (40000, 40001):
        conv = Conversation(client=("10.0.0.1", port))
        conv.handshake()
        for i in range(50):
            conv.segment("c", "PA", dt_s=0.001, payload=700 + i)
            if i % 2:
                conv.segment("s", "A", dt_s=0.0005, win=0 if i == 25 else 300)
        conv.segment("c", "R", dt_s=0.01)
        frames += conv.frames
    frames.sort(key=lambda frame: frame[0])
    return write(tmp_path / "two.pcap", pcap_bytes(frames, snaplen=96))


def _compare(path: Path, *, parallel: bool, chunk_bytes: int) -> None:
    by_table, by_columns = TcpAnalyzer(), TcpAnalyzer()
    with CaptureReader(path, parallel=parallel, chunk_bytes=chunk_bytes) as reader:
        tables = list(reader.chunks())
        for table in tables:
            by_table.feed(table)
        expected = [c.to_dict() for c in by_table.results(reader.connections)]
    with CaptureReader(path, parallel=parallel, chunk_bytes=chunk_bytes) as reader:
        chunks = list(reader.column_chunks())
        for columns in chunks:
            before = {name: column.copy() for name, column in columns.items()}
            by_columns.feed_columns(columns)
            assert all(np.array_equal(before[k], columns[k]) for k in columns), "modified"
        got = [c.to_dict() for c in by_columns.results(reader.connections)]
    assert len(chunks) == len(tables)
    for table, columns in zip(tables, chunks, strict=True):
        assert set(columns) == set(PACKET_DTYPE.names or ())
        for name, column in columns.items():
            assert column.dtype == np.int64
            assert np.array_equal(column, table[name].astype(np.int64)), name
    assert got == expected
    assert got


@pytest.mark.parametrize("parallel", [False, True])
def test_columns_equal_the_table_on_crafted_connections(tmp_path: Path, parallel: bool) -> None:
    path = _two_connections(tmp_path)
    _compare(path, parallel=parallel, chunk_bytes=4096)


@pytest.mark.parametrize("path", RECORDED, ids=[f"{p.parent.name}/{p.name}" for p in RECORDED])
def test_columns_equal_the_table_on_recorded_captures(path: Path) -> None:
    _compare(path, parallel=False, chunk_bytes=64 * 1024)
