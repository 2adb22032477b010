"""fio JSON -> FioResult, on recorded and crafted outputs."""

from __future__ import annotations

import json

import pytest

from gitnetdiag.errors import InputError
from gitnetdiag.storage.fio import direct_io_refused, parse_fio_json
from tests.storage.helpers import CRAFTED_SLOW, RAMFS_BUFFERED, REAL_DIRECT


def test_recorded_direct_run() -> None:
    raw = json.loads(REAL_DIRECT.read_text())["jobs"][0]
    result = parse_fio_json(REAL_DIRECT.read_text())
    assert result.fio_version.startswith("fio-3")
    assert result.direct is True
    assert result.read.iops == pytest.approx(raw["read"]["iops"])
    assert result.write.iops == pytest.approx(raw["write"]["iops"])
    assert result.read.bandwidth_bytes_per_s == raw["read"]["bw_bytes"]
    assert result.read.latency_p50_s == raw["read"]["clat_ns"]["percentile"]["50.000000"] * 1e-9
    assert result.write.latency_p99_s == raw["write"]["clat_ns"]["percentile"]["99.000000"] * 1e-9
    assert result.read.latency_p50_s is not None and result.read.latency_p99_s is not None
    assert 0 < result.read.latency_p50_s <= result.read.latency_p99_s
    assert result.runtime_s == pytest.approx(raw["job_runtime"] / 1000)
    # a 75/25 mix: reads are about three times the writes
    assert 2.5 < result.read.iops / result.write.iops < 3.5
    assert result.options["rwmixread"] == "75"


def test_recorded_buffered_run() -> None:
    result = parse_fio_json(RAMFS_BUFFERED.read_text())
    assert result.direct is False
    assert result.read.iops > result.write.iops > 0


def test_crafted_slow_volume() -> None:
    result = parse_fio_json(CRAFTED_SLOW.read_text())
    assert (result.read.iops, result.write.iops) == (450.0, 150.0)
    assert result.read.latency_p50_s is not None and result.read.latency_p50_s > 0.05


def test_warnings_before_the_document_are_skipped() -> None:
    text = "fio: some warning line\n" + REAL_DIRECT.read_text()
    assert parse_fio_json(text).read.iops > 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no JSON document"),
        ("fio: looks like your file system does not support direct=1", "no JSON document"),
        ("{not json", "not valid JSON"),
        ('{"jobs": []}', "no job"),
        ('{"jobs": [{"error": 22, "read": {}, "write": {}}]}', "failed with error 22"),
        ('{"jobs": [{"error": 0, "read": {"iops": 1, "bw_bytes": 1}}]}', "no 'write' section"),
        ('{"jobs": [{"error": 0, "read": {"bw_bytes": 1}, "write": {}}]}', "read.iops"),
    ],
)
def test_bad_output_is_an_input_error(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        parse_fio_json(text)
    assert info.value.reference == "fio-output"


def test_direct_io_refusal_is_recognised() -> None:
    stderr = ("fio: looks like your file system does not support direct=1/buffered=0\n"
              "fio: destination does not support O_DIRECT\n")
    assert direct_io_refused(stderr)
    assert not direct_io_refused("fio: io_u error on file /x: No space left on device")
