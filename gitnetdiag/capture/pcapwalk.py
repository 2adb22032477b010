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

A recorded bulk transfer breaks its pattern every hundred records or so (a
stretched ACK, one with SACK blocks, a segment cut short): the record that broke
a guess is a real one, and the pattern is taken up again as soon as the records
after it fit it (usually the very next one), with a guess about as long as the
last run that held. Measured on a recorded iperf3 transfer (1.08 M records, one
break every ~100): 0.63 s to walk before, when every break cost eight plain steps
and guesses restarting from 64 records, 0.06 s now.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

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
_PATTERNS_KEPT = 32
"""Laid-out patterns kept for the next guesses (a chunk rarely has more than a few)."""


def _period(sizes: list[int]) -> int:
    """The shortest period (1-4) the last eight sizes repeat with, 0 if none."""
    if len(sizes) < _HISTORY:
        return 0
    tail = sizes[-_HISTORY:]
    for p in (1, 2, 3, 4):
        if all(tail[i] == tail[i - p] for i in range(p, _HISTORY)):
            return p
    return 0


def _rotations(pattern: tuple[int, ...]) -> set[tuple[int, ...]]:
    return {pattern[i:] + pattern[:i] for i in range(len(pattern))}


class _Layout:
    """A pattern of record sizes laid out ahead: the start of every record relative to
    the first, and the captured length each header should then hold."""

    def __init__(self, pattern: tuple[int, ...], count: int) -> None:
        reps = -(-(count + 1) // len(pattern))
        sizes = np.tile(np.asarray(pattern, dtype=np.int64), reps)[: count + 1]
        self.rel = np.concatenate(([0], np.cumsum(sizes[:-1])))
        self.incl = (sizes - 16).astype(np.uint32)
        self.count = count


class _Layouts:
    def __init__(self) -> None:
        self._kept: dict[tuple[int, ...], _Layout] = {}

    def get(self, pattern: tuple[int, ...], count: int) -> _Layout:
        layout = self._kept.get(pattern)
        if layout is None or layout.count < count:
            if len(self._kept) >= _PATTERNS_KEPT:
                self._kept.clear()
            layout = _Layout(pattern, max(count, 256, 2 * layout.count if layout else 0))
            self._kept[pattern] = layout
        return layout


def walk_records(data: bytearray, off: int, end: int, *, big: bool) -> tuple[I64Array, int]:
    """Offsets of the records whose 16-byte header starts at or before ``end - 16``,
    following the captured lengths from ``off``; and the offset after the last one
    (beyond ``end`` when that record is cut)."""
    incl_of = struct.Struct(">I" if big else "<I").unpack_from
    words = _words(np.frombuffer(data, dtype=np.uint8), big=big)
    layouts = _Layouts()
    last_header = end - 16
    pieces: list[I64Array] = []
    offs: list[int] = []
    """Walked step by step since the last guess (not yet in ``pieces``)."""
    sizes: list[int] = []
    """The sizes of the last records, plain or guessed (the last few are looked at)."""
    pattern: tuple[int, ...] = ()
    """The sizes the next records are guessed to have, the next one first; () for none."""
    guess, steps = _FIRST_GUESS, _HISTORY
    while off <= last_header:
        if not pattern:
            period = _period(sizes)
            if not period:
                for _ in range(steps):
                    if off > last_header:
                        break
                    offs.append(off)
                    size = incl_of(data, off + 8)[0] + 16
                    sizes.append(size)
                    off += size
                steps = min(steps * 2, _MAX_BACKOFF)
                del sizes[:-_HISTORY]
                continue
            pattern = tuple(sizes[-period:])
        if len(pattern) == 1:
            if offs:
                pieces.append(np.asarray(offs, dtype=np.int64))
                offs = []
            runs, off, sizes = _one_size(data, words, off, last_header, pattern[0], guess)
            pieces.append(runs)
            pattern, guess, steps = (), _FIRST_GUESS, _HISTORY
            continue
        layout = layouts.get(pattern, guess)
        kept, off, held = _guess(words, off, last_header, layout, guess)
        if offs:
            pieces.append(np.asarray(offs, dtype=np.int64))
            offs = []
        pieces.append(kept)
        if held:
            guess = min(guess * 2, _MAX_GUESS)
            shift = len(kept) % len(pattern)
            pattern = pattern[shift:] + pattern[:shift]
            steps = _HISTORY
            continue
        # The last kept record broke the pattern: the sizes before it are the pattern's.
        guess = min(max(_FIRST_GUESS, 2 * len(kept)), _MAX_GUESS)
        before = (layout.incl[max(len(kept) - _HISTORY, 0) : len(kept) - 1] + 16).tolist()
        sizes = [*before, off - int(kept[-1])]
        pattern, steps = _resume(data, incl_of, pattern, sizes, offs, off, last_header)
        off = offs[-1] + sizes[-1] if offs else off
        if not pattern:  # not taken up again: look afresh, with fewer guesses
            steps = min(steps * 2, _MAX_BACKOFF)
            guess = _FIRST_GUESS
    pieces.append(np.asarray(offs, dtype=np.int64))
    return np.concatenate(pieces), off


def _resume(
    data: bytearray, unpack: Callable[[bytearray, int], tuple[int]],
    pattern: tuple[int, ...], sizes: list[int], offs: list[int], off: int, last_header: int,
) -> tuple[tuple[int, ...], int]:
    """Plain steps from ``off`` (appended to ``offs`` and ``sizes``) until the last
    records fit ``pattern`` again, at most :data:`_HISTORY` of them. Returns the
    pattern to guess with next (() when the records did not fit it) and the steps taken."""
    fits = _rotations(pattern)
    p = len(pattern)
    for step in range(_HISTORY + 1):
        tail = tuple(sizes[-p:])
        if tail in fits:
            return tail, step
        if step == _HISTORY or off > last_header:
            break
        offs.append(off)
        size = unpack(data, off + 8)[0] + 16
        sizes.append(size)
        off += size
    return (), _HISTORY


_RUN_GUESS = 256
"""Records guessed after a run broke (at least): a recorded transfer's runs between
ACKs are a few hundred long at most, and 256 more words cost next to nothing."""
_RUN_ROUNDS = 1 << 20
"""Guesses one call of :func:`_one_size` may make (it stops at the chunk's end anyway)."""


def _one_size(
    data: bytearray, words: npt.NDArray[np.uint32], off: int, last_header: int, size: int,
    guess: int,
) -> tuple[I64Array, int, list[int]]:
    """The walk from ``off`` while records are mostly of one ``size``: runs of it guessed
    at once, each record that breaks a run (and the few after it, until one of ``size``
    again) stepped over plainly. Stops at the chunk's end, or when :data:`_HISTORY` plain
    steps met no record of ``size``. Returns the offsets, the offset after the last, and
    the sizes of the last plain steps (for the caller to look for a pattern in)."""
    unpack = struct.Struct(">I" if words.dtype.byteorder == ">" else "<I").unpack_from
    lanes: dict[int, npt.NDArray[np.uint32]] = {}
    """The captured-length words of records ``size`` apart, by where they start modulo
    ``size`` (views: a run's lengths are a slice of one, no gather)."""
    want = size - 16
    starts: list[int] = []
    counts: list[int] = []
    """Runs of records: where each begins and how many of ``size`` it holds (a plain
    step is a run of one, of whatever size)."""
    plain: list[int] = []
    for _ in range(_RUN_ROUNDS):
        room = (last_header - off) // size + 1
        n = min(guess, room)
        lane = lanes.get(off % size)
        if lane is None:
            lane = lanes[off % size] = words[off % size + 8 :: size]
        first = off // size
        wrong = lane[first : first + n] != want
        last = int(wrong.argmax())
        if not wrong[last]:
            starts.append(off)
            counts.append(n)
            off += n * size
            if n == room:
                break
            guess = min(guess * 2, _MAX_GUESS)
            continue
        if last:
            starts.append(off)
            counts.append(last)
        off += last * size
        guess = min(max(_RUN_GUESS, 2 * last), _MAX_GUESS)
        plain = []
        while off <= last_header and len(plain) < _HISTORY:
            step = unpack(data, off + 8)[0] + 16
            if step == size and plain:
                break
            starts.append(off)
            counts.append(-step)  # a plain step: one record of ``step`` bytes
            plain.append(step)
            off += step
        if off > last_header or len(plain) >= _HISTORY:
            break
    return _laid_out(starts, counts, size), off, plain


def _laid_out(starts: list[int], counts: list[int], size: int) -> I64Array:
    """The record offsets of runs (``counts`` records of ``size`` from each start; a
    negative count is one record)."""
    if not starts:
        return np.zeros(0, dtype=np.int64)
    each = np.maximum(np.asarray(counts, dtype=np.int64), 1)
    before = np.cumsum(each) - each
    # Within a run the records are ``size`` apart: the run's start plus size * rank,
    # where rank = index - before.
    base = np.asarray(starts, dtype=np.int64) - before * size
    return np.repeat(base, each) + np.arange(int(before[-1] + each[-1]), dtype=np.int64) * size


def _words(buf: npt.NDArray[np.uint8], *, big: bool) -> npt.NDArray[np.uint32]:
    """The 32-bit word starting at every byte of ``buf`` (a view: one-byte strides)."""
    count = max(len(buf) - 3, 0)
    return np.ndarray((count,), dtype=">u4" if big else "<u4", buffer=buf, strides=(1,))


def _guess(
    words: npt.NDArray[np.uint32], off: int, last_header: int, layout: _Layout, count: int,
) -> tuple[I64Array, int, bool]:
    """Lay ``layout`` ahead from ``off`` for up to ``count`` records and keep the guessed
    starts up to the first record whose header disagrees (that one is a real record
    too: every size before it was right). Returns the kept starts, the offset after the
    last kept record, and whether every guessed record was right."""
    # No records past ``last_header`` (``rel`` rises, and its first is 0 <= the room).
    n = int(np.searchsorted(layout.rel[:count], last_header - off, side="right"))
    starts = layout.rel[:n] + off
    incl = words[starts + 8]
    wrong = incl != layout.incl[:n]
    last = int(wrong.argmax())
    if not wrong[last]:
        last = n - 1
    return starts[: last + 1], int(starts[last]) + int(incl[last]) + 16, not wrong[last]
