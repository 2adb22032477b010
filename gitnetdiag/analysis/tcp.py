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

from gitnetdiag.analysis import TCP_FIELDS
from gitnetdiag.analysis import tcp_chunk as chunk
from gitnetdiag.analysis.tcp_clock import ClockState, retime
from gitnetdiag.analysis.tcp_results import (
    NS,
    ConnectionAnalysis,
    ConnectionSeries,
    DirectionAnalysis,
    Handshake,
    LimitKind,
    LimitShares,
    Thresholds,
    ZeroWindowEvent,
    guess_protocol,
)
from gitnetdiag.analysis.tcp_state import (
    MAX_EVENTS_KEPT,
    NEG,
    F64Array,
    HandshakeState,
    I64Array,
    SeriesBins,
    SideState,
    rtt_samples,
)
from gitnetdiag.capture.flows import TCP_ACK, TCP_RST, TCP_SYN, Connection

__all__ = [
    "ConnectionAnalysis",
    "LimitKind",
    "TcpAnalyzer",
    "Thresholds",
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
        self.clock = ClockState()
        self.epoch: I64Array | None = None
        """This chunk's rows' clock epochs (:func:`.tcp_clock.retime`)."""
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
        # Analysis follows frame order, as tshark's does; a timestamp that steps back
        # (a clock step, a lone frame stamped out of line, a merged file) would give
        # negative intervals, so this connection's clock never runs backwards
        # (:mod:`.tcp_clock`).
        ts, self.epoch = retime(cols["ts_ns"], self.clock)
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
        dt_s = gaps / NS
        chunk_flags = chunk.ChunkFlags(flags, syn)
        for d in (0, 1):
            self._direction(d, cols, win, bins, dt_s, chunk_flags)
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

    def _direction(self, d: int, cols: dict[str, I64Array], win: I64Array, bins: I64Array,
                   dt_s: F64Array, chunk_flags: chunk.ChunkFlags) -> None:
        """Side ``d`` as the sender over this chunk: the steps of :mod:`.tcp_chunk`."""
        side = self.sides[d]
        view = chunk.sender_view(d, cols, chunk_flags.has_ack)
        seq_u, ack_u = chunk.unwrap(side, cols, view)
        chunk.count_sender_packets(side, cols, view, chunk_flags)
        segs = chunk.segments(side, cols, win, view, seq_u)
        acks = chunk.peer_acks(side, cols, win, view, ack_u)
        if side.first_data_ts is None:  # no data sent yet: only the windows and ACKs count
            chunk.advertised_windows(side, cols, win, view, chunk_flags)
            self._add_series(d, bins, view, segs, acks, None)
            chunk.carry(side, segs, acks)
            return
        rows = chunk.row_state(side, view, segs, acks)
        timeout = chunk.retransmission_classes(side, view, segs, acks, rows,
                                               rtt_s=self.rtt_estimate_s(d), t=self.t)
        # RTT samples (Karn: no sample from an ACK that also covers a retransmission).
        rtt_samples(side, segs.ts, segs.end, segs.rtx | segs.zero_window_probe, segs.rows,
                    cols["ts_ns"], view.peer_rows, acks.cummax, view.peers_before,
                    epoch=self.epoch)
        chunk.advertised_windows(side, cols, win, view, chunk_flags)
        self._add_series(d, bins, view, segs, acks, rows)
        chunk.classify_limits(side, view, segs, acks, rows, timeout, mss=self._mss(d),
                              lead_s=self._lead_s(cols), dt_s=dt_s)
        chunk.carry(side, segs, acks)

    def _add_series(self, d: int, bins: I64Array, view: chunk.SenderView,
                    segs: chunk.Segments, acks: chunk.PeerAcks,
                    rows: chunk.RowState | None) -> None:
        if len(segs.rows) and rows is not None:
            b = bins[segs.rows]
            self.series.add_sum("sent", d, b, segs.end - segs.start)
            self.series.add_sum("good", d, b, segs.new_bytes)
            if segs.rtx.any():
                self.series.add_sum("retrans", d, b[segs.rtx],
                                    (segs.end - segs.start)[segs.rtx])
            self.series.add_extreme("flight", d, b, rows.in_flight[segs.rows], high=True)
        if len(view.peer_rows):
            self.series.add_extreme("window", d, bins[view.peer_rows], acks.window, high=False)

    def _mss(self, d: int) -> int:
        """The sender's segment size: its largest payload, at most the peer's MSS option."""
        mss = self.sides[d].max_plen or 1460
        peer_mss = self.hs.mss[1 - d]
        return min(mss, int(peer_mss)) if peer_mss else mss

    def _lead_s(self, cols: dict[str, I64Array]) -> float:
        """The interval from the previous chunk's last row to this chunk's first row."""
        n = len(cols["ts_ns"])
        return (int(cols["ts_ns"][0]) - self.last_ts) / NS if self.packets > n else 0.0

    # -- results -------------------------------------------------------------
    def result(self, conn: Connection) -> ConnectionAnalysis:
        hs = self.hs
        dirs = [self._direction_result(d) for d in (0, 1)]
        syn_to_synack = _span_s(hs.syn_ts, hs.synack_first_ts)
        synack_to_ack = _span_s(hs.synack_first_ts, hs.ack_ts)
        rtt = None
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
            events.append(ZeroWindowEvent(start_ts_ns=side.zero_open_ts,
                                          frame=side.zero_open_frame, duration_s=None))
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
            limits=LimitShares(**{f"{kind.name.lower()}_s": float(side.limit_s[kind])
                                  for kind in LimitKind}),
            unacked_bytes=side.unacked_bytes(),
            first_reset_ts_ns=side.first_reset_ts,
            first_fin_ts_ns=side.first_fin_ts,
            max_segment_bytes=side.max_plen,
            last_large_segment_ts_ns=side.last_large_ts,
            small_tail_bytes=side.small_tail,
        )


def _span_s(start_ns: int | None, end_ns: int | None) -> float | None:
    return (end_ns - start_ns) / NS if start_ns is not None and end_ns is not None else None


_COLUMNS = tuple(name for name in TCP_FIELDS if name != "conn")


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

    def clock_bridged(self) -> tuple[int, int]:
        """Steps back in the connections' clocks so far: (clock steps whose later frames
        kept their spacing, lone frames taken as simultaneous with the frame before)."""
        counts = [state.clock.bridged for state in self._states.values()]
        return sum(c[0] for c in counts), sum(c[1] for c in counts)


def analyze_connections(
    packets: npt.NDArray[np.void],
    connections: Sequence[Connection],
    thresholds: Thresholds | None = None,
) -> list[ConnectionAnalysis]:
    """Analyse an in-memory packet table in one go."""
    analyzer = TcpAnalyzer(thresholds)
    analyzer.feed(packets)
    return analyzer.results(connections)
