"""Pure flow-control credit ledgers (HTTP/2 streams and connections, SSH channels).

A sender may only send as many bytes as its peer has granted: the HTTP/2
stream window, the HTTP/2 connection window, the SSH channel window. This
module replays the events that change that credit and says how long the sender
sat without any:

    events (time ordered) --> credit_ledger() --> CreditLedger
        WindowOpened            initial window (SETTINGS, channel open)
        DataSent                credit -= n
        WindowIncreased         credit += n  (WINDOW_UPDATE, SSH window adjust)
        InitialWindowChanged    credit += new - old  (HTTP/2 SETTINGS on open streams)

A *stall* is a stretch of time during which the credit is at or below
``stall_threshold_bytes`` and which ends with credit coming back and the
sender sending again (or, when ``open_until_s`` is given, lasts until then
because the sender never got credit back). Credit that is exhausted by the
very last bytes of an upload is not a stall: nobody was waiting.

No I/O here: callers (the capture parser, the native probes) build events.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np
import numpy.typing as npt

DEFAULT_STALL_THRESHOLD_BYTES = 0
"""Credit at or below this counts as "no credit" (senders here spend credit to 0)."""

HTTP2_DEFAULT_WINDOW_BYTES = 65_535
"""RFC 9113 initial window for streams and for the connection."""


def attributes(obj: object, *names: str) -> dict[str, Any]:
    """``{name: obj.name}`` for each of ``names``, in order: the plain part of a ``to_dict``."""
    return {name: getattr(obj, name) for name in names}


class LedgerScope(StrEnum):
    """Which window a ledger follows."""

    H2_STREAM = "h2-stream"
    H2_CONNECTION = "h2-connection"
    SSH_CHANNEL = "ssh-channel"


@dataclass(frozen=True, kw_only=True)
class _Event:
    t_s: float
    """Seconds since the start of the exchange."""


@dataclass(frozen=True, kw_only=True)
class WindowOpened(_Event):
    """The window starts (or restarts) at ``window_bytes``."""

    window_bytes: int
    """Credit granted by the peer at this moment."""


@dataclass(frozen=True, kw_only=True)
class DataSent(_Event):
    """The sender spent credit on ``size_bytes`` of flow-controlled data."""

    size_bytes: int
    """Flow-controlled length (HTTP/2 DATA payload with padding, SSH channel data)."""


@dataclass(frozen=True, kw_only=True)
class WindowIncreased(_Event):
    """The peer granted ``increment_bytes`` more (WINDOW_UPDATE, SSH window adjust)."""

    increment_bytes: int
    """Window size increment."""


@dataclass(frozen=True, kw_only=True)
class InitialWindowChanged(_Event):
    """HTTP/2 SETTINGS_INITIAL_WINDOW_SIZE changed: open stream windows shift by the difference."""

    old_initial_bytes: int
    """The initial window in force before this SETTINGS frame."""
    new_initial_bytes: int
    """The initial window from this SETTINGS frame."""


CreditEvent = WindowOpened | DataSent | WindowIncreased | InitialWindowChanged


@dataclass(frozen=True, kw_only=True)
class Stall:
    """One stretch without credit."""

    start_s: float
    """When credit dropped to (or below) the threshold."""
    end_s: float
    """When credit came back (or the end of observation for an unfinished stall)."""
    resolved: bool
    """False when the credit never came back before the end of observation."""

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    def to_dict(self) -> dict[str, Any]:
        return attributes(self, "start_s", "end_s", "duration_s", "resolved")


@dataclass(frozen=True, kw_only=True)
class CreditLedger:
    """Credit over time for one window, and what it cost the sender."""

    scope: LedgerScope
    """Which kind of window this is."""
    label: str
    """Human name, e.g. ``stream 3`` or ``connection`` or ``channel 0``."""
    initial_window_bytes: int
    """Credit at the first WindowOpened event (0 if there was none)."""
    peak_credit_bytes: int
    """The most credit the sender ever had: the window that bounded it."""
    bytes_sent: int
    """Sum of DataSent sizes."""
    updates_received: int
    """Number of WindowIncreased events."""
    update_bytes: int
    """Sum of WindowIncreased increments."""
    stall_threshold_bytes: int
    """Credit at or below this counted as a stall."""
    stalls: tuple[Stall, ...]
    """Each stretch without credit, in time order."""
    first_data_s: float | None
    """Time of the first DataSent (None when nothing was sent)."""
    last_data_s: float | None
    """Time of the last DataSent."""
    t_s: npt.NDArray[np.float64] = field(compare=False, repr=False)
    """Event times (seconds), one per event, time ordered."""
    credit_bytes: npt.NDArray[np.int64] = field(compare=False, repr=False)
    """Credit just after each event."""
    is_data: npt.NDArray[np.bool_] = field(compare=False, repr=False)
    """Which events are DataSent."""

    @property
    def stall_count(self) -> int:
        return len(self.stalls)

    @property
    def least_credit_after_data_bytes(self) -> int | None:
        """The least credit the sender had left just after sending (None when it sent
        nothing): near zero, this window held it."""
        spent = self.credit_bytes[self.is_data]
        return int(spent.min()) if spent.size else None

    @property
    def stalled_s(self) -> float:
        """Total seconds spent without credit."""
        return float(sum(stall.duration_s for stall in self.stalls))

    @property
    def sending_duration_s(self) -> float:
        if self.first_data_s is None or self.last_data_s is None:
            return 0.0
        return self.last_data_s - self.first_data_s

    @property
    def effective_rate_bytes_per_s(self) -> float | None:
        """Bytes sent per second between the first and last DATA (None if undefined)."""
        duration = self.sending_duration_s
        if duration <= 0.0:
            return None
        return self.bytes_sent / duration

    @property
    def stalled_fraction(self) -> float:
        """Share of the sending time spent without credit (0..1)."""
        duration = self.sending_duration_s
        return min(1.0, self.stalled_s / duration) if duration > 0 else 0.0

    def to_dict(self, *, series: bool = True) -> dict[str, Any]:
        data = {"scope": self.scope.value} | attributes(
            self, "label", "initial_window_bytes", "peak_credit_bytes", "bytes_sent",
            "updates_received", "update_bytes", "stall_threshold_bytes", "stall_count",
            "stalled_s", "stalled_fraction", "first_data_s", "last_data_s",
            "effective_rate_bytes_per_s")
        data["stalls"] = [stall.to_dict() for stall in self.stalls]
        if series:
            data["credit_series"] = [
                [float(t), int(c)] for t, c in zip(self.t_s, self.credit_bytes, strict=True)
            ]
        return data


def _deltas(events: Sequence[CreditEvent]) -> tuple[npt.NDArray[np.int64], int]:
    """Per-event credit change and the initial window (first WindowOpened)."""
    deltas = np.zeros(len(events), dtype=np.int64)
    initial: int | None = None
    running = 0
    for index, event in enumerate(events):
        if isinstance(event, WindowOpened):
            # Absolute, not relative: the delta is whatever brings the credit there.
            delta = event.window_bytes - running
            if initial is None:
                initial = event.window_bytes
        elif isinstance(event, DataSent):
            delta = -event.size_bytes
        elif isinstance(event, WindowIncreased):
            delta = event.increment_bytes
        else:
            delta = event.new_initial_bytes - event.old_initial_bytes
        deltas[index] = delta
        running += delta
    return deltas, initial if initial is not None else 0


def credit_ledger(
    events: Sequence[CreditEvent],
    *,
    scope: LedgerScope,
    label: str,
    stall_threshold_bytes: int = DEFAULT_STALL_THRESHOLD_BYTES,
    open_until_s: float | None = None,
) -> CreditLedger:
    """Replay ``events`` (sorted by time here, stably) into a CreditLedger.

    ``open_until_s``: the sender still had data to send until this time (for
    example the end of a capture in which the upload never finished); a stall
    still open at the end then counts up to it.
    """
    ordered = sorted(events, key=lambda event: event.t_s)
    times = np.fromiter((event.t_s for event in ordered), dtype=np.float64, count=len(ordered))
    deltas, initial = _deltas(ordered)
    credit = np.cumsum(deltas, dtype=np.int64)
    is_data, is_update = (
        np.fromiter((isinstance(event, kind) for event in ordered), dtype=bool, count=len(ordered))
        for kind in (DataSent, WindowIncreased))
    sizes = -deltas[is_data]
    data_times = times[is_data]
    stalls = _stalls(times, credit, is_data, stall_threshold_bytes, open_until_s)
    return CreditLedger(
        scope=scope,
        label=label,
        initial_window_bytes=initial,
        peak_credit_bytes=int(credit.max()) if credit.size else 0,
        bytes_sent=int(sizes.sum()),
        updates_received=int(is_update.sum()),
        update_bytes=int(deltas[is_update].sum()),
        stall_threshold_bytes=stall_threshold_bytes,
        stalls=tuple(stalls),
        first_data_s=float(data_times[0]) if data_times.size else None,
        last_data_s=float(data_times[-1]) if data_times.size else None,
        t_s=times,
        credit_bytes=credit,
        is_data=is_data,
    )


def _stalls(
    times: npt.NDArray[np.float64],
    credit: npt.NDArray[np.int64],
    is_data: npt.NDArray[np.bool_],
    threshold: int,
    open_until_s: float | None,
) -> list[Stall]:
    if credit.size == 0:
        return []
    starved = credit <= threshold
    # Edges of starved runs: +1 where a run starts, -1 just after it ends.
    edges = np.diff(np.concatenate(([0], starved.astype(np.int8), [0])))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)  # index of the event that restored credit
    data_after = np.cumsum(is_data[::-1])[::-1]  # DataSent count at or after each index
    stalls: list[Stall] = []
    for start, end in zip(starts, ends, strict=True):
        if end < credit.size:
            # Credit came back at event `end`; it only mattered if the sender then sent.
            if data_after[end] > 0:
                stalls.append(
                    Stall(start_s=float(times[start]), end_s=float(times[end]), resolved=True)
                )
        elif open_until_s is not None and open_until_s > times[start]:
            stalls.append(Stall(start_s=float(times[start]), end_s=open_until_s, resolved=False))
    return stalls


@dataclass(frozen=True, kw_only=True)
class BindingWindow:
    """Which of two windows (stream vs connection) held the sender back."""

    which: str
    """``stream``, ``connection``, ``both`` or ``none``."""
    window_bytes: int
    """Peak credit of the binding window (the smaller peak when ``both`` or ``none``)."""
    stalled_s: float
    """Seconds stalled on the binding window."""

    def to_dict(self) -> dict[str, Any]:
        return {"which": self.which, "window_bytes": self.window_bytes, "stalled_s": self.stalled_s}


def binding_window(stream: CreditLedger, connection: CreditLedger) -> BindingWindow:
    """Attribute an HTTP/2 upload's waiting to its stream or its connection window.

    The sender can send min(stream credit, connection credit); the one whose
    stalls add up to more time is the one that bound it.
    """
    stream_s, connection_s = stream.stalled_s, connection.stalled_s
    smaller_peak = min(stream.peak_credit_bytes, connection.peak_credit_bytes)
    if stream_s == 0.0 and connection_s == 0.0:
        return BindingWindow(which="none", window_bytes=smaller_peak, stalled_s=0.0)
    if (
        stream_s > 0.0
        and connection_s > 0.0
        and abs(stream_s - connection_s) <= 0.1 * max(stream_s, connection_s)
    ):
        return BindingWindow(
            which="both", window_bytes=smaller_peak, stalled_s=max(stream_s, connection_s)
        )
    if stream_s > connection_s:
        return BindingWindow(
            which="stream", window_bytes=stream.peak_credit_bytes, stalled_s=stream_s
        )
    return BindingWindow(
        which="connection", window_bytes=connection.peak_credit_bytes, stalled_s=connection_s
    )
