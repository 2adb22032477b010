"""The sender's bytes in flight as a plateau, from a capture taken at the sender (pure).

A sender held by its send buffer keeps about the buffer's worth of data unacknowledged
round trip after round trip, whatever the receiver's window allows: its bytes in flight
sit flat at one level, below that window. Slow start (every healthy transfer's first
round trips, all of a short one) grows the flight each round trip instead; a sender with
nothing to send (a server still producing its pack) lets it fall to nothing between
bursts; a window-bound one keeps it at the window itself.

:func:`flight_plateau` reads the per-bin series of one direction of a captured
connection (:class:`~gitnetdiag.analysis.tcp_results.ConnectionSeries`) over the bins that
carried the bulk of its data (:data:`BULK_SHARES`): the median of each bin's largest flight
is the plateau, the bins whose flight lies within :data:`PLATEAU_BAND` of it the time it
held, and the last third's median over the first third's its growth. Only a capture at
the sender shows its flight: at the receiver the data is acknowledged as it arrives.

Measured on the lab's server-side ``tcpdump -s 128`` captures of 6 MB clones at 50 ms
(``server-sndbuf-clamp``, the server's ``tcp_wmem`` maximum 64 KiB): HTTPS through the edge
65 kB for 100% of 4.8 s against a 725 kB window (growth 1.0), SSH 131 kB (then 66 kB) for
100% of 3.0 s against 768 kB (growth 0.5), git:// 127 kB for 68% of 1.9 s against 4.2 MB
(0.9) in one run of six, its flight growing 1.6-4.4x in the other five (git daemon's socket
queued past its buffer); the same clones unclamped (1.1-1.8 s, slow start all through) held
0.80-1.11 MB for 0.4-0.5 s, growing 2.0-8.5x.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gitnetdiag.analysis.tcp_results import ConnectionSeries
from gitnetdiag.analysis.window import forward_filled

PLATEAU_BAND = (0.5, 1.5)
"""A bin's largest flight within these multiples of the plateau: the plateau held in it
(a send buffer's flight steps with the skbs it holds, up to about twice the buffer)."""
BULK_SHARES = (0.05, 0.95)
"""The bins read: from the one in which the sender's data passed this share of its bytes to
the one in which it passed the other: the bulk of the pack, without the ref advertisement
and the negotiation before it (an SSH clone's first 1-3 kB bins) or the last round trip's
tail. A sender that went idle inside the bulk leaves its empty bins in it."""


@dataclass(frozen=True, kw_only=True)
class FlightPlateau:
    """The level the sender's bytes in flight held, and against what window."""

    flight_bytes: float
    """The plateau: the median of each bin's largest bytes in flight over the bulk of the
    sender's data (:data:`BULK_SHARES`)."""
    held_share: float
    """Share of those bins whose largest flight lay within :data:`PLATEAU_BAND` of it."""
    held_s: float
    """Their time (bins x bin width)."""
    span_s: float
    """The time of the bins read (the bulk of the data)."""
    window_bytes: float
    """The receiver's advertised window over the bins that held (median, each bin's
    smallest advertisement carried forward over bins without one)."""
    growth: float
    """The median flight of the bulk's last third of bins over that of its first third: about
    1 for a flat plateau, 2 or more for a congestion window still opening (a sender past
    slow start growing its flight round trip after round trip)."""


def flight_plateau(series: ConnectionSeries, sender: int) -> FlightPlateau | None:
    """The plateau of direction ``sender`` (0: the connection's initiator sends, 1: its
    peer) against the other direction's windows; None when the sender sent nothing, its
    flight was never above zero, or the receiver advertised no window."""
    receiver = 1 - sender
    if len(series.max_in_flight_bytes) < 2 or len(series.min_window_bytes) < 2:
        return None
    sent = np.cumsum(np.asarray(series.goodput_bytes[sender], dtype=np.float64))
    flight = np.asarray(series.max_in_flight_bytes[sender], dtype=np.float64)
    windows = forward_filled(np.asarray(series.min_window_bytes[receiver], dtype=np.float64))
    if not sent.size or sent[-1] <= 0 or windows is None:
        return None
    low_share, high_share = BULK_SHARES
    first = int(np.searchsorted(sent, low_share * sent[-1]))
    last = min(int(np.searchsorted(sent, high_share * sent[-1])), flight.size - 1)
    span = flight[first:last + 1]
    level = float(np.median(span)) if span.size else 0.0
    low, high = PLATEAU_BAND
    held = (span >= low * level) & (span <= high * level)
    if level <= 0 or not held.any():
        return None
    # Each direction's series ends with its own last segment: carry the receiver's last
    # window to the sender's end.
    index = np.minimum(np.arange(first, last + 1), windows.size - 1)
    third = max(1, span.size // 3)
    # From nothing in flight, the growth is over one byte's worth: large, and finite (JSON).
    early = max(1.0, float(np.median(span[:third])))
    return FlightPlateau(
        growth=float(np.median(span[-third:])) / early,
        flight_bytes=level, held_share=float(np.mean(held)),
        held_s=float(np.count_nonzero(held)) * series.bin_s,
        span_s=float(span.size) * series.bin_s,
        window_bytes=float(np.median(windows[index][held])))
