"""Reading a capture in a forked child, a few chunks ahead of the caller.

Walking, decoding and connection tracking (:meth:`CaptureReader.local_columns`)
run in a child process forked from the caller; each chunk's packet columns go
back as int64 columns in one of :data:`SLOTS` slots of memory shared by the two
processes (a chunk too large for a slot goes through the pipe instead), and a
message on a pipe says which, followed by a pickled :class:`ReaderProgress`
(statistics, damage, the connections new in the chunk). The caller analyses
chunk *i* while the child reads chunk *i+1*, so a two-core machine does both at once.

Memory stays bounded: the child blocks when every slot holds a chunk the caller
has not finished with (it hands a slot back, one byte on a second pipe, when it
asks for the next chunk), and the pipe holds at most :data:`PIPE_BYTES`.  The
tables and every reported figure are exactly those of the single-process path
(tests compare the two).

The child never outlives the caller's iteration: Ctrl-C goes to the parent
(the child ignores SIGINT), and leaving the loop for any reason, finishing
it early included, kills and reaps the child.  A child whose parent died
stops at its next write (broken pipe).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import signal
import struct
import traceback
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from io import FileIO
from typing import Protocol

import numpy as np
import numpy.typing as npt

from gitnetdiag.capture.decodestats import DecodeStats
from gitnetdiag.capture.flows import Connection
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
    packets_read: int = 0
    """TCP segments read so far."""
    new_connections: tuple[Connection, ...] = ()
    """Connections first seen since the previous report, in index order."""


class ChunkSource(Protocol):
    """What this module needs of :class:`gitnetdiag.capture.reader.CaptureReader`
    (a protocol, so that the reader imports this module and not the other way round)."""

    child_pid: int | None

    def local_columns(self) -> Iterator[Columns]: ...
    def progress(self, connections_from: int = 0) -> ReaderProgress: ...
    def apply_progress(self, progress: ReaderProgress) -> None: ...


Columns = dict[str, npt.NDArray[np.int64]]
"""A chunk as int64 columns (:data:`gitnetdiag.capture.reader.PacketColumns`)."""

PIPE_BYTES = 1 << 20
"""Pipe buffer asked for (Linux F_SETPIPE_SZ); fewer, larger copies between the processes."""

HEAP_TOP_PAD_BYTES = 64 * 1024 * 1024
"""glibc ``M_TOP_PAD``: heap growth kept on free, so that the chunk temporaries of
numpy reuse resident pages instead of faulting fresh ones in every chunk."""

_M_TOP_PAD = -2  # from glibc's malloc.h

SLOTS = 3
"""Chunks the child may be ahead of the caller, each in its own slot of shared memory."""

SLOT_BYTES = 16 * 1024 * 1024
"""Size of one slot: the 17 int64 columns of about 120,000 segments (a 4 MB chunk of
the smallest frames); only the pages a chunk fills are ever touched."""

_INLINE = -1
"""The slot number of a chunk sent through the pipe (too large for a slot)."""

_HEADER = struct.Struct("<qqq")
"""Per message: rows of the chunk, its slot (or :data:`_INLINE`: the columns follow
in the pipe), bytes of the pickled progress."""


def forked_chunks(
    reader: ChunkSource, fields: tuple[str, ...], *, borrowed: bool = False
) -> Generator[Columns, None, None]:
    """``reader.local_columns()`` computed in a forked child; ``reader``'s state follows.

    The child is forked at once, before the first chunk is asked for, so that it reads
    while the caller gets on with whatever comes first (imports, for the command line);
    closing the generator (or the reader) stops it, asked for or not.

    Each chunk's columns named in ``fields`` arrive as they are, int64 column after
    column (136 bytes per segment for the packet table's 17), in shared memory: no
    pipe copy on either side, which cost about 0.08 s per million segments (measured).
    With ``borrowed`` the columns yielded are views of the shared slot, valid until the
    next chunk is asked for (the analysis, which keeps none of them); otherwise each
    chunk is copied out and the caller may keep it.
    """
    chunks = _forked(reader, fields, borrowed)
    next(chunks)  # runs up to the fork: the child is reading from now on
    return chunks


def _forked(
    reader: ChunkSource, fields: tuple[str, ...], borrowed: bool
) -> Generator[Columns, None, None]:
    """:func:`forked_chunks`, whose first item (empty) only says the child was forked."""
    read_fd, write_fd = os.pipe()
    free_read, free_write = os.pipe()
    _grow_pipe(write_fd)
    shared = mmap.mmap(-1, SLOTS * SLOT_BYTES)
    # SIGINT stays blocked across fork so that the child cannot take a
    # KeyboardInterrupt into the caller's code before it ignores SIGINT.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        pid = os.fork()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for fd in (read_fd, write_fd, free_read, free_write):
            os.close(fd)
        shared.close()
        raise
    if pid == 0:  # the child: never returns
        code = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.close(read_fd)
            os.close(free_write)
            _child(reader, fields, write_fd, _Slots(shared, free_read))
            code = 0
        finally:
            os._exit(code)
    # The parent (SIGINT still blocked: nothing can interrupt these lines).
    os.close(write_fd)
    os.close(free_read)
    pipe = FileIO(read_fd, "rb")
    reader.child_pid = pid
    reaped = False
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        _pad_heap()
        yield {}  # forked (taken by forked_chunks)
        while True:
            try:
                rows, slot, meta_len = _HEADER.unpack(_read_exact(pipe, _HEADER.size))
                wire = _received(pipe, shared, slot, (len(fields), rows), borrowed=borrowed)
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
            yield dict(zip(fields, wire, strict=True))
            if slot != _INLINE:
                del wire
                with contextlib.suppress(OSError):  # the child is gone: the pipe says so
                    os.write(free_write, b"\x01")
        os.waitpid(pid, 0)
        reaped = True
    finally:
        pipe.close()
        os.close(free_write)
        if not reaped:
            with contextlib.suppress(ProcessLookupError):  # already gone
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        reader.child_pid = None
        with contextlib.suppress(BufferError):  # a caller still holds a borrowed chunk
            shared.close()


def _received(pipe: FileIO, shared: mmap.mmap, slot: int, shape: tuple[int, int], *,
              borrowed: bool) -> npt.NDArray[np.int64]:
    """A chunk's columns (one row per field): from its slot, or read from the pipe."""
    if slot == _INLINE:
        wire = np.empty(shape, dtype=np.int64)
        if shape[1]:
            _read_into(pipe, wire.view(np.uint8).reshape(-1).data)
        return wire
    count = shape[0] * shape[1]
    view = np.frombuffer(shared, dtype=np.int64, count=count, offset=slot * SLOT_BYTES)
    view = view.reshape(shape)
    return view if borrowed else view.copy()


class _Slots:
    """The child's side of the shared slots: which one to fill next, waiting for the
    caller to hand one back when all are taken."""

    def __init__(self, shared: mmap.mmap, free_fd: int) -> None:
        self.shared = shared
        self.free_fd = free_fd
        self.used = 0

    def put(self, columns: list[npt.NDArray[np.int64]]) -> int:
        """Copy ``columns`` into the next slot and return its number; :data:`_INLINE`
        when they do not fit (the caller sends them through the pipe)."""
        rows = len(columns[0]) if columns else 0
        if not rows or len(columns) * rows * 8 > SLOT_BYTES:
            return _INLINE
        if self.used >= SLOTS and not os.read(self.free_fd, 1):
            raise BrokenPipeError("the caller is gone")
        slot = self.used % SLOTS
        self.used += 1
        out = np.frombuffer(self.shared, dtype=np.int64, count=len(columns) * rows,
                            offset=slot * SLOT_BYTES).reshape(len(columns), rows)
        for target, column in zip(out, columns, strict=True):
            np.copyto(target, column, casting="unsafe")
        return slot


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


def _child(reader: ChunkSource, fields: tuple[str, ...], write_fd: int, slots: _Slots) -> None:
    """Run in the child: send every chunk's columns, then the final progress (or the
    error)."""
    with FileIO(write_fd, "wb") as pipe:
        error: BaseException | None = None
        reported = 0
        try:
            for columns in reader.local_columns():
                progress = reader.progress(reported)
                reported += len(progress.new_connections)
                chunk = [columns[name] for name in fields]
                _send(pipe, chunk, slots.put(chunk), progress, None, done=False)
        except Exception as exc:  # every failure goes back to the parent
            error = exc if isinstance(exc, GitnetdiagError) else RuntimeError(
                "the capture reader process failed:\n" + traceback.format_exc()
            )
        _send(pipe, [], _INLINE, reader.progress(reported), error, done=True)


def _send(
    pipe: FileIO,
    columns: list[npt.NDArray[np.int64]],
    slot: int,
    progress: ReaderProgress,
    error: BaseException | None,
    *,
    done: bool,
) -> None:
    try:
        meta = pickle.dumps((progress, error, done), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # an exception that does not pickle
        meta = pickle.dumps((progress, RuntimeError(repr(error)), done))
    n = len(columns[0]) if columns else 0
    _write_all(pipe, _HEADER.pack(n, slot, len(meta)))
    if n and slot == _INLINE:
        for column in columns:
            _write_all(pipe, np.ascontiguousarray(column, dtype=np.int64).view(np.uint8).data)
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
