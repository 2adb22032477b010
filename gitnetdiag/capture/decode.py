"""Vectorised decoding of link, IP and TCP headers for a whole chunk.

Every step works on arrays of byte offsets: each header is copied out of
the chunk for all records at once as a fixed-width window (one row of bytes
per record, through a stride-1 view of the buffer), and fields are columns of
that matrix; never a Python loop per packet.  The
only loops are over header *depth* (VLAN tags, IPv6 extension headers, TCP
options), each running on the shrinking set of rows that still need it.

Lengths come from the IP headers, never from the captured bytes: a
headers-only capture (``tcpdump -s 96``) holds almost none of the payload.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gitnetdiag.capture.decodestats import DecodeStats
from gitnetdiag.capture.formats import RecordBatch

I64Array = npt.NDArray[np.int64]
U8Array = npt.NDArray[np.uint8]
BoolArray = npt.NDArray[np.bool_]

LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW_BSD12 = 12
LINKTYPE_RAW_BSD14 = 14
LINKTYPE_RAW = 101
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276

SUPPORTED_LINKTYPES = frozenset(
    {
        LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_RAW_BSD12, LINKTYPE_RAW_BSD14, LINKTYPE_RAW,
        LINKTYPE_LOOP, LINKTYPE_LINUX_SLL, LINKTYPE_IPV4, LINKTYPE_IPV6, LINKTYPE_LINUX_SLL2,
    }
)

_ETH_IPV4 = 0x0800
_ETH_IPV6 = 0x86DD
_VLAN_TAGS = (0x8100, 0x88A8, 0x9100)
_BSD_AF_INET6 = (10, 24, 28, 30)
_IPV6_EXT_SIMPLE = (0, 43, 60)
_IPV6_FRAGMENT = 44
_IPV6_AH = 51
_PROTO_TCP = 6
_PROTO_UDP = 17
_UDP_VXLAN = 4789
_UDP_GENEVE = 6081
_ETH_BRIDGED = 0x6558
"""GENEVE protocol type of an inner Ethernet frame (transparent Ethernet bridging)."""
MAX_VLAN_TAGS = 8
"""VLAN tags stepped over in one Ethernet header (802.1Q / 802.1ad stacks)."""
MAX_TUNNEL_DEPTH = 3
"""VXLAN/GENEVE encapsulations unwrapped one inside the other."""
_V4_MAPPED = np.int64(0xFFFF00000000)


@dataclass(frozen=True, kw_only=True)
class TcpRows:
    """Decoded TCP segments of one chunk (parallel arrays)."""

    record: I64Array
    """Index of the record in its batch."""
    ts_ns: I64Array
    """Capture time, ns since the epoch."""
    ip_version: I64Array
    """4 or 6."""
    src_hi: I64Array
    """High 64 bits of the source address (IPv4 as ::ffff:a.b.c.d)."""
    src_lo: I64Array
    """Low 64 bits of the source address."""
    dst_hi: I64Array
    """High 64 bits of the destination address."""
    dst_lo: I64Array
    """Low 64 bits of the destination address."""
    sport: I64Array
    """Source port."""
    dport: I64Array
    """Destination port."""
    seq: I64Array
    """Sequence number."""
    ack: I64Array
    """Acknowledgement number."""
    flags: I64Array
    """TCP flags (9 bits: NS CWR ECE URG ACK PSH RST SYN FIN)."""
    win_raw: I64Array
    """Window field as sent (unscaled)."""
    payload_len: I64Array
    """TCP payload bytes, from the IP length fields."""
    opt_mss: I64Array
    """MSS option, -1 if absent."""
    opt_wscale: I64Array
    """Window scale shift, -1 if absent."""
    opt_sack_perm: I64Array
    """1 if SACK-permitted was present."""
    opt_ts_val: I64Array
    """Timestamp option TSval, 0 if absent."""
    opt_ts_ecr: I64Array
    """Timestamp option TSecr, 0 if absent."""
    sack_count: I64Array
    """Number of SACK blocks (0 if none)."""
    sack_left: I64Array
    """Left edge of the first SACK block."""
    sack_right: I64Array
    """Right edge of the first SACK block."""


class _Bytes:
    """Bounds-safe single-byte gathers from a chunk buffer (for rare deep headers)."""

    def __init__(self, buf: U8Array) -> None:
        self.buf = buf
        self.last = max(len(buf) - 1, 0)

    def u8(self, idx: I64Array) -> I64Array:
        if len(self.buf) == 0:
            return np.zeros(len(idx), dtype=np.int64)
        return self.buf[np.minimum(idx, self.last)].astype(np.int64)

    def u16(self, idx: I64Array) -> I64Array:
        return (self.u8(idx) << 8) | self.u8(idx + 1)


def _any_of(values: I64Array, wanted: tuple[int, ...]) -> BoolArray:
    """Membership in a few constants (numpy's isin may call unique, importing numpy.ma)."""
    out = np.zeros(len(values), dtype=bool)
    for w in wanted:
        out |= values == w
    return out


def _windows(buf: U8Array, offsets: I64Array, width: int) -> U8Array:
    """Rows of ``width`` bytes starting at each offset (the buffer is padded by PAD).

    The buffer is viewed as overlapping ``width``-byte items, one starting at every
    byte, so that the gather copies one item per row (twice as fast as gathering rows
    of a two-dimensional view, measured)."""
    usable = len(buf) - width + 1
    if usable <= 0 or len(offsets) == 0:
        return np.zeros((len(offsets), width), dtype=np.uint8)
    items = np.ndarray((usable,), dtype=f"V{width}", buffer=buf, strides=(1,))
    rows = items[np.minimum(offsets, usable - 1)]
    return rows.view(np.uint8).reshape(len(offsets), width)


def _column(m: U8Array, col: int, dtype: str) -> I64Array:
    """The big-endian field at byte ``col`` of every row of ``m``, as int64: read in one
    strided pass through the rows (no copy of the column first)."""
    if len(m) == 0:
        return np.zeros(0, dtype=np.int64)
    if m.strides[1] != 1:
        m = np.ascontiguousarray(m)
    size = np.dtype(dtype).itemsize
    return m[:, col : col + size].view(dtype)[:, 0].astype(np.int64)


def _be16(m: U8Array, col: int) -> I64Array:
    return _column(m, col, ">u2")


def _be32(m: U8Array, col: int) -> I64Array:
    return _column(m, col, ">u4")


def _be64(m: U8Array, col: int) -> I64Array:
    return _column(m, col, ">i8")


_LINK_WIDTH = 24
_IP_WIDTH = 40
_IPV4_WIDTH = 20
_TCP_WIDTH = 60


def _link_layer(
    buf: U8Array, batch: RecordBatch, stats: DecodeStats
) -> tuple[I64Array, I64Array]:
    """Offset of the network header and IP version (0 = not IP) per record."""
    n = len(batch.data_off)
    start = batch.data_off
    l3 = np.full(n, -1, dtype=np.int64)
    version = np.zeros(n, dtype=np.int64)
    kinds: list[int] = []
    if n:
        lt0 = int(batch.linktype[0])
        # np.unique only when needed: its first call imports numpy.ma (~20 ms).
        one = bool((batch.linktype == lt0).all())
        kinds = [lt0] if one else np.unique(batch.linktype).tolist()
    for lt in kinds:
        sel: slice | I64Array = slice(None) if len(kinds) == 1 else np.flatnonzero(
            batch.linktype == lt
        )
        s = start[sel]
        m = _windows(buf, s, _LINK_WIDTH)
        if lt == LINKTYPE_ETHERNET:
            pos, ver = _ethernet(buf, s, _be16(m, 12))
        elif lt == LINKTYPE_LINUX_SLL:
            proto = _be16(m, 14)
            pos = np.full(len(s), 16, dtype=np.int64)
            ver = np.where(proto == _ETH_IPV4, 4, np.where(proto == _ETH_IPV6, 6, 0))
        elif lt == LINKTYPE_LINUX_SLL2:
            proto = _be16(m, 0)
            pos = np.full(len(s), 20, dtype=np.int64)
            ver = np.where(proto == _ETH_IPV4, 4, np.where(proto == _ETH_IPV6, 6, 0))
        elif lt in (LINKTYPE_RAW, LINKTYPE_RAW_BSD12, LINKTYPE_RAW_BSD14, LINKTYPE_IPV4,
                    LINKTYPE_IPV6):
            pos = np.zeros(len(s), dtype=np.int64)
            ver = m[:, 0].astype(np.int64) >> 4
        elif lt in (LINKTYPE_NULL, LINKTYPE_LOOP):
            # NULL stores the address family in the capturing host's byte order.
            fam_be = _be32(m, 0)
            fam_le = np.ascontiguousarray(m[:, 0:4]).view("<u4").reshape(-1).astype(np.int64)
            fam = fam_be if lt == LINKTYPE_LOOP else np.where(fam_be < 256, fam_be, fam_le)
            pos = np.full(len(s), 4, dtype=np.int64)
            ver = np.where(fam == 2, 4, np.where(_any_of(fam, _BSD_AF_INET6), 6, 0))
        else:
            stats.unsupported_linktypes.add(int(lt))
            continue
        # The link header itself must be there, and the version nibble must agree.
        deep = bool(len(pos)) and int(pos.max()) >= _LINK_WIDTH
        one = bool(len(pos)) and int(pos.min()) == int(pos.max())  # one length: a column
        first = (_Bytes(buf).u8(s + pos) if deep else m[:, int(pos[0])].astype(np.int64)
                 if one else m[np.arange(len(s)), pos].astype(np.int64)) >> 4
        ok = (pos < batch.caplen[sel]) & (ver > 0) & (first == ver)
        l3[sel] = np.where(ok, s + pos, -1)
        version[sel] = np.where(ok, ver, 0)
    return l3, version


def _ethernet(buf: U8Array, start: I64Array, ethertype: I64Array) -> tuple[I64Array, I64Array]:
    """Offset (from ``start``) of the network header and IP version behind an Ethernet header.

    ``ethertype`` is the outer one (bytes 12-13); VLAN tags (802.1Q, 802.1ad,
    stacked to any depth up to MAX_VLAN_TAGS) are stepped over.
    """
    pos = np.full(len(start), 14, dtype=np.int64)
    tagged = np.flatnonzero(_any_of(ethertype, _VLAN_TAGS))
    if len(tagged):
        by = _Bytes(buf)
        ethertype = ethertype.copy()
        for _ in range(MAX_VLAN_TAGS):
            if not len(tagged):
                break
            ethertype[tagged] = by.u16(start[tagged] + pos[tagged] + 2)
            pos[tagged] += 4
            tagged = tagged[_any_of(ethertype[tagged], _VLAN_TAGS)]
    ver = np.where(ethertype == _ETH_IPV4, 4, np.where(ethertype == _ETH_IPV6, 6, 0))
    return pos, ver


def _unwrap_tunnels(
    buf: U8Array, cap_end: I64Array, l3: I64Array, version: I64Array, stats: DecodeStats
) -> None:
    """Point ``l3``/``version`` of VXLAN and GENEVE packets at their inner IP header, in place.

    Outer IPv6 is unwrapped when UDP follows the fixed header directly.
    """
    by = _Bytes(buf)
    if not len(buf):
        return
    for _ in range(MAX_TUNNEL_DEPTH):
        # One byte per packet (the protocol / next header field) before anything else:
        # this runs on every chunk, and almost none holds a tunnel.
        proto_at = np.where(version == 4, l3 + 9, l3 + 6)
        udp = (buf[np.clip(proto_at, 0, by.last)] == _PROTO_UDP) & (version > 0)
        rows = np.flatnonzero(udp)
        if not len(rows):
            return
        p = l3[rows]
        v4 = version[rows] == 4
        unfragmented = ~v4 | ((by.u16(p + 6) & 0x3FFF) == 0)
        rows, p, v4 = rows[unfragmented], p[unfragmented], v4[unfragmented]
        u = np.where(v4, p + (by.u8(p) & 0x0F) * 4, p + 40)
        dport = by.u16(u + 2)
        flags = by.u8(u + 8)
        vxlan = (dport == _UDP_VXLAN) & ((flags & 0x08) != 0)
        geneve = (dport == _UDP_GENEVE) & ((flags >> 6) == 0) & (by.u16(u + 10) == _ETH_BRIDGED)
        inner = np.where(vxlan, u + 16, u + 16 + (flags & 0x3F) * 4)
        tunnel = (vxlan | geneve) & (inner + 14 <= cap_end[rows])
        if not tunnel.any():
            return
        rows, inner = rows[tunnel], inner[tunnel]
        pos, ver = _ethernet(buf, inner, by.u16(inner + 12))
        ok = (ver > 0) & (inner + pos < cap_end[rows]) & ((by.u8(inner + pos) >> 4) == ver)
        l3[rows] = np.where(ok, inner + pos, l3[rows])
        version[rows] = np.where(ok, ver, version[rows])
        stats.tunnelled += int(np.count_nonzero(ok))
        if not ok.any():
            return


@dataclass(frozen=True, kw_only=True)
class _IpRows:
    """The TCP-carrying IP packets of a chunk: where their TCP header starts and who sent
    them (parallel arrays, record order)."""

    record: I64Array
    tcp_at: I64Array
    """Offset of the TCP header in the chunk buffer."""
    ip_plen: I64Array
    """IP payload length (TCP header and data), from the IP header."""
    version: I64Array
    src_hi: I64Array
    src_lo: I64Array
    dst_hi: I64Array
    dst_lo: I64Array

    def take(self, sel: BoolArray | I64Array) -> _IpRows:
        return _IpRows(**{name: getattr(self, name)[sel] for name in _IP_FIELDS})


_IP_FIELDS = ("record", "tcp_at", "ip_plen", "version", "src_hi", "src_lo", "dst_hi", "dst_lo")


def decode_tcp(batch: RecordBatch, stats: DecodeStats) -> TcpRows:
    """Decode every TCP segment of a batch; count everything else in ``stats``."""
    n = len(batch.data_off)
    stats.check_clock(batch.ts_ns, batch.bad_fraction)
    stats.records += n
    plain = _plain_ethernet_tcp(batch, stats)
    if plain is not None:
        return plain
    l3, version = _link_layer(batch.buf, batch, stats)
    cap_end = batch.data_off + batch.caplen
    _unwrap_tunnels(batch.buf, cap_end, l3, version, stats)
    stats.non_ip += int(n - np.count_nonzero(version))
    ip = _ipv4(batch, l3, np.flatnonzero(version == 4), cap_end, stats)
    idx6 = np.flatnonzero(version == 6)
    if len(idx6):
        ip = _merged(ip, _ipv6(batch.buf, l3, idx6, cap_end, stats))
    return _tcp(batch, ip, cap_end, stats)


_PLAIN_WIDTH = 14 + _IPV4_WIDTH + _TCP_WIDTH
_PLAIN_L3 = 0x080045
"""Bytes 12-14 of the frame: ethertype IPv4, then version 4 with a 20-byte header."""
_PLAIN_FRAG_PROTO = 0x3FFF00FF
"""Bytes 20-23 (fragment field, TTL, protocol) under this mask: no fragment offset, no
more-fragments flag, and the protocol."""


def _plain_ethernet_tcp(batch: RecordBatch, stats: DecodeStats) -> TcpRows | None:
    """The whole chunk decoded at once when every record is a TCP segment in IPv4 without
    IP options, unfragmented, in an untagged Ethernet frame holding at least the base
    TCP header: one window of the three headers per record (what a capture of a bulk
    transfer is, chunk after chunk). None when any record is not (the general path then
    decodes the chunk, with the same result for these records)."""
    n = len(batch.data_off)
    if not n or int(batch.linktype[0]) != LINKTYPE_ETHERNET or int(batch.caplen.min()) < 54:
        return None
    if n > 1 and not (batch.linktype == LINKTYPE_ETHERNET).all():
        return None
    m = _windows(batch.buf, batch.data_off, _PLAIN_WIDTH)
    link_ip = m[:, 12:20].view(">u8")[:, 0] >> np.uint64(40)
    if not (link_ip == _PLAIN_L3).all():
        return None
    if not ((m[:, 20:24].view(">u4")[:, 0] & _PLAIN_FRAG_PROTO) == _PROTO_TCP).all():
        return None
    total = _be16(m, 16)
    if not total.all():  # TSO's zero total length: the general path falls back to the wire's
        return None
    zeros = np.zeros(n, dtype=np.int64)
    ip = _IpRows(record=np.arange(n, dtype=np.int64), tcp_at=batch.data_off + 34,
                 ip_plen=total - 20, version=np.full(n, 4, dtype=np.int64), src_hi=zeros,
                 src_lo=_be32(m, 26) | _V4_MAPPED, dst_hi=zeros,
                 dst_lo=_be32(m, 30) | _V4_MAPPED)
    return _tcp_rows(batch, ip, m[:, 34:], batch.data_off + batch.caplen, True, stats)


def _ipv4(batch: RecordBatch, l3: I64Array, idx4: I64Array, cap_end: I64Array,
          stats: DecodeStats) -> _IpRows:
    every = len(idx4) == len(l3)  # all IPv4 (the everyday case): no gathering
    p = l3 if every else l3[idx4]
    m = _windows(batch.buf, p, _IPV4_WIDTH)
    ihl = (m[:, 0] & 0x0F).astype(np.int64) * 4
    total = _be16(m, 2)
    proto = m[:, 9]
    hdr_ok = (p + 20 <= (cap_end if every else cap_end[idx4])) & (ihl >= 20)
    # TSO captures show total length 0: fall back to what the wire carried.
    zero_total = total == 0
    if zero_total.any():
        wire_total = batch.origlen[idx4] - (p - batch.data_off[idx4])
        total = np.where(zero_total, wire_total, total)
    is_frag = (_be16(m, 6) & 0x3FFF) != 0
    tcp = hdr_ok & (proto == _PROTO_TCP) & ~is_frag
    sel: slice | BoolArray = slice(None)
    if not tcp.all():  # else there is nothing to count: no fragment, no other protocol
        stats.fragments += int(np.count_nonzero(hdr_ok & is_frag))
        stats.non_tcp += int(np.count_nonzero(hdr_ok & ~is_frag & (proto != _PROTO_TCP)))
        stats.short += int(np.count_nonzero(~hdr_ok))
        sel = tcp
    m = m[sel]
    zeros = np.zeros(len(m), dtype=np.int64)
    return _IpRows(record=idx4[sel], tcp_at=(p + ihl)[sel], ip_plen=(total - ihl)[sel],
                   version=np.full(len(m), 4, dtype=np.int64), src_hi=zeros,
                   src_lo=_be32(m, 12) | _V4_MAPPED, dst_hi=zeros,
                   dst_lo=_be32(m, 16) | _V4_MAPPED)


def _ipv6(buf: U8Array, l3: I64Array, idx6: I64Array, cap_end: I64Array,
          stats: DecodeStats) -> _IpRows:
    """The IPv6 packets carrying TCP, after walking the extension header chain."""
    p = l3[idx6]
    m6 = _windows(buf, p, _IP_WIDTH)
    cap6 = cap_end[idx6]
    hdr_ok6 = p + 40 <= cap6
    plen6 = _be16(m6, 4)
    nh = m6[:, 6].astype(np.int64)
    pos = p + 40
    is_frag6 = np.zeros(len(p), dtype=bool)
    chain_cut = np.zeros(len(p), dtype=bool)
    by = _Bytes(buf)
    for _ in range(8):
        in_ext = _any_of(nh, (*_IPV6_EXT_SIMPLE, _IPV6_FRAGMENT, _IPV6_AH)) & hdr_ok6
        in_ext &= ~is_frag6 & ~chain_cut
        if not in_ext.any():
            break
        cut = in_ext & (pos + 8 > cap6)
        chain_cut |= cut
        step = in_ext & ~cut
        ext_len = np.where(
            nh == _IPV6_FRAGMENT, 8,
            np.where(nh == _IPV6_AH, (by.u8(pos + 1) + 2) * 4, (by.u8(pos + 1) + 1) * 8),
        )
        frag_field = by.u16(pos + 2)
        is_frag6 |= step & (nh == _IPV6_FRAGMENT) & ((frag_field & 0xFFF9) != 0)
        nh = np.where(step, by.u8(pos), nh)
        plen6 = np.where(step, plen6 - ext_len, plen6)
        pos = np.where(step, pos + ext_len, pos)
    ok6 = hdr_ok6 & ~chain_cut
    tcp6 = ok6 & (nh == _PROTO_TCP) & ~is_frag6
    stats.fragments += int(np.count_nonzero(ok6 & is_frag6))
    stats.non_tcp += int(np.count_nonzero(ok6 & ~is_frag6 & (nh != _PROTO_TCP)))
    stats.short += int(np.count_nonzero(~ok6))
    m6 = m6[tcp6]
    return _IpRows(record=idx6[tcp6], tcp_at=pos[tcp6], ip_plen=plen6[tcp6],
                   version=np.full(len(m6), 6, dtype=np.int64), src_hi=_be64(m6, 8),
                   src_lo=_be64(m6, 16), dst_hi=_be64(m6, 24), dst_lo=_be64(m6, 32))


def _merged(v4: _IpRows, v6: _IpRows) -> _IpRows:
    """Both families in record order."""
    order = np.argsort(np.concatenate([v4.record, v6.record]), kind="stable")
    return _IpRows(**{name: np.concatenate([getattr(v4, name), getattr(v6, name)])[order]
                      for name in _IP_FIELDS})


def _tcp(batch: RecordBatch, ip: _IpRows, cap_end: I64Array, stats: DecodeStats) -> TcpRows:
    """The TCP headers of ``ip``'s packets; a frame cut inside the base header is "short"."""
    every = len(ip.record) == len(batch.data_off)  # all TCP: ``ip.record`` is every row
    end = cap_end if every else cap_end[ip.record]
    whole = ip.tcp_at + 20 <= end
    if not whole.all():
        stats.short += int(len(whole) - np.count_nonzero(whole))
        ip, end = ip.take(whole), end[whole]
        every = False
    return _tcp_rows(batch, ip, _windows(batch.buf, ip.tcp_at, _TCP_WIDTH), end, every, stats)


def _tcp_rows(batch: RecordBatch, ip: _IpRows, tm: U8Array, end: I64Array, every: bool,
              stats: DecodeStats) -> TcpRows:
    """The rows of ``ip``'s segments, whose TCP headers ``tm`` holds (a row each)."""
    offset_byte = tm[:, 12].astype(np.int64)
    doff = (offset_byte >> 4) * 4
    return TcpRows(
        record=ip.record,
        ts_ns=batch.ts_ns.copy() if every else batch.ts_ns[ip.record],
        ip_version=ip.version,
        src_hi=ip.src_hi,
        src_lo=ip.src_lo,
        dst_hi=ip.dst_hi,
        dst_lo=ip.dst_lo,
        sport=_be16(tm, 0),
        dport=_be16(tm, 2),
        seq=_be32(tm, 4),
        ack=_be32(tm, 8),
        flags=((offset_byte & 1) << 8) | tm[:, 13],
        win_raw=_be16(tm, 14),
        payload_len=np.maximum(ip.ip_plen - doff, 0),
        **_options(tm, doff, end - ip.tcp_at, stats),
    )


_OPT_NAMES = (
    "opt_mss", "opt_wscale", "opt_sack_perm", "opt_ts_val", "opt_ts_ecr",
    "sack_count", "sack_left", "sack_right",
)


def _options(
    tm: U8Array, doff: I64Array, captured: I64Array, stats: DecodeStats
) -> dict[str, I64Array]:
    """Parse TCP options from the TCP header windows; a cursor per row, vectorised."""
    n = len(doff)
    out = {name: np.zeros(n, dtype=np.int64) for name in _OPT_NAMES}
    out["opt_mss"][:] = -1
    out["opt_wscale"][:] = -1
    hdr_len = np.maximum(doff, 20)
    stats.options_cut += int(np.count_nonzero(hdr_len > captured))
    opt_end = np.minimum(np.minimum(hdr_len, captured), _TCP_WIDTH)
    with_opts = doff > 20
    if not with_opts.any():
        return out
    # Fast path: the ubiquitous NOP NOP TS(10) layout of data segments.  Whole
    # columns are cheaper here than gathering the rows that have options first.
    fast = (_be32(tm, 20) == 0x0101080A) & (doff == 32) & (opt_end >= 32)
    if fast.all():  # a bulk transfer's chunk: nothing else to parse
        out["opt_ts_val"] = _be32(tm, 24)
        out["opt_ts_ecr"] = _be32(tm, 28)
        return out
    if fast.any():
        out["opt_ts_val"] = np.where(fast, _be32(tm, 24), 0)
        out["opt_ts_ecr"] = np.where(fast, _be32(tm, 28), 0)
    rows = np.flatnonzero(with_opts & ~fast)
    cur = np.full(len(rows), 20, dtype=np.int64)
    lim = opt_end[rows]

    def at(r: I64Array, c: I64Array) -> I64Array:
        return tm[r, np.minimum(c, _TCP_WIDTH - 1)].astype(np.int64)

    def be32_at(r: I64Array, c: I64Array) -> I64Array:
        return (at(r, c) << 24) | (at(r, c + 1) << 16) | (at(r, c + 2) << 8) | at(r, c + 3)

    for _ in range(40):
        live = cur < lim
        if not live.all():
            rows, cur, lim = rows[live], cur[live], lim[live]
        if len(rows) == 0:
            break
        kind = at(rows, cur)
        length = at(rows, cur + 1)
        is_nop = kind == 1
        stop = (kind == 0) | (~is_nop & ((length < 2) | (cur + 2 > lim)))
        ok = (cur + length <= lim) & ~stop
        sel = (kind == 2) & (length == 4) & ok
        out["opt_mss"][rows[sel]] = (at(rows[sel], cur[sel] + 2) << 8) | at(rows[sel], cur[sel] + 3)
        sel = (kind == 3) & (length == 3) & ok
        out["opt_wscale"][rows[sel]] = np.minimum(at(rows[sel], cur[sel] + 2), 14)
        sel = (kind == 4) & (length == 2) & ok
        out["opt_sack_perm"][rows[sel]] = 1
        sel = (kind == 8) & (length == 10) & ok
        out["opt_ts_val"][rows[sel]] = be32_at(rows[sel], cur[sel] + 2)
        out["opt_ts_ecr"][rows[sel]] = be32_at(rows[sel], cur[sel] + 6)
        sel = (kind == 5) & (length >= 10) & ~stop & (cur + 10 <= lim)
        out["sack_count"][rows[sel]] = (length[sel] - 2) // 8
        out["sack_left"][rows[sel]] = be32_at(rows[sel], cur[sel] + 2)
        out["sack_right"][rows[sel]] = be32_at(rows[sel], cur[sel] + 6)
        cur = np.where(stop, lim, cur + np.where(is_nop, 1, np.maximum(length, 1)))
    return out
