"""Files in a run directory, created and rewritten without following symlinks.

A run directory may hold TLS keylogs and, before the redaction pass, tokens:
a symlink planted in it must never make gitnetdiag write somewhere else. So
new files are created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (a file or
symlink already at the name is an error, not a target), and rewrites go to a
new temporary file that is renamed over the old name (``rename`` replaces a
symlink itself, never what it points to).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

from gitnetdiag.errors import UsageError

_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC


def _unsafe(path: Path, exc: OSError) -> UsageError:
    if exc.errno in (errno.EEXIST, errno.ELOOP):
        what = "a symlink" if path.is_symlink() else "a file"
        return UsageError(
            f"{path} is already {what}: refusing to write through it",
            hint="use a new --out directory that only you can write to",
            reference="unsafe-file",
        )
    return UsageError(f"cannot create {path}: {exc.strerror}",
                      hint="use a new --out directory that only you can write to",
                      reference="unsafe-file")


def open_new_file(path: Path, mode: int = 0o644) -> int:
    """A file descriptor of a new file at ``path``; never reuses or follows what is there.

    Raises UsageError (reference ``unsafe-file``) when anything exists at ``path``.
    """
    try:
        fd = os.open(path, _NEW_FILE_FLAGS, mode)
    except OSError as exc:
        raise _unsafe(path, exc) from exc
    # The umask may have removed bits, never added any: fchmod makes the mode exact
    # only where the caller asked for a private file.
    if mode & 0o077 == 0:
        os.fchmod(fd, mode)
    return fd


def write_new_file(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Create ``path`` (see :func:`open_new_file`) holding ``data``."""
    fd = open_new_file(path, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def replace_file(path: Path, data: bytes, mode: int | None = None) -> None:
    """Atomically give ``path`` the content ``data`` (temporary file + rename).

    ``mode`` defaults to the current file's permission bits (0644 for a new name).
    A symlink at ``path`` is replaced by the regular file, its target left alone.
    """
    if mode is None:
        try:
            current = os.lstat(path)
            mode = stat.S_IMODE(current.st_mode) if stat.S_ISREG(current.st_mode) else 0o600
        except FileNotFoundError:
            mode = 0o644
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = open_new_file(tmp, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
"""A filesystem (or the user's quota) that is full: a run keeps what it wrote and warns."""


def no_space(exc: BaseException) -> OSError | None:
    """The error that says the filesystem or the quota is full: ``exc`` itself or its cause
    (:func:`open_new_file` words a failed create as ``unsafe-file``); None for any other."""
    for error in (exc, exc.__cause__):
        if isinstance(error, OSError) and error.errno in NO_SPACE_ERRNOS:
            return error
    return None


def no_space_warning(path: Path, exc: OSError) -> str:
    """The warning of a run file a full filesystem kept from being written."""
    return (f"{path.name} was not written: {path.parent} is full ({exc.strerror}); the run "
            "keeps the files written before: free space and run it again for the rest")


def full_disk_warning(exc: BaseException, run_dir: Path, path: Path | None = None) -> str:
    """The warning for ``exc`` when it says the filesystem or the quota is full (the file
    it names, else ``path``, else "a file of the run"); re-raises ``exc`` otherwise."""
    full = no_space(exc)
    if full is None:
        raise exc
    filename = getattr(exc, "filename", None)
    where = path or (Path(filename) if filename else run_dir / "a file of the run")
    return no_space_warning(where, full)


def keep_file(path: Path, data: bytes, warn: Callable[[str], object] | None = None) -> bool:
    """:func:`replace_file` for a run's artifact: on a full filesystem nothing is written,
    ``warn`` gets :func:`no_space_warning` and the result is False (the run goes on with
    what it has, as with a missing artifact); any other error is raised."""
    try:
        replace_file(path, data)
    except (OSError, UsageError) as exc:
        full = no_space(exc)
        if full is None:
            raise
        if warn is not None:
            warn(no_space_warning(path, full))
        return False
    return True


def read_regular_file(path: Path) -> bytes | None:
    """The bytes of ``path`` when it is a regular file; None for a symlink or anything else."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOENT):
            return None
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read()


def prepare_out_dir(path: Path) -> None:
    """Make ``path`` the run directory: new, or an existing empty directory of ours.

    An existing directory must belong to the current user and must not be
    writable by other users or by a group other than the user's own (they could
    plant symlinks while the run writes).
    Raises UsageError with a hint otherwise.
    """
    hint = "choose a new --out directory"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(path)
        return
    except FileExistsError:
        pass
    except OSError as exc:
        raise UsageError(f"cannot create {path}: {exc.strerror}",
                         hint="choose a writable --out directory") from exc
    try:
        info = os.stat(path)
    except OSError as exc:
        raise UsageError(f"cannot use {path}: {exc.strerror}", hint=hint) from exc
    if not stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{path} exists and is not a directory", hint=hint)
    if info.st_uid != os.geteuid():
        raise UsageError(f"{path} exists and belongs to another user (uid {info.st_uid})",
                         hint=hint)
    if info.st_mode & stat.S_IWOTH:
        raise UsageError(f"{path} is writable by every user",
                         hint=f"{hint}, or 'chmod o-w {path}'")
    if info.st_mode & stat.S_IWGRP and info.st_gid != os.getegid():
        raise UsageError(f"{path} is writable by the group {info.st_gid}",
                         hint=f"{hint}, or 'chmod g-w {path}'")
    try:
        with os.scandir(path) as entries:
            not_empty = any(True for _ in entries)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}", hint=hint) from exc
    if not_empty:
        raise UsageError(f"{path} exists and is not empty", hint=hint)
