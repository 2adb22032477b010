"""Timed read of a repository's pack files: the disk phase of serving a clone (I/O).

Cold by default: each pack file's pages are dropped from the page cache with
``posix_fadvise(DONTNEED)`` first (targeted, needs no root, leaves the rest of
the machine's cache alone). With ``drop_caches=True`` and root, the whole page
cache is dropped instead (``sync; echo 1 > /proc/sys/vm/drop_caches``), which
also catches filesystems that ignore the advice. Where neither works the read
is reported as ``warm``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from gitnetdiag.errors import UsageError
from gitnetdiag.model.storage.records import PackReadResult

CHUNK_BYTES = 1 << 20
"""Read size: large sequential reads, as ``git upload-pack`` reuses packed data."""
DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def find_pack_dir(repo: Path) -> Path:
    """``objects/pack`` of a bare repository or of a work tree's ``.git``."""
    if not repo.is_dir():
        raise UsageError(
            f"--repo {repo} is not a directory",
            hint="give the path of a git repository (bare, or a work tree with .git)",
            reference="bad-repo",
        )
    for candidate in (repo / "objects" / "pack", repo / ".git" / "objects" / "pack"):
        if candidate.is_dir():
            return candidate
    raise UsageError(
        f"--repo {repo} is not a git repository (no objects/pack or .git/objects/pack)",
        hint="give the path of a git repository (bare, or a work tree with .git)",
        reference="bad-repo",
    )


def _fadvise_dontneed(path: Path) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def _drop_all_caches() -> bool:
    if os.geteuid() != 0:
        return False
    os.sync()
    try:
        DROP_CACHES.write_text("1\n")
    except OSError:
        return False
    return True


def find_packs(repo: Path) -> list[Path]:
    """The ``*.pack`` files of ``repo``, or a clear error when there are none."""
    pack_dir = find_pack_dir(repo)
    packs = sorted(pack_dir.glob("*.pack"))
    if not packs:
        raise UsageError(
            f"--repo {repo} has no pack files in {pack_dir}",
            hint="pack the repository first (git gc, or git repack -ad)",
            reference="bad-repo",
        )
    return packs


def read_packs(repo: Path, *, drop_caches: bool = False) -> PackReadResult:
    """Read every ``*.pack`` of ``repo`` once, sequentially, and time it."""
    packs = find_packs(repo)
    if drop_caches and _drop_all_caches():
        cache = "cold (sync; echo 1 > /proc/sys/vm/drop_caches)"
    elif all([_fadvise_dontneed(p) for p in packs]):
        cache = "cold (posix_fadvise DONTNEED on each pack)"
    else:
        cache = "warm"
    buffer = bytearray(CHUNK_BYTES)
    total = 0
    start = time.perf_counter()
    for pack in packs:
        with open(pack, "rb", buffering=0) as handle:
            while count := handle.readinto(buffer):
                total += count
    read_s = time.perf_counter() - start
    return PackReadResult(
        repo=str(packs[0].parent.parent.parent), packs=len(packs), bytes_read=total, read_s=read_s,
        cache=cache,
    )
