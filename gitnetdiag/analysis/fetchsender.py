"""The server's TCP_INFO over a clone -> what held the sender's bytes in flight (pure).

A sender's bytes in flight (``unacked`` x ``mss``) are capped by the first of:
its congestion window (``cwnd``), the window the receiver advertised
(``snd_wnd``), its send buffer (``skmem tb``: ``tcp_wmem``, ``SO_SNDBUF``,
HAProxy ``tune.sndbuf.*``, nginx ``sndbuf=``), or the data the application
gives it. The kernel keeps chronographs of the first causes per socket
(``tcpi_busy_time``, ``tcpi_rwnd_limited``, ``tcpi_sndbuf_limited``), but it
counts ``sndbuf_limited`` only while the write queue is *empty* and the
writer waits for room (``tcp_cwnd_validate`` in ``net/ipv4/tcp_output.c``).
A bulk sender that refills its buffer as each ACK frees it keeps the queue
non-empty and is never counted (the lab's 64 KiB ``tcp_wmem`` clamp at 50 ms:
``busy`` 1.8 s, ``sndbuf_limited`` absent, 150 kB in flight, ``cwnd`` 1,937
segments, ``snd_wnd`` 8.7 MB). So each sample taken while the socket sent is
also classified from the levels ``ss`` shows:

- **receive window**: in flight at least :data:`FULL` of ``snd_wnd``,
- **congestion window**: ``unacked`` at least :data:`FULL` of ``cwnd``,
- **send buffer**: neither, and the buffer holds at least :data:`FULL` of its
  size (``skmem w`` against ``tb``): the writer could not add more,
- **application**: none of these (the server produced the pack slower).

The share of each is of the bytes sent: each sample's cap stands for the bytes
sent since the sample before (so the ref advertisement's few bytes weigh
little beside the pack). The kernel's own chronograph shares are kept beside
them, and the limit shares the culprits read are the larger of the two.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

FULL = 0.75
"""A level at this share of its cap counts as at the cap (``ss`` samples a moving socket;
Linux's send buffer also holds each segment's overhead, so a full one shows ``w`` near or
above ``tb``)."""


@dataclass(frozen=True, kw_only=True)
class SenderTcpSummary:
    """What the server's kernel said about the socket that sent the clone's pack."""

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
    """Share of the bytes sent at the client's advertised window."""
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
    """Median of the client's advertised window as the sender held it (``snd_wnd``)."""
    buffer_full_s: float = 0.0
    """Seconds the samples classified as send-buffer bound stand for (each, the time since
    the sample before): how long the buffer was seen to hold, beside the share of bytes
    (one sample at the end of slow start can carry most of a short clone's bytes)."""

    @property
    def sndbuf_limited_share(self) -> float:
        """The larger of the kernel's ``sndbuf_limited / busy`` and the sampled share."""
        return max(self.buffer_full_share, _ratio(self.sndbuf_limited_s, self.busy_s))

    @property
    def rwnd_limited_share(self) -> float:
        """The larger of the kernel's ``rwnd_limited / busy`` and the sampled share."""
        return max(self.window_full_share, _ratio(self.rwnd_limited_s, self.busy_s))


def _ratio(part: float | None, whole: float | None) -> float:
    return min(1.0, part / whole) if part is not None and whole else 0.0


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
    if buffer and queued is not None and queued >= FULL * buffer:
        return "buffer"
    return "app"


def _seconds(counters: Mapping[str, float], key: str) -> float | None:
    value = counters.get(key)
    return value / 1e6 if value is not None else None


def summarize_sender(samples: Iterable[Mapping[str, Any]]) -> SenderTcpSummary | None:
    """The sending socket's summary (the one that sent most), None when none sent a byte."""
    by_peer: dict[str, list[Mapping[str, Any]]] = {}
    for sample in samples:
        by_peer.setdefault(str(sample.get("peer")), []).append(sample)

    def sent(rows: list[Mapping[str, Any]]) -> float:
        return max(float(row["counters"].get("bytes_sent", 0.0)) for row in rows)

    if not by_peer:
        return None
    rows = sorted(by_peer[max(by_peer, key=lambda peer: sent(by_peer[peer]))],
                  key=lambda row: float(row["t_s"]))
    if sent(rows) <= 0:
        return None
    counters = [row["counters"] for row in rows]
    steps = [(later, later.get("bytes_sent", 0.0) - earlier.get("bytes_sent", 0.0))
             for earlier, later in zip([{}, *counters], counters, strict=False)]
    sending = [c for c, moved in steps if moved > 0]
    weights: dict[str, float] = {}
    buffer_s = 0.0
    times = [float(row["t_s"]) for row in rows]
    for (c, moved), before, now in zip(steps, [times[0], *times], times, strict=False):
        if moved > 0:
            weights[_limit(c)] = weights.get(_limit(c), 0.0) + moved
            buffer_s += now - before if _limit(c) == "buffer" else 0.0
    total = sum(weights.values())

    def share(kind: str) -> float:
        return weights.get(kind, 0.0) / total if total else 0.0

    flights = [c.get("unacked", 0.0) * c.get("snd_mss", 0.0) for c in sending]
    windows = [c["snd_wnd_bytes"] for c in sending if c.get("snd_wnd_bytes")]
    buffers = [c["snd_buf_bytes"] for c in counters if c.get("snd_buf_bytes")]
    last = counters[-1]
    return SenderTcpSummary(
        source=str(rows[0].get("source", "ss -tin, server")), samples=len(sending),
        sent_bytes=int(sent(rows)), busy_s=_seconds(last, "busy_time_us"),
        rwnd_limited_s=_seconds(last, "rwnd_limited_us"),
        sndbuf_limited_s=_seconds(last, "sndbuf_limited_us"),
        buffer_full_share=share("buffer"), window_full_share=share("window"),
        cwnd_full_share=share("cwnd"), app_share=share("app"),
        flight_median_bytes=int(statistics.median(flights)) if flights else None,
        flight_max_bytes=int(max(flights)) if flights else None,
        send_buffer_max_bytes=int(max(buffers)) if buffers else None,
        peer_window_median_bytes=int(statistics.median(windows)) if windows else None,
        buffer_full_s=buffer_s,
    )
