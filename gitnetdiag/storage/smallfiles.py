"""The small-file test: write N small files, then read them back, timed (I/O).

Each file is fsynced as it is written (and the directory once at the end):
that is what makes a networked or throttled volume show its per-operation
latency, and it is what git does for objects when ``core.fsync`` asks for it.
Before reading back, each file's pages are dropped from the page cache with
``posix_fadvise(DONTNEED)`` (the pages are clean after fsync), so the read
goes to the device where the filesystem has one.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from gitnetdiag.model.storage.records import SmallFileResult

DEFAULT_FILES = 1000
"""Files in the reference small-file test."""
DEFAULT_FILE_BYTES = 4096
"""Size of each file."""


def _drop_cached(path: Path) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def run_small_files(
    directory: Path, *, files: int = DEFAULT_FILES, file_bytes: int = DEFAULT_FILE_BYTES
) -> SmallFileResult:
    """Write ``files`` files of ``file_bytes`` into ``directory`` (which must exist), read them.

    The files are left in place: the caller owns ``directory`` and removes it.
    """
    payload = os.urandom(file_bytes)
    names = [directory / f"f{i:05d}" for i in range(files)]
    start = time.perf_counter()
    for name in names:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    write_s = time.perf_counter() - start

    cold = all([_drop_cached(name) for name in names])
    start = time.perf_counter()
    total = 0
    for name in names:
        with open(name, "rb", buffering=0) as handle:
            total += len(handle.read())
    read_s = time.perf_counter() - start
    if total != files * file_bytes:
        raise OSError(f"read back {total} bytes of {files * file_bytes}")
    return SmallFileResult(
        files=files, file_bytes=file_bytes, write_s=write_s, read_s=read_s, cold_read=cold
    )
