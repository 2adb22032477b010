"""StorageCheck values built from the recorded fio outputs (no I/O)."""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.model.storage.records import PackReadResult, SmallFileResult, StorageCheck
from gitnetdiag.storage.fio import parse_fio_json


def check_from(fixture: Path, *, small_total_s: float = 0.6, path: str = "/srv/git",
               with_fio: bool = True) -> StorageCheck:
    """A check whose fio part is ``fixture`` and whose small-file test took ``small_total_s``."""
    fio = parse_fio_json(fixture.read_text()) if with_fio else None
    return StorageCheck(
        path=path,
        filesystem="ext4",
        size_bytes=64 << 20,
        runtime_s=2.0,
        io_mode=(("direct" if fio.direct else "buffered") if fio is not None else None),
        fio=fio,
        small_files=SmallFileResult(files=1000, file_bytes=4096, write_s=small_total_s * 0.8,
                                    read_s=small_total_s * 0.2, cold_read=True),
        pack_read=PackReadResult(repo="/srv/git/a.git", packs=2, bytes_read=30_000_000,
                                 read_s=0.25, cache="cold (posix_fadvise DONTNEED on each pack)"),
    )
