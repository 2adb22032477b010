"""Reading files a user hands us, without letting the file turn against the tool.

A run directory, a capture or a config may come from anyone (a ticket
attachment). Reading one must end in bounded time and memory with one error
naming the file and what is wrong with it:

    open_regular(path)        a FIFO, device, socket or directory is refused at open
                              (``O_NONBLOCK``: opening a FIFO never waits for a writer);
                              a symlink loop is refused by name
    read_input(path)          the bytes, at most ``max_bytes``
    read_text_input(path)     decoded as UTF-8; a bad byte is named with its offset
    read_json_input(path)     parsed, nesting at most :data:`MAX_JSON_DEPTH` levels

Every function raises :class:`FileNotFoundError` for a missing file (callers say
what was expected there) and ``error(message)`` (an :class:`InputError` by
default) for everything else.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Callable
from io import BufferedReader
from pathlib import Path
from typing import Any

from gitnetdiag.errors import GitnetdiagError, InputError

MAX_JSON_BYTES = 64 * 2**20
"""Largest JSON file read back (run directories: the largest written is a few MB)."""
MAX_JSON_DEPTH = 64
"""Deepest nesting of a JSON file read back (gitnetdiag writes under 12 levels)."""
MAX_TEXT_BYTES = 16 * 2**20
"""Largest text input (configs, keys, lists) read whole."""

ErrorFactory = Callable[[str], GitnetdiagError]

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _input_error(message: str) -> GitnetdiagError:
    return InputError(message, hint="give a regular file", reference="bad-input-file")


def file_kind(mode: int) -> str:
    """What a file of ``st_mode`` is, in words (``a directory``, ``a FIFO (named pipe)``)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def not_regular_reason(path: Path) -> str | None:
    """Why ``path`` cannot be read as a file (``is a directory``, ``is a symlink loop``);
    None for a regular file or a missing one. Never blocks (stat only)."""
    reason = unusable_reason(path)
    return None if reason == "does not exist" else reason


def unusable_reason(path: Path) -> str | None:
    """Why ``path`` is no regular file, in words that follow its name: ``does not exist``,
    ``is a directory``, ``is a character device, not a regular file``, ``is a symlink
    loop``; None for a regular file. Never blocks (stat only)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symlink loop"
        return f"cannot be read: {exc.strerror}"
    if stat.S_ISREG(info.st_mode):
        return None
    kind = file_kind(info.st_mode)
    return "is a directory" if stat.S_ISDIR(info.st_mode) else f"is {kind}, not a regular file"


def open_regular(path: Path, *, error: ErrorFactory = _input_error) -> BufferedReader:
    """``path`` opened for reading when it is a regular file (symlinks followed, loops not).

    Raises FileNotFoundError when absent, ``error(...)`` for anything else.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise error(f"{path} is a symlink loop") from exc
        reason = not_regular_reason(path)
        raise error(f"{path} {reason}" if reason
                    else f"cannot read {path}: {exc.strerror}") from exc
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise error(f"{path} is {file_kind(info.st_mode)}, not a regular file")
    os.set_blocking(fd, True)
    return open(fd, "rb", closefd=True)


def read_input(path: Path, *, max_bytes: int = MAX_TEXT_BYTES,
               error: ErrorFactory = _input_error) -> bytes:
    """The bytes of the regular file ``path``, refused when larger than ``max_bytes``."""
    with open_regular(path, error=error) as handle:
        try:
            data = handle.read(max_bytes + 1)
        except OSError as exc:
            raise error(f"cannot read {path}: {exc.strerror}") from exc
    if len(data) > max_bytes:
        raise error(f"{path} is larger than the {max_bytes} B this input may have")
    return data


def decode_text(data: bytes, where: str) -> str:
    """``data`` as UTF-8; ``ValueError`` naming the first bad byte and its offset."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where} is not UTF-8 text: byte 0x{data[exc.start]:02x} at offset "
                         f"{exc.start}") from exc


def read_text_input(path: Path, *, max_bytes: int = MAX_TEXT_BYTES,
                    error: ErrorFactory = _input_error) -> str:
    """The UTF-8 text of ``path`` (see :func:`read_input`)."""
    data = read_input(path, max_bytes=max_bytes, error=error)
    try:
        return decode_text(data, str(path))
    except ValueError as exc:
        raise error(str(exc)) from exc


def json_depth_over(value: Any, limit: int) -> bool:
    """Whether parsed JSON nests deeper than ``limit`` containers (iterative: any depth)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = (item.values() if isinstance(item, dict)
                    else item if isinstance(item, list) else None)
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, dict | list))
    return False


def loads_bounded(text: str, where: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse JSON ``text``; ``ValueError`` when it is not JSON or nests too deep."""
    try:
        value = json.loads(text)
    except RecursionError:
        value = None
        too_deep = True
    except ValueError as exc:
        raise ValueError(f"{where} is not JSON: {exc}") from exc
    else:
        too_deep = json_depth_over(value, max_depth)
    if too_deep:
        raise ValueError(f"{where} nests JSON deeper than {max_depth} levels")
    return value


def read_json_input(path: Path, *, max_bytes: int = MAX_JSON_BYTES,
                    error: ErrorFactory = _input_error) -> Any:
    """The parsed JSON of ``path``: a regular file, bounded in size and nesting, UTF-8."""
    text = read_text_input(path, max_bytes=max_bytes, error=error)
    try:
        return loads_bounded(text, str(path))
    except ValueError as exc:
        raise error(str(exc)) from exc
