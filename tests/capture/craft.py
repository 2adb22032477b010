"""Crafting capture files for tests.

scapy builds the IP/TCP headers (it is good at that); the file containers
are written here byte by byte so that every variant the reader supports
(pcap micro/nano, both byte orders, pcapng with several interfaces, simple
packet blocks, decryption-secrets blocks, big-endian sections) can be made.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6
from scapy.packet import Packet, Raw

ETH_HEADER = bytes.fromhex("020000000002" "020000000001" "0800")
ETH6_HEADER = bytes.fromhex("020000000002" "020000000001" "86dd")


def pcap_bytes(
    frames: list[tuple[int, bytes]],
    *,
    linktype: int = 1,
    nano: bool = False,
    big: bool = False,
    snaplen: int = 262144,
) -> bytes:
    """A classic pcap file; ``frames`` are (ts_ns, frame bytes), cut at ``snaplen``."""
    order = ">" if big else "<"
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = bytearray(struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype))
    for ts_ns, frame in frames:
        sec, rem = divmod(ts_ns, 1_000_000_000)
        frac = rem if nano else rem // 1000
        cap = frame[:snaplen]
        out += struct.pack(order + "IIII", sec, frac, len(cap), len(frame)) + cap
    return bytes(out)


def _pad4(data: bytes) -> bytes:
    return data + bytes(-len(data) % 4)


def _block(order: str, btype: int, body: bytes) -> bytes:
    body = _pad4(body)
    length = 12 + len(body)
    return struct.pack(order + "II", btype, length) + body + struct.pack(order + "I", length)


@dataclass
class Interface:
    """A pcapng interface: link type and timestamp resolution byte (if_tsresol)."""

    linktype: int = 1
    tsresol: int | None = None
    """None = default microseconds; 9 = ns; 0x80 | n = 2**-n."""
    snaplen: int = 0


def ticks(ts_ns: int, tsresol: int | None) -> int:
    """Timestamp ticks for a resolution byte."""
    if tsresol is None:
        return ts_ns // 1000
    if tsresol & 0x80:
        return (ts_ns << (tsresol & 0x7F)) // 1_000_000_000
    exp = tsresol
    return ts_ns * 10**exp // 1_000_000_000


@dataclass
class PcapngSection:
    """One section: interfaces and packets (iface, ts_ns, frame, kind)."""

    interfaces: list[Interface] = field(default_factory=lambda: [Interface()])
    packets: list[tuple[int, int, bytes, str]] = field(default_factory=list)
    big: bool = False
    secrets: bool = True
    """Add a decryption-secrets block (must be skipped)."""


def pcapng_bytes(sections: list[PcapngSection]) -> bytes:
    """A pcapng file of the given sections."""
    out = bytearray()
    for sec in sections:
        order = ">" if sec.big else "<"
        shb = struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1)
        out += _block(order, 0x0A0D0D0A, shb)
        for iface in sec.interfaces:
            opts = b""
            if iface.tsresol is not None:
                opts += struct.pack(order + "HH", 9, 1) + bytes((iface.tsresol, 0, 0, 0))
            opts += struct.pack(order + "HH", 0, 0)
            body = struct.pack(order + "HHI", iface.linktype, 0, iface.snaplen) + opts
            out += _block(order, 1, body)
        if sec.secrets:
            secret = b"CLIENT_RANDOM 00 11\n"
            out += _block(order, 0x0000000A, struct.pack(order + "II", 0x544C534B, len(secret))
                          + secret)
        for iface_id, ts_ns, frame, kind in sec.packets:
            if kind == "spb":
                out += _block(order, 3, struct.pack(order + "I", len(frame)) + frame)
                continue
            t = ticks(ts_ns, sec.interfaces[iface_id].tsresol)
            body = struct.pack(order + "IIIII", iface_id, t >> 32, t & 0xFFFFFFFF, len(frame),
                               len(frame)) + frame
            out += _block(order, 6, body)
    return bytes(out)


def write(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` and return the path."""
    path.write_bytes(data)
    return path


# -- TCP conversations ---------------------------------------------------


@dataclass
class Conversation:
    """A scripted TCP conversation between a client (c) and a server (s).

    Sequence numbers are tracked per side; ``t`` advances by each ``dt``.
    Frames are Ethernet + IPv4 (or IPv6) + TCP, built by scapy.
    """

    client: tuple[str, int] = ("10.0.0.1", 40000)
    server: tuple[str, int] = ("10.0.0.2", 443)
    ipv6: bool = False
    t_ns: int = 1_700_000_000_000_000_000
    isn: dict[str, int] = field(default_factory=lambda: {"c": 1000, "s": 900_000})
    frames: list[tuple[int, bytes]] = field(default_factory=list)
    nxt: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.nxt = {"c": self.isn["c"], "s": self.isn["s"]}

    def segment(
        self,
        side: str,
        flags: str,
        *,
        dt_s: float = 0.0,
        seq: int | None = None,
        ack: int | None = None,
        win: int = 1024,
        payload: int = 0,
        options: list[tuple[str, object]] | None = None,
        data: bytes = b"",
    ) -> None:
        """Append one segment sent by ``side`` ('c' or 's'); its payload ``data``, else
        ``payload`` zero bytes."""
        payload = len(data) if data else payload
        self.t_ns += round(dt_s * 1e9)
        src, dst = (self.client, self.server) if side == "c" else (self.server, self.client)
        peer = "s" if side == "c" else "c"
        seq_v = self.nxt[side] if seq is None else seq
        ack_v = (self.nxt[peer] if ack is None else ack) if "A" in flags else 0
        tcp = TCP(sport=src[1], dport=dst[1], flags=flags, seq=seq_v & 0xFFFFFFFF,
                  ack=ack_v & 0xFFFFFFFF, window=win, options=options or [])
        ip: Packet = IPv6(src=src[0], dst=dst[0]) if self.ipv6 else IP(src=src[0], dst=dst[0])
        pkt = ip / tcp
        if payload:
            pkt = pkt / Raw(data or b"\x00" * payload)
        head = ETH6_HEADER if self.ipv6 else ETH_HEADER
        self.frames.append((self.t_ns, head + bytes(pkt)))
        if seq is None:
            advance = payload + (1 if ("S" in flags or "F" in flags) else 0)
            self.nxt[side] = seq_v + advance
        elif seq_v + payload > self.nxt[side]:
            self.nxt[side] = seq_v + payload

    def handshake(
        self,
        *,
        rtt_s: float = 0.05,
        c_opts: list[tuple[str, object]] | None = None,
        s_opts: list[tuple[str, object]] | None = None,
        s_win: int = 65535,
    ) -> None:
        """SYN, SYN-ACK (rtt later), ACK."""
        default = [("MSS", 1460), ("SAckOK", b""), ("WScale", 7)]
        self.segment("c", "S", win=64240, options=c_opts if c_opts is not None else default)
        self.segment("s", "SA", dt_s=rtt_s, win=s_win,
                     options=s_opts if s_opts is not None else default)
        self.segment("c", "A", dt_s=0.0001)

    def pcap(self, path: Path, **kwargs: object) -> Path:
        """Write the conversation as a pcap file."""
        return write(path, pcap_bytes(self.frames, **kwargs))  # type: ignore[arg-type]
