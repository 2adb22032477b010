"""TCP_INFO samples of either end of a transfer -> what held the sender, what the receiver saw
(pure). The kernel says it per socket, to any user (``ss -tin``, ``getsockopt``)::

    the sending socket   --summarize_sender(samples, CLIENT)-->  TcpInfoSummary     (a push)
                         --summarize_sender(samples, SERVER)-->  SenderTcpSummary   (a clone)
    the receiving socket --summarize_receiver(samples)---------> ReceiverTcpSummary (a clone)

Either end may send: the client on a push, the server on a clone (the client then
receives). The sender's rule is one (:func:`summarize_sender`); what differs by which end
sends is data (:class:`SendingEnd`): which of its sockets carried the pack, how far back its
kernel's counters go, and the summary each direction's evidence reads.

**What held the sender.** Its bytes in flight (``unacked`` x ``mss``) are capped by the
first of its congestion window (``cwnd``), the receiver's window (``snd_wnd``), its send
buffer (``skmem tb``: ``tcp_wmem``, ``SO_SNDBUF``, HAProxy ``tune.sndbuf.*``, nginx
``sndbuf=``) and the data the application gives it. The kernel's chronographs
(``busy_time``, ``rwnd_limited``, ``sndbuf_limited``) count ``sndbuf_limited`` only while
the write queue is *empty* (``tcp_cwnd_validate``, ``net/ipv4/tcp_output.c``): a bulk sender
refilling its buffer as each ACK frees it is never counted (the lab's 64 KiB ``tcp_wmem``
clamp at 50 ms: ``busy`` 1.8 s, ``sndbuf_limited`` absent, 150 kB in flight, ``cwnd`` 1,937
segments, ``snd_wnd`` 8.7 MB). So each sample taken while the socket sent is also
classified from its levels (:func:`_limit`), weighted by the bytes sent since the sample
before: **receive window** (in flight at least :data:`FULL` of ``snd_wnd``), **congestion
window** (``unacked`` at least :data:`FULL` of ``cwnd``), **send buffer** (neither, and the
buffer holds at least :data:`FULL` of its size, ``skmem w`` against ``tb``), else the
**application**. A limit's share is the larger of the sampled one and the kernel's,
whichever end sent (:func:`_larger`).

**What the receiver saw.** Its advertised window caps the rate at ``window / RTT``:
``rcv_ssthresh`` (the window's cap, grown by autotuning up to ``tcp_rmem``'s maximum or
``SO_RCVBUF``), ``skmem rb`` (the receive buffer), ``rcv_space`` (what the sender delivered
per RTT, as autotuning saw it), ``rcv_rtt`` / ``rtt``, ``rcv_ooopack`` (Linux 5.4+: data
segments that arrived out of order, what loss leaves at a receiver that sees no
retransmission counter; reordering too) and ``rcv_mss`` against ``advmss`` (a path-MTU
black hole towards the receiver keeps the first well below the second).

Counters are cumulative, windows levels; a transfer's socket is the one that moved most.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

DELIVERY_RATE = "delivery_rate_bytes_per_s"
"""The counter of the kernel's delivery-rate estimate, bytes per second."""
LEGACY_DELIVERY_RATE = "delivery_rate_bps"
"""The same counter (bytes per second too) in runs recorded before it was renamed."""

FULL = 0.75
"""A level at this share of its cap counts as at the cap (``ss`` samples a moving socket;
Linux's send buffer also holds each segment's overhead, so a full one shows ``w`` near or
above ``tb``)."""

BUFFER_FULL = 0.6
"""A send queue (``w``) at this share of the send buffer (``tb``) counts as the buffer
holding it. A program that writes when ``poll`` says the socket is writable (an event-driven
relay: a forward proxy) never fills the buffer: Linux calls a TCP socket writable only while
its free space is at least half of what is queued (``sk_stream_wspace`` >=
``sk_stream_min_wspace`` in ``include/net/sock.h``), i.e. at most 2/3 of the buffer queued,
so such a writer held by its buffer shows ``w`` at 2/3 of ``tb``, not near it (the lab's
tinyproxy with a fixed 64 KiB buffer: 0.67-0.70, its kernel's ``sndbuf_limited``
chronograph growing); 0.6 is 0.9 of that."""

