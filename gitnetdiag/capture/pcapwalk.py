"""Record offsets of a classic pcap chunk: a sequential walk that guesses ahead.

A pcap record is a 16-byte header whose third word is the captured length;
the next record starts right after the captured bytes, so the walk is
sequential by nature and costs a Python loop step per record. Bulk transfers
repeat themselves, though (full segments cut at the snap length, then an ACK,
over and over), so once the last few record sizes form a repeating pattern,
:func:`walk_records` lays that pattern ahead and checks every guessed record
at once with numpy: a guessed offset is kept only while each size before it
is the size its header says. The kept offsets are therefore exactly those
the plain walk finds (``tests/capture/test_pcapwalk.py`` compares them on
random and damaged data), only cheaper when the pattern holds.
"""

from __future__ import annotations

import struct

import numpy as np
import numpy.typing as npt

I64Array = npt.NDArray[np.int64]

_HISTORY = 8
"""Record sizes looked at for a repeating pattern (periods 1 to 4)."""
_FIRST_GUESS = 64
_MAX_GUESS = 1 << 16
"""Records guessed at once: doubled after each guess that held, up to this."""
_MAX_BACKOFF = 4096
"""Plain steps between guesses, doubled after each guess that failed early."""


def _period(sizes: list[int]) -> int:
    """The shortest period (1-4) the last eight sizes repeat with, 0 if none."""
    if len(sizes) < _HISTORY:
        return 0
    tail = sizes[-_HISTORY:]
    for p in (1, 2, 3, 4):
        if all(tail[i] == tail[i - p] for i in range(p, _HISTORY)):
            return p
    return 0


def walk_records(data: bytearray, off: int, end: int, *, big: bool) -> tuple[I64Array, int]:
    """Offsets of the records whose 16-byte header starts at or before ``end - 16``,
    following the captured lengths from ``off``; and the offset after the last one
    (beyond ``end`` when that record is cut)."""
    incl_of = struct.Struct(">I" if big else "<I").unpack_from
    buf = np.frombuffer(data, dtype=np.uint8)
    last_header = end - 16
    pieces: list[I64Array] = []
    offs: list[int] = []
    """Walked step by step since the last guess (not yet in ``pieces``)."""
    before: list[int] = []
    """The last record starts of the last guess: the history the next guess looks at."""
    guess, steps = _FIRST_GUESS, _HISTORY
    while off <= last_header:
        append = offs.append
        for _ in range(steps):
            if off > last_header:
                break
            append(off)
            off += incl_of(data, off + 8)[0] + 16
        if off > last_header:
            break
        starts_seen = (before + offs)[-_HISTORY:]
        sizes = [b - a for a, b in zip(starts_seen, [*starts_seen[1:], off], strict=True)]
        period = _period(sizes)
        if not period:
            steps = min(steps * 2, _MAX_BACKOFF)
            continue
        kept, off, held_all = _guess(buf, off, last_header, sizes[-period:], guess, big=big)
        pieces.append(np.asarray(offs, dtype=np.int64))
        pieces.append(kept)
        before = kept[-_HISTORY:].tolist()
        offs = []
        guess = min(guess * 2, _MAX_GUESS) if held_all else _FIRST_GUESS
        steps = _HISTORY if len(kept) >= _HISTORY else min(steps * 2, _MAX_BACKOFF)
    pieces.append(np.asarray(offs, dtype=np.int64))
    return np.concatenate(pieces), off


def _words(buf: npt.NDArray[np.uint8], *, big: bool) -> npt.NDArray[np.uint32]:
    """The 32-bit word starting at every byte of ``buf`` (a view: one-byte strides)."""
    count = max(len(buf) - 3, 0)
    return np.ndarray((count,), dtype=">u4" if big else "<u4", buffer=buf, strides=(1,))


def _guess(
    buf: npt.NDArray[np.uint8], off: int, last_header: int, pattern: list[int], count: int,
    *, big: bool,
) -> tuple[I64Array, int, bool]:
    """Lay ``pattern`` (record sizes) ahead from ``off`` for up to ``count`` records and
    keep the guessed starts up to the first record whose header disagrees (that one is
    a real record too: every size before it was right). Returns the kept starts, the
    offset after the last kept record, and whether every guessed record was right."""
    # No more records than fit before ``last_header`` at the pattern's smallest size (the
    # rest would be cut off below anyway).
    count = max(min(count, (last_header - off) // min(pattern) + 1), 1)
    sizes = np.tile(np.asarray(pattern, dtype=np.int64), -(-count // len(pattern)))[:count]
    starts = off + np.concatenate(([0], np.cumsum(sizes[:-1])))
    n = int(np.searchsorted(starts, last_header, side="right"))
    starts, sizes = starts[:n], sizes[:n]
    incl = _words(buf, big=big)[starts + 8].astype(np.int64)
    actual = incl + 16
    wrong = np.flatnonzero(actual != sizes)
    last = int(wrong[0]) if len(wrong) else n - 1
    return starts[: last + 1], int(starts[last] + actual[last]), len(wrong) == 0
