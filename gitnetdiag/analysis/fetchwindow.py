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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


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