Row = Mapping[str, Any]
"""One sample: ``t_s``, ``local``, ``peer``, ``source`` and its ``counters``."""


def _sockets(samples: Iterable[Row]) -> list[list[Row]]:
    """The samples per socket (local and peer address), each in time order."""
    by_socket: dict[tuple[str, str], list[Row]] = {}
    for sample in samples:
        by_socket.setdefault((str(sample.get("local")), str(sample.get("peer"))),
                             []).append(sample)
    return [sorted(rows, key=lambda row: float(row["t_s"])) for rows in by_socket.values()]


def _highest(rows: list[Row], key: str) -> float:
    return max(float(row["counters"].get(key, 0.0)) for row in rows)


def _busiest(samples: Iterable[Row], moved: Callable[[list[Row]], float]) -> list[Row] | None:
    """The samples of the socket that moved most by ``moved``; None without one that moved."""
    sockets = _sockets(samples)
    if not sockets:
        return None
    rows = max(sockets, key=moved)
    return rows if moved(rows) > 0 else None


def _largest(counters: Iterable[Mapping[str, Any]], key: str) -> int | None:
    values = [c[key] for c in counters if c.get(key)]
    return int(max(values)) if values else None


# --- the sender ------------------------------------------------------------------------


def _limit(counters: Mapping[str, float]) -> str:
    """Which cap held this sample's bytes in flight: ``window``, ``cwnd``, ``buffer``,
    ``app``."""
    unacked = counters.get("unacked", 0.0)
    flight = unacked * counters.get("snd_mss", 0.0)
    window = counters.get("snd_wnd_bytes")
    if window and flight >= FULL * window:
        return "window"
    cwnd = counters.get("snd_cwnd")
    if cwnd and unacked >= FULL * cwnd:
        return "cwnd"
    buffer, queued = counters.get("snd_buf_bytes"), counters.get("wmem_queued_bytes")
    if buffer and queued is not None and queued >= BUFFER_FULL * buffer:
        return "buffer"
    return "app"


@dataclass(frozen=True, kw_only=True)
class _SampledCaps:
    """The caps of the samples taken while the socket sent (module doc)."""

    shares: dict[str, float]
    """Share of the bytes sent per cap (:func:`_limit`)."""
    buffer_full_s: float
    """Seconds the samples classified as send-buffer bound stand for."""
    sending: list[Mapping[str, float]]
    """The counters of the samples taken while the socket sent."""


def _sampled_caps(rows: list[Row]) -> _SampledCaps:
    counters = [row["counters"] for row in rows]
    times = [float(row["t_s"]) for row in rows]
    weights: dict[str, float] = {}
    sending: list[Mapping[str, float]] = []
    buffer_s = 0.0
    for earlier, later, before, now in zip([{}, *counters], counters, [times[0], *times], times,
                                           strict=False):
        moved = later.get("bytes_sent", 0.0) - earlier.get("bytes_sent", 0.0)
        if moved > 0:
            kind = _limit(later)
            sending.append(later)
            weights[kind] = weights.get(kind, 0.0) + moved
            buffer_s += now - before if kind == "buffer" else 0.0
    total = sum(weights.values())
    return _SampledCaps(
        shares={kind: weight / total for kind, weight in weights.items()} if total else {},
        buffer_full_s=buffer_s, sending=sending)


def _larger(sampled: float, part: float | None, whole: float | None) -> float:
    """A limit's share: the larger of the sampled levels' and the kernel's chronograph's
    (``part / whole``): the one rule of both directions' senders."""
    return max(sampled, min(1.0, part / whole) if part is not None and whole else 0.0)


