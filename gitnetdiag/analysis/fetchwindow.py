"""TCP_INFO samples of a clone -> the download's window over time, for the report's plot (pure).

Per sample of the download socket (the one that received most, as
:func:`gitnetdiag.analysis.fetchtcp.summarize_download` picks it):

- the client's advertised window: ``rcv_ssthresh``, the cap of the window the
  socket advertises (what the server may have in flight),
- the server's bytes in flight as the receiver sees them: ``rcv_space``, the
  bytes the sender delivered in one RTT by the receive-buffer autotuning's
  count (a capture would show the sender's in-flight bytes exactly; without
  one this is the kernel's own per-RTT figure, to any user),
- the bytes received so far.

Where the two lines meet, the server was sending as much as the client's
window let it: the client's receive window limited the download.

A capture of the clone at the client tells the same from the wire
(:func:`receiver_window_limited_share`): the bytes that arrived per round trip
against the window the client had advertised.

The native HTTP/2 download ledgers (:mod:`gitnetdiag.probe.fetchh2`) are summarised
here too (:func:`download_pacing`): how the server paced its DATA frames under
each window the client advertised.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gitnetdiag.analysis.tcp_results import ConnectionSeries
from gitnetdiag.rundir.fetchrecords import H2DownloadRecord


@dataclass(frozen=True, kw_only=True)
class DownloadWindowSeries:
    """The download socket's window and in-flight bytes, sample by sample."""

    t_s: tuple[float, ...]
    """Seconds since git was started."""
    advertised_window_bytes: tuple[float | None, ...]
    """The client's advertised window cap (``rcv_ssthresh``); None where not reported."""
    in_flight_bytes: tuple[float | None, ...]
    """Bytes the server delivered per RTT as the client counted them (``rcv_space``)."""
    received_bytes: tuple[float, ...]
    """Bytes received so far on the socket."""
    source: str
    """``ss -tin`` or ``getsockopt TCP_INFO``."""


def _received(row: Mapping[str, Any]) -> float:
    return float(row["counters"].get("bytes_received", 0.0))


def download_window_series(samples: Iterable[Mapping[str, Any]]) -> DownloadWindowSeries | None:
    """The series of the socket that received most; None when none received a byte."""
    by_socket: dict[str, list[Mapping[str, Any]]] = {}
    for sample in samples:
        if isinstance(sample.get("counters"), Mapping) and "t_s" in sample:
            by_socket.setdefault(str(sample.get("local")), []).append(sample)
    if not by_socket:
        return None
    rows = max(by_socket.values(), key=lambda rows: max(_received(row) for row in rows))
    if max(_received(row) for row in rows) <= 0:
        return None
    rows = sorted(rows, key=lambda row: float(row["t_s"]))

    def level(row: Mapping[str, Any], key: str) -> float | None:
        value = row["counters"].get(key)
        return float(value) if value else None

    return DownloadWindowSeries(
        t_s=tuple(float(row["t_s"]) for row in rows),
        advertised_window_bytes=tuple(level(row, "rcv_ssthresh") for row in rows),
        in_flight_bytes=tuple(level(row, "rcv_space") for row in rows),
        received_bytes=tuple(_received(row) for row in rows),
        source=str(rows[0].get("source", "TCP_INFO")),
    )


WINDOW_FULL = 0.9
"""Bytes delivered in a round trip at least this share of the window the client advertised:
the server sent all the window let it (Linux's receive autotuning keeps the window about twice
what arrives per round trip while the sender is held by anything else)."""


