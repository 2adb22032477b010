"""Reading a capture in a forked child, one chunk ahead of the caller.

Walking and decoding (:meth:`CaptureReader.decoded`) run in a child process
forked from the caller; each chunk's decoded rows go back through a pipe as
int64 columns (:data:`_FIELDS`), followed by a pickled :class:`ReaderProgress`
(statistics, damage).  The caller tracks connections,
builds the packet table or columns (:meth:`CaptureReader.table`,
:meth:`CaptureReader.columns`) and analyses chunk *i*
while the child decodes chunk *i+1*: on 1M packets the two halves take about
the same time, so a two-core machine does both at once.

Memory stays bounded: the pipe holds at most :data:`PIPE_BYTES`, so the child
blocks once it is one chunk ahead.  The tables and every reported figure are
exactly those of the single-process path (tests compare the two).

The child never outlives the caller's iteration: Ctrl-C goes to the parent
(the child ignores SIGINT), and leaving the loop for any reason, finishing
it early included, kills and reaps the child.  A child whose parent died
stops at its next write (broken pipe).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import signal
import struct
import traceback
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from io import FileIO
from typing import Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from gitnetdiag.capture.decode import DecodeStats, TcpRows
from gitnetdiag.errors import CaptureFormatError, EnvironmentProblem, GitnetdiagError

PacketArray = npt.NDArray[np.void]


@dataclass(frozen=True, kw_only=True)
class ReaderProgress:
    """What a reader learnt besides the decoded rows (sent by a forked reader)."""

    stats: DecodeStats = field(default_factory=DecodeStats)
    """Decode statistics so far."""
    damage: CaptureFormatError | None = None
    """The damage that stopped the walk, once it has."""
    has_tls_secrets: bool = False
    """A pcapng decryption secrets block was seen."""


class ChunkSource(Protocol):
    """What this module needs of :class:`gitnetdiag.capture.reader.CaptureReader`
    (a protocol, so that the reader imports this module and not the other way round)."""

    child_pid: int | None

    def decoded(self) -> Iterator[tuple[TcpRows, int]]: ...
    def progress(self) -> ReaderProgress: ...
    def apply_progress(self, progress: ReaderProgress) -> None: ...


Chunk = TypeVar("Chunk")
"""What the caller makes of a chunk's decoded rows (a packet table, columns)."""

PIPE_BYTES = 1 << 20
"""Pipe buffer asked for (Linux F_SETPIPE_SZ); fewer, larger copies between the processes."""

HEAP_TOP_PAD_BYTES = 64 * 1024 * 1024
"""glibc ``M_TOP_PAD``: heap growth kept on free, so that the chunk temporaries of
numpy reuse resident pages instead of faulting fresh ones in every chunk."""

_M_TOP_PAD = -2  # from glibc's malloc.h

_HEADER = struct.Struct("<qqq")
"""Per message: decoded rows that follow, records of the chunk, bytes of the pickled progress."""

_FIELDS = [f.name for f in dataclasses.fields(TcpRows)]
"""The int64 columns of :class:`TcpRows` sent per chunk, in this order.

Sent as they are, column after column (176 bytes per segment): narrowing
them to 96 bytes took 0.14 s per million segments in casts on the two sides,
while the parent can use the received columns without any copy."""


def forked_chunks(
    reader: ChunkSource, finish: Callable[[TcpRows, int], Chunk]
) -> Generator[Chunk, None, None]:
    """``reader.chunks()`` computed in a forked child; ``reader``'s state follows along.

    The child walks and decodes; each chunk's rows are finished here by ``finish(rows,
    records)`` (the reader's ``table`` or ``columns``: connection tracking, frame numbers).
    """
    read_fd, write_fd = os.pipe()
    _grow_pipe(write_fd)
    # SIGINT stays blocked across fork so that the child cannot take a
    # KeyboardInterrupt into the caller's code before it ignores SIGINT.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        pid = os.fork()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(read_fd)
        os.close(write_fd)
        raise
    if pid == 0:  # the child: never returns
        code = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.close(read_fd)
            _child(reader, write_fd)
            code = 0
        finally:
            os._exit(code)
    # The parent (SIGINT still blocked: nothing can interrupt these three lines).
    os.close(write_fd)
    pipe = FileIO(read_fd, "rb")
    reader.child_pid = pid
    reaped = False
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        _pad_heap()
        while True:
            try:
                rows, records, meta_len = _HEADER.unpack(_read_exact(pipe, _HEADER.size))
                wire = np.empty((len(_FIELDS), rows), dtype=np.int64)
                if rows:
                    _read_into(pipe, wire.view(np.uint8).reshape(-1).data)
                meta = _read_exact(pipe, meta_len)
            except _ChildGone:
                _, status = os.waitpid(pid, 0)
                reaped = True
                raise _died(status) from None
            progress, error, done = pickle.loads(meta)
            reader.apply_progress(progress)
            if error is not None:
                raise error
            if done:
                break
            yield finish(TcpRows(**dict(zip(_FIELDS, wire, strict=True))), records)
        os.waitpid(pid, 0)
        reaped = True
    finally:
        pipe.close()
        if not reaped:
            with contextlib.suppress(ProcessLookupError):  # already gone
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        reader.child_pid = None


