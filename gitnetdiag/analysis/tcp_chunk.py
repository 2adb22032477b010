"""One direction of one connection over one chunk of packets: the steps of the update.

:meth:`gitnetdiag.analysis.tcp._ConnectionState.update` runs them for each side
as the sender, in this order (each step reads what the ones before it found,
and the carried :class:`SideState` of the chunks before):

1. :func:`sender_view`: which rows the sender sent, which are the peer's ACKs, and
   :func:`unwrap` of their sequence numbers;
2. :func:`segments`: the sender's data segments, retransmissions, new bytes;
3. :func:`peer_acks`: the peer's ACKs, windows, duplicate ACKs, SACK blocks;
4. :func:`row_state`: per row, what was in flight and the window left;
5. :func:`retransmission_classes`: fast or timeout retransmissions, spurious ones
   (then the RTT samples and the :func:`advertised_windows`);
6. :func:`classify_limits`: what limited the sender, interval by interval;
7. :func:`carry`: what the next chunk needs.

Nothing here is public API; every array is over the chunk's rows of the connection
(``n``), the sender's data segments, or the peer's ACK rows, as named.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gitnetdiag.analysis.tcp_results import NS, SMALL_SEGMENT_BYTES, LimitKind, Thresholds
from gitnetdiag.analysis.tcp_state import (
    NEG,
    BoolArray,
    F64Array,
    I64Array,
    SideState,
    advance_sequence,
    ffill_index,
    running_max,
    shifted,
    signed32,
    zero_windows,
)
from gitnetdiag.capture.flows import TCP_ACK, TCP_FIN, TCP_RST, TCP_SYN

Columns = dict[str, I64Array]


@dataclass(frozen=True, slots=True)
class SenderView:
    """The chunk's rows seen with side ``d`` as the sender."""

    d: int
    """The sending side (0: the connection's initiator)."""
    n: int
    """Rows of the chunk."""
    is_sender: BoolArray
    """Per row: sent by side ``d``."""
    sender_rows: I64Array
    """Row numbers of the sender's packets."""
    peer_ack: BoolArray
    """Per row: the peer's packet with ACK set."""
    peer_rows: I64Array
    """Row numbers of the peer's ACKs."""
    peers_before: I64Array
    """Per row: how many of the peer's ACKs came at or before it; an array over the peer's
    ACKs with the value carried from the chunks before put first, indexed by it, gives
    each row the latest value (see :func:`latest`)."""


def latest(carried: int | bool, per_peer: I64Array | BoolArray, view: SenderView) -> I64Array:
    """Per row of ``view``: the value of ``per_peer`` (one per peer ACK) at the latest peer
    ACK at or before the row, ``carried`` before the chunk's first one."""
    return np.concatenate(([carried], per_peer))[view.peers_before]


@dataclass(frozen=True, slots=True)
class Segments:
    """The sender's data segments of the chunk (payload > 0), in row order."""

    rows: I64Array
    """Row number of each segment."""
    start: I64Array
    """First sequence number (unwrapped)."""
    end: I64Array
    """Sequence number after the last byte (unwrapped)."""
    ts: I64Array
    """Capture time, ns."""
    cum_end: I64Array
    """Highest sequence end sent so far, after each segment."""
    rtx: BoolArray
    """A retransmission (starts below what was already sent)."""
    zero_window_probe: BoolArray
    """A zero-window probe (neither retransmission nor new bytes)."""
    new_bytes: I64Array
    """Bytes never sent before."""


@dataclass(frozen=True, slots=True)
class PeerAcks:
    """The peer's ACKs of the chunk, in row order."""

    ack: I64Array
    """Acknowledgement number (unwrapped)."""
    cummax: I64Array
    """Highest acknowledgement so far."""
    window: I64Array
    """Advertised window, bytes (scaled)."""
    dup_run: I64Array
    """How many duplicate ACKs in a row, this one included (0: not a duplicate)."""
    sack: BoolArray
    """Carries SACK blocks."""


