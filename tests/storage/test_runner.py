"""Real runs of the check: this machine's disk, tmpfs, ramfs (no O_DIRECT), no fio, bad paths.

fio runs for 2 s on a 32 MiB file; each check also writes and reads 1,000 small files.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitnetdiag.errors import UsageError
from gitnetdiag.storage import runner
from gitnetdiag.storage.packread import read_packs
from gitnetdiag.storage.runner import run_storage_check, supports_direct_io
from tests.storage.helpers import leftovers, mounted, needs_root

SIZE = 32 << 20
RUNTIME_S = 2.0


def _git_repo(where: Path, megabytes: int = 4) -> Path:
    where.mkdir()
    (where / "blob.bin").write_bytes(bytes(range(256)) * (megabytes * 4096))
    for argv in (["git", "init", "-q"], ["git", "add", "blob.bin"],
                 ["git", "-c", "user.name=t", "-c", "user.email=t@example.test", "commit",
                  "-qm", "x"], ["git", "gc", "-q"]):
        subprocess.run(argv, cwd=where, check=True, timeout=60)
    return where


def test_this_machines_disk(tmp_path: Path) -> None:
    target = tmp_path / "data"
    target.mkdir()
    repo = _git_repo(tmp_path / "repo")
    check = run_storage_check(target, size_bytes=SIZE, runtime_s=RUNTIME_S, repo=repo)
    assert leftovers(target) == []
    assert check.fio is not None
    assert check.io_mode == "direct" and check.fio.direct
    assert check.fio.read.iops > 0 and check.fio.write.iops > 0
    assert 2.0 < check.fio.read.iops / check.fio.write.iops < 4.0
    assert check.fio.read.latency_p50_s is not None and check.fio.read.latency_p99_s is not None
    assert 0 < check.fio.read.latency_p50_s <= check.fio.read.latency_p99_s
    assert 1.5 < check.fio.runtime_s < 3.0
    assert check.small_files is not None
    assert check.small_files.files == 1000 and check.small_files.write_s > 0
    assert check.small_files.read_s > 0
    assert check.pack_read is not None
    assert check.pack_read.packs == 1 and check.pack_read.bytes_read > 0
    assert check.pack_read.cache.startswith("cold")
    assert not any("direct I/O" in note for note in check.notes)


@needs_root
def test_tmpfs(tmp_path: Path) -> None:
    """tmpfs: the check completes and cleans up; O_DIRECT works there since Linux 6.6,
    and where it does not the run says so and falls back to buffered I/O."""
    with mounted(tmp_path / "mnt", "tmpfs", "size=128M") as mnt:
        direct = supports_direct_io(mnt)
        check = run_storage_check(mnt, size_bytes=SIZE, runtime_s=RUNTIME_S)
        assert leftovers(mnt) == []
    assert check.filesystem == "tmpfs"
    assert check.fio is not None and check.fio.read.iops > 0 and check.fio.write.iops > 0
    assert check.io_mode == ("direct" if direct else "buffered")
    assert any("tmpfs: every figure measures memory" in note for note in check.notes)
    assert any("does not support direct I/O" in note for note in check.notes) is not direct


@needs_root
def test_ramfs_falls_back_to_buffered_io(tmp_path: Path) -> None:
    """ramfs refuses O_DIRECT (EINVAL): buffered fallback, with the one-line note."""
    with mounted(tmp_path / "mnt", "ramfs") as mnt:
        assert supports_direct_io(mnt) is False
        check = run_storage_check(mnt, size_bytes=SIZE, runtime_s=RUNTIME_S)
        assert leftovers(mnt) == []
    assert check.io_mode == "buffered"
    assert check.fio is not None and not check.fio.direct
    assert check.fio.read.iops > 0
    assert (f"{mnt} (ramfs) does not support direct I/O (O_DIRECT): fio fell back to buffered "
            "I/O (direct=0), so its figures include the page cache") in check.notes


@needs_root
def test_fio_refusing_direct_io_triggers_the_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the probe is fooled but fio itself refuses O_DIRECT, fio's error starts the fallback."""
    monkeypatch.setattr(runner, "supports_direct_io", lambda _directory: True)
    with mounted(tmp_path / "mnt", "ramfs") as mnt:
        check = run_storage_check(mnt, size_bytes=SIZE, runtime_s=1.0)
        assert leftovers(mnt) == []
    assert check.io_mode == "buffered"
    assert any("does not support direct I/O" in note for note in check.notes)


def test_without_fio_only_small_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "find_fio", lambda: None)
    check = run_storage_check(tmp_path, size_bytes=SIZE, runtime_s=RUNTIME_S)
    assert leftovers(tmp_path) == []
    assert check.fio is None and check.io_mode is None
    assert check.small_files is not None and check.small_files.total_s > 0
    assert ("fio is not installed (Debian package 'fio'): only the small-file test ran"
            in check.notes)


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist") as info:
        run_storage_check(tmp_path / "nope", size_bytes=SIZE, runtime_s=RUNTIME_S)
    assert info.value.reference == "bad-storage-path"
    assert info.value.hint


def test_file_instead_of_directory(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(UsageError, match="is not a directory"):
        run_storage_check(tmp_path / "f", size_bytes=SIZE, runtime_s=RUNTIME_S)


@needs_root
def test_read_only_mount(tmp_path: Path) -> None:
    with (
        mounted(tmp_path / "ro", "tmpfs", "ro,size=1M") as mnt,
        pytest.raises(UsageError, match="read-only filesystem") as info,
    ):
        run_storage_check(mnt, size_bytes=SIZE, runtime_s=RUNTIME_S)
    assert "writable directory" in info.value.hint


def test_not_enough_space_is_refused_before_writing(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="MiB free") as info:
        run_storage_check(tmp_path, size_bytes=1 << 60, runtime_s=RUNTIME_S)
    assert "--size" in info.value.hint
    assert leftovers(tmp_path) == []


def test_bad_repo_is_refused_before_the_benchmark(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="not a git repository"):
        run_storage_check(tmp_path, size_bytes=SIZE, runtime_s=RUNTIME_S,
                          repo=tmp_path / "empty")
    assert leftovers(tmp_path) == ["empty"]


def test_unpacked_repo_is_refused(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True, timeout=30)
    with pytest.raises(UsageError, match="has no pack files") as info:
        read_packs(tmp_path / "r")
    assert "git gc" in info.value.hint


def test_pack_read_bare_repo(tmp_path: Path) -> None:
    repo = _git_repo(tmp_path / "work", megabytes=2)
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(tmp_path / "b.git")],
                   check=True, timeout=60)
    result = read_packs(tmp_path / "b.git")
    assert result.packs >= 1
    pack_bytes = sum(p.stat().st_size for p in (tmp_path / "b.git/objects/pack").glob("*.pack"))
    assert result.bytes_read == pack_bytes
    assert result.rate_bytes_per_s is not None and result.rate_bytes_per_s > 0
