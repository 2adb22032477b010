"""Run a storage check on a directory, and always clean up after it (I/O).

Everything is written inside one scratch directory under PATH
(``.gitnetdiag-storage-XXXXXX``), removed in a ``finally`` block, so Ctrl-C
(SIGINT), SIGTERM (turned into the same KeyboardInterrupt while the check
runs) and errors leave nothing behind. fio runs as a child with a timeout;
``subprocess.run`` kills it when we are interrupted.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from gitnetdiag import proc
from gitnetdiag.errors import EnvironmentProblem, ExternalCommandError, UsageError
from gitnetdiag.model.storage.records import FioResult, IoMode, StorageCheck
from gitnetdiag.proc import sigterm_interrupts
from gitnetdiag.storage.fio import direct_io_refused, parse_fio_json
from gitnetdiag.storage.job import FioJob
from gitnetdiag.storage.packread import find_packs, read_packs
from gitnetdiag.storage.smallfiles import DEFAULT_FILES, run_small_files

SCRATCH_PREFIX = ".gitnetdiag-storage-"
"""Prefix of the scratch directory created under PATH."""
MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs", "devtmpfs"})
"""Filesystems whose figures measure RAM, not a device."""
FIO_SLACK_S = 120.0
"""Time allowed on top of ``--runtime`` for fio to lay out its file and exit."""
LAYOUT_RATE_BYTES_PER_S = 20e6
"""Slowest file layout rate the fio timeout allows for."""

Progress = Callable[[str], None]


def find_fio() -> str | None:
    """Path of the fio program, ``None`` when it is not installed."""
    return shutil.which("fio")


def _bad_path(message: str, hint: str) -> UsageError:
    return UsageError(message, hint=hint, reference="bad-storage-path")


def check_path(path: Path) -> Path:
    """``path`` resolved, or a clear error: missing, not a directory, read-only."""
    if not path.exists():
        raise _bad_path(
            f"{path} does not exist", "give the directory that holds the git data, e.g. /srv/git"
        )
    if not path.is_dir():
        raise _bad_path(
            f"{path} is not a directory",
            "give the directory that holds the git data (the test file is created inside it)",
        )
    if os.statvfs(path).f_flag & os.ST_RDONLY:
        raise _bad_path(
            f"{path} is on a read-only filesystem",
            "the test writes a file there; give a writable directory on the same storage",
        )
    if not os.access(path, os.W_OK | os.X_OK):
        raise _bad_path(
            f"{path} is not writable by this user",
            "run as a user who can write there, or give a writable directory on the same storage",
        )
    return path.resolve()


def filesystem_type(path: Path) -> str:
    """Type of the filesystem holding ``path`` (``/proc/self/mounts``), empty when unknown."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return ""
    best, fstype = "", ""
    target = str(path.resolve())
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        mount = fields[1].replace("\\040", " ")
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, fstype = mount, fields[2]
    return fstype


def _check_space(path: Path, size_bytes: int) -> None:
    st = os.statvfs(path)
    if st.f_blocks == 0:  # ramfs and friends report no size at all
        return
    free = st.f_bavail * st.f_frsize
    needed = size_bytes + DEFAULT_FILES * 8192
    if free < needed:
        raise _bad_path(
            f"{path} has {free / 2**20:.0f} MiB free, the test needs {needed / 2**20:.0f} MiB",
            "give a smaller --size (e.g. --size 256M) or free some space",
        )


def supports_direct_io(directory: Path) -> bool:
    """Whether files in ``directory`` can be opened with O_DIRECT (tmpfs before Linux 6.6,
    ramfs and some network filesystems refuse it with EINVAL)."""
    probe = directory / "direct-io-probe"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600)
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            return False
        raise
    else:
        os.close(fd)
        return True
    finally:
        # some filesystems create the file before refusing the flag
        probe.unlink(missing_ok=True)


