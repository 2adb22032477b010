"""A connection's clock made monotone where the capture's timestamps step back.

Frames are analysed in frame order (as tshark does), so a frame stamped earlier than
the one before it needs a time that never runs backwards. Three cases look alike at the
step (frame ``i`` stamped before frame ``i - 1``) and differ at the frames around it::

    lone frame stamped early    ...  10  11  [3]  12  13      the next frame is back on time
    lone frame stamped ahead    ...  10  [90]  11  12  13     the frame before was out of line
    clock step back (NTP, VM)   ...  10  11  [3]  4   5       the frames after go on from 3

A lone frame is taken as simultaneous with the frame before it and the frames around
it keep their own times. At a clock step the frame is simultaneous with the one before
it and every later frame is moved forward by the step, so the intervals after it are
kept: clamping them to the running maximum instead (as a lone frame is) would squeeze
every frame until the clock caught up into one instant, and a push's seconds with them.

The frames whose stamps were replaced have no time to trust, and the round trips across
a clock step are unknown: the RTT samples read a per-row *epoch* (the count of clock
steps so far, -1 for a replaced stamp) and take no sample across epochs.

Pure and streamed: :func:`retime` takes one chunk's rows of one connection and carries
:class:`ClockState` to the next. The last row of a chunk that steps back waits for the
next chunk's first row to tell a lone frame from a step; a frame stamped ahead that
ended the previous chunk is not moved (its interval is kept as stamped).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from gitnetdiag.capture.decodestats import CAPTURE_RACE_NS

I64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

UNTRUSTED = -1
"""The epoch of a row whose timestamp was replaced."""


@dataclass
class ClockState:
    """What one connection's clock carries from one chunk to the next."""

    raw_ns: tuple[int, ...] = ()
    """The last (up to two) raw timestamps, oldest first."""
    last_ns: int = 0
    """The (retimed) time of the last row."""
    pending: bool = False
    """The last row stepped back; the next row tells a lone frame from a clock step."""
    epoch: int = 0
    """Clock steps so far: the epoch of the rows from the last step on."""
    steps: int = 0
    """Clock steps back bridged (the frames after kept their spacing)."""
    lone: int = 0
    """Lone frames stamped early or ahead, taken as simultaneous with the frame before."""

    @property
    def bridged(self) -> tuple[int, int]:
        """(clock steps, lone frames) so far; a last row that stepped back with no row
        after it counts as a step."""
        return self.steps + int(self.pending), self.lone


def _shifted(mask: BoolArray, by: int) -> BoolArray:
    """``mask`` moved ``by`` places later (False shifted in), same length."""
    return np.concatenate((np.zeros(by, dtype=bool), mask))[:len(mask)]


@dataclass(frozen=True)
class _Steps:
    """The steps back of one chunk, as masks over the gaps ``ext[1:] - ext[:-1]`` (gap
    ``k`` ends at ``ext[k + 1]``), and the carried last row's step once decided."""

    early: BoolArray
    """The frame the gap ends at is a lone frame stamped early."""
    ahead: BoolArray
    """The frame the gap starts at was a lone frame stamped ahead."""
    step: BoolArray
    """A clock step back (the last gap's is undecided until the next chunk)."""
    carried_early: bool
    """The carried last row's step was a lone frame stamped early."""


def _steps(ext: I64Array, h: int, pending: bool) -> _Steps:
    """Tell the kinds of step back apart (the module docstring's table); ``ext`` is the
    ``h`` carried raw stamps then the chunk's."""
    last = len(ext) - 1
    gap = ext[1:] - ext[:-1]
    end = np.arange(1, last + 1)
    back = (gap < 0) & (end >= h)  # the carried rows' steps were decided before
    after = ext[np.minimum(end + 1, last)]
    early = back & (end < last) & (after >= ext[end - 1])
    carried_early = pending and h >= 2 and bool(ext[h] >= ext[h - 2])
    early_before = early.copy()
    if carried_early:
        early_before[h - 2] = True
    ahead = (back & ~early & (end - 1 >= h) & _shifted(gap >= 0, 1) & ~_shifted(early_before, 2)
             & (ext[end] >= ext[np.maximum(end - 2, 0)]))
    return _Steps(early=early, ahead=ahead, step=back & ~early & ~ahead,
                  carried_early=carried_early)


def _adjusted_gaps(ext: I64Array, h: int, s: _Steps) -> I64Array:
    """The gaps with each step back bridged: a lone early frame and the frame before a
    lone one ahead at no interval, the frame after measured from the one before them."""
    gap = ext[1:] - ext[:-1]
    out = np.where(s.early | s.step, 0, gap)
    k = np.flatnonzero(s.early)
    out[k + 1] = ext[k + 2] - ext[k]
    k = np.flatnonzero(s.ahead)
    out[k - 1] = 0
    out[k] = ext[k + 1] - ext[k - 1]
    if s.carried_early:
        out[h - 1] = ext[h] - ext[h - 2]
    return np.maximum(out, 0)