@dataclass(frozen=True, kw_only=True)
class SenderTcpSummary:
    """What the sending end's kernel said about the socket that sent the pack (a clone's
    server)."""

    source: str
    """``ss -tin, server (netns ...)``: cited as evidence."""
    samples: int
    """Samples of that socket taken while it sent."""
    sent_bytes: int
    """Bytes the socket sent (last sample)."""
    busy_s: float | None
    """The kernel's ``busy`` chronograph (time with data to send), None when absent."""
    rwnd_limited_s: float | None
    """The kernel's ``rwnd_limited`` chronograph."""
    sndbuf_limited_s: float | None
    """The kernel's ``sndbuf_limited`` chronograph (see the module doc for what it omits)."""
    buffer_full_share: float
    """Share of the bytes sent while the send buffer held the flight (module doc)."""
    window_full_share: float
    """Share of the bytes sent at the receiver's advertised window."""
    cwnd_full_share: float
    """Share of the bytes sent at the congestion window."""
    app_share: float
    """Share of the bytes sent limited by none of them: the application."""
    flight_median_bytes: int | None
    """Median bytes in flight (``unacked`` x ``mss``) while sending."""
    flight_max_bytes: int | None
    """Most bytes in flight."""
    send_buffer_max_bytes: int | None
    """Largest send buffer (``skmem tb``)."""
    peer_window_median_bytes: int | None
    """Median of the receiver's advertised window as the sender held it (``snd_wnd``)."""
    local: str = ""
    """The sampled socket's local ``address:port`` (``198.18.2.3:8888``: a forward proxy's,
    when the clone's leg ends there), "" when not recorded."""
    peer: str = ""
    """Its peer's ``address:port`` (git's end of the connection), "" when not recorded."""
    buffer_full_s: float = 0.0
    """Seconds the samples classified as send-buffer bound stand for (each, the time since
    the sample before): how long the buffer was seen to hold, beside the share of bytes
    (one sample at the end of slow start can carry most of a short transfer's bytes)."""

    @property
    def sndbuf_limited_share(self) -> float:
        """The larger of the kernel's ``sndbuf_limited / busy`` and the sampled share."""
        return _larger(self.buffer_full_share, self.sndbuf_limited_s, self.busy_s)

    @property
    def rwnd_limited_share(self) -> float:
        """The larger of the kernel's ``rwnd_limited / busy`` and the sampled share."""
        return _larger(self.window_full_share, self.rwnd_limited_s, self.busy_s)


@dataclass(frozen=True, kw_only=True)
class TcpInfoSummary:
    """What the kernel said about the measuring end's sending socket (a push's upload), as
    the engine's TCP view when no capture was taken."""

    source: str
    """``ss -tin`` or ``getsockopt TCP_INFO`` (cited as evidence)."""
    samples: int
    """Samples of the upload socket."""
    span_s: float
    """Time between its first and last sample."""
    acked_bytes: int
    """Bytes acknowledged over the span."""
    busy_s: float | None
    """Time the socket had data to send (``busy_time``) over the span."""
    rwnd_limited_share: float | None
    """Share limited by the peer's receive window (the sender's rule, module doc); None
    without the kernel's ``busy_time``."""
    sndbuf_limited_share: float | None
    """Share limited by the local send buffer (the same rule)."""
    retransmitted_bytes: int | None
    """Bytes sent again over the span."""
    retransmission_rate: float | None
    """Retransmitted / sent bytes over the span, 0..1."""
    retransmitted_segments: int | None
    """Segments retransmitted over the span (``total_retrans``)."""
    delivery_rate_median_bytes_per_s: float | None
    """Median of the kernel's delivery-rate estimate."""
    min_rtt_s: float | None
    """The kernel's minimum RTT."""
    median_rtt_s: float | None
    """Median of the smoothed RTT."""
    peer_window_median_bytes: int | None
    """Median of the window the peer advertised (``snd_wnd``), while busy."""
    peer_window_max_bytes: int | None
    """Largest window the peer advertised."""
    in_flight_median_bytes: int | None
    """Median unacknowledged bytes (``unacked`` x ``snd_mss``) while data was in flight."""
    in_flight_p95_bytes: int | None
    """95th percentile of the unacknowledged bytes."""


