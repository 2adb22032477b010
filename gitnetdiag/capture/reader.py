"""Reading a capture into a numpy packet table, chunk by chunk.

    with CaptureReader(path) as reader:
        for packets in reader.chunks():     # PACKET_DTYPE structured arrays
            ...
        reader.connections                  # list[Connection], grows as chunks are read
        reader.damage                       # CaptureFormatError | None

:func:`read_capture` is the one-shot form for files that fit in memory.
Memory stays bounded by the chunk size: the file is read in chunks
(``chunk_bytes``) and only one chunk's packet table exists at a time.

A large file (over :data:`PARALLEL_MIN_BYTES`) is read in a forked child
process (:mod:`gitnetdiag.capture.forked`) so that walking, decoding and
connection tracking of the next chunk overlap with whatever the caller does
with the current one; the tables and everything the reader reports are the
same either way.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from io import BufferedReader
from pathlib import Path
from types import TracebackType

import numpy as np
import numpy.typing as npt

from gitnetdiag.capture.compressed import capture_stream
from gitnetdiag.capture.decode import TcpRows, decode_tcp
from gitnetdiag.capture.decodestats import DecodeStats
from gitnetdiag.capture.flows import Connection, ConnectionTracker
from gitnetdiag.capture.forked import PacketArray, ReaderProgress, forked_chunks
from gitnetdiag.capture.formats import DEFAULT_CHUNK_BYTES, open_walker
from gitnetdiag.errors import CaptureFormatError, GitnetdiagError, InputError
from gitnetdiag.inputfile import open_regular

PACKET_DTYPE = np.dtype(
    [
        ("ts_ns", "<i8"),  # capture time, ns since the epoch
        ("frame", "<i8"),  # frame number, 1-based as Wireshark counts (all records)
        ("conn", "<i4"),  # connection index into the connection table
        ("dir", "u1"),  # 0 = sent by the initiator, 1 = by the other side
        ("flags", "<u2"),  # TCP flags, FIN = 0x01 ... ACK = 0x10, NS = 0x100
        ("seq", "<u4"),  # sequence number (raw, not relative)
        ("ack", "<u4"),  # acknowledgement number (raw)
        ("win_raw", "<u2"),  # window field as sent, before scaling
        ("payload_len", "<u4"),  # TCP payload bytes from the IP length fields
        ("opt_mss", "<i4"),  # MSS option, -1 when absent
        ("opt_wscale", "i1"),  # window scale shift, -1 when absent
        ("opt_sack_perm", "u1"),  # 1 when SACK-permitted is present
        ("opt_ts_val", "<u4"),  # timestamp option TSval (0 when absent)
        ("opt_ts_ecr", "<u4"),  # timestamp option TSecr
        ("sack_count", "u1"),  # number of SACK blocks
        ("sack_left", "<u4"),  # left edge of the first SACK block
        ("sack_right", "<u4"),  # right edge of the first SACK block
    ]
)
"""One row per TCP segment."""

PacketColumns = dict[str, npt.NDArray[np.int64]]
"""A chunk as int64 columns named like the fields of :data:`PACKET_DTYPE`."""

_ROW_FIELDS = ("ts_ns", "flags", "seq", "ack", "win_raw", "payload_len", "opt_mss",
               "opt_wscale", "opt_sack_perm", "opt_ts_val", "opt_ts_ecr", "sack_count",
               "sack_left", "sack_right")
"""The table's fields taken as they are from the decoded rows."""

PARALLEL_MIN_BYTES = 32 * 1024 * 1024
"""Files larger than this are read in a forked child process (when there is a spare core)."""

PARALLEL_ENV = "GITNETDIAG_PARALLEL"
"""Environment variable: ``0`` never reads in a child process, ``1`` always does."""

_AHEAD: dict[tuple[str, tuple[str, ...]],
             tuple[CaptureReader, Generator[PacketColumns, None, None]]] = {}
"""Captures whose forked reading :func:`read_ahead` started, by path and fields."""


