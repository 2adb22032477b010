"""A crafted capture of one git transfer held by the receiver's window, seen at either end.

The bulk sender (the server of a clone, the client of a push) sends one window per round
trip (or less: its own flight, a clamped send buffer, or a slow-start ramp); the receiver
acknowledges every second segment the moment it arrives and advertises the same window
throughout (a clamped ``tcp_rmem`` when it is small). The capture point decides when
each segment is seen: at the client, the server's segments half a round trip after they
left and the client's at once; at the server, the other way round.
"""

from __future__ import annotations

from scapy.layers.inet import IP, TCP
from scapy.packet import Raw

from tests.capture.craft import ETH_HEADER

RTT_S = 0.05
MSS = 1448
SCALE = 7
CLIENT_IP, SERVER_IP = "10.0.0.1", "10.0.0.2"

Event = tuple[float, str, bytes, str]
"""Send time at its own end, the side (``c`` or ``s``), payload, TCP flags."""


def bulk_frames(*, at: str, sender: str, request: bytes, size_bytes: int,
                window_bytes: int = 32768, client_port: int = 41000, server_port: int = 9418,
                t0_s: float = 1.0, flight_bytes: int | None = None,
                slow_start: bool = False) -> list[tuple[int, bytes]]:
    """Frames of one connection, captured ``at`` ``client`` or ``server``: the client's
    ``request``, then ``size_bytes`` from ``sender`` (``c`` or ``s``), a window per RTT.

    ``flight_bytes``: the sender puts at most this on the path per round trip whatever the
    window (a sender held by its send buffer); ``slow_start``: it begins at ten segments a
    round trip and doubles each round trip up to that (a healthy sender's ramp)."""
    ceiling = min(window_bytes, flight_bytes or window_bytes)
    events: list[Event] = [(t0_s, "c", b"", "S"), (t0_s + RTT_S / 2, "s", b"", "SA"),
                           (t0_s + RTT_S, "c", b"", "A"), (t0_s + RTT_S + 1e-4, "c", request, "PA")]
    receiver = "c" if sender == "s" else "s"
    # The sender starts once the request is in (the server), or after the server's first
    # answer (a push's client): either way at its own time below, one window per round trip.
    start = t0_s + 1.5 * RTT_S + 1e-3 if sender == "s" else t0_s + 2 * RTT_S + 1e-3
    sent, flight = 0, 0
    while sent < size_bytes:
        t = start + flight * RTT_S
        in_flight = 0
        segs = 0
        per_rtt = min(ceiling, 10 * MSS * 2 ** flight) if slow_start else ceiling
        while in_flight < per_rtt and sent < size_bytes:
            n = min(MSS, size_bytes - sent, per_rtt - in_flight)
            events.append((t + segs * 1e-4, sender, b"\x5a" * n, "A"))
            segs += 1
            sent += n
            in_flight += n
            if segs % 2 == 0 or in_flight >= per_rtt or sent >= size_bytes:
                events.append((t + segs * 1e-4 + RTT_S / 2, receiver, b"", "A"))
        flight += 1
    end = start + flight * RTT_S + RTT_S
    events += [(end, "c", b"", "FA"), (end + RTT_S / 2, "s", b"", "FA"),
               (end + RTT_S, "c", b"", "A")]
    return _wire(events, at=at, client_port=client_port, server_port=server_port,
                 window_bytes=window_bytes)


def _wire(events: list[Event], *, at: str, client_port: int, server_port: int,
          window_bytes: int) -> list[tuple[int, bytes]]:
    """The events as frames in capture order, each side's sequence numbers and ACKs
    following the order the events happen in (send times: ACKs follow their data)."""
    nxt = {"c": 1000, "s": 900_000}
    ordered = sorted(events, key=lambda e: e[0])
    seqs, arrivals = [], []  # each event's sequence number; (arrival, end) of every one
    for t, side, data, flags in ordered:
        seqs.append(nxt[side])
        nxt[side] += len(data) + (1 if "S" in flags or "F" in flags else 0)
        arrivals.append((t + RTT_S / 2 - 1e-9, side, nxt[side]))
    out: list[tuple[float, bytes]] = []
    for (t, side, data, flags), seq in zip(ordered, seqs, strict=True):
        peer = "s" if side == "c" else "c"
        src, dst = ((CLIENT_IP, client_port), (SERVER_IP, server_port)) if side == "c" \
            else ((SERVER_IP, server_port), (CLIENT_IP, client_port))
        syn = "S" in flags
        win = window_bytes if syn else window_bytes >> SCALE
        opts = [("MSS", MSS + 12), ("SAckOK", b""), ("WScale", SCALE)] if syn else []
        # What of the peer's has arrived by now: the cumulative ACK.
        ack = max((end for when, who, end in arrivals if who == peer and when <= t), default=0)
        tcp = TCP(sport=src[1], dport=dst[1], flags=flags, seq=seq & 0xFFFFFFFF,
                  ack=ack & 0xFFFFFFFF if "A" in flags else 0, window=min(win, 65535),
                  options=opts)
        pkt = IP(src=src[0], dst=dst[0]) / tcp / Raw(data) if data else IP(
            src=src[0], dst=dst[0]) / tcp
        # Seen at once at its own end, half a round trip later at the other.
        observed = t if (side == "c") == (at == "client") else t + RTT_S / 2
        out.append((observed, ETH_HEADER + bytes(pkt)))
    out.sort(key=lambda f: f[0])
    return [(round(t * 1e9), frame) for t, frame in out]