@dataclass(frozen=True, slots=True)
class RowState:
    """Per row of the chunk: the sender's state after it (forward-filled)."""

    data: BoolArray
    """The row is a data segment of the sender."""
    high_ack: I64Array
    """Highest sequence the peer acknowledged."""
    peer_window: I64Array
    """The peer's last advertised window."""
    known: BoolArray
    """Both the highest sent and the highest acknowledged are known."""
    in_flight: I64Array
    """Bytes sent and not yet acknowledged (0 where unknown)."""


class ChunkFlags:
    """What the chunk's TCP flags say, the same whichever side is the sender (computed
    once per chunk; a plain class: a dataclass costs a millisecond of start-up)."""

    __slots__ = ("any_rst", "any_syn", "has_ack", "plain_ack")

    def __init__(self, flags: I64Array, syn: BoolArray) -> None:
        self.has_ack: BoolArray = (flags & TCP_ACK) != 0
        """Per row: the ACK flag is set."""
        self.any_syn = bool(syn.any())
        self.any_rst = bool(((flags & TCP_RST) != 0).any())
        self.plain_ack: BoolArray = (
            self.has_ack & ~syn & ((flags & TCP_RST) == 0) if self.any_syn or self.any_rst
            else self.has_ack)
        """Per row: ACK set, neither SYN nor RST."""


def sender_view(d: int, cols: Columns, has_ack: BoolArray) -> SenderView:
    """``has_ack``: per row, the ACK flag is set (the same for both sides: computed once)."""
    dirs = cols["dir"]
    is_sender = dirs == d
    peer_ack = (dirs == 1 - d) & has_ack
    return SenderView(d=d, n=len(dirs), is_sender=is_sender,
                      sender_rows=np.flatnonzero(is_sender), peer_ack=peer_ack,
                      peer_rows=np.flatnonzero(peer_ack), peers_before=np.cumsum(peer_ack))


def unwrap(side: SideState, cols: Columns, view: SenderView) -> tuple[I64Array, I64Array]:
    """The sender's sequence numbers and the peer's ACKs in the sender's unwrapped sequence
    space (based on its SYN, or the first seq/ack seen)."""
    if side.base is None:
        if len(view.sender_rows):
            side.base = int(cols["seq"][view.sender_rows[0]])
        elif len(view.peer_rows):
            side.base = int(cols["ack"][view.peer_rows[0]])
    base = side.base if side.base is not None else 0
    return (side.chain_seq.unwrap(cols["seq"][view.sender_rows], base),
            side.chain_ack.unwrap(cols["ack"][view.peer_rows], base))


def count_sender_packets(side: SideState, cols: Columns, view: SenderView,
                         chunk_flags: ChunkFlags) -> None:
    """Packets, payload and resets of the sender."""
    s_idx = view.sender_rows
    side.packets += len(s_idx)
    side.payload += int(cols["payload_len"][s_idx].sum())
    if side.first_fin_ts is None:
        fin_rows = np.flatnonzero((cols["flags"][s_idx] & TCP_FIN) != 0)
        if len(fin_rows):
            side.first_fin_ts = int(cols["ts_ns"][s_idx[fin_rows[0]]])
    if not chunk_flags.any_rst:
        return
    rst_rows = np.flatnonzero((cols["flags"][s_idx] & TCP_RST) != 0)
    if len(rst_rows):
        side.resets += len(rst_rows)
        if side.first_reset_frame is None:
            side.first_reset_frame = int(cols["frame"][s_idx[rst_rows[0]]])
            side.first_reset_ts = int(cols["ts_ns"][s_idx[rst_rows[0]]])


