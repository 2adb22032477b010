"""Reading a capture into a numpy packet table, chunk by chunk.

    with CaptureReader(path) as reader:
        for packets in reader.chunks():     # PACKET_DTYPE structured arrays
            ...
        reader.connections                  # list[Connection], grows as chunks are read
        reader.damage                       # CaptureFormatError | None

:func:`read_capture` is the one-shot form for files that fit in memory.
Memory stays bounded by the chunk size: the file is read in chunks
(``chunk_bytes``) and only one chunk's packet table exists at a time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from io import BufferedReader
from pathlib import Path
from types import TracebackType

import numpy as np
import numpy.typing as npt

from gitnetdiag.capture.decode import DecodeStats, decode_tcp
from gitnetdiag.capture.flows import Connection, ConnectionTracker
from gitnetdiag.capture.formats import DEFAULT_CHUNK_BYTES, open_walker
from gitnetdiag.errors import CaptureFormatError, InputError

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

PacketArray = npt.NDArray[np.void]


class CaptureReader:
    """Streams a pcap/pcapng file as packet-table chunks."""

    def __init__(self, path: str | os.PathLike[str], *,
                 chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> None:
        self.path = Path(path)
        try:
            self._handle: BufferedReader = open(self.path, "rb")  # noqa: SIM115 - closed in close()
        except FileNotFoundError as exc:
            raise InputError(
                f"capture file not found: {self.path}",
                hint="check the path; pass a .pcap or .pcapng file",
                reference="capture-not-found",
            ) from exc
        except IsADirectoryError as exc:
            raise InputError(
                f"{self.path} is a directory, not a capture file",
                hint="pass a .pcap or .pcapng file",
                reference="capture-not-found",
            ) from exc
        except OSError as exc:
            raise InputError(
                f"cannot open {self.path}: {exc.strerror}",
                hint="check the file's permissions",
            ) from exc
        self.file_bytes = os.fstat(self._handle.fileno()).st_size
        try:
            self._walker = open_walker(self._handle, chunk_bytes)
        except BaseException:
            self._handle.close()
            raise
        self._tracker = ConnectionTracker()
        self.stats = DecodeStats()
        self.packets_read = 0
        """TCP segments produced so far."""

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

    def chunks(self) -> Iterator[PacketArray]:
        """Yield packet tables (PACKET_DTYPE) in file order."""
        frame_base = 0
        for batch in self._walker.batches():
            rows = decode_tcp(batch, self.stats)
            conn, direction = self._tracker.assign(rows)
            out = np.empty(len(rows.record), dtype=PACKET_DTYPE)
            out["ts_ns"] = rows.ts_ns
            out["frame"] = rows.record + frame_base + 1
            out["conn"] = conn
            out["dir"] = direction
            for name in ("flags", "seq", "ack", "win_raw", "payload_len", "opt_mss",
                         "opt_wscale", "opt_sack_perm", "opt_ts_val", "opt_ts_ecr",
                         "sack_count", "sack_left", "sack_right"):
                out[name] = getattr(rows, name)
            frame_base += len(batch.data_off)
            self.packets_read += len(out)
            yield out

    def close(self) -> None:
        """Close the file."""
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
    path: str | os.PathLike[str], *, chunk_bytes: int = DEFAULT_CHUNK_BYTES, strict: bool = False
) -> CaptureRead:
    """Read a whole capture.

    With ``strict`` a damaged file raises :class:`CaptureFormatError` (whose
    ``packets_read`` says how far it got); otherwise the packets before the
    damage are returned and ``damage`` says what happened.
    """
    with CaptureReader(path, chunk_bytes=chunk_bytes) as reader:
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
