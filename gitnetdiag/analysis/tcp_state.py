"""Per-connection state the TCP analysis carries from one chunk to the next.

Kept apart from :mod:`gitnetdiag.analysis.tcp` (which holds the chunk update)
so that each module stays readable; nothing here is public API.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from gitnetdiag.analysis.tcp_results import NS, RttStats, ZeroWindowEvent

I64Array = npt.NDArray[np.int64]
F64Array = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

NEG = np.int64(-(1 << 62))
"""Minus infinity of the unwrapped sequence space."""
MAX_PENDING_SEGMENTS = 1 << 17
MAX_EVENTS_KEPT = 200
RTT_EDGES_S = np.logspace(-6, 2, 321)
"""Log-spaced RTT histogram edges, 1 us .. 100 s."""


def signed32(x: I64Array) -> I64Array:
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def running_max(values: I64Array, floor: int) -> I64Array:
    """The highest of ``floor`` and ``values`` up to each position (a new array).

    numpy's ``maximum.accumulate`` takes about 3 ns per element, while the values are
    mostly in order already (timestamps, ACKs): checking that costs a tenth of it."""
    if len(values) == 0:
        return values.copy()
    if int(values[0]) >= floor and bool((values[1:] >= values[:-1]).all()):
        return values.copy()
    return np.maximum.accumulate(np.maximum(values, floor))


def shifted(values: I64Array, first: int | np.int64) -> I64Array:
    """``values`` one place later, ``first`` in the place of the first (the last dropped)."""
    out = np.empty_like(values)
    out[:1] = first
    out[1:] = values[:-1]
    return out


def ffill_index(mask: BoolArray) -> I64Array:
    """Index of the last True at or before each position (-1 when none)."""
    idx = np.where(mask, np.arange(len(mask)), -1)
    return np.maximum.accumulate(idx) if len(idx) else idx


@dataclass
class SeqChain:
    """Unwraps 32-bit sequence numbers into a monotone-ish int64 space."""

    last_raw: int | None = None
    last_u: int = 0

    def unwrap(self, raw: I64Array, base: int) -> I64Array:
        if len(raw) == 0:
            return raw
        if self.last_raw is None:
            self.last_raw = int(raw[0])
            self.last_u = int(signed32(np.array([raw[0] - base]))[0])
        # signed32 of each step from the one before, in place (one array, not six).
        u = np.empty_like(raw)
        u[0] = raw[0] - self.last_raw
        np.subtract(raw[1:], raw[:-1], out=u[1:])
        u += 1 << 31
        u &= 0xFFFFFFFF
        u -= 1 << 31
        np.cumsum(u, out=u)
        u += self.last_u
        self.last_raw = int(raw[-1])
        self.last_u = int(u[-1])
        return u


MAX_SERIES_BINS = 1 << 14
"""Bins kept per series: beyond them the bins are merged pairwise (wider bins).

