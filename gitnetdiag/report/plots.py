"""The HTML report's figures, drawn the way network engineers read captures.

- **Time-sequence (Stevens) graph**, one panel per protocol: bytes sent
  (the sequence number, relative to the first byte) against time, with the
  receiver's window edge (acknowledged + advertised window) above it. The
  slope is the rate; where the two lines touch, the sender was waiting for
  the receiver's window; a widening gap means the window was not what
  limited it.
- **HTTP/2 send credit**, as an envelope per time bin (min-max band and the
  time-weighted median) with the share of each bin spent at zero credit
  below it. A long push holds thousands of WINDOW_UPDATE refills; drawn as a
  raw step line they fill the panel solid.
- **Push rate per protocol** (median with the min-max range).
- For a fetch's clones: the receiver's advertised window against
  the sender's bytes in flight as the receiver counted them (``rcv_ssthresh`` and
  ``rcv_space`` per RTT, one panel per transfer; where the lines meet, the window was
  the limit), and the native HTTP/2 ledgers' bytes over time under each window.

All time axes share one convention, seconds since the connection opened,
and one span, so the panels of different figures line up when read one above
the other. Figures are PNG bytes; :mod:`gitnetdiag.report.html` embeds them.
matplotlib is imported on first use only.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from gitnetdiag.analysis.nativeledger import H2Pacing
from gitnetdiag.analysis.window import ReceiverWindowSeries
from gitnetdiag.diagnosis.model import Diagnosis
from gitnetdiag.diagnosis.observations import (
    PROTOCOL_LABELS,
    PROTOCOL_ORDER,
    FlightSeries,
    TimeSeries,
)
from gitnetdiag.diagnosis.transfers import TransferObservation
from gitnetdiag.report.units import fmt_bytes, fmt_quantity

MB = 1e6
kB = 1e3
FIG_WIDTH_IN = 8.0
MARGINS = {"left": 0.11, "right": 0.97}
"""Fixed margins (no tight bounding box): the time axes of all figures line up."""
TARGET_BINS = 60
"""Credit envelope bins across the time axis: coarse enough to read over a long push."""
STEVENS_TITLE = "Time-sequence graph per protocol: bytes sent and the receiver's window edge"
CREDIT_TITLE = ("HTTP/2 flow-control credit over time (per-bin envelope and share of time at "
                "zero credit)")
MIN_BIN_S = 0.05
"""Narrowest credit bin: about a round trip, so a bin holds a whole refill cycle."""


@dataclass(frozen=True, kw_only=True)
class Figure:
    """One rendered figure."""

    title: str
    """Caption and alt text."""
    png: bytes
    """The image."""


@dataclass(frozen=True, kw_only=True)
class CreditEnvelope:
    """A step series (credit over time) summarised per time bin."""

    start_s: npt.NDArray[np.float64]
    """Start of each bin, seconds."""
    bin_s: float
    """Bin width, seconds."""
    low: npt.NDArray[np.float64]
    """Lowest value the series held in each bin."""
    median: npt.NDArray[np.float64]
    """Time-weighted median of the series in each bin."""
    high: npt.NDArray[np.float64]
    """Highest value the series held in each bin."""
    zero_share: npt.NDArray[np.float64]
    """Share of each bin's time with the value at or below zero (0..1)."""


