"""TCP_INFO samples of a push -> the limit shares a capture would give (pure).

The kernel counts, per socket, how long the sender was busy and how much of
that it was held back by the peer's receive window (``rwnd_limited``) or by
its own send buffer (``sndbuf_limited``); with ``bytes_sent`` /
``bytes_retrans`` that is the TCP evidence of a push without a capture.
Counters are cumulative, so shares are deltas between the first and last
sample of the upload socket (the one that moved most bytes).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

DELIVERY_RATE = "delivery_rate_bytes_per_s"
"""The counter of the kernel's delivery-rate estimate, bytes per second."""
LEGACY_DELIVERY_RATE = "delivery_rate_bps"
"""The same counter (bytes per second too) in runs recorded before it was renamed."""


@dataclass(frozen=True, kw_only=True)
class TcpInfoSummary:
    """What the kernel said about the upload socket over the push."""

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
    """Share of the busy time limited by the peer's receive window."""
    sndbuf_limited_share: float | None
    """Share of the busy time limited by the local send buffer."""
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


def _delta(first: Mapping[str, float], last: Mapping[str, float], key: str) -> float | None:
    """How much a cumulative counter grew, None when the last sample lacks it. ``ss`` leaves
    out a counter that is still zero (``bytes_sent``, ``bytes_retrans``, ``busy``... of a
    socket sampled before its first byte), and ``getsockopt`` gives every counter the kernel
    has: a counter missing from the first sample only started from zero."""
    if key not in last:
        return None
    return last[key] - first.get(key, 0.0)


def summarize_samples(samples: Iterable[Mapping[str, Any]]) -> TcpInfoSummary | None:
    """The upload socket's summary, or None when no socket moved a byte."""
    by_socket: dict[str, list[Mapping[str, Any]]] = {}
    for sample in samples:
        by_socket.setdefault(str(sample.get("local")), []).append(sample)

    def acked(rows: list[Mapping[str, Any]]) -> float:
        return float(rows[-1]["counters"].get("bytes_acked", 0.0)
                     - rows[0]["counters"].get("bytes_acked", 0.0))

    if not by_socket:
        return None
    upload = max(by_socket, key=lambda local: acked(by_socket[local]))
    rows = sorted(by_socket[upload], key=lambda row: float(row["t_s"]))
    if acked(rows) <= 0 or len(rows) < 2:
        return None
    first, last = rows[0]["counters"], rows[-1]["counters"]
    busy_us = _delta(first, last, "busy_time_us")

    def share(key: str) -> float | None:
        value = _delta(first, last, key)
        if value is None or not busy_us or busy_us <= 0:
            return None
        return min(1.0, max(0.0, value / busy_us))

    sent, retrans = _delta(first, last, "bytes_sent"), _delta(first, last, "bytes_retrans")
    segments = _delta(first, last, "total_retrans")
    counters = [row["counters"] for row in rows]
    rtts = [c["rtt_us"] / 1e6 for c in counters if c.get("rtt_us")]
    min_rtts = [c["min_rtt_us"] / 1e6 for c in counters if c.get("min_rtt_us")]
    rates = [rate for c in counters
             if (rate := c.get(DELIVERY_RATE) or c.get(LEGACY_DELIVERY_RATE))]
    windows = [c["snd_wnd_bytes"] for c in counters if c.get("snd_wnd_bytes")]
    flight = sorted(c["unacked"] * c["snd_mss"] for c in counters
                    if c.get("unacked") and c.get("snd_mss"))
    return TcpInfoSummary(
        source=str(rows[0].get("source", "TCP_INFO")),
        samples=len(rows),
        span_s=float(rows[-1]["t_s"]) - float(rows[0]["t_s"]),
        acked_bytes=int(acked(rows)),
        busy_s=busy_us / 1e6 if busy_us is not None else None,
        rwnd_limited_share=share("rwnd_limited_us"),
        sndbuf_limited_share=share("sndbuf_limited_us"),
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


def last_undelivered_s(samples: Iterable[Mapping[str, Any]], payload_bytes: int) -> float | None:
    """The last sample time at which the upload socket had not yet had ``payload_bytes``
    acknowledged: the upload was still on the wire then (None without such a sample).

    git's trace2 ends the upload when pack-objects exits, which over SSH and git:// is
    when the pack is in the kernel's send buffer, seconds before a slow path delivers it;
    time after this bound is the wait for the server, not the upload.
    """
    by_socket: dict[str, list[Mapping[str, Any]]] = {}
    for sample in samples:
        by_socket.setdefault(str(sample.get("local")), []).append(sample)
    if not by_socket or payload_bytes <= 0:
        return None

    def sent(rows: list[Mapping[str, Any]]) -> float:
        return max(float(row["counters"].get("bytes_sent", 0.0)) for row in rows)

    upload = max(by_socket.values(), key=sent)
    pending = [float(row["t_s"]) for row in upload
               if float(row["counters"].get("bytes_acked", 0.0)) < payload_bytes]
    return max(pending) if pending else None
