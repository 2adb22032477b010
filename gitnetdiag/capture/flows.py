"""Assigning TCP segments to connections, consistently across chunks.

A connection is a 4-tuple plus a lifetime: a 4-tuple reused after FIN/RST
(or with a new initial sequence number) is a new connection, so that each
keeps its own handshake (and its own window scale).  Direction 0 is the
side that initiated: the sender of the SYN when the handshake is in the
capture, otherwise the sender of the first packet seen.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gitnetdiag.capture.decode import TcpRows

I64Array = npt.NDArray[np.int64]

TCP_FIN = 0x01
TCP_SYN = 0x02
TCP_RST = 0x04
TCP_PSH = 0x08
TCP_ACK = 0x10

_MIX = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True, kw_only=True)
class Connection:
    """One TCP connection of a capture; ``a`` is the initiating side."""

    index: int
    """Connection index, as in the ``conn`` column of the packet table."""
    ip_version: int
    """4 or 6."""
    a_addr: str
    """Address of the initiating side (direction 0 sends from here)."""
    a_port: int
    """Port of the initiating side."""
    b_addr: str
    """Address of the other side."""
    b_port: int
    """Port of the other side."""
    first_ts_ns: int
    """Time of the first packet, ns since the epoch."""
    syn_seen: bool
    """True when the initiator's SYN is in the capture (else: first packet seen)."""

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "index": self.index,
            "ip_version": self.ip_version,
            "a_addr": self.a_addr,
            "a_port": self.a_port,
            "b_addr": self.b_addr,
            "b_port": self.b_port,
            "first_ts_ns": self.first_ts_ns,
            "syn_seen": self.syn_seen,
        }


def endpoint(addr: str, port: int) -> str:
    """``addr:port``, with an IPv6 address in brackets (RFC 3986) so the port stays apart."""
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def _address(hi: int, lo: int, version: int) -> str:
    if version == 4:
        return str(ipaddress.IPv4Address(lo & 0xFFFFFFFF))
    value = ((hi & 0xFFFFFFFFFFFFFFFF) << 64) | (lo & 0xFFFFFFFFFFFFFFFF)
    return str(ipaddress.IPv6Address(value))


@dataclass
class _FlowState:
    conn: int
    syn_isn: int | None
    initiator_is_low: bool
    closed: bool = False


