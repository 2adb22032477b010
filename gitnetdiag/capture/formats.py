"""Walking pcap and pcapng files record by record, in bounded chunks.

The walk itself (one record header after another) is inherently sequential,
so it is a tight loop that only collects record offsets (for pcap, one that
guesses ahead where record sizes repeat, :mod:`~gitnetdiag.capture.pcapwalk`); every
other header field is then gathered for the whole chunk at once with numpy
fancy indexing.  A walker yields :class:`RecordBatch` values whose ``buf``
is a numpy view of the chunk buffer; the batch is only valid until the next
one is produced.

Damage (a bad magic number, a record length that cannot be right, a file
cut in the middle of a record) stops the walk: everything before it has
already been yielded, and the walker's ``damage`` attribute then holds the
:class:`~gitnetdiag.errors.CaptureFormatError` describing it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from gitnetdiag.capture.compressed import CaptureStream
from gitnetdiag.capture.pcapwalk import walk_records
from gitnetdiag.errors import CaptureFormatError

DEFAULT_CHUNK_BYTES = 4 * 1024 * 1024
"""How much of the file is held in memory at once.

Measured on 1M packets: 4 MB chunks are as fast as 32 MB ones in one process
and faster when a forked child reads ahead (the pipeline fills sooner and the
temporaries stay in cache).  Analysis results depend on the chunk size only
through the documented per-boundary approximation of the limit shares."""

PAD = 256
"""Zero bytes kept after every chunk (see :class:`_ChunkedFile`)."""

MAX_RECORD_BYTES = 256 * 1024 * 1024
"""A single record larger than this is taken as damage, not as a packet."""

PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D
PCAPNG_SHB = 0x0A0D0D0A
PCAPNG_BOM = 0x1A2B3C4D

_BLOCK_IDB = 1
_BLOCK_OPB = 2
_BLOCK_SPB = 3
_BLOCK_EPB = 6
_BLOCK_DSB = 0x0A

U8Array = npt.NDArray[np.uint8]
I64Array = npt.NDArray[np.int64]


@dataclass(frozen=True, kw_only=True)
class RecordBatch:
    """Packet records of one chunk, as parallel arrays."""

    buf: U8Array
    """The chunk's bytes; the offsets below index into it."""
    data_off: I64Array
    """Offset in ``buf`` of each record's first captured byte."""
    caplen: I64Array
    """Captured bytes of each record."""
    origlen: I64Array
    """Length of the packet on the wire."""
    ts_ns: I64Array
    """Capture time, nanoseconds since the epoch."""
    linktype: I64Array
    """Link-layer type (LINKTYPE_*) of each record's interface."""
    bad_fraction: I64Array = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Records (indices) whose sub-second field is out of range (pcap only)."""


def u16(buf: U8Array, idx: I64Array, *, big: bool) -> I64Array:
    """Unsigned 16-bit values at byte offsets ``idx``."""
    a = buf[idx].astype(np.int64)
    b = buf[idx + 1].astype(np.int64)
    return (a << 8) | b if big else (b << 8) | a


def u32(buf: U8Array, idx: I64Array, *, big: bool) -> I64Array:
    """Unsigned 32-bit values at byte offsets ``idx``."""
    b0 = buf[idx].astype(np.int64)
    b1 = buf[idx + 1].astype(np.int64)
    b2 = buf[idx + 2].astype(np.int64)
    b3 = buf[idx + 3].astype(np.int64)
    if big:
        return (b0 << 24) | (b1 << 16) | (b2 << 8) | b3
    return (b3 << 24) | (b2 << 16) | (b1 << 8) | b0


class _ChunkedFile:
    """A file read in chunks into one reused buffer, keeping the unread tail.

    ``data`` has :data:`PAD` spare bytes beyond ``size`` so that fixed-width
    header windows of the last records never run off the end (their content
    there is stale and never trusted: every field is checked against caplen).
    """

    def __init__(self, handle: CaptureStream, start: int, chunk_bytes: int) -> None:
        self.handle = handle
        self.chunk_bytes = chunk_bytes
        self.base = start
        """File offset of ``data[0]``."""
        self.data = bytearray(chunk_bytes + PAD)
        self.size = 0
        """Valid bytes in ``data``."""
        self.eof = False
        self.error: CaptureFormatError | None = None
        """Why the data ended early (a damaged compressed stream), once it has."""
        handle.seek(start)

    def refill(self, consumed: int, need: int = 0) -> None:
        """Drop ``consumed`` bytes and read more (at least ``need`` bytes if possible)."""
        tail = self.size - consumed
        self.base += consumed
        want = max(self.chunk_bytes, need)
        if want + PAD > len(self.data):
            grown = bytearray(want + PAD)
            grown[:tail] = self.data[consumed : self.size]
            self.data = grown
        elif tail:
            self.data[:tail] = self.data[consumed : self.size]
        view = memoryview(self.data)
        got = 0
        try:
            while not self.eof and tail + got < want:
                n = self.handle.readinto(view[tail + got : want])
                if not n:
                    self.eof = True
                got += n or 0
        except CaptureFormatError as exc:  # a compressed stream ends in damage
            self.eof = True
            self.error = exc
        finally:
            view.release()
        self.size = tail + got


class PcapWalker:
    """Records of a classic pcap file (micro- or nanosecond, either byte order)."""

    def __init__(self, handle: CaptureStream, header: bytes, chunk_bytes: int) -> None:
        if len(header) < 24:
            raise CaptureFormatError(
                "the pcap file header is cut short",
                hint="the file is incomplete; capture again",
                offset=len(header),
            )
        magic_le = struct.unpack_from("<I", header)[0]
        if magic_le in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
            self.big = False
            magic = magic_le
        else:
            self.big = True
            magic = struct.unpack_from(">I", header)[0]
        self.ns = magic == PCAP_MAGIC_NS
        order = ">" if self.big else "<"
        self.snaplen = struct.unpack_from(order + "I", header, 16)[0]
        self.linktype = struct.unpack_from(order + "I", header, 20)[0] & 0xFFFF
        self.handle = handle
        self.chunk_bytes = chunk_bytes
        self.damage: CaptureFormatError | None = None
        self.has_tls_secrets = False
        self.packets_seen = 0
        self.max_record = max(self.snaplen, 262144) if self.snaplen else MAX_RECORD_BYTES

    def batches(self) -> Iterator[RecordBatch]:
        """Yield the records chunk by chunk."""
        src = _ChunkedFile(self.handle, 24, self.chunk_bytes)
        src.refill(0)
        max_record = min(self.max_record, MAX_RECORD_BYTES)
        while True:
            data = src.data
            end = src.size
            # Only lengths are followed here (guessing ahead where sizes repeat:
            # :mod:`gitnetdiag.capture.pcapwalk`); they are checked afterwards, at once.
            offs, off = walk_records(data, 0, end, big=self.big)
            need = 0
            if off > end:
                last = int(offs[-1])
                offs = offs[:-1]
                need = off - last
                off = last
            damage: CaptureFormatError | None = None
            batch = self._batch(data, offs) if len(offs) else None
            bad_incl = need - 16 if need - 16 > max_record else None
            if batch is not None:
                bad = np.flatnonzero(batch.caplen > max_record)
                if len(bad):
                    cut = int(bad[0])
                    bad_incl = int(batch.caplen[cut])
                    off = int(offs[cut])
                    batch = _slice_batch(batch, cut)
            if bad_incl is not None:
                damage = CaptureFormatError(
                    f"pcap record claims {bad_incl} captured bytes (snaplen {self.snaplen})",
                    hint="the file is damaged; the packets before this point were kept",
                    offset=src.base + off,
                    packets_read=self.packets_seen + (len(batch.data_off) if batch else 0),
                )
            if batch is not None and len(batch.data_off):
                yield batch
                self.packets_seen += len(batch.data_off)
            if damage is not None:
                self.damage = damage
                return
            if src.eof:
                if src.error is not None:
                    self.damage = _stream_damage(src.error, self.packets_seen)
                elif off < end:
                    self.damage = CaptureFormatError(
                        "the capture ends in the middle of a packet record",
                        hint="the capture was cut short (tcpdump killed?); "
                        "the packets before this point were kept",
                        offset=src.base + off,
                        packets_read=self.packets_seen,
                    )
                return
            src.refill(off, need)

    def _batch(self, data: bytearray, rec: I64Array) -> RecordBatch:
        buf = np.frombuffer(data, dtype=np.uint8)
        words = header_words(buf, rec, 4, big=self.big)
        frac = words[:, 1]
        ts_ns = words[:, 0] * 1_000_000_000 + (frac if self.ns else frac * 1000)
        # Out-of-range fractions are kept as written (they carry into the
        # seconds, as in Wireshark) but reported: the writer was broken.
        bad_fraction = np.flatnonzero(frac >= (1_000_000_000 if self.ns else 1_000_000))
        return RecordBatch(
            buf=buf,
            data_off=rec + 16,
            caplen=words[:, 2],
            origlen=words[:, 3],
            ts_ns=ts_ns,
            linktype=np.full(len(rec), self.linktype, dtype=np.int64),
            bad_fraction=bad_fraction,
        )


def _stream_damage(error: CaptureFormatError, packets: int) -> CaptureFormatError:
    error.packets_read = packets
    return error


def _slice_batch(batch: RecordBatch, stop: int) -> RecordBatch:
    return RecordBatch(
        buf=batch.buf,
        data_off=batch.data_off[:stop],
        caplen=batch.caplen[:stop],
        origlen=batch.origlen[:stop],
        ts_ns=batch.ts_ns[:stop],
        linktype=batch.linktype[:stop],
        bad_fraction=batch.bad_fraction[batch.bad_fraction < stop],
    )


def header_words(buf: U8Array, offsets: I64Array, count: int, *, big: bool) -> I64Array:
    """``count`` consecutive 32-bit words at each offset, as an (n, count) int64 matrix."""
    width = 4 * count
    usable = len(buf) - width + 1
    if usable <= 0 or len(offsets) == 0:
        return np.zeros((len(offsets), count), dtype=np.int64)
    # One ``width``-byte item starting at every byte: the gather copies one item per row.
    items = np.ndarray((usable,), dtype=f"V{width}", buffer=buf, strides=(1,))
    rows = items[np.minimum(offsets, usable - 1)]
    return rows.view(">u4" if big else "<u4").reshape(len(offsets), count).astype(np.int64)


@dataclass
class _BlockScan:
    """What :meth:`PcapngWalker._scan` found in the buffered data."""

    offs: list[int] = field(default_factory=list)
    """Offsets of the packet blocks."""
    kinds: list[int] = field(default_factory=list)
    """Their block types."""
    off: int = 0
    """Where the scan stopped: the first block not taken."""
    need: int = 0
    """Length of the block cut by the end of the buffer (0 when none is)."""
    section_changed: bool = False
    """A new section starts at ``off`` (after packet blocks of the previous one)."""
    damage: CaptureFormatError | None = None
    """Damage found at ``off``."""


@dataclass
class _Interface:
    linktype: int
    snaplen: int
    tsresol_exp: int = 6
    """Resolution exponent: 10**-n (or 2**-n when ``tsresol_base2``)."""
    tsresol_base2: bool = False
    tsoffset_s: int = 0


def _ticks_to_ns(ticks: I64Array, iface: _Interface) -> I64Array:
    n = iface.tsresol_exp
    if iface.tsresol_base2:
        whole = ticks >> n
        frac = ticks & ((1 << n) - 1)
        ns = whole * 1_000_000_000 + ((frac * 1_000_000_000) >> n if n <= 30 else
                                      (frac >> (n - 30)) * 1_000_000_000 >> 30)
    elif n <= 9:
        ns = ticks * (10 ** (9 - n))
    elif n - 9 <= 18:
        ns = ticks // (10 ** (n - 9))
    else:
        # A tick under 10**-28 s: every int64 count is below one nanosecond (and
        # 10**(n - 9) would not fit an int64 divisor).
        ns = ticks * 0
    return ns + iface.tsoffset_s * 1_000_000_000


class PcapngWalker:
    """Records of a pcapng file: SHB (either byte order), IDB, EPB, SPB, OPB.

    Other blocks (name resolution, statistics, decryption secrets, custom)
    are skipped.  Each interface keeps its own link type and timestamp
    resolution.
    """

    def __init__(self, handle: CaptureStream, chunk_bytes: int) -> None:
        self.handle = handle
        self.chunk_bytes = chunk_bytes
        self.damage: CaptureFormatError | None = None
        self.has_tls_secrets = False
        """A decryption secrets block was seen (``editcap --inject-secrets``)."""
        self.packets_seen = 0
        self.big = False
        self.interfaces: list[_Interface] = []

    def _fail(self, message: str, offset: int, packets: int) -> CaptureFormatError:
        return CaptureFormatError(
            message,
            hint="the file is damaged; the packets before this point were kept",
            offset=offset,
            packets_read=packets,
        )

    def batches(self) -> Iterator[RecordBatch]:
        """Yield the records chunk by chunk."""
        src = _ChunkedFile(self.handle, 0, self.chunk_bytes)
        src.refill(0)
        last_ts = 0
        while True:
            scan = self._scan(src)
            damage = scan.damage
            if scan.offs:
                batch, bad_at, last_ts = self._batch(src.data, scan.offs, scan.kinds, last_ts)
                if bad_at is not None:
                    damage = self._fail(
                        "pcapng packet block names an interface that was never described "
                        "or has a captured length beyond its block",
                        src.base + scan.offs[bad_at], self.packets_seen + bad_at,
                    )
                if len(batch.data_off):
                    yield batch
                self.packets_seen += len(batch.data_off)
            if damage is not None:
                self.damage = damage
                return
            if scan.section_changed:
                src.refill(scan.off)
                continue
            if src.eof:
                if src.error is not None:
                    self.damage = _stream_damage(src.error, self.packets_seen)
                elif scan.off < src.size:
                    self.damage = self._fail(
                        "the capture ends in the middle of a pcapng block",
                        src.base + scan.off, self.packets_seen,
                    )
                return
            src.refill(scan.off, scan.need)

    def _scan(self, src: _ChunkedFile) -> _BlockScan:
        """Follow the blocks of the buffered data: where the packet blocks are, interfaces
        and secrets taken in on the way; stops at a new section, a cut block or damage."""
        data, end = src.data, src.size
        scan = _BlockScan()
        order = ">" if self.big else "<"
        while scan.off + 12 <= end:
            off = scan.off
            btype, blen = struct.unpack_from(order + "II", data, off)
            if btype == PCAPNG_SHB:
                if scan.offs:
                    scan.section_changed = True
                    return scan
                if not self._section_header(data, off):
                    scan.damage = self._fail(
                        "pcapng section header has no valid byte-order magic",
                        src.base + off, self.packets_seen,
                    )
                    return scan
                order = ">" if self.big else "<"
                blen = struct.unpack_from(order + "I", data, off + 4)[0]
            problem = None
            if blen < 12 or blen % 4 or blen > MAX_RECORD_BYTES:
                problem = f"pcapng block of type {btype:#x} has an impossible length {blen}"
            elif off + blen > end:
                scan.need = blen
                return scan
            elif struct.unpack_from(order + "I", data, off + blen - 4)[0] != blen:
                problem = f"pcapng block of type {btype:#x}: trailing length does not match"
            else:
                problem = self._take_block(data, off, btype, blen, order, scan)
            if problem is not None:
                scan.damage = self._fail(problem, src.base + off,
                                         self.packets_seen + len(scan.offs))
                return scan
            scan.off = off + blen
        return scan

    def _section_header(self, data: bytearray, off: int) -> bool:
        """Take the byte order of a section header block; False when it has none."""
        if struct.unpack_from("<I", data, off + 8)[0] == PCAPNG_BOM:
            self.big = False
        elif struct.unpack_from(">I", data, off + 8)[0] == PCAPNG_BOM:
            self.big = True
        else:
            return False
        self.interfaces = []
        return True

    def _take_block(self, data: bytearray, off: int, btype: int, blen: int, order: str,
                    scan: _BlockScan) -> str | None:
        """Note one whole block in ``scan`` (or in the walker); what is wrong with it, if
        anything."""
        if btype in (_BLOCK_EPB, _BLOCK_OPB, _BLOCK_SPB):
            if not self.interfaces:
                return "pcapng packet block before any interface description"
            if blen < (16 if btype == _BLOCK_SPB else 32):
                return "pcapng packet block too short"
            scan.offs.append(off)
            scan.kinds.append(btype)
        elif btype == _BLOCK_DSB:
            self.has_tls_secrets = True
        elif btype == _BLOCK_IDB:
            iface = self._parse_idb(data, off, blen, order)
            if iface is None:
                return "pcapng interface description block is malformed"
            self.interfaces.append(iface)
        return None

    def _parse_idb(self, data: bytearray, off: int, blen: int, order: str) -> _Interface | None:
        if blen < 20:
            return None
        linktype, _reserved, snaplen = struct.unpack_from(order + "HHI", data, off + 8)
        iface = _Interface(linktype=linktype, snaplen=snaplen)
        pos = off + 16
        stop = off + blen - 4
        while pos + 4 <= stop:
            code, length = struct.unpack_from(order + "HH", data, pos)
            if code == 0:
                break
            value_at = pos + 4
            if value_at + length > stop:
                return None
            if code == 9 and length >= 1:
                raw = data[value_at]
                iface.tsresol_base2 = bool(raw & 0x80)
                iface.tsresol_exp = raw & 0x7F
                if iface.tsresol_exp > 63:
                    return None
            elif code == 14 and length >= 8:
                iface.tsoffset_s = struct.unpack_from(order + "q", data, value_at)[0]
            pos = value_at + ((length + 3) & ~3)
        return iface

    def _batch(
        self, data: bytearray, offs: list[int], kinds: list[int], last_ts: int
    ) -> tuple[RecordBatch, int | None, int]:
        buf = np.frombuffer(data, dtype=np.uint8)
        big = self.big
        off = np.asarray(offs, dtype=np.int64)
        kind = np.asarray(kinds, dtype=np.int64)
        blen = u32(buf, off + 4, big=big)
        is_spb = kind == _BLOCK_SPB
        word8 = u32(buf, off + 8, big=big)
        iface_id = np.where(
            kind == _BLOCK_OPB, (word8 >> 16) if big else (word8 & 0xFFFF), word8
        )
        iface_id[is_spb] = 0
        n_if = len(self.interfaces)
        snap = np.array([i.snaplen or MAX_RECORD_BYTES for i in self.interfaces], dtype=np.int64)
        safe_if = np.minimum(iface_id, n_if - 1)
        spb_orig = word8
        caplen = np.where(
            is_spb,
            np.minimum(np.minimum(spb_orig, blen - 16), snap[safe_if]),
            u32(buf, np.minimum(off + 20, len(buf) - 4), big=big),
        )
        origlen = np.where(is_spb, spb_orig, u32(buf, np.minimum(off + 24, len(buf) - 4), big=big))
        header = np.where(is_spb, 12, 28)
        bad = (iface_id >= n_if) | (caplen > blen - header - 4) | (caplen < 0)
        bad_at: int | None = None
        if bad.any():
            bad_at = int(np.argmax(bad))
            keep = slice(0, bad_at)
            off, kind, iface_id, caplen, origlen, header, is_spb = (
                off[keep], kind[keep], iface_id[keep], caplen[keep], origlen[keep],
                header[keep], is_spb[keep],
            )
        ticks = (u32(buf, off + 12, big=big) << 32) | u32(buf, off + 16, big=big)
        ts_ns = np.zeros(len(off), dtype=np.int64)
        linktype = np.zeros(len(off), dtype=np.int64)
        for idx, iface in enumerate(self.interfaces):
            sel = iface_id == idx
            if sel.any():
                ts_ns[sel] = _ticks_to_ns(ticks[sel], iface)
                linktype[sel] = iface.linktype
        if is_spb.any():
            # A simple packet block carries no time: it inherits the previous one's.
            known = np.where(~is_spb, np.arange(len(off)), -1)
            np.maximum.accumulate(known, out=known)
            filled = np.where(known >= 0, ts_ns[np.maximum(known, 0)], last_ts)
            ts_ns = np.where(is_spb, filled, ts_ns)
        if len(ts_ns):
            last_ts = int(ts_ns[-1])
        batch = RecordBatch(
            buf=buf,
            data_off=off + header,
            caplen=caplen,
            origlen=origlen,
            ts_ns=ts_ns,
            linktype=linktype,
        )
        return batch, bad_at, last_ts


def open_walker(
    handle: CaptureStream, chunk_bytes: int = DEFAULT_CHUNK_BYTES
) -> PcapWalker | PcapngWalker:
    """Pick the walker for the file's magic number."""
    header = handle.read(24)
    if len(header) < 4:
        raise CaptureFormatError(
            "the file is too short to be a capture",
            hint="pass a pcap or pcapng file written by tcpdump, dumpcap or Wireshark",
            offset=0,
        )
    magic_le = struct.unpack_from("<I", header)[0]
    magic_be = struct.unpack_from(">I", header)[0]
    if magic_le == PCAPNG_SHB:
        handle.seek(0)
        return PcapngWalker(handle, chunk_bytes)
    if PCAP_MAGIC_US in (magic_le, magic_be) or PCAP_MAGIC_NS in (magic_le, magic_be):
        return PcapWalker(handle, header, chunk_bytes)
    raise CaptureFormatError(
        f"not a pcap or pcapng file (magic number {header[:4].hex()})",
        hint="pass a file written by tcpdump -w, dumpcap or Wireshark",
        offset=0,
    )
