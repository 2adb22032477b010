"""Reading ahead (issue 25): ``gitnetdiag analyze FILE`` forks the capture reader before it
imports the analysis, and :func:`analyze_capture` takes the started reader over."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitnetdiag.analysis import TCP_FIELDS
from gitnetdiag.analysis.capture_analysis import analyze_capture
from gitnetdiag.capture import reader as reader_module
from gitnetdiag.capture.reader import PARALLEL_ENV, read_ahead, take_read_ahead
from tests.capture.test_parallel import bulk_pcap


def test_the_analysis_takes_over_the_reading_started_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PARALLEL_ENV, "1")
    path = bulk_pcap(tmp_path / "b.pcap", 100_000)
    expected = analyze_capture(path, parallel=False).to_dict()
    read_ahead(path, TCP_FIELDS)
    reader, _ = reader_module._AHEAD[(str(path), TCP_FIELDS)]
    child = reader.child_pid
    assert child is not None and Path(f"/proc/{child}").exists()  # reading already
    assert analyze_capture(path).to_dict() == expected
    assert not reader_module._AHEAD  # taken over, and the child is gone with the reader
    assert reader.child_pid is None


def test_nothing_is_read_ahead_of_what_is_not_a_large_capture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = bulk_pcap(tmp_path / "s.pcap", 1_000)
    monkeypatch.delenv(PARALLEL_ENV, raising=False)
    read_ahead(small, TCP_FIELDS)  # one process reads it: nothing to start
    read_ahead(tmp_path / "missing.pcap", TCP_FIELDS)  # the analysis says what is wrong
    read_ahead(tmp_path, TCP_FIELDS)  # a directory (a run directory)
    assert not reader_module._AHEAD
    assert take_read_ahead(small, TCP_FIELDS) is None


def test_a_reading_never_taken_over_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PARALLEL_ENV, "1")
    path = bulk_pcap(tmp_path / "b.pcap", 100_000)
    read_ahead(path, TCP_FIELDS)
    ahead = take_read_ahead(path, ("ts_ns",))  # other fields: not this reading
    assert ahead is None
    reader, _ = reader_module._AHEAD[(str(path), TCP_FIELDS)]
    child = reader.child_pid
    reader_module._close_ahead()  # what the command's exit does (atexit)
    assert child is not None and reader.child_pid is None
    assert not reader_module._AHEAD