class ConnectionTracker:
    """Gives every segment a connection index and a direction."""

    def __init__(self) -> None:
        self._flows: dict[tuple[int, ...], _FlowState] = {}
        self.connections: list[Connection] = []

    def assign(self, rows: TcpRows) -> tuple[I64Array, I64Array]:
        """Connection index and direction of every row (chunks in file order)."""
        n = len(rows.record)
        conn = np.zeros(n, dtype=np.int64)
        direction = np.zeros(n, dtype=np.int64)
        if n == 0:
            return conn, direction
        # Canonical endpoint order so that both directions share one key.
        a = (rows.src_hi, rows.src_lo, rows.sport)
        b = (rows.dst_hi, rows.dst_lo, rows.dport)
        b_lower = (b[0] < a[0]) | (
            (b[0] == a[0]) & ((b[1] < a[1]) | ((b[1] == a[1]) & (b[2] < a[2])))
        )
        src_is_low = ~b_lower
        low = [np.where(b_lower, y, x) for x, y in zip(a, b, strict=True)]
        high = [np.where(b_lower, x, y) for x, y in zip(a, b, strict=True)]
        if all(bool((col == col[0]).all()) for col in (*low, *high)):
            # One connection's 4-tuple in the whole chunk (a bulk transfer): no grouping.
            key_row = np.array([int(col[0]) for col in (*low, *high)], dtype=np.int64)
            self._assign_flow(rows, np.arange(n), key_row, src_is_low, conn, direction)
            return conn, direction
        key = np.stack([*low, *high], axis=1)
        h = np.zeros(n, dtype=np.uint64)
        with np.errstate(over="ignore"):
            for col in range(6):
                h = (h ^ key[:, col].view(np.uint64)) * _MIX
                h ^= h >> np.uint64(29)
        # Unique over runs first: a bulk transfer is one long run.
        heads = np.flatnonzero(np.concatenate(([True], h[1:] != h[:-1])))
        uniq, run_inv = np.unique(h[heads], return_inverse=True)
        run_len = np.diff(np.append(heads, n))
        inverse = np.repeat(run_inv.reshape(-1), run_len)
        rep_row = heads[np.unique(run_inv.reshape(-1), return_index=True)[1]]
        if not np.array_equal(key, key[rep_row[inverse]]):
            # A 64-bit hash collision: fall back to exact grouping.
            _, rep_row, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
            inverse = inverse.reshape(-1)
        if len(uniq) == 1 or len(rep_row) == 1:
            groups = [np.arange(n)]
        else:
            order = np.argsort(inverse, kind="stable")
            bounds = np.flatnonzero(np.diff(inverse[order])) + 1
            groups = np.split(order, bounds)
        for members in groups:
            self._assign_flow(rows, members, key[members[0]], src_is_low, conn, direction)
        return conn, direction

    def _new_connection(
        self, rows: TcpRows, row: int, initiator_is_src: bool, syn_seen: bool
    ) -> int:
        index = len(self.connections)
        version = int(rows.ip_version[row])
        src = (int(rows.src_hi[row]), int(rows.src_lo[row]), int(rows.sport[row]))
        dst = (int(rows.dst_hi[row]), int(rows.dst_lo[row]), int(rows.dport[row]))
        a, b = (src, dst) if initiator_is_src else (dst, src)
        self.connections.append(
            Connection(
                index=index,
                ip_version=version,
                a_addr=_address(a[0], a[1], version),
                a_port=a[2],
                b_addr=_address(b[0], b[1], version),
                b_port=b[2],
                first_ts_ns=int(rows.ts_ns[row]),
                syn_seen=syn_seen,
            )
        )
        return index

    def _assign_flow(
        self,
        rows: TcpRows,
        members: I64Array,
        key_row: I64Array,
        src_is_low: npt.NDArray[np.bool_],
        conn: I64Array,
        direction: I64Array,
    ) -> None:
        key = tuple(int(v) for v in key_row)
        # ``members`` are in row order: all of them are the whole chunk (a bulk transfer),
        # whose columns need no gathering.
        whole = len(members) == len(conn)
        flags = rows.flags if whole else rows.flags[members]
        syn_only = np.flatnonzero(((flags & TCP_SYN) != 0) & ((flags & TCP_ACK) == 0))
        closers = np.flatnonzero((flags & (TCP_FIN | TCP_RST)) != 0)
        state = self._flows.get(key)
        starts: list[int] = []
        conns: list[int] = []
        initiators: list[bool] = []
        current_start = 0
        if state is None:
            first = int(members[0])
            f0 = int(flags[0])
            is_syn = bool(f0 & TCP_SYN) and not f0 & TCP_ACK
            is_synack = bool(f0 & TCP_SYN) and bool(f0 & TCP_ACK)
            initiator_is_src = not is_synack
            isn: int | None = None
            if is_syn:
                isn = int(rows.seq[first])
            elif is_synack:
                isn = (int(rows.ack[first]) - 1) & 0xFFFFFFFF
            index = self._new_connection(rows, first, initiator_is_src, is_syn or is_synack)
            initiator_is_low = bool(src_is_low[first]) == initiator_is_src
            state = _FlowState(conn=index, syn_isn=isn, initiator_is_low=initiator_is_low)
            self._flows[key] = state
        starts.append(0)
        conns.append(state.conn)
        initiators.append(state.initiator_is_low)
        for pos in syn_only.tolist():
            row = int(members[pos])
            isn = int(rows.seq[row])
            closed_since = state.closed or bool(
                np.any((closers >= current_start) & (closers < pos))
            )
            if not closed_since and state.syn_isn == isn:
                continue  # the same SYN again: a retransmission
            index = self._new_connection(rows, row, True, True)
            state = _FlowState(conn=index, syn_isn=isn, initiator_is_low=bool(src_is_low[row]))
            self._flows[key] = state
            current_start = pos
            if pos == 0:
                starts[-1], conns[-1], initiators[-1] = 0, index, state.initiator_is_low
            else:
                starts.append(pos)
                conns.append(index)
                initiators.append(state.initiator_is_low)
        state.closed = state.closed or bool(np.any(closers >= current_start))
        if len(starts) == 1:  # one connection throughout (the everyday case)
            target: slice | I64Array = slice(None) if whole else members
            conn[target] = conns[0]
            direction[target] = src_is_low[target] != initiators[0]
            return
        seg = np.searchsorted(np.asarray(starts), np.arange(len(members)), side="right") - 1
        conn[members] = np.asarray(conns, dtype=np.int64)[seg]
        init_low = np.asarray(initiators, dtype=bool)[seg]
        direction[members] = (src_is_low[members] != init_low).astype(np.int64)