@dataclass(frozen=True, kw_only=True)
class _Sending:
    """The sending socket, whichever end it is: its samples in time order, the caps of those
    taken while it sent, and its kernel's counters over what the end's samples cover."""

    rows: list[Row]
    caps: _SampledCaps
    from_first_sample: bool
    """The counters grew from the first sample (:attr:`SendingEnd.from_first_sample`)."""
    source: str
    """Where the samples came from (cited as evidence)."""

    @property
    def counters(self) -> list[Mapping[str, float]]:
        return [row["counters"] for row in self.rows]

    def grown(self, key: str) -> float | None:
        """How much a cumulative counter grew over what the samples cover, None when the
        last sample lacks it. ``ss`` leaves out a counter that is still zero (``bytes_sent``,
        ``bytes_retrans``, ``busy``... of a socket sampled before its first byte), and
        ``getsockopt`` gives every counter the kernel has: a counter missing from the first
        sample only started from zero."""
        first, last = self.rows[0]["counters"], self.rows[-1]["counters"]
        if key not in last:
            return None
        return float(last[key]) - (float(first.get(key, 0.0)) if self.from_first_sample else 0.0)

    def limited_share(self, cap: str, key: str) -> float | None:
        """A limit's share of the busy time (the sender's rule, :func:`_larger`) from the
        chronograph ``key``; None without the kernel's chronographs."""
        busy, part = self.grown("busy_time_us"), self.grown(key)
        if part is None or not busy or busy <= 0:
            return None
        return _larger(self.caps.shares.get(cap, 0.0), max(0.0, part), busy)


T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class SendingEnd(Generic[T]):
    """Which end sends, as data: all :func:`summarize_sender` needs to know of it."""

    moved: Callable[[list[Row]], float]
    """What its socket moved: the one that moved most carried the pack."""
    min_samples: int
    """Samples of that socket a summary needs."""
    from_first_sample: bool
    """The counters count from the first sample (the client samples git's socket once it
    runs, so they grow over the samples), else from the socket's start (the server's
    socket, sampled from its start: the last sample's)."""
    default_source: str
    """The evidence's source when a sample does not say."""
    summary: Callable[[_Sending], T]
    """The direction's summary of the socket."""


def summarize_sender(samples: Iterable[Row], end: SendingEnd[T]) -> T | None:
    """The sending socket's summary at ``end`` (:data:`CLIENT` on a push, :data:`SERVER` on
    a clone), None when none moved a byte or it has fewer samples than the end needs."""
    rows = _busiest(samples, end.moved)
    if rows is None or len(rows) < end.min_samples:
        return None
    return end.summary(_Sending(rows=rows, caps=_sampled_caps(rows),
                                from_first_sample=end.from_first_sample,
                                source=str(rows[0].get("source", end.default_source))))


def _seconds(value: float | None) -> float | None:
    return value / 1e6 if value is not None else None


def _server_summary(sending: _Sending) -> SenderTcpSummary:
    """A clone's server: its chronographs are the last sample's, levels those of the samples
    taken while it sent."""
    caps, rows = sending.caps, sending.rows
    flights = [c.get("unacked", 0.0) * c.get("snd_mss", 0.0) for c in caps.sending]
    windows = [c["snd_wnd_bytes"] for c in caps.sending if c.get("snd_wnd_bytes")]
    return SenderTcpSummary(
        source=sending.source, samples=len(caps.sending),
        sent_bytes=int(_highest(rows, "bytes_sent")),
        busy_s=_seconds(sending.grown("busy_time_us")),
        rwnd_limited_s=_seconds(sending.grown("rwnd_limited_us")),
        sndbuf_limited_s=_seconds(sending.grown("sndbuf_limited_us")),
        buffer_full_share=caps.shares.get("buffer", 0.0),
        window_full_share=caps.shares.get("window", 0.0),
        cwnd_full_share=caps.shares.get("cwnd", 0.0), app_share=caps.shares.get("app", 0.0),
        flight_median_bytes=int(statistics.median(flights)) if flights else None,
        flight_max_bytes=int(max(flights)) if flights else None,
        send_buffer_max_bytes=_largest(sending.counters, "snd_buf_bytes"),
        peer_window_median_bytes=int(statistics.median(windows)) if windows else None,
        buffer_full_s=caps.buffer_full_s,
        local=str(rows[0].get("local") or ""), peer=str(rows[0].get("peer") or ""),
    )