def _run_fio(fio: str, job: FioJob) -> tuple[FioResult | None, str]:
    """Run the job; ``(None, stderr)`` when fio refused O_DIRECT, else the result."""
    timeout = job.runtime_s + FIO_SLACK_S + job.size_bytes / LAYOUT_RATE_BYTES_PER_S
    argv = job.argv(fio)
    # Its own process group, stopped and reaped before we return, whatever ends the wait
    # (a timeout, Ctrl-C, SIGTERM): subprocess.run kills a child on an interrupt but
    # does not wait for it, and a fio in the middle of direct I/O takes a moment to die.
    child = proc.start(argv, isolate="group")
    try:
        with proc.map_process_errors(" ".join(argv[:3])):
            out, err = child.communicate(timeout=timeout)
    finally:
        if child.poll() is None:
            proc.kill_group(child)
    stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
    if child.returncode != 0:
        if job.direct and direct_io_refused(stderr):
            return None, stderr
        lines = (stderr or stdout).strip().splitlines()
        raise ExternalCommandError(
            f"fio failed: {lines[-1] if lines else f'exit code {child.returncode}'}",
            hint="run the fio command shown with --json by hand to see more; "
            "check free space and that the filesystem supports libaio",
            reference="fio-failed",
        )
    return parse_fio_json(stdout), stderr


def _fio_reference(scratch: Path, directory: Path, fstype: str, size_bytes: int,
                   runtime_s: float, say: Progress,
                   notes: list[str]) -> tuple[FioResult | None, IoMode | None]:
    """The fio reference job in ``scratch`` (direct I/O where the file system allows it,
    else buffered, said in ``notes``); (None, None) without fio."""
    fio = find_fio()
    if fio is None:
        notes.append("fio is not installed (Debian package 'fio'): only the small-file test ran")
        return None, None
    direct = supports_direct_io(scratch)
    if not direct:
        notes.append(_no_direct_note(directory, fstype))
    job = FioJob(filename=str(scratch / "fio-testfile"), size_bytes=size_bytes,
                 runtime_s=runtime_s, direct=direct)
    say(f"fio: random 4 KiB, 75% reads, iodepth 64 on {job.filename} for {runtime_s:g} s")
    fio_result, _ = _run_fio(fio, job)
    if fio_result is None:
        notes.append(_no_direct_note(directory, fstype))
        job = FioJob(filename=job.filename, size_bytes=size_bytes,
                     runtime_s=runtime_s, direct=False)
        fio_result, _ = _run_fio(fio, job)
    Path(job.filename).unlink(missing_ok=True)
    return fio_result, "direct" if job.direct else "buffered"


def run_storage_check(
    path: Path,
    *,
    size_bytes: int,
    runtime_s: float,
    repo: Path | None = None,
    drop_caches: bool = False,
    small_files: int = DEFAULT_FILES,
    progress: Progress | None = None,
) -> StorageCheck:
    """fio reference job + small-file test (+ pack read) on ``path``; cleans up always."""
    say: Progress = progress or (lambda _line: None)
    directory = check_path(path)
    if repo is not None:
        find_packs(repo)
    _check_space(directory, size_bytes)
    fstype = filesystem_type(directory)
    notes: list[str] = []
    if fstype in MEMORY_FILESYSTEMS:
        notes.append(f"{directory} is on {fstype}: every figure measures memory, not a disk")
    try:
        scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=directory))
    except OSError as exc:
        raise _bad_path(
            f"cannot create a scratch directory in {directory}: {exc.strerror}",
            "give a directory this user can write to (not read-only, not immutable)",
        ) from exc
    try:
        with sigterm_interrupts():
            fio_result, io_mode = _fio_reference(scratch, directory, fstype, size_bytes,
                                                 runtime_s, say, notes)
            say(f"small files: writing and reading {small_files:,} files")
            small_dir = scratch / "small-files"
            small_dir.mkdir()
            small = run_small_files(small_dir, files=small_files)
            if not small.cold_read:
                notes.append("small-file read-back may have come from the page cache")
            packs = None
            if repo is not None:
                say(f"pack read: {repo}")
                packs = read_packs(repo, drop_caches=drop_caches)
                if packs.cache == "warm":
                    notes.append("pack read was warm: the page cache could not be dropped")
    except OSError as exc:
        raise EnvironmentProblem(
            f"storage test on {directory} failed: {exc.strerror or exc}",
            hint="check free space and inodes (df -h, df -i) and the kernel log",
            reference="storage-io-error",
        ) from exc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return StorageCheck(
        path=str(directory),
        filesystem=fstype,
        size_bytes=size_bytes,
        runtime_s=runtime_s,
        io_mode=io_mode,
        fio=fio_result,
        small_files=small,
        pack_read=packs,
        notes=tuple(notes),
    )


def _no_direct_note(directory: Path, fstype: str) -> str:
    on = f" ({fstype})" if fstype else ""
    return (
        f"{directory}{on} does not support direct I/O (O_DIRECT): fio fell back to buffered "
        "I/O (direct=0), so its figures include the page cache"
    )
