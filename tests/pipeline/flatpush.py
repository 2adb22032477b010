"""A crafted client-side capture of an HTTP/2 push through an edge with a 65535 B window.

The shape of issue 33 item 5: TLS on port 443 (nothing above TCP readable), a 50 ms
round trip, and an upload that never has more than the HTTP/2 window (plus its framing)
in flight while the server's TCP window stays wide open. The client sends one DATA frame
(16 KiB in a TLS record) per credit it holds; the edge acknowledges every second segment
on arrival and returns the frame's credit (a WINDOW_UPDATE record) a few milliseconds
after the frame is in. Seen at the client, the sender is self-limited nearly all the
time: each ACK that advances is not answered with new data until the credit comes back.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, replace
from pathlib import Path

from scapy.layers.inet import IP, TCP
from scapy.packet import Raw

from tests.capture.craft import ETH_HEADER, pcap_bytes
from tests.capture.test_sniff import client_hello

RTT_S = 0.05
"""The path's round trip (the handshake's SYN -> SYN-ACK at the client)."""
WINDOW_BYTES = 65535
"""The edge's HTTP/2 receive window (HAProxy's default)."""
FRAME_BYTES = 16384
"""DATA payload per frame (the default SETTINGS_MAX_FRAME_SIZE)."""
TLS_OVERHEAD_BYTES = 9 + 22
"""Frame header and TLS record overhead per DATA frame."""
MSS = 1448
"""Payload per full segment (1460 minus the timestamps option a Linux client sends)."""
LINK_S_PER_BYTE = 1 / 50e6
"""The client's link: 50 MB/s, so a frame leaves in about a third of a millisecond."""
EDGE_DELAY_S = 0.007
"""The edge returns a frame's credit this long after the frame is in (its backend)."""
SERVER_WINDOW_RAW = 24_000
"""The server's advertised TCP window, unscaled (x 2^7: 3 MB, far above the window)."""
WINDOW_UPDATE_RECORD = 13 + 13 + 22
"""Two WINDOW_UPDATE frames (stream and connection) in one TLS record."""

CLIENT = ("10.0.0.1", 41000)
SERVER = ("10.0.0.2", 443)


@dataclass
class _Wire:
    """Frames in time order, with each side's next sequence number."""

    frames: list[tuple[int, bytes]]
    nxt: dict[str, int]

    def send(self, t_s: float, side: str, payload: bytes | int = 0, flags: str = "A") -> None:
        src, dst = (CLIENT, SERVER) if side == "c" else (SERVER, CLIENT)
        peer = "s" if side == "c" else "c"
        win = 2000 if side == "c" else SERVER_WINDOW_RAW
        data = payload if isinstance(payload, bytes) else bytes(payload)
        tcp = TCP(sport=src[1], dport=dst[1], flags=flags, seq=self.nxt[side] & 0xFFFFFFFF,
                  ack=self.nxt[peer] & 0xFFFFFFFF if "A" in flags else 0, window=win)
        pkt = IP(src=src[0], dst=dst[0]) / tcp / Raw(data) if data else IP(
            src=src[0], dst=dst[0]) / tcp
        self.frames.append((round(t_s * 1e9), ETH_HEADER + bytes(pkt)))
        self.nxt[side] += len(data) + (1 if "F" in flags else 0)


def _handshake_and_tls(t0_s: float) -> tuple[_Wire, float]:
    """SYN, SYN-ACK one RTT later, ACK; the TLS handshake and git's first request."""
    opts = [("MSS", 1460), ("SAckOK", b""), ("WScale", 7)]
    frames = []
    for t, src, dst, flags, seq, ack, win in (
            (t0_s, CLIENT, SERVER, "S", 1000, 0, 64240),
            (t0_s + RTT_S, SERVER, CLIENT, "SA", 900_000, 1001, 65160)):
        syn = IP(src=src[0], dst=dst[0]) / TCP(sport=src[1], dport=dst[1], flags=flags,
                                               seq=seq, ack=ack, window=win, options=opts)
        frames.append((round(t * 1e9), ETH_HEADER + bytes(syn)))
    wire = _Wire(frames=frames, nxt={"c": 1001, "s": 900_001})
    t = t0_s + RTT_S + 0.0001
    wire.send(t, "c")
    wire.send(t, "c", client_hello("git.example.com", ["h2", "http/1.1"]), "PA")
    wire.send(t + RTT_S, "s", MSS)
    wire.send(t + RTT_S + 0.0001, "s", 1800, "PA")
    t += RTT_S + 0.001
    wire.send(t, "c", 480, "PA")  # Finished, the HTTP/2 preface, GET info/refs
    wire.send(t + RTT_S, "s", 900, "PA")  # SETTINGS, the ref advertisement
    return wire, t + RTT_S + 0.002