def credit_envelope(
    t_s: Sequence[float], values: Sequence[float], *, bin_s: float | None = None,
    end_s: float | None = None,
) -> CreditEnvelope:
    """Min, time-weighted median, max and zero share per bin of a step series.

    Each value holds from its time until the next one (the credit stays put
    between frames); the last holds until ``end_s`` (default: the last time).
    Bins before the first sample are empty (NaN, zero share 0). ``bin_s``
    defaults to the span over :data:`TARGET_BINS`, at least :data:`MIN_BIN_S`.
    """
    t = np.asarray(t_s, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if t.size == 0:
        empty = np.zeros(0)
        return CreditEnvelope(start_s=empty, bin_s=bin_s or MIN_BIN_S, low=empty,
                              median=empty, high=empty, zero_share=empty)
    end = max(float(t[-1]) if end_s is None else end_s, float(t[-1]))
    width = bin_s or max(end / TARGET_BINS, MIN_BIN_S)
    count = max(1, math.ceil(end / width - 1e-9))
    starts = np.arange(count, dtype=np.float64) * width
    # Segment i holds v[i] over [t[i], seg_end[i]).
    seg_end = np.append(t[1:], max(end, float(t[-1]) + 1e-12))
    low = np.full(count, np.nan)
    median = np.full(count, np.nan)
    high = np.full(count, np.nan)
    zero = np.zeros(count)
    for b, lo_edge in enumerate(starts):
        hi_edge = lo_edge + width
        first = max(int(np.searchsorted(t, lo_edge, side="right")) - 1, 0)
        last = int(np.searchsorted(t, hi_edge, side="left"))
        overlap = (np.minimum(seg_end[first:last], hi_edge)
                   - np.maximum(t[first:last], lo_edge))
        held = overlap > 0
        if not held.any():
            continue
        dur, val = overlap[held], v[first:last][held]
        low[b], high[b] = val.min(), val.max()
        order = np.argsort(val, kind="stable")
        cumulative = np.cumsum(dur[order])
        median[b] = val[order][int(np.searchsorted(cumulative, cumulative[-1] / 2))]
        zero[b] = float(dur[val <= 0].sum()) / width
    return CreditEnvelope(start_s=starts, bin_s=width, low=low, median=median, high=high,
                          zero_share=np.clip(zero, 0.0, 1.0))


def window_edge(flight: FlightSeries) -> npt.NDArray[np.float64]:
    """The receiver's window edge per sample: acknowledged bytes + advertised window.

    Acknowledged = sent - in flight. The series are per-bin extremes (bytes
    sent by the end of the bin, the largest flight in it), which can put the
    estimate below what was already sent; a sender never passes the window
    edge, so the edge is held at or above the bytes sent, and non-decreasing
    like the acknowledgements it rests on.
    """
    sent = np.asarray(flight.bytes_sent, dtype=np.float64)
    acked = np.maximum(sent - np.asarray(flight.bytes_in_flight, dtype=np.float64), 0.0)
    np.maximum.accumulate(acked, out=acked)
    edge: npt.NDArray[np.float64] = np.maximum(
        acked + np.asarray(flight.advertised_window, dtype=np.float64), sent)
    return edge


def _flights(d: Diagnosis) -> list[tuple[str, FlightSeries]]:
    obs = d.observations
    return [
        (name, flight)
        for name in PROTOCOL_ORDER
        if name in obs.protocols and (flight := obs.protocols[name].flight) is not None
        and flight.t_s
    ]


def _credit(d: Diagnosis) -> TimeSeries | None:
    h2 = d.observations.protocols.get("h2")
    if h2 is None or h2.h2_ledger is None or h2.h2_ledger.credit is None:
        return None
    return h2.h2_ledger.credit if h2.h2_ledger.credit.t_s else None


def time_span_s(d: Diagnosis) -> float:
    """The common time axis: from 0 to the last sample of any time series."""
    ends = [flight.t_s[-1] for _, flight in _flights(d)]
    credit = _credit(d)
    if credit is not None:
        ends.append(credit.t_s[-1])
    return max(ends, default=0.0) or 1.0


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    return plt


def warm_up() -> None:
    """Import matplotlib now, while the caller waits on something else (about a second)."""
    pyplot()


def png_bytes(fig: Any, **savefig: Any) -> bytes:
    """A figure as PNG (then closed); ``savefig``: more of matplotlib's options."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, metadata={"Software": None}, **savefig)
    pyplot().close(fig)
    return buffer.getvalue()


def time_sequence_figure(d: Diagnosis, *, span_s: float | None = None) -> Figure | None:
    """One Stevens graph per protocol with a capture, on one shared time axis."""
    flights = _flights(d)
    if not flights:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(len(flights), 1, figsize=(FIG_WIDTH_IN, 0.6 + 2.2 * len(flights)),
                             sharex=True, squeeze=False)
    top = 0.0
    stevens_axes = []
    for ax, (name, flight) in zip(axes[:, 0], flights, strict=True):
        t = np.asarray(flight.t_s)
        label = PROTOCOL_LABELS.get(name, name)
        if flight.bytes_sent:
            sent = np.asarray(flight.bytes_sent) / MB
            edge = window_edge(flight) / MB
            ax.fill_between(t, sent, edge, step="post", color="tab:orange", alpha=0.15,
                            linewidth=0)
            ax.step(t, sent, where="post", color="tab:blue", label="bytes sent (seq)")
            # On top: where the sender is window-limited the edge lies on the data line.
            ax.step(t, edge, where="post", color="tab:orange", linestyle="--",
                    label="window edge (acked + rwnd)")
            ax.set_ylabel("MB")
            top = max(top, float(sent.max()))
            stevens_axes.append(ax)
        else:
            # Observations recorded before bytes_sent existed: the window against the flight.
            ax.step(t, np.asarray(flight.bytes_in_flight) / kB, where="post",
                    label="bytes in flight")
            ax.step(t, np.asarray(flight.advertised_window) / kB, where="post",
                    linestyle="--", label="advertised window")
            ax.set_ylabel("kB")
        ax.set_title(label, loc="left", fontsize="medium")
        ax.legend(loc="upper left", fontsize="small")
        ax.grid(True, alpha=0.3)
    for ax in stevens_axes:
        # The same pack on every protocol: one y scale makes the slopes comparable. A window
        # edge far above the data leaves the panel: the window was not the limit there.
        ax.set_ylim(0, top * 1.25 or 1.0)
    axes[-1, 0].set_xlim(0, span_s or time_span_s(d))
    axes[-1, 0].set_xlabel("seconds since the connection opened")
    fig.subplots_adjust(hspace=0.35, top=1 - 0.35 / fig.get_figheight(),
                        bottom=0.5 / fig.get_figheight(), **MARGINS)
    title = (STEVENS_TITLE if stevens_axes
             else "Bytes in flight vs the receiver's advertised window per protocol")
    return Figure(title=title, png=png_bytes(fig))


def credit_figure(d: Diagnosis, *, span_s: float | None = None) -> Figure | None:
    """HTTP/2 stream send credit per time bin: min-max band, median, share at zero."""
    credit = _credit(d)
    if credit is None:
        return None
    span = span_s or time_span_s(d)
    env = credit_envelope(credit.t_s, credit.values, end_s=credit.t_s[-1],
                          bin_s=max(span / TARGET_BINS, MIN_BIN_S))
    plt = pyplot()
    fig, (ax, stall) = plt.subplots(2, 1, figsize=(FIG_WIDTH_IN, 3.6), sharex=True,
                                    gridspec_kw={"height_ratios": [3, 1]})
    edges = np.append(env.start_s, env.start_s[-1] + env.bin_s)
    unit, scale = ("MB", MB) if np.nanmax(env.high) >= MB else ("kB", kB)
    ax.stairs(env.high / scale, edges, baseline=env.low / scale, fill=True, color="tab:blue",
              alpha=0.25, label="min-max per bin")
    ax.stairs(env.median / scale, edges, color="navy", linewidth=2, label="median", zorder=3)
    stall.stairs(env.zero_share * 100, edges, fill=True, color="tab:red", alpha=0.7)
    ax.set_ylabel(f"credit, {unit}")
    ledger = d.observations.protocols["h2"].h2_ledger
    window = ledger.server_initial_window_bytes if ledger is not None else None
    if window:
        ax.axhline(window / scale, color="grey", linestyle=":",
                   label=f"server stream window {fmt_bytes(window)}")
    ax.set_ylim(0, max(float(np.nanmax(env.high)), window or 0) / scale * 1.4)
    ax.set_title(f"HTTP/2 stream send credit (native probe), {env.bin_s * 1000:.0f} ms bins",
                 loc="left", fontsize="medium")
    ax.legend(loc="upper center", ncol=3, fontsize="small")
    ax.grid(True, alpha=0.3)
    stall.set_ylim(0, 100)
    stall.set_ylabel("% at 0")
    stall.set_xlim(0, span)
    stall.set_xlabel("seconds since the connection opened")
    stall.grid(True, alpha=0.3)
    fig.subplots_adjust(hspace=0.15, top=0.92, bottom=0.14, **MARGINS)
    return Figure(title=CREDIT_TITLE, png=png_bytes(fig))


def rate_figure(d: Diagnosis) -> Figure | None:
    """Median push rate per protocol with its min-max range."""
    rated = [s for s in d.protocols if s.rate_bytes_per_s is not None]
    if not rated:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3))
    medians = [(s.rate_bytes_per_s or 0.0) / 1e6 for s in rated]
    low = [m - (s.rate_min_bytes_per_s or 0.0) / 1e6 for m, s in zip(medians, rated, strict=True)]
    high = [(s.rate_max_bytes_per_s or 0.0) / 1e6 - m for m, s in zip(medians, rated, strict=True)]
    ax.bar([s.label for s in rated], medians, yerr=[low, high], capsize=6, color="#4a78b5")
    ax.set_ylabel("MB/s (median, min-max)")
    ax.set_title("Push rate per protocol")
    fig.tight_layout()
    return Figure(title="Push rate per protocol", png=png_bytes(fig))


def report_figures(d: Diagnosis) -> list[Figure]:
    """Every figure the data allows, time figures on one span."""
    span = time_span_s(d)
    figures = (time_sequence_figure(d, span_s=span), credit_figure(d, span_s=span),
               rate_figure(d))
    return [f for f in figures if f is not None]


WINDOW_TITLE = ("Download per clone: the client's advertised window (rcv_ssthresh) against the "
                "server's bytes in flight as the client counted them (rcv_space, per RTT)")


def _kb(series: Sequence[float | None]) -> npt.NDArray[np.float64]:
    return np.array([np.nan if value is None else value / kB for value in series], dtype=float)


def window_figure(observations: Sequence[TransferObservation],
                  windows: Sequence[ReceiverWindowSeries | None]) -> Figure | None:
    """One panel per transfer with TCP_INFO samples; None when no transfer has any."""
    panels = [(obs, series) for obs, series in zip(observations, windows, strict=False)
              if series is not None and series.t_s]
    if not panels:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(len(panels), 1, figsize=(FIG_WIDTH_IN, 0.6 + 2.0 * len(panels)),
                             sharex=True, squeeze=False)
    for ax, (obs, series) in zip(axes[:, 0], panels, strict=True):
        t = np.asarray(series.t_s)
        ax.step(t, _kb(series.advertised_window_bytes), where="post", color="tab:orange",
                linestyle="--", label="client's advertised window")
        ax.step(t, _kb(series.in_flight_bytes), where="post", color="tab:blue",
                label="server's bytes in flight (per RTT)")
        ax.set_ylim(bottom=0)
        ax.set_ylabel("kB")
        ax.set_title(f"{obs.protocol} #{obs.repeat} ({series.source})", loc="left",
                     fontsize="medium")
        ax.legend(loc="upper left", fontsize="small")
        ax.grid(True, alpha=0.3)
    axes[-1, 0].set_xlabel("seconds since git clone started")
    fig.subplots_adjust(hspace=0.4, top=1 - 0.35 / fig.get_figheight(),
                        bottom=0.5 / fig.get_figheight(), **MARGINS)
    return Figure(title=WINDOW_TITLE, png=png_bytes(fig))


PACING_TITLE = ("Native HTTP/2 download: pack bytes received against time under each window "
                "the client advertised (the server sends a window, then waits for credit)")


def pacing_figure(pacing: Sequence[H2Pacing]) -> Figure | None:
    """The cumulative bytes of each native download, one line per window; None without."""
    drawn = [p for p in pacing if p.t_s]
    if not drawn:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(FIG_WIDTH_IN, 3.2))
    for p in drawn:
        ax.step(np.asarray(p.t_s), np.asarray(p.cumulative_bytes) / MB, where="post",
                label=f"{p.label} window ({fmt_quantity(p.window_bytes, 'B')}): "
                f"{fmt_quantity(p.rate_bytes_per_s, 'B/s')}")
    ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    ax.set_ylabel("MB")
    ax.set_xlabel("seconds since the fetch request")
    ax.legend(loc="upper left", fontsize="small")
    ax.grid(True, alpha=0.3)
    fig.subplots_adjust(top=0.95, bottom=0.16, **MARGINS)
    return Figure(title=PACING_TITLE, png=png_bytes(fig))
