"""benchmarks/analyze_vs_tshark.py: the captures it times, generated and recorded."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from benchmarks import analyze_vs_tshark as bench
from gitnetdiag.capture.reader import read_capture


def _args(**kwargs: object) -> argparse.Namespace:
    return argparse.Namespace(**{"capture": None, "packets": 3000, "record": False, **kwargs})


def test_generated_capture_reads_back_whole(tmp_path: Path) -> None:
    path = tmp_path / "bulk.pcap"
    bench.generate(path, 3000, block=1000)
    read = read_capture(path, parallel=False)
    assert read.damage is None
    assert len(read.packets) == 3000
    assert len(read.connections) == 1
    assert int(read.packets["payload_len"].max()) == bench.MSS


def test_recorded_capture_is_skipped_without_root_and_without_a_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(bench, "RECORDED", tmp_path / "recorded" / "none.pcap")
    monkeypatch.setattr(bench.os, "geteuid", lambda: 1000)
    recorded: list[Path] = []
    monkeypatch.setattr(bench, "record", recorded.append)
    captures = bench._captures(_args(), tmp_path)
    assert [label for label, _ in captures] == ["generated"]
    assert recorded == []
    assert "recorded capture skipped" in capsys.readouterr().out


def test_a_cached_recorded_capture_is_timed_beside_the_generated_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cached = tmp_path / "recorded.pcap"
    bench.generate(cached, 10)
    monkeypatch.setattr(bench, "RECORDED", cached)
    monkeypatch.setattr(bench, "record", lambda path: pytest.fail("recorded again"))
    captures = bench._captures(_args(), tmp_path)
    assert [label for label, _ in captures] == ["generated", "recorded"]
    assert captures[1][1] == cached
    assert bench._captures(_args(capture=cached), tmp_path) == [("capture", cached)]
