"""Compressed captures: gzip (``tcpdump -w - | gzip``, Wireshark's ``.pcapng.gz``) and zstd.

:func:`capture_stream` looks at the first bytes of an open file and returns
what the walkers read: the file itself, or a :class:`DecompressedStream`
over it.  The walkers only read forward (and seek back to the start once,
for pcapng); a decompressor cannot seek back, so it is simply started again.

Decompression is incremental (``zlib`` / ``zstandard`` decompress objects)
rather than through ``gzip.GzipFile``: a file cut short must still yield
everything before the cut, and a ``GzipFile`` read that meets the cut loses
the whole read.  Output per step is bounded (gzip by ``max_length``, zstd
by feeding small input pieces), so a decompression bomb cannot make memory
grow beyond a few tens of megabytes.

A compressed stream that is corrupt or cut short ends the capture there:
:class:`DecompressedStream` raises a :class:`~gitnetdiag.errors.CaptureFormatError`
whose offset counts bytes of the *decompressed* capture, and the walker
keeps the records before it.  Members (gzip) and frames (zstd) concatenated
in one file are read one after the other, as ``zcat`` does.
"""

from __future__ import annotations

import zlib
from io import BufferedReader
from typing import Any, Protocol

from gitnetdiag.errors import CaptureFormatError

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

_GZIP_INPUT_BYTES = 1 << 16
_GZIP_OUTPUT_BYTES = 1 << 22
_ZSTD_INPUT_BYTES = 1 << 11
"""A zstd RLE block turns 4 bytes into 128 KiB: 2 KiB of input is at most 64 MiB out."""


class CaptureStream(Protocol):
    """What the walkers need of a file."""

    def read(self, size: int = -1, /) -> bytes: ...

    def readinto(self, buffer: memoryview, /) -> int: ...

    def seek(self, offset: int, whence: int = 0, /) -> int: ...


class _Decompressor(Protocol):
    def decompress(self, data: bytes, max_length: int = 0, /) -> bytes: ...

    @property
    def eof(self) -> bool: ...

    @property
    def unused_data(self) -> bytes: ...

    @property
    def unconsumed_tail(self) -> bytes: ...


class _Zstd:
    """zstandard's decompress object under zlib's interface (it takes no output limit)."""

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def decompress(self, data: bytes, max_length: int = 0, /) -> bytes:
        out: bytes = self._obj.decompress(data)
        return out

    @property
    def eof(self) -> bool:
        return bool(self._obj.eof)

    @property
    def unused_data(self) -> bytes:
        return bytes(self._obj.unused_data)

    @property
    def unconsumed_tail(self) -> bytes:
        return b""


class DecompressedStream:
    """A forward-reading decompressed view of ``raw``; damage raises CaptureFormatError."""

    def __init__(self, raw: BufferedReader, kind: str) -> None:
        self.raw = raw
        self.kind = kind
        """``gzip`` or ``zstd``."""
        self.position = 0
        """Decompressed bytes handed out so far."""
        self._restart()

    def _restart(self) -> None:
        self.raw.seek(0)
        self.position = 0
        self._obj = self._new()
        self._started = False
        """The current member/frame has been fed input (so its end must come)."""
        self._out = b""
        self._out_at = 0
        self._input_done = False

    def _new(self) -> _Decompressor:
        if self.kind == "gzip":
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        import zstandard

        return _Zstd(zstandard.ZstdDecompressor().decompressobj())

    def _failed(self, detail: str, *, cut: bool) -> CaptureFormatError:
        return CaptureFormatError(
            f"the {self.kind} stream is {'cut short' if cut else 'damaged'} ({detail}) "
            "in the decompressed capture",
            hint=f"the packets before this point were kept; check the file with '{self.kind} -t'",
            offset=self.position,
        )

    def _step(self, data: bytes) -> bytes:
        obj = self._obj
        try:
            return obj.decompress(data, _GZIP_OUTPUT_BYTES)
        except zlib.error as exc:
            raise self._failed(str(exc), cut=False) from exc
        except Exception as exc:  # zstandard.ZstdError shares no base with zlib.error
            if type(exc).__name__ != "ZstdError":
                raise
            raise self._failed(str(exc), cut=False) from exc

    def _fill(self) -> None:
        """Decompress the next piece into ``_out`` (may leave it empty: call again)."""
        data = self._obj.unconsumed_tail if self.kind == "gzip" else b""
        if not data:
            data = self.raw.read(_GZIP_INPUT_BYTES if self.kind == "gzip" else _ZSTD_INPUT_BYTES)
        if not data:
            self._input_done = True
            if self._started and not self._obj.eof:
                raise self._failed("no end-of-stream marker", cut=True)
            return
        self._started = True
        self._out = self._step(data)
        self._out_at = 0
        if self._obj.eof:
            rest = self._obj.unused_data
            self._obj = self._new()
            self._started = False
            if rest.strip(b"\x00"):  # another member or frame follows (padding is ignored)
                self._started = True
                self._out += self._step(rest)

    def readinto(self, buffer: memoryview, /) -> int:
        while self._out_at >= len(self._out):
            if self._input_done:
                return 0
            self._fill()
        n = min(len(buffer), len(self._out) - self._out_at)
        buffer[:n] = self._out[self._out_at : self._out_at + n]
        self._out_at += n
        self.position += n
        return n

    def read(self, size: int = -1, /) -> bytes:
        out = bytearray()
        chunk = bytearray(1 << 16)
        view = memoryview(chunk)
        while size < 0 or len(out) < size:
            want = len(chunk) if size < 0 else min(len(chunk), size - len(out))
            n = self.readinto(view[:want])
            if not n:
                break
            out += view[:n]
        view.release()
        return bytes(out)

    def seek(self, offset: int, whence: int = 0, /) -> int:
        if whence != 0:
            raise ValueError("only absolute seeks")
        if offset < self.position:
            self._restart()
        skip = memoryview(bytearray(1 << 16))
        while self.position < offset:
            if not self.readinto(skip[: offset - self.position]):
                break
        skip.release()
        return self.position


def capture_stream(raw: BufferedReader) -> BufferedReader | DecompressedStream:
    """The capture bytes of an open file: the file itself, or its decompressed content."""
    head = raw.peek(4)[:4]
    if head[:2] == GZIP_MAGIC:
        return DecompressedStream(raw, "gzip")
    if head == ZSTD_MAGIC:
        try:
            import zstandard  # noqa: F401
        except ImportError as exc:
            raise CaptureFormatError(
                "the capture is zstd-compressed and the zstandard module is not installed",
                hint="pip install zstandard, or decompress it first: zstd -d FILE",
                offset=0,
            ) from exc
        return DecompressedStream(raw, "zstd")
    return raw