def receiver_window_limited_share(series: ConnectionSeries, rtt_s: float | None
                                  ) -> float | None:
    """Share of a download's time (a capture at the client, ``a``; the server ``b`` sends)
    during which the server sent as much as the client's window allowed; None when unknown.

    At the receiver the server's unacknowledged bytes are not what the sender holds: the
    client acknowledges what arrived within a segment or two, and the bytes still on the
    way are not seen yet. What the receiver does see is what one round trip delivers: a
    window-bound sender puts a whole window on the path each round trip, so the bytes that
    arrive over a round trip reach the window the client advertised at its start. Each
    round trip of the transfer (runs of the capture's bins, first to last bin that brought
    new data) counts as window-bound when its bytes, at the path's ``rtt_s`` (the
    handshake's: a queue only lengthens the round trip, so this under-counts), are at least
    :data:`WINDOW_FULL` of that window."""
    if not rtt_s or len(series.goodput_bytes) < 2 or len(series.min_window_bytes) < 1:
        return None
    data, windows = series.goodput_bytes[1], series.min_window_bytes[0]
    moving = [index for index, size in enumerate(data) if size > 0]
    bins = max(1, math.ceil(rtt_s / series.bin_s))
    if not moving or moving[-1] - moving[0] + 1 < bins:
        return None
    per_rtt = rtt_s / (bins * series.bin_s)
    carried = list(itertools.accumulate(
        windows, lambda last, now: now if now >= 0 else last, initial=-1))[1:]
    bound = counted = 0
    for start in range(moving[0], moving[-1] - bins + 2):
        window = carried[min(start, len(carried) - 1)] if carried else -1
        if window <= 0:
            continue  # no advertisement from the client yet
        counted += 1
        bound += sum(data[start:start + bins]) * per_rtt >= WINDOW_FULL * window
    return bound / counted if counted else None


BURST_GAP_S = 0.005
"""Frames closer than this belong to one burst: a server waiting for credit pauses for about
a round trip between bursts, far longer than the few microseconds between frames."""


@dataclass(frozen=True, kw_only=True)
class DownloadPacing:
    """How the server paced its DATA under one advertised window (a native ledger)."""

    label: str
    """Which window (``HTTP/2 default``, ``large``)."""
    window_bytes: int
    """The window the client advertised."""
    outcome: str
    """The native fetch's outcome."""
    error: str
    """Why it failed, else empty."""
    received_bytes: int
    """Pack-stream bytes received."""
    rate_bytes_per_s: float | None
    """Its rate."""
    frames: int
    """DATA frames received."""
    median_burst_bytes: float | None
    """Median bytes the server sent in one burst (frames less than ``BURST_GAP_S`` apart):
    when the window binds, the refill the client sends (h2 returns credit once half the
    window is consumed: half the window per burst)."""
    longest_gap_s: float | None
    """Longest pause between two frames (a server waiting for WINDOW_UPDATE pauses ~1 RTT)."""
    t_s: tuple[float, ...] = ()
    """Arrival of each frame, seconds since the fetch request (for the plot)."""
    cumulative_bytes: tuple[int, ...] = ()
    """Bytes received by each frame's arrival (for the plot)."""


def download_pacing(record: H2DownloadRecord) -> DownloadPacing:
    """A native download ledger summarised: bursts, pauses, the cumulative bytes."""
    times, sizes = record.data_t_s, record.data_bytes
    bursts: list[int] = []
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    for index, size in enumerate(sizes):
        if index == 0 or gaps[index - 1] >= BURST_GAP_S:
            bursts.append(0)
        bursts[-1] += size
    origin = record.request_t_s if record.request_t_s is not None else (times[0] if times else 0)
    cumulative, total = [], 0
    for size in sizes:
        total += size
        cumulative.append(total)
    return DownloadPacing(
        label=record.label, window_bytes=record.window_bytes, outcome=record.outcome,
        error=record.error, received_bytes=record.received_bytes,
        rate_bytes_per_s=record.rate_bytes_per_s, frames=len(sizes),
        median_burst_bytes=statistics.median(bursts) if bursts else None,
        longest_gap_s=max(gaps) if gaps else None,
        t_s=tuple(t - origin for t in times), cumulative_bytes=tuple(cumulative))