def segments(side: SideState, cols: Columns, win: I64Array, view: SenderView,
             seq_u: I64Array) -> Segments:
    """Data segments, retransmissions and new bytes; zero-window probes told apart."""
    s_plen = cols["payload_len"][view.sender_rows]
    data_mask = s_plen > 0
    if data_mask.all():  # a bulk sender's rows: every one carries data
        data_pos, seg_start, d_plen = view.sender_rows, seq_u, s_plen
    else:
        data_pos, seg_start, d_plen = (view.sender_rows[data_mask], seq_u[data_mask],
                                       s_plen[data_mask])
    seg_end = seg_start + d_plen
    seg_ts = cols["ts_ns"][data_pos]
    if len(data_pos):
        if side.first_data_ts is None:
            side.first_data_ts = int(seg_ts[0])
            side.first_seq_u = int(seg_start[0])
        side.max_plen = max(side.max_plen, int(s_plen.max()))
        large = np.flatnonzero(d_plen > SMALL_SEGMENT_BYTES)
        if len(large):
            side.last_large_ts = int(seg_ts[large[-1]])
            side.small_tail = int(d_plen[large[-1] + 1:].sum())
        else:
            side.small_tail += int(d_plen.sum())
    # Zero-window probes (tshark's tcp.analysis.zero_window_probe): one byte
    # at the next sequence number while the peer's last window was zero.
    # Like tshark, they do not advance the sequence space: the repeated
    # probes and the data that follows once the window opens are neither
    # retransmissions nor new bytes in flight.
    probe_like = d_plen == 1
    if probe_like.any():
        peer_wins = win[view.peer_rows]
        win_before = np.concatenate(([side.peer_win], peer_wins))[
            view.peers_before[data_pos[probe_like]]]
        probe_like[probe_like] = win_before == 0
    cum_end, prev_high, zwp = advance_sequence(seg_start, seg_end, side.high_end, probe_like)
    side.zero_window_probes += int(np.count_nonzero(zwp))
    return Segments(
        rows=data_pos, start=seg_start, end=seg_end, ts=seg_ts, cum_end=cum_end,
        rtx=(seg_start < prev_high) & ~zwp, zero_window_probe=zwp,
        new_bytes=np.where(zwp, 0, np.maximum(seg_end - np.maximum(prev_high, seg_start), 0)))


def peer_acks(side: SideState, cols: Columns, win: I64Array, view: SenderView,
              ack_u: I64Array) -> PeerAcks:
    """The peer's ACKs: cumulative highest, windows, duplicate runs, SACK and D-SACK."""
    p_idx = view.peer_rows
    flags = cols["flags"]
    p_cummax = running_max(ack_u, side.high_ack)
    p_plain = ((cols["payload_len"][p_idx] == 0)
               & ((flags[p_idx] & (TCP_SYN | TCP_FIN | TCP_RST)) == 0))
    prev_ack = shifted(ack_u, side.peer_last_ack_u if side.peer_last_ack_u is not None else NEG)
    dup = p_plain & (ack_u == prev_ack)
    if dup.any():
        last_reset = ffill_index(~dup)
        k = np.arange(len(dup))
        dup_run = np.where(
            dup, np.where(last_reset < 0, k + 1 + side.peer_dup_run, k - last_reset), 0
        )
    else:
        dup_run = np.zeros(len(dup), dtype=np.int64)
    p_sack = cols["sack_count"][p_idx] > 0
    if p_sack.any():
        sack_right = cols["sack_right"][p_idx]
        dsack = p_sack & (signed32(sack_right - cols["ack"][p_idx]) <= 0)
        side.dsack += int(np.count_nonzero(dsack))
    return PeerAcks(ack=ack_u, cummax=p_cummax, window=win[p_idx], dup_run=dup_run, sack=p_sack)


def row_state(side: SideState, view: SenderView, segs: Segments, acks: PeerAcks) -> RowState:
    """Per row: highest sent, highest acknowledged, the peer's window, bytes in flight.

    The highest sent and acknowledged never decrease (running maxima from the carried
    values on), so each row's is the latest one at or before it."""
    n = view.n
    s_data_row = np.zeros(n, dtype=bool)
    s_data_row[segs.rows] = True
    high_end_all = np.concatenate(([side.high_end], segs.cum_end))[np.cumsum(s_data_row)]
    high_ack_all = latest(side.high_ack, acks.cummax, view)
    peer_win_all = latest(side.peer_win, acks.window, view)
    known = (high_end_all > NEG) & (high_ack_all > NEG)
    in_flight = high_end_all - high_ack_all
    np.maximum(in_flight, 0, out=in_flight)
    in_flight[~known] = 0
    if len(segs.rows):
        side.max_flight = max(side.max_flight, int(in_flight[segs.rows].max()))
    return RowState(data=s_data_row, high_ack=high_ack_all, peer_window=peer_win_all,
                    known=known, in_flight=in_flight)