Memory per connection then stays bounded whatever its duration, a frame
stamped years later included (at 0.1 s, 16384 bins cover 27 minutes
before the first merge)."""

_SUMMED = ("sent", "good", "retrans")
_HIGHEST = ("flight",)
_LOWEST = ("window",)


def _merge_pairs(arr: I64Array, how: str) -> I64Array:
    """Halve a series: adjacent bins summed, or their extreme (-1 = no value) kept."""
    if len(arr) % 2:
        arr = np.append(arr, 0 if how == "sum" else -1)
    a, b = arr[0::2], arr[1::2]
    if how == "sum":
        return a + b
    if how == "max":
        return np.maximum(a, b)
    return np.where(a < 0, b, np.where(b < 0, a, np.minimum(a, b)))


@dataclass
class SeriesBins:
    """Growing per-bin arrays of one connection."""

    bin_ns: int
    """Width of the finest bin (the thresholds' ``bin_s``)."""
    shift: int = 0
    """Bins are ``bin_ns << shift`` wide: raised when a connection outgrows MAX_SERIES_BINS."""
    sent: list[I64Array] = field(default_factory=lambda: [np.zeros(0, np.int64)] * 2)
    good: list[I64Array] = field(default_factory=lambda: [np.zeros(0, np.int64)] * 2)
    retrans: list[I64Array] = field(default_factory=lambda: [np.zeros(0, np.int64)] * 2)
    flight: list[I64Array] = field(default_factory=lambda: [np.zeros(0, np.int64)] * 2)
    window: list[I64Array] = field(default_factory=lambda: [np.zeros(0, np.int64)] * 2)

    @property
    def width_ns(self) -> int:
        """Current bin width."""
        return self.bin_ns << self.shift

    def index(self, offset_ns: I64Array) -> I64Array:
        """Bin of each offset from the connection's start (offsets never decrease)."""
        if len(offset_ns):
            while int(offset_ns[-1]) // self.width_ns >= MAX_SERIES_BINS:
                self._coarsen()
        return offset_ns // self.width_ns

    def aligned(self) -> SeriesBins:
        """A copy whose every series has the same number of bins.

        Each series grows only as far as its own last sample: a short capture whose
        last bins hold one side's segments and no advertisement from the other (the
        retransmissions into a black hole) would otherwise end its window series
        bins earlier than its in-flight series.
        """
        size = max(len(arr) for name in (*_SUMMED, *_HIGHEST, *_LOWEST)
                   for arr in getattr(self, name))

        def grown(arrs: list[I64Array], fill: int) -> list[I64Array]:
            return [self._grow(arr, size, fill) for arr in arrs]

        return replace(self, sent=grown(self.sent, 0), good=grown(self.good, 0),
                       retrans=grown(self.retrans, 0), flight=grown(self.flight, -1),
                       window=grown(self.window, -1))

    def _coarsen(self) -> None:
        self.shift += 1
        for names, how in ((_SUMMED, "sum"), (_HIGHEST, "max"), (_LOWEST, "min")):
            for name in names:
                arrs: list[I64Array] = getattr(self, name)
                for d in (0, 1):
                    arrs[d] = _merge_pairs(arrs[d], how)

    @staticmethod
    def _grow(arr: I64Array, size: int, fill: int) -> I64Array:
        if len(arr) >= size:
            return arr
        out = np.full(size, fill, dtype=np.int64)
        out[: len(arr)] = arr
        return out

    def add_sum(self, name: str, d: int, bins: I64Array, weights: I64Array) -> None:
        if len(bins) == 0:
            return
        arrs: list[I64Array] = getattr(self, name)
        low = int(bins[0])
        summed = np.bincount(bins - low, weights=weights).astype(np.int64)
        arr = self._grow(arrs[d], low + len(summed), 0)
        arr[low : low + len(summed)] += summed
        arrs[d] = arr

    def add_extreme(
        self, name: str, d: int, bins: I64Array, values: I64Array, *, high: bool
    ) -> None:
        if len(bins) == 0:
            return
        arrs: list[I64Array] = getattr(self, name)
        fill = -1
        arr = self._grow(arrs[d], int(bins[-1]) + 1, fill)
        starts = np.flatnonzero(np.concatenate(([True], bins[1:] != bins[:-1])))
        ub = bins[starts]
        red = (np.maximum if high else np.minimum).reduceat(values, starts)
        cur = arr[ub]
        if high:
            arr[ub] = np.maximum(cur, red)
        else:
            arr[ub] = np.where(cur < 0, red, np.minimum(cur, red))
        arrs[d] = arr


@dataclass
class Delivery:
    """Which of one side's segments the peer acknowledged, and which it never did.

    A path-MTU black hole swallows every segment above the narrow link's size while
    the small ones pass: the largest acknowledged segment stays below the segments
    that are resent again and again. Only segments not yet covered by the peer's
    cumulative ACK are kept (at most :data:`MAX_PENDING_SEGMENTS`, the newest).
    """

    end: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    """Unwrapped end sequence of each pending segment."""
    length: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    """Its payload length."""
    rtx: BoolArray = field(default_factory=lambda: np.zeros(0, bool))
    """Whether it was a retransmission."""
    max_acked_len: int = 0
    """Largest payload of a segment the peer's cumulative ACK covered."""

    def add(self, seg_end: I64Array, seg_len: I64Array, rtx: BoolArray, high_ack: int) -> None:
        """This chunk's data segments, then everything the peer has acknowledged so far."""
        end = np.concatenate((self.end, seg_end))
        length = np.concatenate((self.length, seg_len))
        resent = np.concatenate((self.rtx, rtx))
        covered = end <= high_ack
        if covered.any():
            self.max_acked_len = max(self.max_acked_len, int(length[covered].max()))
        keep = ~covered
        self.end = end[keep][-MAX_PENDING_SEGMENTS:]
        self.length = length[keep][-MAX_PENDING_SEGMENTS:]
        self.rtx = resent[keep][-MAX_PENDING_SEGMENTS:]

    def unacked_retransmissions(self) -> int:
        """Retransmitted segments the peer never acknowledged."""
        return int(np.count_nonzero(self.rtx))

    def min_unacked_retransmitted_len(self) -> int | None:
        """Smallest retransmitted segment never acknowledged, None when there is none.

        Retransmitted ones only: a small segment behind a lost large one is SACKed (so
        never resent) yet stays below the cumulative ACK."""
        lengths = self.length[self.rtx]
        return int(lengths.min()) if len(lengths) else None


@dataclass
class SideState:
    """Per-direction carried state; ``d`` is this side as the sender."""

    chain_seq: SeqChain = field(default_factory=SeqChain)
    chain_ack: SeqChain = field(default_factory=SeqChain)
    """Unwraps the peer's ACKs of this side's data."""
    base: int | None = None
    high_end: int = int(NEG)
    first_seq_u: int | None = None
    high_ack: int = int(NEG)
    peer_win: int = -1
    peer_last_ack_u: int | None = None
    peer_dup_run: int = 0
    peer_last_sack: bool = False
    last_data_ts: int | None = None
    recover: int = int(NEG)
    max_plen: int = 0
    # counters
    packets: int = 0
    payload: int = 0
    first_data_ts: int | None = None
    retrans: int = 0
    retrans_bytes: int = 0
    fast: int = 0
    timeout: int = 0
    spurious: int = 0
    dsack: int = 0
    max_flight: int = 0
    max_win: int = 0
    min_win: int | None = None
    zero_count: int = 0
    zero_s: float = 0.0
    zero_open_ts: int | None = None
    zero_open_frame: int = 0
    zero_events: list[ZeroWindowEvent] = field(default_factory=list)
    zero_window_probes: int = 0
    resets: int = 0
    first_reset_frame: int | None = None
    first_reset_ts: int | None = None
    first_fin_ts: int | None = None
    last_large_ts: int | None = None
    small_tail: int = 0
    delivery: Delivery = field(default_factory=Delivery)
    # RTT
    pend_ts: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    pend_end: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    pend_rtx: BoolArray = field(default_factory=lambda: np.zeros(0, bool))
    pend_epoch: I64Array = field(default_factory=lambda: np.zeros(0, np.int64))
    """The pending segments' clock epochs (:mod:`.tcp_clock`)."""
    rtt_hist: I64Array = field(default_factory=lambda: np.zeros(len(RTT_EDGES_S) + 1, np.int64))
    rtt_n: int = 0
    rtt_min: float = float("inf")
    rtt_max: float = 0.0
    rtt_sum: float = 0.0
    # limits
    limit_s: F64Array = field(default_factory=lambda: np.zeros(4))
    pending_idle_s: float = 0.0
    tail_class: int = -1
    """Class of the last interval of the previous chunk (-1: not counted)."""
    tail_idle: bool = False

    def rtt_stats(self) -> RttStats:
        """The RTT samples summarised (percentiles from the log histogram)."""
        n = self.rtt_n
        if not n:
            return RttStats(samples=0, min_s=None, median_s=None, p90_s=None, max_s=None,
                            mean_s=None)
        cdf = np.cumsum(self.rtt_hist)
        centres = np.concatenate(
            ([RTT_EDGES_S[0]], np.sqrt(RTT_EDGES_S[1:] * RTT_EDGES_S[:-1]), [RTT_EDGES_S[-1]])
        )

        def quantile(q: float) -> float:
            return float(np.clip(centres[np.searchsorted(cdf, q * n)], self.rtt_min, self.rtt_max))

        return RttStats(samples=n, min_s=self.rtt_min, median_s=quantile(0.5),
                        p90_s=quantile(0.9), max_s=self.rtt_max, mean_s=self.rtt_sum / n)

    def unacked_bytes(self) -> int:
        """Bytes sent that the peer had not acknowledged (all of them when no ACK was seen)."""
        if self.first_seq_u is None or self.high_end <= NEG:
            return 0
        sent = self.high_end - self.first_seq_u
        return sent if self.high_ack <= NEG else min(sent, max(0, self.high_end - self.high_ack))


@dataclass
class HandshakeState:
    syn_count: int = 0
    syn_ts: int | None = None
    synack_count: int = 0
    synack_first_ts: int | None = None
    synack_after_ack: int = 0
    ack_ts: int | None = None
    mss: list[int | None] = field(default_factory=lambda: [None, None])
    wscale: list[int] = field(default_factory=lambda: [-1, -1])
    sack_perm: list[bool] = field(default_factory=lambda: [False, False])
    syn_seen: bool = False
    synack_seen: bool = False

    def scaling(self) -> bool | None:
        """Whether windows are scaled (RFC 7323: only when both SYNs carry the option).

        None when the capture cannot tell.  A SYN-ACK may carry the option
        only when the SYN did (RFC 7323 section 2.2), so a SYN-ACK alone
        settles it; a SYN without it settles it too.
        """
        if self.synack_seen:
            if self.wscale[1] < 0:
                return False
            return self.wscale[0] >= 0 if self.syn_seen else True
        if self.syn_seen and self.wscale[0] < 0:
            return False
        return None

    def scale_known(self, d: int) -> bool:
        """Whether side ``d``'s window shift is known (its own SYN seen, or scaling off)."""
        on = self.scaling()
        if on is None:
            return False
        return not on or (self.syn_seen if d == 0 else self.synack_seen)

    def scale(self, d: int) -> int:
        """Window shift of side ``d`` (0 when off or unknown)."""
        return self.wscale[d] if self.scaling() and self.scale_known(d) else 0


def rtt_samples(
    side: SideState,
    seg_ts: I64Array,
    seg_end: I64Array,
    rtx: BoolArray,
    data_pos: I64Array,
    ts: I64Array,
    p_idx: I64Array,
    p_cummax: I64Array,
    peers_before: I64Array,
    *,
    epoch: I64Array | None = None,
) -> None:
    """``peers_before``: per row of the chunk, the peer's ACKs at or before it. ``epoch``:
    per row, its clock epoch (:func:`~gitnetdiag.analysis.tcp_clock.retime`; ``None``: all
    0); a segment and an ACK of different epochs, or a row whose stamp was replaced, give
    no sample."""
    all_ts = np.concatenate([side.pend_ts, seg_ts])
    all_end = np.concatenate([side.pend_end, seg_end])
    all_rtx = np.concatenate([side.pend_rtx, rtx])
    seg_epoch = epoch[data_pos] if epoch is not None else np.zeros(len(seg_ts), np.int64)
    all_epoch = np.concatenate([side.pend_epoch, seg_epoch])
    if len(all_ts) == 0:
        return
    # The first of the peer's ACKs after each segment: pending segments sit before every
    # row of this chunk.
    first_after = np.concatenate([np.zeros(len(side.pend_ts), dtype=np.int64),
                                  peers_before[data_pos]])
    covering = np.searchsorted(p_cummax, all_end, side="left")
    j = np.maximum(first_after, covering)
    answered = j < len(p_idx)
    unanswered = ~answered
    matched: BoolArray | slice = answered
    keep: BoolArray | slice = unanswered
    # Usually every segment but the last few is answered: slices then, not masks.
    first_kept = int(unanswered.argmax())
    if not unanswered[first_kept] or not answered[first_kept:].any():
        first_kept = first_kept if unanswered[first_kept] else len(j)
        matched, keep = slice(0, first_kept), slice(first_kept, None)
    side.pend_ts = all_ts[keep][-MAX_PENDING_SEGMENTS:].copy()
    side.pend_end = all_end[keep][-MAX_PENDING_SEGMENTS:].copy()
    side.pend_rtx = all_rtx[keep][-MAX_PENDING_SEGMENTS:].copy()
    side.pend_epoch = all_epoch[keep][-MAX_PENDING_SEGMENTS:].copy()
    jm = j[matched]
    if not len(jm):
        return
    tsm = all_ts[matched]
    em = all_epoch[matched]
    # Not np.isin / np.unique: they may import numpy.ma (~20 ms of start-up).
    bad_acks = np.sort(jm[all_rtx[matched]])
    if len(bad_acks):
        at = np.minimum(np.searchsorted(bad_acks, jm), len(bad_acks) - 1)
        ok = ~(bad_acks[at] == jm)
        jm, tsm, em = jm[ok], tsm[ok], em[ok]
    if len(jm) == 0:
        return
    # One sample per ACK, from the last segment it covered. The times never decrease
    # (the connection's clock is made monotone), so ordering by ACK alone, stably, is
    # ordering by ACK then time; ACKs mostly come in order already.
    if len(jm) > 1 and not bool((jm[1:] >= jm[:-1]).all()):
        order = np.argsort(jm, kind="stable")
        jm, tsm, em = jm[order], tsm[order], em[order]
    last = np.flatnonzero(np.concatenate((jm[1:] != jm[:-1], [True])))
    rtt_s = (ts[p_idx[jm[last]]] - tsm[last]) / NS
    if epoch is not None or bool(em.any()):
        ack_epoch = epoch[p_idx[jm[last]]] if epoch is not None else 0
        rtt_s = rtt_s[(em[last] == ack_epoch) & (em[last] >= 0)]
    rtt_s = rtt_s[rtt_s >= 0]
    if len(rtt_s) == 0:
        return
    side.rtt_n += len(rtt_s)
    side.rtt_min = min(side.rtt_min, float(rtt_s.min()))
    side.rtt_max = max(side.rtt_max, float(rtt_s.max()))
    side.rtt_sum += float(rtt_s.sum())
    side.rtt_hist += np.bincount(
        np.searchsorted(RTT_EDGES_S, rtt_s), minlength=len(side.rtt_hist)
    )


def zero_windows(
    side: SideState, own_idx: I64Array, own_win: I64Array, ts: I64Array, frames: I64Array
) -> None:
    zero = own_win == 0
    if not zero.any() and side.zero_open_ts is None:
        return
    prev = shifted(zero, side.zero_open_ts is not None)
    starts = own_idx[zero & ~prev]
    ends = own_idx[~zero & prev]
    side.zero_count += len(starts)
    # Starts and ends alternate; a window still closed is carried over.
    opened = [(int(ts[i]), int(frames[i])) for i in starts]
    if side.zero_open_ts is not None:
        opened.insert(0, (side.zero_open_ts, side.zero_open_frame))
    for (start, frame), stop in zip(opened, (int(ts[i]) for i in ends), strict=False):
        side.zero_s += (stop - start) / NS
        if len(side.zero_events) < MAX_EVENTS_KEPT:
            side.zero_events.append(
                ZeroWindowEvent(start_ts_ns=start, frame=frame, duration_s=(stop - start) / NS)
            )
    if len(opened) > len(ends):
        side.zero_open_ts, side.zero_open_frame = opened[-1]
    else:
        side.zero_open_ts = None


def _running_high(seg_end: I64Array, high_end: int, skip: BoolArray) -> tuple[I64Array, I64Array]:
    """Highest sequence end after each segment and before it, ``skip`` rows not counting."""
    ends = np.where(skip, NEG, seg_end)
    cum_end = np.maximum.accumulate(np.maximum(ends, high_end))
    return cum_end, shifted(cum_end, high_end)


def advance_sequence(
    seg_start: I64Array, seg_end: I64Array, high_end: int, probe_like: BoolArray
) -> tuple[I64Array, I64Array, BoolArray]:
    """Highest sequence sent after and before each data segment, and which were zero-window probes.

    A probe is a ``probe_like`` segment starting exactly at the highest
    sequence sent so far, not counting earlier probes: that is why the first
    pass leaves every candidate out, and the second only the probes.
    """
    if len(seg_end) == 0:
        return seg_end, seg_end, np.zeros(0, dtype=bool)
    if not probe_like.any():
        cum_end = running_max(seg_end, high_end)  # no row skipped: mostly in order already
        return cum_end, shifted(cum_end, high_end), probe_like
    _, prev_high = _running_high(seg_end, high_end, probe_like)
    zwp = probe_like & (seg_start == prev_high)
    cum_end, prev_high = _running_high(seg_end, high_end, zwp)
    return cum_end, prev_high, zwp
