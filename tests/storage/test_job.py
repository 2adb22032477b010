"""The reference fio job (its --size and --runtime: tests/test_vocabulary.py)."""

from __future__ import annotations

from gitnetdiag.storage.job import FioJob


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