def retransmission_classes(side: SideState, view: SenderView, segs: Segments, acks: PeerAcks,
                           rows: RowState, *, rtt_s: float, t: Thresholds) -> BoolArray:
    """Count the retransmissions by class; returns which segments were timeouts.

    A retransmission is a timeout when it came an RTO after the segment before it with no
    duplicate ACKs or SACK to signal the loss (or two RTOs after, signalled or not).
    """
    rtx = segs.rtx
    n_rtx = int(np.count_nonzero(rtx))
    timeout = np.zeros(len(rtx), dtype=bool)
    if not n_rtx:
        return timeout
    seg_ts = segs.ts
    prev_seg_ts = shifted(seg_ts, side.last_data_ts if side.last_data_ts is not None
                          else int(seg_ts[0]))
    gap_s = (seg_ts - prev_seg_ts) / NS
    before = view.peers_before[segs.rows]
    seg_dup = np.concatenate(([side.peer_dup_run], acks.dup_run))[before]
    seg_sack = np.concatenate(([side.peer_last_sack], acks.sack))[before]
    rto_s = 0.9 * (rtt_s + t.min_rto_s)
    signalled = (seg_dup >= t.dupack_threshold) | seg_sack
    timeout = rtx & (((gap_s >= rto_s) & ~signalled) | (gap_s >= 2 * rto_s))
    side.retrans += n_rtx
    side.retrans_bytes += int(segs.end[rtx].sum() - segs.start[rtx].sum())
    side.timeout += int(np.count_nonzero(timeout))
    side.fast += n_rtx - int(np.count_nonzero(timeout))
    side.spurious += int(np.count_nonzero(rtx & (segs.end <= rows.high_ack[segs.rows])))
    return timeout


def advertised_windows(side: SideState, cols: Columns, win: I64Array, view: SenderView,
                       chunk_flags: ChunkFlags) -> None:
    """The windows the sender advertised: largest, smallest, zero-window events.

    A SYN's window is never scaled (RFC 7323) but it is an advertisement:
    it counts for the largest window, not for the zero-window events.
    """
    flags = cols["flags"]
    if chunk_flags.any_syn:
        syn_win = win[view.is_sender & ((flags & TCP_SYN) != 0) & ((flags & TCP_RST) == 0)]
        if len(syn_win):
            side.max_win = max(side.max_win, int(syn_win.max()))
    own = view.is_sender & chunk_flags.plain_ack
    own_idx = np.flatnonzero(own)
    if len(own_idx):
        own_win = win[own_idx]
        side.max_win = max(side.max_win, int(own_win.max()))
        low = int(own_win.min())
        side.min_win = low if side.min_win is None else min(side.min_win, low)
        zero_windows(side, own_idx, own_win, cols["ts_ns"], cols["frame"])


def _in_recovery(side: SideState, view: SenderView, segs: Segments, rows: RowState,
                 timeout: BoolArray) -> BoolArray:
    """Per row: loss recovery, until the ACKs pass what had been sent when the
    retransmission went out (the RFC 6582 recovery point), or just before a timeout."""
    n = view.n
    if not segs.rtx.any():  # the recovery point carried from the chunks before holds
        return rows.high_ack < side.recover
    before_timeout = np.zeros(n, dtype=bool)
    # Each retransmission's point is the highest sent so far, which never decreases (nor
    # falls below the point carried): each row's is the running maximum.
    mark = np.zeros(n, dtype=bool)
    mark[segs.rows[segs.rtx]] = True
    recover = np.concatenate(([side.recover], segs.cum_end[segs.rtx]))[np.cumsum(mark)]
    rto_rows = segs.rows[timeout]
    before_timeout[rto_rows[rto_rows > 0] - 1] = True
    side.recover = int(recover[-1])
    in_recovery: BoolArray = (rows.high_ack < recover) | before_timeout
    return in_recovery


