"""Shared helpers for the storage tests: fixture paths and temporary mounts (root)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
REAL_DIRECT = DATA / "fio_ext4_direct_64m_2s.json"
RAMFS_BUFFERED = DATA / "fio_ramfs_buffered_32m_2s.json"
CRAFTED_SLOW = DATA / "fio_crafted_slow_volume.json"

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a filesystem needs root")


@contextlib.contextmanager
def mounted(where: Path, fstype: str, options: str = "") -> Iterator[Path]:
    """Mount a fresh ``fstype`` (tmpfs, ramfs) on ``where``; unmounted afterwards."""
    where.mkdir(parents=True, exist_ok=True)
    argv = ["mount", "-t", fstype]
    if options:
        argv += ["-o", options]
    subprocess.run([*argv, fstype, str(where)], check=True, timeout=30)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True, timeout=30)


def leftovers(directory: Path) -> list[str]:
    """Names left in ``directory`` (the check must leave nothing)."""
    return sorted(p.name for p in directory.iterdir())
