"""TCP connection analysis over a packet table, streamed chunk by chunk.

Pure: packet tables (``gitnetdiag.capture.PACKET_DTYPE``) in, frozen
dataclasses out.  Work is vectorised per connection and chunk; the only
Python loops are over connections, handshake packets and chunks.  State that
crosses a chunk boundary (highest sequence sent, highest ACK, last window,
unacknowledged segments awaiting an RTT sample, ...) is carried explicitly,
so a 10-million-packet capture is analysed in bounded memory.

Everything about "in flight" and "what limited the sender" is seen from the
capture point, like Wireshark's ``tcp.analysis.bytes_in_flight``: it is exact
for a capture taken on the sending host (the pushing client), approximate
elsewhere.  The thresholds are in :class:`Thresholds`; docs/analysis.md
explains them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from gitnetdiag.analysis.tcp_results import (
    NS,
    ConnectionAnalysis,
    ConnectionSeries,
    DirectionAnalysis,
    Handshake,
    LimitKind,
    LimitShares,
    RttStats,
    Thresholds,
    ZeroWindowEvent,
    guess_protocol,
)
from gitnetdiag.analysis.tcp_state import (
    MAX_EVENTS_KEPT,
    NEG,
    BoolArray,
    HandshakeState,
    I64Array,
    SeriesBins,
    SideState,
    advance_sequence,
    bfill_index,
    ffill_index,
    rtt_samples,
    signed32,
    zero_windows,
)
from gitnetdiag.capture.flows import TCP_ACK, TCP_FIN, TCP_RST, TCP_SYN, Connection

__all__ = [
    "ConnectionAnalysis",
    "ConnectionSeries",
    "DirectionAnalysis",
    "Handshake",
    "LimitKind",
    "LimitShares",
    "RttStats",
    "TcpAnalyzer",
    "Thresholds",
    "ZeroWindowEvent",
    "analyze_connections",
    "guess_protocol",
]


class _ConnectionState:
    """Carried state of one connection across chunks."""

    def __init__(self, thresholds: Thresholds) -> None:
        self.t = thresholds
        self.sides = (SideState(), SideState())
        self.hs = HandshakeState()
        self.first_ts: int | None = None
        self.last_ts = 0
        self.packets = 0
        self.series = SeriesBins(bin_ns=int(thresholds.bin_s * NS))

    # -- helpers -----------------------------------------------------------
    def rtt_estimate_s(self, d: int) -> float:
        side = self.sides[d]
        if side.rtt_n:
            return side.rtt_min
        hs = self.hs
        if hs.syn_ts is not None and hs.ack_ts is not None:
            return (hs.ack_ts - hs.syn_ts) / NS
        return 0.0

    # -- the chunk update ----------------------------------------------------
    def update(self, cols: dict[str, I64Array]) -> None:
        n = len(cols["ts_ns"])
        if n == 0:
            return
        # Analysis follows frame order, as tshark's does; a timestamp that
        # steps back (a clock step, a merged or reordered file) would give
        # negative intervals, so this connection's clock never runs backwards:
        # such a frame counts as simultaneous with the one before it.
        floor = self.last_ts if self.first_ts is not None else int(cols["ts_ns"][0])
        ts = np.maximum.accumulate(np.maximum(cols["ts_ns"], floor))
        cols["ts_ns"] = ts
        if self.first_ts is None:
            self.first_ts = int(ts[0])
        self.packets += n
        flags = cols["flags"]
        dirs = cols["dir"]
        self._handshake(cols)
        syn = (flags & TCP_SYN) != 0
        scales = np.array([self.hs.scale(0), self.hs.scale(1)], dtype=np.int64)
        win = np.where(syn, cols["win_raw"], cols["win_raw"] << scales[dirs])
        bins = self.series.index(ts - self.first_ts)
        gaps = np.empty(n, dtype=np.int64)
        gaps[:-1] = ts[1:] - ts[:-1]
        gaps[-1] = 0
        for d in (0, 1):
            self._direction(d, cols, win, bins, gaps)
        self.last_ts = int(ts[-1])

    def _handshake(self, cols: dict[str, I64Array]) -> None:
        flags = cols["flags"]
        hs = self.hs
        syn_rows = np.flatnonzero((flags & TCP_SYN) != 0)
        if len(syn_rows) == 0 and hs.synack_first_ts is None:
            return
        dirs = cols["dir"]
        ts = cols["ts_ns"]
        ack_only = (dirs == 0) & ((flags & TCP_ACK) != 0) & ((flags & (TCP_SYN | TCP_RST)) == 0)
        for i in syn_rows.tolist():
            d = int(dirs[i])
            is_ack = bool(flags[i] & TCP_ACK)
            t = int(ts[i])
            if d == 0 and not is_ack:
                hs.syn_count += 1
                hs.syn_seen = True
                if hs.synack_first_ts is None:
                    hs.syn_ts = t
            elif d == 1 and is_ack:
                hs.synack_count += 1
                hs.synack_seen = True
                if hs.synack_first_ts is None:
                    hs.synack_first_ts = t
                elif hs.ack_ts is not None and t > hs.ack_ts:
                    hs.synack_after_ack += 1
            else:
                continue
            side = self.sides[d]
            side.base = int(cols["seq"][i])
            if hs.mss[d] is None and cols["opt_mss"][i] >= 0:
                hs.mss[d] = int(cols["opt_mss"][i])
            hs.wscale[d] = int(cols["opt_wscale"][i])
            hs.sack_perm[d] = bool(cols["opt_sack_perm"][i])
            if hs.ack_ts is None and hs.synack_first_ts is not None:
                after = ack_only & (ts >= hs.synack_first_ts)
                if after.any():
                    hs.ack_ts = int(ts[int(np.argmax(after))])
        if hs.ack_ts is None and hs.synack_first_ts is not None:
            after = ack_only & (ts >= hs.synack_first_ts)
            if after.any():
                hs.ack_ts = int(ts[int(np.argmax(after))])

    def _direction(
        self,
        d: int,
        cols: dict[str, I64Array],
        win: I64Array,
        bins: I64Array,
        gaps: I64Array,
    ) -> None:
        t = self.t
        side = self.sides[d]
        e = 1 - d
        ts = cols["ts_ns"]
        flags = cols["flags"]
        dirs = cols["dir"]
        plen = cols["payload_len"]
        n = len(ts)
        is_s = dirs == d
        is_p = dirs == e
        s_idx = np.flatnonzero(is_s)
        p_ack = is_p & ((flags & TCP_ACK) != 0)
        p_idx = np.flatnonzero(p_ack)

        # Sequence space of side d: its SYN, or the first seq/ack seen.
        if side.base is None:
            if len(s_idx):
                side.base = int(cols["seq"][s_idx[0]])
            elif len(p_idx):
                side.base = int(cols["ack"][p_idx[0]])
        base = side.base if side.base is not None else 0
        seq_u = side.chain_seq.unwrap(cols["seq"][s_idx], base)
        ack_u = side.chain_ack.unwrap(cols["ack"][p_idx], base)

        # Sender counters.
        s_plen = plen[s_idx]
        side.packets += len(s_idx)
        side.payload += int(s_plen.sum())
        s_flags = flags[s_idx]
        rst_rows = np.flatnonzero((s_flags & TCP_RST) != 0)
        if len(rst_rows):
            side.resets += len(rst_rows)
            if side.first_reset_frame is None:
                side.first_reset_frame = int(cols["frame"][s_idx[rst_rows[0]]])

        # Data segments, retransmissions, new bytes.
        data_mask = s_plen > 0
        data_pos = s_idx[data_mask]
        seg_start = seq_u[data_mask]
        seg_end = seg_start + s_plen[data_mask]
        seg_ts = ts[data_pos]
        if len(data_pos):
            if side.first_data_ts is None:
                side.first_data_ts = int(seg_ts[0])
                side.first_seq_u = int(seg_start[0])
            side.max_plen = max(side.max_plen, int(s_plen.max()))
        # Zero-window probes (tshark's tcp.analysis.zero_window_probe): one byte
        # at the next sequence number while the peer's last window was zero.
        # Like tshark, they do not advance the sequence space: the repeated
        # probes and the data that follows once the window opens are neither
        # retransmissions nor new bytes in flight.
        last_p = ffill_index(p_ack)
        probe_like = s_plen[data_mask] == 1
        if probe_like.any():
            lp_one = last_p[data_pos[probe_like]]
            win_before = np.where(lp_one >= 0, win[np.maximum(lp_one, 0)], side.peer_win)
            probe_like[probe_like] = win_before == 0
        cum_end, prev_high, zwp = advance_sequence(seg_start, seg_end, side.high_end, probe_like)
        side.zero_window_probes += int(np.count_nonzero(zwp))
        rtx = (seg_start < prev_high) & ~zwp
        new_bytes = np.where(zwp, 0, np.maximum(seg_end - np.maximum(prev_high, seg_start), 0))

        # The peer's ACKs, windows, duplicate ACKs and SACK blocks.
        p_cummax = np.maximum.accumulate(np.maximum(ack_u, side.high_ack)) if len(ack_u) else ack_u
        p_win = win[p_idx]
        p_plain = (plen[p_idx] == 0) & ((flags[p_idx] & (TCP_SYN | TCP_FIN | TCP_RST)) == 0)
        prev_ack = np.empty_like(ack_u)
        if len(ack_u):
            prev_ack[0] = side.peer_last_ack_u if side.peer_last_ack_u is not None else NEG
            prev_ack[1:] = ack_u[:-1]
        dup = p_plain & (ack_u == prev_ack)
        last_reset = ffill_index(~dup)
        k = np.arange(len(dup))
        dup_run = np.where(
            dup, np.where(last_reset < 0, k + 1 + side.peer_dup_run, k - last_reset), 0
        )
        p_sack = cols["sack_count"][p_idx] > 0
        if len(p_idx):
            sack_right = cols["sack_right"][p_idx]
            dsack = p_sack & (signed32(sack_right - cols["ack"][p_idx]) <= 0)
            side.dsack += int(np.count_nonzero(dsack))

        # Per connection row: state after the row (forward-filled).
        s_data_row = np.zeros(n, dtype=bool)
        s_data_row[data_pos] = True
        high_end_row = np.full(n, -1, dtype=np.int64)
        high_end_row[data_pos] = cum_end
        last_s = ffill_index(s_data_row)
        high_end_all = np.where(last_s >= 0, high_end_row[np.maximum(last_s, 0)], side.high_end)
        p_row_cum = np.full(n, 0, dtype=np.int64)
        p_row_cum[p_idx] = p_cummax
        p_row_win = np.zeros(n, dtype=np.int64)
        p_row_win[p_idx] = p_win
        lp = np.maximum(last_p, 0)
        high_ack_all = np.where(last_p >= 0, p_row_cum[lp], side.high_ack)
        peer_win_all = np.where(last_p >= 0, p_row_win[lp], side.peer_win)
        known = (high_end_all > NEG) & (high_ack_all > NEG)
        in_flight = np.where(known, np.maximum(high_end_all - high_ack_all, 0), 0)
        if len(data_pos):
            side.max_flight = max(side.max_flight, int(in_flight[data_pos].max()))

        # Retransmission classes.
        n_rtx = int(np.count_nonzero(rtx))
        timeout = np.zeros(len(rtx), dtype=bool)
        if n_rtx:
            prev_seg_ts = np.empty_like(seg_ts)
            prev_seg_ts[0] = side.last_data_ts if side.last_data_ts is not None else seg_ts[0]
            prev_seg_ts[1:] = seg_ts[:-1]
            gap_s = (seg_ts - prev_seg_ts) / NS
            row_dup = np.zeros(n, dtype=np.int64)
            row_dup[p_idx] = dup_run
            row_sack = np.zeros(n, dtype=bool)
            row_sack[p_idx] = p_sack
            lp_seg = last_p[data_pos]
            seg_dup = np.where(lp_seg >= 0, row_dup[np.maximum(lp_seg, 0)], side.peer_dup_run)
            seg_sack = np.where(lp_seg >= 0, row_sack[np.maximum(lp_seg, 0)], side.peer_last_sack)
            rto_s = 0.9 * (self.rtt_estimate_s(d) + t.min_rto_s)
            signalled = (seg_dup >= t.dupack_threshold) | seg_sack
            timeout = rtx & (((gap_s >= rto_s) & ~signalled) | (gap_s >= 2 * rto_s))
            side.retrans += n_rtx
            side.retrans_bytes += int(seg_end[rtx].sum() - seg_start[rtx].sum())
            side.timeout += int(np.count_nonzero(timeout))
            side.fast += n_rtx - int(np.count_nonzero(timeout))
            side.spurious += int(np.count_nonzero(rtx & (seg_end <= high_ack_all[data_pos])))
            side.last_retrans_ts = int(seg_ts[rtx][-1])

        # RTT samples (Karn: no sample from an ACK that also covers a retransmission).
        rtt_samples(side, seg_ts, seg_end, rtx | zwp, data_pos, ts, p_idx, p_cummax)

        # Windows this side advertised, zero windows.
        # A SYN's window is never scaled (RFC 7323) but it is an advertisement:
        # it counts for the largest window, not for the zero-window events.
        syn_win = win[is_s & ((flags & TCP_SYN) != 0) & ((flags & TCP_RST) == 0)]
        if len(syn_win):
            side.max_win = max(side.max_win, int(syn_win.max()))
        own = is_s & ((flags & (TCP_SYN | TCP_RST)) == 0) & ((flags & TCP_ACK) != 0)
        own_idx = np.flatnonzero(own)
        if len(own_idx):
            own_win = win[own_idx]
            side.max_win = max(side.max_win, int(own_win.max()))
            low = int(own_win.min())
            side.min_win = low if side.min_win is None else min(side.min_win, low)
            zero_windows(side, own_idx, own_win, ts, cols["frame"])

        # Time series.
        if len(data_pos):
            b = bins[data_pos]
            self.series.add_sum("sent", d, b, seg_end - seg_start)
            self.series.add_sum("good", d, b, new_bytes)
            if n_rtx:
                self.series.add_sum("retrans", d, b[rtx], (seg_end - seg_start)[rtx])
            self.series.add_extreme("flight", d, b, in_flight[data_pos], high=True)
        if len(p_idx):
            self.series.add_extreme("window", d, bins[p_idx], p_win, high=False)

        # What limited this side as a sender, interval by interval.
        self._limits(
            d,
            side,
            cols,
            in_flight,
            peer_win_all,
            known,
            s_data_row,
            p_idx,
            p_cummax,
            high_ack_all,
            data_pos,
            cum_end,
            rtx,
            timeout,
            gaps,
        )

        # Carry.
        if len(seg_end):
            side.high_end = int(cum_end[-1])
            side.last_data_ts = int(seg_ts[-1])
        if len(ack_u):
            side.high_ack = int(p_cummax[-1])
            side.peer_win = int(p_win[-1])
            side.peer_last_ack_u = int(ack_u[-1])
            side.peer_dup_run = int(dup_run[-1])
            side.peer_last_sack = bool(p_sack[-1])
        side.delivery.add(seg_end, seg_end - seg_start, rtx, side.high_ack)

    def _limits(
        self,
        d: int,
        side: SideState,
        cols: dict[str, I64Array],
        in_flight: I64Array,
        peer_win: I64Array,
        known: BoolArray,
        s_data_row: BoolArray,
        p_idx: I64Array,
        p_cummax: I64Array,
        high_ack_all: I64Array,
        data_pos: I64Array,
        cum_end: I64Array,
        rtx: BoolArray,
        timeout: BoolArray,
        gaps: I64Array,
    ) -> None:
        ts = cols["ts_ns"]
        n = len(ts)
        if side.first_data_ts is None:
            return
        hs = self.hs
        mss = side.max_plen or 1460
        if hs.mss[1 - d]:
            mss = min(mss, int(hs.mss[1 - d] or mss))
        # Interval from the previous chunk's last row to this chunk's first row.
        lead_s = (int(ts[0]) - self.last_ts) / NS if self.packets > n else 0.0
        if side.tail_idle and s_data_row.any():
            side.limit_s[LimitKind.SELF] += side.pending_idle_s + lead_s
            side.pending_idle_s = 0.0
        elif side.tail_idle:
            side.pending_idle_s += lead_s
        elif side.tail_class >= 0:
            side.limit_s[side.tail_class] += lead_s

        room = peer_win - in_flight
        # Loss recovery lasts until the ACKs pass what had been sent when the
        # retransmission went out (the RFC 6582 recovery point).
        recover = np.full(n, side.recover, dtype=np.int64)
        before_timeout = np.zeros(n, dtype=bool)
        if rtx.any():
            mark = np.zeros(n, dtype=bool)
            mark[data_pos[rtx]] = True
            point = np.zeros(n, dtype=np.int64)
            point[data_pos[rtx]] = cum_end[rtx]
            last_mark = ffill_index(mark)
            recover = np.where(last_mark >= 0, point[np.maximum(last_mark, 0)], side.recover)
            rto_rows = data_pos[timeout]
            before_timeout[rto_rows[rto_rows > 0] - 1] = True
        in_recovery = (high_ack_all < recover) | before_timeout
        side.recover = int(recover[-1])
        # Did the sender answer an ACK that advanced?  (next row is its data)
        advancing = np.zeros(n, dtype=bool)
        if len(p_idx):
            prev_cum = np.concatenate(([side.high_ack], p_cummax[:-1]))
            advancing[p_idx] = p_cummax > prev_cum
        next_is_data = np.zeros(n, dtype=bool)
        next_is_data[:-1] = s_data_row[1:]
        answered = advancing & next_is_data
        next_adv = bfill_index(advancing)
        waiting_answered = np.where(next_adv < n, answered[np.minimum(next_adv, n - 1)], True)
        row_answer = np.where(advancing, answered, waiting_answered)

        cls = np.full(n, LimitKind.CWND, dtype=np.int64)
        cls[~row_answer] = LimitKind.SELF
        cls[in_recovery] = LimitKind.LOSS
        cls[(room < mss) & (peer_win >= 0)] = LimitKind.RWND
        idle = known & (in_flight < mss) & (room >= mss)
        cls[idle] = LimitKind.SELF
        active = known
        dt_s = gaps / NS
        later_data = bfill_index(s_data_row) < n
        counted = active & ~idle
        idle_committed = active & idle & later_data
        idle_pending = active & idle & ~later_data
        # The last row's interval ends in the next chunk: resolved there.
        counted[-1] = False
        idle_committed[-1] = False
        idle_pending[-1] = False
        side.limit_s += np.bincount(cls[counted], weights=dt_s[counted], minlength=4)[:4]
        side.limit_s[LimitKind.SELF] += float(dt_s[idle_committed].sum())
        if s_data_row.any():
            side.pending_idle_s = 0.0
        side.pending_idle_s += float(dt_s[idle_pending].sum())
        side.tail_idle = bool(active[-1] and idle[-1])
        side.tail_class = int(cls[-1]) if active[-1] else -1

    # -- results -------------------------------------------------------------
    def result(self, conn: Connection) -> ConnectionAnalysis:
        hs = self.hs
        dirs = [self._direction_result(d) for d in (0, 1)]
        rtt = None
        syn_to_synack = None
        synack_to_ack = None
        if hs.syn_ts is not None and hs.synack_first_ts is not None:
            syn_to_synack = (hs.synack_first_ts - hs.syn_ts) / NS
        if hs.synack_first_ts is not None and hs.ack_ts is not None:
            synack_to_ack = (hs.ack_ts - hs.synack_first_ts) / NS
        if syn_to_synack is not None and synack_to_ack is not None:
            rtt = syn_to_synack + synack_to_ack
        handshake = Handshake(
            syn_count=hs.syn_count,
            syn_retransmissions=max(hs.syn_count - 1, 0),
            synack_count=hs.synack_count,
            synack_retransmissions=max(hs.synack_count - 1, 0),
            synack_after_ack=hs.synack_after_ack,
            syn_to_synack_s=syn_to_synack,
            synack_to_ack_s=synack_to_ack,
            rtt_s=rtt,
            window_scale_known=hs.scaling() is not None,
            window_scaling=bool(hs.scaling()),
        )
        s = self.series.aligned()
        series = ConnectionSeries(
            bin_s=s.width_ns / NS,
            start_ts_ns=self.first_ts or 0,
            sent_bytes=[s.sent[d].tolist() for d in (0, 1)],
            goodput_bytes=[s.good[d].tolist() for d in (0, 1)],
            retransmitted_bytes=[s.retrans[d].tolist() for d in (0, 1)],
            max_in_flight_bytes=[s.flight[d].tolist() for d in (0, 1)],
            min_window_bytes=[s.window[1 - d].tolist() for d in (0, 1)],
        )
        return ConnectionAnalysis(
            connection=conn,
            protocol=guess_protocol(conn.a_port, conn.b_port),
            packets=self.packets,
            first_ts_ns=self.first_ts or 0,
            last_ts_ns=self.last_ts,
            handshake=handshake,
            a_to_b=dirs[0],
            b_to_a=dirs[1],
            series=series,
        )

    def _direction_result(self, d: int) -> DirectionAnalysis:
        side = self.sides[d]
        hs = self.hs
        rtt = side.rtt_stats()
        unique = 0
        if side.first_seq_u is not None and side.high_end > NEG:
            unique = side.high_end - side.first_seq_u
        zero_s = side.zero_s
        events = list(side.zero_events)
        if side.zero_open_ts is not None and len(events) < MAX_EVENTS_KEPT:
            events.append(
                ZeroWindowEvent(
                    start_ts_ns=side.zero_open_ts, frame=side.zero_open_frame, duration_s=None
                )
            )
            zero_s += (self.last_ts - side.zero_open_ts) / NS
        return DirectionAnalysis(
            packets=side.packets,
            payload_bytes=side.payload,
            unique_bytes=unique,
            first_data_ts_ns=side.first_data_ts,
            last_data_ts_ns=side.last_data_ts,
            mss_bytes=hs.mss[d],
            window_scale=hs.scale(d) if hs.scale_known(d) else None,
            sack_permitted=hs.sack_perm[d],
            max_window_bytes=side.max_win,
            min_window_bytes=side.min_win,
            max_in_flight_bytes=side.max_flight,
            retransmissions=side.retrans,
            retransmitted_bytes=side.retrans_bytes,
            fast_retransmissions=side.fast,
            timeout_retransmissions=side.timeout,
            spurious_retransmissions=side.spurious,
            max_acked_segment_bytes=side.delivery.max_acked_len,
            unacked_retransmissions=side.delivery.unacked_retransmissions(),
            min_unacked_retransmitted_bytes=side.delivery.min_unacked_retransmitted_len(),
            dsack_blocks=side.dsack,
            loss_rate=side.retrans_bytes / side.payload if side.payload else 0.0,
            zero_window_count=side.zero_count,
            zero_window_s=zero_s,
            zero_window_events=events,
            zero_window_probes=side.zero_window_probes,
            resets_sent=side.resets,
            first_reset_frame=side.first_reset_frame,
            rtt=rtt,
            limits=LimitShares(
                rwnd_s=float(side.limit_s[LimitKind.RWND]),
                cwnd_s=float(side.limit_s[LimitKind.CWND]),
                loss_s=float(side.limit_s[LimitKind.LOSS]),
                self_s=float(side.limit_s[LimitKind.SELF]),
            ),
            unacked_bytes=side.unacked_bytes(),
        )


_COLUMNS = (
    "ts_ns",
    "frame",
    "dir",
    "flags",
    "seq",
    "ack",
    "win_raw",
    "payload_len",
    "opt_mss",
    "opt_wscale",
    "opt_sack_perm",
    "sack_count",
    "sack_right",
)


class TcpAnalyzer:
    """Feeds packet-table chunks (in file order) and produces per-connection results."""

    def __init__(self, thresholds: Thresholds | None = None) -> None:
        self.thresholds = thresholds or Thresholds()
        self._states: dict[int, _ConnectionState] = {}

    def feed(self, packets: npt.NDArray[np.void]) -> None:
        """Account for one chunk of the packet table."""
        if len(packets) == 0:
            return
        self.feed_columns({name: packets[name].astype(np.int64) for name in (*_COLUMNS, "conn")})

    def feed_columns(self, columns: Mapping[str, I64Array]) -> None:
        """:meth:`feed` for a chunk given as int64 columns named like the table's fields
        (:meth:`gitnetdiag.capture.reader.CaptureReader.column_chunks`); the columns
        are not modified."""
        conn = columns["conn"]
        if len(conn) == 0:
            return
        cols_all = {name: columns[name] for name in _COLUMNS}
        first = int(conn[0])
        if int(conn.min()) == first and int(conn.max()) == first:
            groups: Iterable[tuple[int, I64Array | None]] = [(first, None)]
        else:
            order = np.argsort(conn, kind="stable")
            sorted_conn = conn[order]
            bounds = np.flatnonzero(np.diff(sorted_conn)) + 1
            starts = np.concatenate(([0], bounds))
            groups = [
                (int(sorted_conn[s]), part)
                for s, part in zip(starts.tolist(), np.split(order, bounds), strict=True)
            ]
        for index, rows in groups:
            state = self._states.get(index)
            if state is None:
                state = self._states[index] = _ConnectionState(self.thresholds)
            cols = dict(cols_all) if rows is None else {k: v[rows] for k, v in cols_all.items()}
            state.update(cols)

    def results(self, connections: Sequence[Connection]) -> list[ConnectionAnalysis]:
        """One analysis per connection that had packets, in connection order."""
        return [self._states[c.index].result(c) for c in connections if c.index in self._states]


def analyze_connections(
    packets: npt.NDArray[np.void],
    connections: Sequence[Connection],
    thresholds: Thresholds | None = None,
) -> list[ConnectionAnalysis]:
    """Analyse an in-memory packet table in one go."""
    analyzer = TcpAnalyzer(thresholds)
    analyzer.feed(packets)
    return analyzer.results(connections)