def use_parallel(file_bytes: int, parallel: bool | None = None) -> bool:
    """Whether a file of ``file_bytes`` is read in a forked child.

    ``parallel`` forces the choice; otherwise :data:`PARALLEL_ENV` does, and
    otherwise files over :data:`PARALLEL_MIN_BYTES` are, when this process
    may run on more than one CPU.
    """
    if not sys.platform.startswith("linux"):  # fork + numpy elsewhere: not worth the risk
        return False
    if parallel is not None:
        return parallel
    forced = os.environ.get(PARALLEL_ENV, "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return file_bytes > PARALLEL_MIN_BYTES and (cpus or 1) > 1


def read_ahead(path: Path, fields: tuple[str, ...]) -> None:
    """Start reading ``path`` in a forked child now, when it is a capture large enough
    for one (:func:`use_parallel`), for :func:`take_read_ahead` to hand over later
    (chunks borrowed, with ``fields``: see :meth:`CaptureReader.column_chunks`).

    The command line calls it before importing the analysis and the renderers (about
    40 ms), which the child's reading then overlaps. Anything wrong with the file is
    left for the analysis to report as usual: here it only means no reading ahead.
    """
    key = (os.fspath(path), fields)
    if key in _AHEAD:
        return
    try:
        reader = CaptureReader(path)
    except (GitnetdiagError, OSError):
        return
    if not reader.parallel:
        reader.close()
        return
    try:
        chunks = reader.column_chunks(borrowed=True, fields=fields)
    except OSError:  # no fork now (out of processes or memory): the analysis tries again
        reader.close()
        return
    if not _AHEAD:
        import atexit

        atexit.register(_close_ahead)  # a command stopped before the analysis: no child left
    _AHEAD[key] = (reader, chunks)


def take_read_ahead(
    path: str | os.PathLike[str], fields: tuple[str, ...]
) -> tuple[CaptureReader, Generator[PacketColumns, None, None]] | None:
    """The reader :func:`read_ahead` started for ``path`` and ``fields``, and its chunks
    (borrowed), or None; the caller closes the reader."""
    return _AHEAD.pop((os.fspath(Path(path)), fields), None)


def _close_ahead() -> None:
    while _AHEAD:
        _, (reader, _chunks) = _AHEAD.popitem()
        reader.close()


def _not_a_capture(message: str) -> GitnetdiagError:
    return InputError(message, hint="pass a .pcap or .pcapng file (tcpdump -w, dumpcap)",
                      reference="not-a-regular-file")


def open_capture(path: Path) -> BufferedReader:
    """A capture file opened for reading: a regular file (a FIFO, device or directory
    is one error at once, never a blocking read)."""
    try:
        return open_regular(path, error=_not_a_capture)
    except FileNotFoundError as exc:
        raise InputError(
            f"capture file not found: {path}",
            hint="check the path; pass a .pcap or .pcapng file",
            reference="capture-not-found",
        ) from exc


class CaptureReader:
    """Streams a pcap/pcapng file as packet-table chunks."""

    def __init__(self, path: str | os.PathLike[str], *,
                 chunk_bytes: int = DEFAULT_CHUNK_BYTES, parallel: bool | None = None) -> None:
        self.path = Path(path)
        self._handle = open_capture(self.path)
        self.file_bytes = os.fstat(self._handle.fileno()).st_size
        self.parallel = use_parallel(self.file_bytes, parallel)
        """Whether :meth:`chunks` reads in a forked child process."""
        try:
            self._walker = open_walker(capture_stream(self._handle), chunk_bytes)
        except BaseException:
            self._handle.close()
            raise
        self._tracker = ConnectionTracker()
        self.stats = DecodeStats()
        self.packets_read = 0
        """TCP segments produced so far."""
        self._frame_base = 0
        self._forked: Generator[object, None, None] | None = None
        self.child_pid: int | None = None
        """The forked child reading ahead, while :meth:`chunks` is running in parallel."""

    @property
    def connections(self) -> list[Connection]:
        """Connections seen so far, indexed by the ``conn`` column."""
        return self._tracker.connections

    @property
    def has_tls_secrets(self) -> bool:
        """Whether the file carries TLS decryption secrets (a pcapng DSB)."""
        return self._walker.has_tls_secrets

    @property
    def damage(self) -> CaptureFormatError | None:
        """Where the file was damaged, once the walk has stopped there."""
        return self._walker.damage

    def chunks(self) -> Generator[PacketArray, None, None]:
        """Yield packet tables (PACKET_DTYPE) in file order."""
        source = self.column_chunks(borrowed=True)  # each one is copied into its table
        try:
            for columns in source:
                yield self.table(columns)
        finally:
            source.close()  # leaving the loop early stops a forked child at once

    def column_chunks(
        self, *, borrowed: bool = False, fields: tuple[str, ...] | None = None
    ) -> Generator[PacketColumns, None, None]:
        """:meth:`chunks` as int64 columns (:meth:`columns`): the same rows and values,
        without packing them into a table that the analysis would unpack again.

        ``borrowed``: the caller is done with each chunk when it asks for the next one,
        so a forked reader may hand over its shared memory as it is, without a copy
        (see :func:`~gitnetdiag.capture.forked.forked_chunks`). ``fields``: the caller
        reads only these (a forked reader sends only these; others may be there too)."""
        if self.parallel:
            self._close_forked()
            forked = forked_chunks(self, fields or PACKET_DTYPE.names or (), borrowed=borrowed)
            self._forked = forked
            return forked
        return self.local_columns()

    def _close_forked(self) -> None:
        if self._forked is not None:
            self._forked.close()  # kills and reaps the child if it still runs
            self._forked = None

    def progress(self, connections_from: int = 0) -> ReaderProgress:
        """What the walk, the decoder and the tracker learnt so far, besides the rows
        (the connections from index ``connections_from`` on)."""
        return ReaderProgress(
            stats=self.stats,
            damage=self._walker.damage,
            has_tls_secrets=self._walker.has_tls_secrets,
            packets_read=self.packets_read,
            new_connections=tuple(self.connections[connections_from:]),
        )

    def apply_progress(self, progress: ReaderProgress) -> None:
        """Take over what a forked reader reported."""
        self.stats = progress.stats
        self._walker.damage = progress.damage
        self._walker.has_tls_secrets = progress.has_tls_secrets
        self.packets_read = progress.packets_read
        self._tracker.connections.extend(progress.new_connections)

    def local_columns(self) -> Generator[PacketColumns, None, None]:
        """:meth:`column_chunks`, always in this process (the part a forked child does)."""
        for rows, records in self.decoded():
            yield self.columns(rows, records)

    def decoded(self) -> Iterator[tuple[TcpRows, int]]:
        """Per chunk: its decoded TCP segments and how many records it held (walk and
        decode, no state but the walker's)."""
        for batch in self._walker.batches():
            yield decode_tcp(batch, self.stats), len(batch.data_off)

    @staticmethod
    def table(columns: PacketColumns) -> PacketArray:
        """A chunk's columns packed into a packet table (PACKET_DTYPE)."""
        out = np.empty(len(columns["frame"]), dtype=PACKET_DTYPE)
        for name in PACKET_DTYPE.names or ():
            out[name] = columns[name]
        return out

    def columns(self, rows: TcpRows, records: int) -> PacketColumns:
        """Connection tracking and frame numbers of one chunk: every field of
        :data:`PACKET_DTYPE`, each an int64 array (the decoded rows themselves, no copy)
        holding exactly the table's values (each decoded field fits its table type)."""
        conn, direction = self._tracker.assign(rows)
        out = {name: getattr(rows, name) for name in _ROW_FIELDS}
        out["frame"] = rows.record + self._frame_base + 1
        out["conn"] = conn
        out["dir"] = direction
        self._frame_base += records
        self.packets_read += len(rows.record)
        return out

    def close(self) -> None:
        """Close the file (and stop a forked child that still reads ahead)."""
        try:
            self._close_forked()
        finally:
            self._handle.close()

    def __enter__(self) -> CaptureReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


@dataclass(frozen=True, kw_only=True)
class CaptureRead:
    """A whole capture read into memory."""

    packets: PacketArray
    """Every TCP segment read (PACKET_DTYPE), in file order."""
    connections: list[Connection]
    """Connection table, indexed by the ``conn`` column."""
    stats: DecodeStats
    """Records that were not TCP segments, short frames, fragments."""
    damage: CaptureFormatError | None
    """The damage that stopped reading early, if any."""

    @property
    def truncated_at(self) -> int | None:
        """Byte offset of the damage, or None for a clean file."""
        return None if self.damage is None else self.damage.offset

    @property
    def warning(self) -> str | None:
        """One line describing the damage, or None."""
        if self.damage is None:
            return None
        return (
            f"{self.damage.message}; analysed the {len(self.packets)} TCP segments "
            "read before it"
        )

    def raise_for_damage(self) -> None:
        """Raise the damage as CaptureFormatError if there was any."""
        if self.damage is not None:
            raise self.damage


def read_capture(
    path: str | os.PathLike[str],
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    strict: bool = False,
    parallel: bool | None = None,
) -> CaptureRead:
    """Read a whole capture.

    With ``strict`` a damaged file raises :class:`CaptureFormatError` (whose
    ``packets_read`` says how far it got); otherwise the packets before the
    damage are returned and ``damage`` says what happened.  ``parallel``
    forces reading in a forked child on or off (see :func:`use_parallel`).
    """
    with CaptureReader(path, chunk_bytes=chunk_bytes, parallel=parallel) as reader:
        parts = list(reader.chunks())
        packets = np.concatenate(parts) if parts else np.empty(0, dtype=PACKET_DTYPE)
        result = CaptureRead(
            packets=packets,
            connections=list(reader.connections),
            stats=reader.stats,
            damage=reader.damage,
        )
    if strict:
        result.raise_for_damage()
    return result