def _untrusted_rows(ext: I64Array, h: int, s: _Steps, first: bool) -> tuple[BoolArray, BoolArray]:
    """Per row of the chunk: its stamp was moved by :data:`CAPTURE_RACE_NS` or more (no
    RTT sample from it), and it opens a new epoch (a clock step back of that size)."""
    gap = ext[1:] - ext[:-1]
    big_back = -gap >= CAPTURE_RACE_NS
    moved = (s.early | s.step) & big_back  # per gap: the row it ends at
    spike = np.concatenate((s.ahead & _shifted(gap >= CAPTURE_RACE_NS, 1), [False]))  # per row
    opens = s.step & big_back
    if first:  # a connection's first row has no gap of its own
        return np.concatenate(([False], moved)) | spike, np.concatenate(([False], opens))
    return moved[h - 1:] | spike[h:], opens[h - 1:]


CLOCK_CEILING_NS = 1 << 62
"""Bridged times stay below this (year 2116), far from int64's end: a file whose steps
add up past it has stamps strewn across the epoch, not a clock that stepped."""


def retime(raw: I64Array, state: ClockState) -> tuple[I64Array, I64Array | None]:
    """The chunk's timestamps made monotone, and the rows' epochs (``None`` when every
    row is in epoch 0 with a stamp of its own: the common case, checked in one pass).

    Stamps strewn across the whole epoch (a corrupt or crafted file) can make bridging
    run past the clock's range: those chunks take the running maximum instead, which
    never runs back and never leaves the stamps' own range."""
    before = replace(state)
    try:
        with np.errstate(over="ignore"):
            ts, epoch = _bridged(raw, state)
        if _sane(ts, raw, before):
            return ts, epoch
    except (OverflowError, IndexError):
        pass
    return _clamped(raw, state, before)


def _sane(ts: I64Array, raw: I64Array, before: ClockState) -> bool:
    """Bridged times that never run back and stay in range."""
    if len(ts) == 0:
        return True
    if before.raw_ns and int(ts[0]) < before.last_ns:
        return False
    ceiling = max(CLOCK_CEILING_NS, int(raw.max()) + 1)
    return not bool((ts[1:] < ts[:-1]).any()) and int(ts.max()) < ceiling


def _clamped(raw: I64Array, state: ClockState, before: ClockState
             ) -> tuple[I64Array, I64Array | None]:
    """The running maximum of the stamps (from the last time carried): the state as it
    was before the chunk, then this chunk's steps back counted as lone frames."""
    for name in ("raw_ns", "last_ns", "pending", "epoch", "steps", "lone"):
        setattr(state, name, getattr(before, name))
    floor = state.last_ns if state.raw_ns else int(raw[0])
    ts = np.maximum.accumulate(np.maximum(raw, floor))
    state.lone += int((raw[1:] < raw[:-1]).sum())
    _carry(state, raw, int(ts[-1]), pending=False)
    state.raw_ns = (int(ts[-2]) if len(ts) > 1 else state.last_ns, int(ts[-1]))
    epoch = np.full(len(raw), state.epoch, dtype=np.int64)
    epoch[ts != raw] = UNTRUSTED
    return ts.astype(np.int64), epoch


def _bridged(raw: I64Array, state: ClockState) -> tuple[I64Array, I64Array | None]:
    n = len(raw)
    if n == 0:
        return raw.copy(), None
    first = not state.raw_ns
    in_order = bool((raw[1:] >= raw[:-1]).all()) and (first or int(raw[0]) >= state.raw_ns[-1])
    if in_order and not state.pending:
        ts = raw.copy() if first else raw + (state.last_ns - state.raw_ns[-1])
        _carry(state, raw, int(ts[-1]), pending=False)
        return ts, None if state.epoch == 0 else np.full(n, state.epoch, dtype=np.int64)
    h = len(state.raw_ns)
    ext = np.concatenate((np.asarray(state.raw_ns, dtype=np.int64), raw))
    s = _steps(ext, h, state.pending)
    gaps = _adjusted_gaps(ext, h, s)
    with np.errstate(over="ignore"):
        if first:
            ts = int(raw[0]) + np.concatenate(([0], np.cumsum(gaps)))
        else:
            ts = state.last_ns + np.cumsum(gaps[h - 1:])
    untrusted, opens = _untrusted_rows(ext, h, s, first)
    epoch = state.epoch + np.cumsum(opens)
    epoch[untrusted] = UNTRUSTED
    pending = bool(s.step[-1])
    if state.pending:  # the carried last row's step, decided now
        state.lone += int(s.carried_early)
        state.steps += int(not s.carried_early)
    state.steps += int(s.step.sum()) - int(pending)
    state.lone += int(s.early.sum()) + int(s.ahead.sum())
    state.epoch += int(opens.sum())
    _carry(state, raw, int(ts[-1]), pending=pending)
    return ts.astype(np.int64), epoch.astype(np.int64)


def _carry(state: ClockState, raw: I64Array, last_ns: int, *, pending: bool) -> None:
    """What the next chunk reads: the last two raw stamps, the last time, the open step."""
    tail = tuple(int(v) for v in raw[-2:])
    state.raw_ns = (state.raw_ns + tail)[-2:]
    state.last_ns = last_ns
    state.pending = pending
