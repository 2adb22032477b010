"""The receiver's advertised window against what the sender had in flight (pure).

Where the two meet, the sender sent as much as the receiver's window let it: the receive
window limited the transfer. Seen from the sender (a capture at the pushing client) the
bytes in flight are on the wire; the pipeline plots them against the window carried over
bins without an advertisement (:func:`forward_filled`). Seen from the receiver (a clone's
client) neither a capture nor TCP_INFO shows the sender's flight, so:

- TCP_INFO samples of the receiving socket (:func:`receiver_window_series`, the socket
  :func:`gitnetdiag.analysis.tcpinfo.receiving_socket` picks) give the advertised
  window's cap (``rcv_ssthresh``) and the bytes the sender delivered in one RTT by the
  receive-buffer autotuning's count (``rcv_space``, the kernel's own per-RTT figure, to
  any user), with the bytes received so far;
- a capture at the receiver (:func:`receiver_window_limited_share`) gives the bytes that
  arrived per round trip against the window the receiver had advertised.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from gitnetdiag.analysis.tcp_results import ConnectionSeries
from gitnetdiag.analysis.tcpinfo import receiving_socket


def forward_filled(window: npt.NDArray[np.float64]) -> npt.NDArray[np.float64] | None:
    """Per-bin advertised window (-1 where a bin had no advertisement) with every gap
    carrying the last window seen forward, and the bins before the first advertisement
    the first one; None when no bin has one."""
    known = window >= 0
    if not known.any():
        return None
    idx = np.where(known, np.arange(window.size), 0)
    np.maximum.accumulate(idx, out=idx)
    return np.where(known[idx], window[idx], window[int(np.argmax(known))])


@dataclass(frozen=True, kw_only=True)
class ReceiverWindowSeries:
    """The receiving socket's window and the sender's per-RTT bytes, sample by sample."""

    t_s: tuple[float, ...]
    """Seconds since git was started."""
    advertised_window_bytes: tuple[float | None, ...]
    """The receiver's advertised window cap (``rcv_ssthresh``); None where not reported."""
    in_flight_bytes: tuple[float | None, ...]
    """Bytes the sender delivered per RTT as the receiver counted them (``rcv_space``)."""
    received_bytes: tuple[float, ...]
    """Bytes received so far on the socket."""
    source: str
    """``ss -tin`` or ``getsockopt TCP_INFO``."""


def receiver_window_series(samples: Iterable[Mapping[str, Any]]
                           ) -> ReceiverWindowSeries | None:
    """The series of the socket that received most; None when none received a byte."""
    rows = receiving_socket(sample for sample in samples
                            if isinstance(sample.get("counters"), Mapping) and "t_s" in sample)
    if rows is None:
        return None

    def level(row: Mapping[str, Any], key: str) -> float | None:
        value = row["counters"].get(key)
        return float(value) if value else None

    return ReceiverWindowSeries(
        t_s=tuple(float(row["t_s"]) for row in rows),
        advertised_window_bytes=tuple(level(row, "rcv_ssthresh") for row in rows),
        in_flight_bytes=tuple(level(row, "rcv_space") for row in rows),
        received_bytes=tuple(float(row["counters"].get("bytes_received", 0.0)) for row in rows),
        source=str(rows[0].get("source", "TCP_INFO")),
    )


WINDOW_FULL = 0.9
"""Bytes delivered in a round trip at least this share of the window the receiver
advertised: the sender sent all the window let it (Linux's receive autotuning keeps the
window about twice what arrives per round trip while the sender is held by anything
else)."""


def receiver_window_limited_share(series: ConnectionSeries, rtt_s: float | None
                                  ) -> float | None:
    """Share of a transfer's time (a capture at the receiver, ``a``; the sender ``b``)
    during which the sender sent as much as the receiver's window allowed; None when unknown.

    At the receiver the sender's unacknowledged bytes are not what the sender holds: the
    receiver acknowledges what arrived within a segment or two, and the bytes still on the
    way are not seen yet. What the receiver does see is what one round trip delivers: a
    window-bound sender puts a whole window on the path each round trip, so the bytes that
    arrive over a round trip reach the window the receiver advertised at its start. Each
    round trip of the transfer (runs of the capture's bins, first to last bin that brought
    new data) counts as window-bound when its bytes, at the path's ``rtt_s`` (the
    handshake's: a queue only lengthens the round trip, so this under-counts), are at least
    :data:`WINDOW_FULL` of that window (carried forward as the sender's view carries it)."""
    if not rtt_s or len(series.goodput_bytes) < 2 or len(series.min_window_bytes) < 1:
        return None
    data = series.goodput_bytes[1]
    advertised = np.asarray(series.min_window_bytes[0], dtype=np.float64)
    moving = [index for index, size in enumerate(data) if size > 0]
    bins = max(1, math.ceil(rtt_s / series.bin_s))
    if not moving or moving[-1] - moving[0] + 1 < bins:
        return None
    carried = forward_filled(advertised)
    if carried is None:
        return None
    first_advertised = int(np.argmax(advertised >= 0))
    per_rtt = rtt_s / (bins * series.bin_s)
    bound = counted = 0
    for start in range(moving[0], moving[-1] - bins + 2):
        index = min(start, carried.size - 1)
        window = float(carried[index]) if index >= first_advertised else -1.0
        if window <= 0:
            continue  # no advertisement from the receiver yet
        counted += 1
        bound += sum(data[start:start + bins]) * per_rtt >= WINDOW_FULL * window
    return bound / counted if counted else None
