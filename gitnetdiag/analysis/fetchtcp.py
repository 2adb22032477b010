"""TCP_INFO samples of a clone -> the receiver's side of a download (pure).

In a fetch the client is the receiver: the window it advertises caps the
rate at ``window / RTT`` whatever the path could carry. The kernel says, per
socket and to any user (``ss -tin``, ``getsockopt(TCP_INFO)``):

- ``rcv_ssthresh``: the cap of the window the socket advertises (it grows with
  receive-buffer autotuning up to what ``tcp_rmem``'s maximum or ``SO_RCVBUF``
  allow),
- ``skmem rb``: the receive buffer itself (``ss`` only),
- ``rcv_space``: autotuning's estimate of what the sender had in flight per RTT,
- ``rtt`` / ``rcv_rtt``: the round trip as the sender of ACKs and as the receiver
  measure it,
- ``rcv_ooopack`` (Linux 5.4+): data segments that arrived out of order. A data
  segment lost on the way makes the ones sent after it arrive ahead of its
  retransmission, so at the receiver, which sees no retransmission counter of the
  sender's, this is what loss leaves (reordering on the path does too).
- ``rcv_mss`` / ``advmss``: the largest segment received (the kernel's estimate) and the
  MSS the socket advertised; a path-MTU black hole towards the client keeps the first
  well below the second.

The download socket is the one that received most bytes. Counters such as
``bytes_received`` are cumulative; the window values are levels, summarised
over the samples taken while bytes arrived.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class DownloadTcpSummary:
    """What the kernel said about the client's download socket over a clone."""

    source: str
    """``ss -tin`` or ``getsockopt TCP_INFO`` (cited as evidence)."""
    samples: int
    """Samples of the download socket while bytes arrived."""
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
    kernel or ``ss`` did not say (``ss`` leaves a zero out: see :func:`summarize_download`)."""
    rcv_mss_max_bytes: int | None = None
    """Largest segment the socket received, as the kernel estimates it (``rcv_mss``,
    payload): 536 until a larger one arrives."""
    advmss_bytes: int | None = None
    """The MSS the socket advertised (``advmss``): the payload of a full-size segment."""
    peer_mss_bytes: int | None = None
    """The MSS the socket sends with (``snd_mss``): the server's MSS option, capped by the
    client's own path. A server with a smaller MSS than ``advmss`` (a 1400 B MTU, a
    tunnel) never sends a segment above it, path hole or not."""

    @property
    def full_segment_bytes(self) -> int | None:
        """The payload of a full-size segment from the server: the smaller of the two MSS
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


def summarize_download(samples: Iterable[Mapping[str, Any]]) -> DownloadTcpSummary | None:
    """The download socket's summary, or None when no socket received a byte."""
    by_socket: dict[str, list[Mapping[str, Any]]] = {}
    for sample in samples:
        by_socket.setdefault(str(sample.get("local")), []).append(sample)

    def received(rows: list[Mapping[str, Any]]) -> float:
        return max(float(row["counters"].get("bytes_received", 0.0)) for row in rows)

    if not by_socket:
        return None
    download = max(by_socket, key=lambda local: received(by_socket[local]))
    rows = sorted(by_socket[download], key=lambda row: float(row["t_s"]))
    if received(rows) <= 0:
        return None
    counters = [row["counters"] for row in rows]
    moving = [later for earlier, later in zip([{}, *counters], counters, strict=False)
              if later.get("bytes_received", 0.0) > earlier.get("bytes_received", 0.0)]
    levels = moving or counters

    def largest(key: str) -> int | None:
        values = [c[key] for c in levels if c.get(key)]
        return int(max(values)) if values else None

    last = counters[-1]
    rcv_rtts = [c["rcv_rtt_us"] / 1e6 for c in levels if c.get("rcv_rtt_us")]
    rtts = rcv_rtts or [c["rtt_us"] / 1e6 for c in levels if c.get("rtt_us")]
    min_rtts = [c["min_rtt_us"] / 1e6 for c in counters if c.get("min_rtt_us")]
    return DownloadTcpSummary(
        source=str(rows[0].get("source", "TCP_INFO")), samples=len(levels),
        span_s=float(rows[-1]["t_s"]) - float(rows[0]["t_s"]),
        received_bytes=int(received(rows)),
        advertised_window_max_bytes=largest("rcv_ssthresh"),
        receive_buffer_max_bytes=largest("rcv_buf_bytes"),
        rcv_space_max_bytes=largest("rcv_space"),
        min_rtt_s=min(min_rtts) if min_rtts else None,
        median_rtt_s=statistics.median(rtts) if rtts else None,
        data_segments_in=int(last["data_segs_in"]) if last.get("data_segs_in") else None,
        out_of_order_segments=_out_of_order(counters),
        rcv_mss_max_bytes=_largest(counters, "rcv_mss"),
        advmss_bytes=_largest(counters, "advmss"),
        peer_mss_bytes=_largest(counters, "snd_mss"),
    )


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


def _largest(counters: Iterable[Mapping[str, Any]], key: str) -> int | None:
    """The largest value of ``key`` over every sample, stalled ones included (a segment
    size estimate is a level that a stall does not reset)."""
    values = [c[key] for c in counters if c.get(key)]
    return int(max(values)) if values else None