def _answered(side: SideState, view: SenderView, acks: PeerAcks, rows: RowState) -> BoolArray:
    """Per row: did the sender answer the ACK that advanced (its data is the next row)?
    A row between two such ACKs takes the answer to the next one (True after the last)."""
    n = view.n
    if len(view.peer_rows):
        prev_cum = np.concatenate(([side.high_ack], acks.cummax[:-1]))
        adv_rows = view.peer_rows[acks.cummax > prev_cum]
    else:
        adv_rows = view.peer_rows
    after = adv_rows + 1
    answered = rows.data[np.minimum(after, n - 1)] & (after < n)
    advancing = np.zeros(n, dtype=bool)
    advancing[adv_rows] = True
    next_adv = np.cumsum(advancing)  # per row: advancing ACKs before it (itself excluded)
    next_adv -= advancing
    result: BoolArray = np.concatenate((answered, [True]))[next_adv]
    return result


def classify_limits(side: SideState, view: SenderView, segs: Segments, acks: PeerAcks,
                    rows: RowState, timeout: BoolArray, *, mss: int, lead_s: float,
                    dt_s: F64Array) -> None:
    """Add each row's interval (``dt_s``, to the next row) to what limited the sender then:
    the peer's window, loss recovery, the sender itself (idle, or not answering ACKs), else
    the congestion window. ``lead_s`` is the interval from the previous chunk's last row."""
    if side.first_data_ts is None:
        return
    if side.tail_idle and rows.data.any():
        side.limit_s[LimitKind.SELF] += side.pending_idle_s + lead_s
        side.pending_idle_s = 0.0
    elif side.tail_idle:
        side.pending_idle_s += lead_s
    elif side.tail_class >= 0:
        side.limit_s[side.tail_class] += lead_s
    room = rows.peer_window - rows.in_flight
    in_recovery = _in_recovery(side, view, segs, rows, timeout)
    row_answer = _answered(side, view, acks, rows)
    idle = rows.known & (rows.in_flight < mss) & (room >= mss)
    rwnd = (room < mss) & (rows.peer_window >= 0)
    # The later kinds win: self (not answering), loss, the peer's window, idle.
    cls = np.where(row_answer, LimitKind.CWND, LimitKind.SELF)
    cls = np.where(in_recovery, LimitKind.LOSS, cls)
    cls = np.where(rwnd, LimitKind.RWND, cls)
    cls = np.where(idle, LimitKind.SELF, cls)
    active = rows.known
    counted = active & ~idle
    idle_now = active & idle
    # The last row's interval ends in the next chunk: resolved there.
    counted[-1] = False
    idle_now[-1] = False
    # Idle up to the chunk's last data segment is committed; after it, it waits for more.
    later = int(segs.rows[-1]) + 1 if len(segs.rows) else 0
    side.limit_s += np.bincount(cls[counted], weights=dt_s[counted], minlength=4)[:4]
    side.limit_s[LimitKind.SELF] += float(dt_s[:later][idle_now[:later]].sum())
    if later:
        side.pending_idle_s = 0.0
    side.pending_idle_s += float(dt_s[later:][idle_now[later:]].sum())
    side.tail_idle = bool(active[-1] and idle[-1])
    side.tail_class = int(cls[-1]) if active[-1] else -1


def carry(side: SideState, segs: Segments, acks: PeerAcks) -> None:
    """What the next chunk starts from: highest sent and acknowledged, the peer's last
    window, ACK, duplicate run and SACK; the delivery-rate samples."""
    if len(segs.end):
        side.high_end = int(segs.cum_end[-1])
        side.last_data_ts = int(segs.ts[-1])
    if len(acks.ack):
        side.high_ack = int(acks.cummax[-1])
        side.peer_win = int(acks.window[-1])
        side.peer_last_ack_u = int(acks.ack[-1])
        side.peer_dup_run = int(acks.dup_run[-1])
        side.peer_last_sack = bool(acks.sack[-1])
    side.delivery.add(segs.end, segs.end - segs.start, segs.rtx, side.high_ack)