def _acked(rows: list[Row]) -> float:
    return float(rows[-1]["counters"].get("bytes_acked", 0.0)
                 - rows[0]["counters"].get("bytes_acked", 0.0))


def _client_summary(sending: _Sending) -> TcpInfoSummary:
    """A push's client: its counters grew over the samples, levels those of every sample."""
    rows, counters = sending.rows, sending.counters
    sent, retrans = sending.grown("bytes_sent"), sending.grown("bytes_retrans")
    segments = sending.grown("total_retrans")
    rtts = [c["rtt_us"] / 1e6 for c in counters if c.get("rtt_us")]
    min_rtts = [c["min_rtt_us"] / 1e6 for c in counters if c.get("min_rtt_us")]
    rates = [rate for c in counters
             if (rate := c.get(DELIVERY_RATE) or c.get(LEGACY_DELIVERY_RATE))]
    windows = [c["snd_wnd_bytes"] for c in counters if c.get("snd_wnd_bytes")]
    flight = sorted(c["unacked"] * c["snd_mss"] for c in counters
                    if c.get("unacked") and c.get("snd_mss"))
    return TcpInfoSummary(
        source=sending.source,
        samples=len(rows),
        span_s=float(rows[-1]["t_s"]) - float(rows[0]["t_s"]),
        acked_bytes=int(_acked(rows)),
        busy_s=_seconds(sending.grown("busy_time_us")),
        rwnd_limited_share=sending.limited_share("window", "rwnd_limited_us"),
        sndbuf_limited_share=sending.limited_share("buffer", "sndbuf_limited_us"),
        retransmitted_bytes=int(retrans) if retrans is not None else None,
        retransmission_rate=retrans / sent if retrans is not None and sent else None,
        retransmitted_segments=int(segments) if segments is not None else None,
        delivery_rate_median_bytes_per_s=statistics.median(rates) if rates else None,
        min_rtt_s=min(min_rtts) if min_rtts else (min(rtts) if rtts else None),
        median_rtt_s=statistics.median(rtts) if rtts else None,
        peer_window_median_bytes=int(statistics.median(windows)) if windows else None,
        peer_window_max_bytes=int(max(windows)) if windows else None,
        in_flight_median_bytes=int(statistics.median(flight)) if flight else None,
        in_flight_p95_bytes=int(flight[min(len(flight) - 1, int(0.95 * len(flight)))])
        if flight else None,
    )


CLIENT: SendingEnd[TcpInfoSummary] = SendingEnd(
    moved=_acked, min_samples=2, from_first_sample=True, default_source="TCP_INFO",
    summary=_client_summary)
"""The client sends: a push (the socket most bytes were acknowledged on, sampled as git
ran: its chronographs count between its first and last sample)."""
SERVER: SendingEnd[SenderTcpSummary] = SendingEnd(
    moved=lambda rows: _highest(rows, "bytes_sent"), min_samples=1, from_first_sample=False,
    default_source="ss -tin, server", summary=_server_summary)
"""The server sends: a clone (the socket that sent most, sampled from its start)."""


