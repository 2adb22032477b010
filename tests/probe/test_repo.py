"""The generated repository, its pack and the throwaway branch names."""

from __future__ import annotations

import json
import re
import struct
import subprocess
from pathlib import Path

import pytest

from gitnetdiag.errors import UsageError
from gitnetdiag.probe.repo import (
    TEXT_FILE_BYTES,
    generate_repo,
    new_probe_id,
    pack_for_commit,
    probe_branch_name,
)


def test_same_seed_same_commit_other_seed_other_commit(tmp_path: Path) -> None:
    first = generate_repo(tmp_path / "a", 3 * 1024 * 1024 + 5, seed=7)
    again = generate_repo(tmp_path / "b", 3 * 1024 * 1024 + 5, seed=7)
    other = generate_repo(tmp_path / "c", 3 * 1024 * 1024 + 5, seed=8)
    assert first.head_oid == again.head_oid
    assert first.head_oid != other.head_oid
    assert re.fullmatch(r"[0-9a-f]{40}", first.head_oid)
    files = sorted((first.path / "data").iterdir())
    assert len(files) == 4
    assert sum(f.stat().st_size for f in files) == 3 * 1024 * 1024 + 5
    branch = subprocess.run(
        ["git", "-C", str(first.path), "symbolic-ref", "HEAD"], capture_output=True, text=True,
        check=True,
    ).stdout.strip()
    assert branch == "refs/heads/main"


def test_pack_holds_everything_and_does_not_compress(tmp_path: Path) -> None:
    repo = generate_repo(tmp_path / "r", 2 * 1024 * 1024, seed=1)
    pack = pack_for_commit(repo.path, repo.head_oid)
    assert pack[:4] == b"PACK"
    version, objects = struct.unpack(">II", pack[4:12])
    assert version == 2
    assert objects == 5  # commit, root tree, data/ tree, two 1 MiB blobs
    assert len(pack) >= 2 * 1024 * 1024


def _pack_objects_phases(repo: Path, oid: str, trace: Path) -> dict[str, float]:
    subprocess.run(["git", "-C", str(repo), "pack-objects", "--stdout", "--revs", "-q"],
                   input=f"{oid}\n".encode(), capture_output=True, check=True,
                   env={"PATH": "/usr/bin:/bin", "GIT_TRACE2_EVENT": str(trace)})
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    return {e["label"]: e["t_rel"] for e in events
            if e.get("event") == "region_leave" and e.get("category") == "pack-objects"}


def test_text_data_is_loose_and_deltifies_so_a_push_runs_the_delta_search(
        tmp_path: Path) -> None:
    """``--data text``: same seed, same commit; loose objects, and a pack far smaller than
    the data (the files delta against each other). Random data is packed and reused."""
    size = 1024 * 1024
    text = generate_repo(tmp_path / "t", size, seed=3, data="text")
    assert generate_repo(tmp_path / "t2", size, seed=3, data="text").head_oid == text.head_oid
    random = generate_repo(tmp_path / "r", size, seed=3)
    assert text.head_oid != random.head_oid
    files = sorted((text.path / "data").iterdir())
    assert len(files) == size // TEXT_FILE_BYTES
    assert sum(f.stat().st_size for f in files) == size
    assert not list((text.path / ".git" / "objects" / "pack").glob("*.pack"))
    pack = pack_for_commit(text.path, text.head_oid)
    assert len(pack) < size / 5, len(pack)
    # The delta search is where a CPU-starved client waits: it does work on text data ...
    text_phases = _pack_objects_phases(text.path, text.head_oid, tmp_path / "t.trace")
    # ... and next to none on random data: the quickest of three runs, as a scheduler's
    # delay of a few ms under load (another test beside it) is no work of pack-objects'.
    random_runs = [_pack_objects_phases(random.path, random.head_oid, tmp_path / f"r{i}.trace")
                   for i in range(3)]
    random_prepare = min(phases["prepare-pack"] for phases in random_runs)
    assert text_phases["prepare-pack"] > 5 * random_prepare, (text_phases, random_runs)
    with pytest.raises(UsageError, match="unknown data kind"):
        generate_repo(tmp_path / "x", size, data="zeros")


def test_rejects_bad_size_and_non_empty_dest(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        generate_repo(tmp_path / "x", 0)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "file").write_text("x")
    with pytest.raises(UsageError):
        generate_repo(tmp_path / "full", 1024)


def test_branch_names() -> None:
    probe_id = new_probe_id()
    assert re.fullmatch(r"[0-9a-f]{8}", probe_id)
    assert new_probe_id() != probe_id
    assert probe_branch_name(probe_id) == f"gitnetdiag/probe-{probe_id}"
    for bad in ("", "a/b", "x..y", "a b", "main:refs"):
        with pytest.raises(UsageError):
            probe_branch_name(bad)


def test_a_generated_size_needs_room_in_the_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: ``--size`` is bounded like ``storage --size``: by a maximum, and by the free
    space making it needs (three copies), one usage error before anything is written."""
    from types import SimpleNamespace

    from gitnetdiag.probe import repo

    repo.check_generated_size("--size", "32MiB", 32 << 20, tmp_path)
    monkeypatch.setattr(repo.os, "statvfs", lambda _path: SimpleNamespace(
        f_bavail=256, f_frsize=1 << 20, f_blocks=1 << 20))  # 256 MiB free
    with pytest.raises(UsageError) as raised:
        repo.check_generated_size("--size", "100MiB", 100 << 20, tmp_path)
    assert raised.value.reference == "size-too-large"
    assert raised.value.message == (f"--size 100MiB: {tmp_path} has 256 MiB free, making the "
                                    "repository needs 300 MiB")
    with pytest.raises(UsageError, match="more than the 4 GiB"):
        repo.check_generated_size("--fetch-seed", "5GiB", 5 << 30, tmp_path)