def _pad_heap() -> None:
    """Ask glibc to keep :data:`HEAP_TOP_PAD_BYTES` at the top of the heap (the parent only).

    Measured: without it the analysing parent, whose allocations are all
    chunk temporaries, had its heap trimmed and regrown every chunk, about
    120k page faults per million packets and twice the analysis time.  The
    child does not need it (and in the child it made things worse: 270k
    faults, as it also freezes glibc's adaptive mmap threshold).
    """
    import ctypes

    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to tune
        ctypes.CDLL(None).mallopt(_M_TOP_PAD, HEAP_TOP_PAD_BYTES)


def _grow_pipe(fd: int) -> None:
    import fcntl

    setsize = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setsize is None:  # pragma: no cover - not Linux
        return
    with contextlib.suppress(OSError):  # a lower pipe-max-size: the default works too
        fcntl.fcntl(fd, setsize, PIPE_BYTES)


def _child(reader: ChunkSource, write_fd: int) -> None:
    """Run in the child: send every chunk's rows, then the final progress (or the error)."""
    with FileIO(write_fd, "wb") as pipe:
        error: BaseException | None = None
        try:
            for rows, records in reader.decoded():
                _send(pipe, rows, records, reader.progress(), None, done=False)
        except Exception as exc:  # every failure goes back to the parent
            error = exc if isinstance(exc, GitnetdiagError) else RuntimeError(
                "the capture reader process failed:\n" + traceback.format_exc()
            )
        _send(pipe, None, 0, reader.progress(), error, done=True)


def _send(
    pipe: FileIO,
    rows: TcpRows | None,
    records: int,
    progress: ReaderProgress,
    error: BaseException | None,
    *,
    done: bool,
) -> None:
    try:
        meta = pickle.dumps((progress, error, done), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # an exception that does not pickle
        meta = pickle.dumps((progress, RuntimeError(repr(error)), done))
    n = 0 if rows is None else len(rows.record)
    _write_all(pipe, _HEADER.pack(n, records, len(meta)))
    if rows is not None and n:
        for name in _FIELDS:
            column = np.ascontiguousarray(getattr(rows, name), dtype=np.int64)
            _write_all(pipe, column.view(np.uint8).data)
    _write_all(pipe, meta)


def _write_all(pipe: FileIO, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while len(view):
        written = pipe.write(view)
        view = view[written or 0 :]


class _ChildGone(Exception):
    """The pipe ended before the child's final message."""


def _read_into(pipe: FileIO, view: memoryview) -> None:
    got = 0
    while got < len(view):
        n = pipe.readinto(view[got:])
        if not n:
            raise _ChildGone
        got += n


def _read_exact(pipe: FileIO, size: int) -> bytes:
    buf = bytearray(size)
    if size:
        _read_into(pipe, memoryview(buf))
    return bytes(buf)


def _died(status: int) -> EnvironmentProblem:
    """The error for a child that closed the pipe without its final message."""
    if os.WIFSIGNALED(status):
        how = f"was killed by signal {os.WTERMSIG(status)}"
    else:
        how = f"exited early (status {os.waitstatus_to_exitcode(status)})"
    return EnvironmentProblem(
        f"the capture reader process {how}",
        hint="out of memory? set GITNETDIAG_PARALLEL=0 to read in one process",
    )