def last_undelivered_s(samples: Iterable[Row], payload_bytes: int) -> float | None:
    """The last sample time at which the upload socket had not yet had ``payload_bytes``
    acknowledged: the upload was still on the wire then (None without such a sample).

    git's trace2 ends the upload when pack-objects exits, which over SSH and git:// is
    when the pack is in the kernel's send buffer, seconds before a slow path delivers it;
    time after this bound is the wait for the server, not the upload.
    """
    sockets = _sockets(samples)
    if not sockets or payload_bytes <= 0:
        return None
    upload = max(sockets, key=lambda rows: _highest(rows, "bytes_sent"))
    pending = [float(row["t_s"]) for row in upload
               if float(row["counters"].get("bytes_acked", 0.0)) < payload_bytes]
    return max(pending) if pending else None


# --- the receiver ----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ReceiverTcpSummary:
    """What the kernel said about the receiving end's socket (a clone's client)."""

    source: str
    """``ss -tin`` or ``getsockopt TCP_INFO`` (cited as evidence)."""
    samples: int
    """Samples of the receiving socket while bytes arrived."""
    span_s: float
    """Time between its first and last sample."""
    received_bytes: int
    """Bytes received over the whole connection (last sample)."""
    advertised_window_max_bytes: int | None
    """Largest cap of the advertised receive window (``rcv_ssthresh``)."""
    receive_buffer_max_bytes: int | None
    """Largest receive buffer (``skmem rb``)."""
    rcv_space_max_bytes: int | None
    """Largest ``rcv_space`` (bytes the sender delivered per RTT, as autotuning saw it)."""
    min_rtt_s: float | None
    """Smallest RTT the kernel measured on the socket."""
    median_rtt_s: float | None
    """Median RTT as the receiver measured it (``rcv_rtt``, else the smoothed ``rtt``)."""
    data_segments_in: int | None = None
    """Data segments received over the connection (``data_segs_in``, last sample)."""
    out_of_order_segments: int | None = None
    """Data segments that arrived out of order (``rcv_ooopack``, last sample), None when the
    kernel or ``ss`` did not say (``ss`` leaves a zero out: see :func:`summarize_receiver`)."""
    rcv_mss_max_bytes: int | None = None
    """Largest segment the socket received, as the kernel estimates it (``rcv_mss``,
    payload): 536 until a larger one arrives."""
    advmss_bytes: int | None = None
    """The MSS the socket advertised (``advmss``): the payload of a full-size segment."""
    peer_mss_bytes: int | None = None
    """The MSS the socket sends with (``snd_mss``): the sender's MSS option, capped by the
    receiver's own path. A sender with a smaller MSS than ``advmss`` (a 1400 B MTU, a
    tunnel) never sends a segment above it, path hole or not."""
    longest_gap_s: float | None = None
    """The longest time between two samples that read the same bytes received, with more
    arriving later: no byte arrived in it, mid-transfer (:func:`longest_gap_s`)."""

    @property
    def full_segment_bytes(self) -> int | None:
        """The payload of a full-size segment from the sender: the smaller of the two MSS
        the ends announced, when known."""
        known = [m for m in (self.advmss_bytes, self.peer_mss_bytes) if m]
        return min(known) if known else None

    @property
    def out_of_order_share(self) -> float | None:
        """Share of the data segments that arrived out of order (loss or reordering)."""
        if self.out_of_order_segments is None or not self.data_segments_in:
            return None
        return min(1.0, self.out_of_order_segments / self.data_segments_in)

    @property
    def window_rate_limit_bytes_per_s(self) -> float | None:
        """The most the advertised window lets through: ``window / RTT``."""
        rtt = self.min_rtt_s or self.median_rtt_s
        if self.advertised_window_max_bytes is None or not rtt:
            return None
        return self.advertised_window_max_bytes / rtt


def receiving_socket(samples: Iterable[Row]) -> list[Row] | None:
    """The samples of the socket that received most, in time order; None when none received
    a byte."""
    return _busiest(samples, lambda rows: _highest(rows, "bytes_received"))


