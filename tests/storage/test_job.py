"""The reference fio job and option parsing."""

from __future__ import annotations

import pytest

from gitnetdiag.errors import UsageError
from gitnetdiag.storage.job import FioJob, parse_duration, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1G", 1 << 30), ("64M", 64 << 20), ("64m", 64 << 20), ("512k", 512 << 10),
     ("65536", 65536), ("1.5G", 3 << 29), ("64MiB", 64 << 20)],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(("text", "expected"), [("30s", 30.0), ("30", 30.0), ("2m", 120.0),
                                                ("1.5s", 1.5)])
def test_parse_duration(text: str, expected: float) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "0", "-1G", "1X", "big"])
def test_bad_size_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="cannot read the size") as info:
        parse_size(text)
    assert "64M" in info.value.hint


@pytest.mark.parametrize("text", ["0s", "soon", "3d"])
def test_bad_duration_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="cannot read the duration"):
        parse_duration(text)


def test_argv_is_the_reference_job() -> None:
    argv = FioJob(filename="/srv/git/t", size_bytes=64 << 20, runtime_s=2.0).argv("/usr/bin/fio")
    assert argv[0] == "/usr/bin/fio"
    for option in ("--rw=randrw", "--rwmixread=75", "--bs=4096", "--iodepth=64",
                   "--ioengine=libaio", "--direct=1", "--size=67108864", "--runtime=2s",
                   "--time_based", "--output-format=json", "--filename=/srv/git/t"):
        assert option in argv


def test_buffered_fallback_job() -> None:
    argv = FioJob(filename="/x", size_bytes=1 << 20, runtime_s=1.0, direct=False).argv()
    assert "--direct=0" in argv and "--direct=1" not in argv