def _upload(wire: _Wire, t_s: float, upload_bytes: int) -> float:
    """The POST body, frame by frame as credit comes back; the time of the last event.

    Events are (time, order, kind, size, end): the client sends a segment of ``size``
    ending at sequence ``end``; the edge ACKs up to ``end``; the edge ACKs up to ``end``
    and returns ``size`` bytes of credit."""
    credit, left = WINDOW_BYTES, upload_bytes
    events: list[tuple[float, int, str, int, int]] = []
    order = itertools.count()
    link_free, seq = t_s, wire.nxt["c"]
    segments = 0

    def send_frames(now: float) -> None:
        nonlocal credit, left, link_free, seq, segments
        while left > 0 and credit > 0:
            frame = min(FRAME_BYTES, credit, left)
            credit, left = credit - frame, left - frame
            record = frame + TLS_OVERHEAD_BYTES
            for part in range(0, record, MSS):
                size = min(MSS, record - part)
                link_free = max(link_free, now) + size * LINK_S_PER_BYTE
                seq += size
                segments += 1
                heapq.heappush(events, (link_free, next(order), "seg", size, seq))
                last = part + MSS >= record
                if last:
                    heapq.heappush(events, (link_free + RTT_S + EDGE_DELAY_S, next(order),
                                            "credit", frame, seq))
                elif segments % 2 == 0:
                    heapq.heappush(events, (link_free + RTT_S, next(order), "ack", 0, seq))

    send_frames(t_s)
    now = t_s
    while events:
        now, _, kind, size, end = heapq.heappop(events)
        if kind == "seg":
            wire.send(now, "c", size, "PA" if end == seq and left == 0 else "A")
        else:
            latest = wire.nxt["c"]
            wire.nxt["c"] = end  # the edge acknowledges what it had, not the latest sent
            wire.send(now, "s", WINDOW_UPDATE_RECORD if kind == "credit" else 0,
                      "PA" if kind == "credit" else "A")
            wire.nxt["c"] = latest
            if kind == "credit":
                credit += size
                send_frames(now)
    return now


@dataclass(frozen=True)
class FlatPush:
    """The push's frames, (ts_ns, Ethernet frame) in time order, ready to restamp."""

    frames: tuple[tuple[int, bytes], ...]
    upload_start_ns: int
    """When the POST body starts (the client's first DATA segment)."""

    def pcap(self, path: Path) -> Path:
        """Write it as a classic pcap (microseconds, as tcpdump writes by default)."""
        path.write_bytes(pcap_bytes(list(self.frames)))
        return path

    def clock_stepped_back(self, at_s: float, by_s: float) -> FlatPush:
        """The capture's clock steps back by ``by_s`` at the first frame ``at_s`` into the
        upload and runs on from there (an NTP step, a VM resumed): that one frame is
        stamped before the frame ahead of it, every later one keeps its spacing."""
        at, back = self.upload_start_ns + round(at_s * 1e9), round(by_s * 1e9)
        return replace(self, frames=tuple((ts - back if ts >= at else ts, frame)
                                          for ts, frame in self.frames))

    def one_frame_early(self, at_s: float, by_s: float) -> FlatPush:
        """The first frame ``at_s`` into the upload alone stamped ``by_s`` early."""
        at = self.upload_start_ns + round(at_s * 1e9)
        index = next(i for i, (ts, _) in enumerate(self.frames) if ts >= at)
        ts, frame = self.frames[index]
        frames = list(self.frames)
        frames[index] = (ts - round(by_s * 1e9), frame)
        return replace(self, frames=tuple(frames))


T0_NS = 1_700_000_000 * 1_000_000_000
"""The capture's first frame (November 2023)."""


def flat_h2_push(*, upload_bytes: int = 4 << 20) -> FlatPush:
    """The push: handshake, TLS, ``upload_bytes`` of POST body under the 65535 B window,
    receive-pack's report and the close."""
    wire, start = _handshake_and_tls(0.0)
    end = _upload(wire, start, upload_bytes)
    wire.send(end + 0.02, "s", 220, "PA")  # receive-pack's report
    wire.send(end + 0.0201, "c", 0, "FA")
    wire.send(end + 0.0201 + RTT_S, "s", 0, "FA")
    wire.send(end + 0.0202 + RTT_S, "c")
    frames = sorted(((T0_NS + ts, frame) for ts, frame in wire.frames), key=lambda f: f[0])
    return FlatPush(frames=tuple(frames), upload_start_ns=T0_NS + round(start * 1e9))