def summarize_receiver(samples: Iterable[Row]) -> ReceiverTcpSummary | None:
    """The receiving socket's summary, or None when no socket received a byte. Window levels
    are those of the samples taken while bytes arrived; a segment size estimate is a level
    that a stall does not reset (every sample)."""
    rows = receiving_socket(samples)
    if rows is None:
        return None
    counters = [row["counters"] for row in rows]
    moving = [later for earlier, later in zip([{}, *counters], counters, strict=False)
              if later.get("bytes_received", 0.0) > earlier.get("bytes_received", 0.0)]
    levels = moving or counters
    last = counters[-1]
    rcv_rtts = [c["rcv_rtt_us"] / 1e6 for c in levels if c.get("rcv_rtt_us")]
    rtts = rcv_rtts or [c["rtt_us"] / 1e6 for c in levels if c.get("rtt_us")]
    min_rtts = [c["min_rtt_us"] / 1e6 for c in counters if c.get("min_rtt_us")]
    return ReceiverTcpSummary(
        source=str(rows[0].get("source", "TCP_INFO")), samples=len(levels),
        span_s=float(rows[-1]["t_s"]) - float(rows[0]["t_s"]),
        received_bytes=int(_highest(rows, "bytes_received")),
        advertised_window_max_bytes=_largest(levels, "rcv_ssthresh"),
        receive_buffer_max_bytes=_largest(levels, "rcv_buf_bytes"),
        rcv_space_max_bytes=_largest(levels, "rcv_space"),
        min_rtt_s=min(min_rtts) if min_rtts else None,
        median_rtt_s=statistics.median(rtts) if rtts else None,
        data_segments_in=int(last["data_segs_in"]) if last.get("data_segs_in") else None,
        out_of_order_segments=_out_of_order(counters),
        rcv_mss_max_bytes=_largest(counters, "rcv_mss"),
        advmss_bytes=_largest(counters, "advmss"),
        peer_mss_bytes=_largest(counters, "snd_mss"),
        longest_gap_s=longest_gap_s(rows),
    )


PACK_STARTED_BYTES = 64 * 1024
"""Bytes received past which a clone's pack is flowing: what comes before it (TLS, the ref
advertisement, the negotiation's answers) is a few kB, and the server's wait while it counts
and compresses is no gap of the transfer."""


def longest_gap_s(rows: Sequence[Row]) -> float | None:
    """Of one socket's samples in time order: the longest span from the first sample that
    read a count of bytes received (past :data:`PACK_STARTED_BYTES`) to the last that read
    the same count, where a later sample read more (a gap mid-pack: not the server's wait
    before it, nor the idle tail after the last byte); None without such a gap. No byte
    arrived in it."""
    longest: float | None = None
    since_t, since_bytes, last_same_t = None, None, None
    for row in rows:
        t, got = float(row["t_s"]), float(row["counters"].get("bytes_received", 0.0))
        if since_bytes is None or got != since_bytes:
            if since_bytes is not None and since_bytes > PACK_STARTED_BYTES \
                    and got > since_bytes \
                    and last_same_t is not None and since_t is not None:
                gap = last_same_t - since_t
                longest = gap if longest is None or gap > longest else longest
            since_t, since_bytes, last_same_t = t, got, None
        else:
            last_same_t = t
    return longest


def _out_of_order(counters: list[Mapping[str, Any]]) -> int | None:
    """``rcv_ooopack`` of the last sample. ``ss`` prints it only when non-zero, and
    ``getsockopt`` only on Linux 5.4+: a socket that received data segments and never
    showed it counts zero when its samples come from a kernel that has it, told by a later
    counter (``snd_wnd``, Linux 6.2, which ``ss`` prints whenever the peer's window is
    open); on an older kernel it stays unknown."""
    seen = [c["rcv_ooopack"] for c in counters if "rcv_ooopack" in c]
    if seen:
        return int(max(seen))
    if counters[-1].get("data_segs_in") and any("snd_wnd_bytes" in c for c in counters):
        return 0
    return None
