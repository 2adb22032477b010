"""Credit ledgers of the native probes, whichever end granted the credit.

The native push probes send: their raw events (:mod:`gitnetdiag.rundir.native`) replay into
the ledger of the credit the server granted them. The native fetch probes receive: they
grant the credit, and their ledgers (:mod:`gitnetdiag.rundir.ledgers`) show how the server
paced its data under it.

    H2NativeRecord  --h2_ledgers()-->          stream + connection CreditLedger, binding window
    SshNativeRecord --ssh_channel_ledger()-->  channel CreditLedger
    H2CreditLedger  --h2_receiver_pacing()-->  H2Pacing: bursts and pauses of the DATA frames
    SshCreditLedger --ssh_receiver_pacing()--> SshPacing: bursts, grants, the least credit

Pure: the probe records, the pipeline (and the probe's own live summary)
replays here with :func:`gitnetdiag.analysis.flowcontrol.credit_ledger`.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from gitnetdiag.analysis.flowcontrol import (
    HTTP2_DEFAULT_WINDOW_BYTES,
    BindingWindow,
    CreditEvent,
    CreditLedger,
    DataSent,
    InitialWindowChanged,
    LedgerScope,
    WindowIncreased,
    WindowOpened,
    binding_window,
    credit_ledger,
)
from gitnetdiag.rundir.ledgers import H2CreditLedger, SshCreditLedger
from gitnetdiag.rundir.native import H2NativeRecord, SshNativeRecord

HTTP2_DEFAULT_MAX_FRAME_BYTES = 16_384
"""RFC 9113 SETTINGS_MAX_FRAME_SIZE before the server says otherwise."""


def _seconds(t_ns: int) -> float:
    return t_ns / 1e9


@dataclass(frozen=True, kw_only=True)
class H2UploadLedgers:
    """What HTTP/2 flow control did to one native upload."""

    stream: CreditLedger
    """Credit of the upload stream."""
    connection: CreditLedger
    """Credit of the connection."""
    bound: BindingWindow
    """Which window held the upload back."""
    upload_s: float
    """From the first DATA frame to the end of the response."""

    @property
    def stall_count(self) -> int:
        return max(self.stream.stall_count, self.connection.stall_count)

    @property
    def stalled_s(self) -> float:
        return max(self.stream.stalled_s, self.connection.stalled_s)


def h2_ledgers(record: H2NativeRecord, *, open_until_s: float | None = None) -> H2UploadLedgers:
    """Stream and connection credit ledgers of the record's upload stream."""
    stream_id = record.upload_stream_id
    opened_ns = next((e.t_ns for e in record.streams_opened if e.stream_id == stream_id), 0)
    opened_s = _seconds(opened_ns)
    initial = opening = HTTP2_DEFAULT_WINDOW_BYTES
    stream_events: list[CreditEvent] = []
    for settings in record.settings_received:
        new = settings.settings.get("INITIAL_WINDOW_SIZE")
        if new is None:
            continue
        if _seconds(settings.t_ns) > opened_s:
            # RFC 9113 6.9.2: a new initial window shifts the open stream's window.
            stream_events.append(InitialWindowChanged(
                t_s=_seconds(settings.t_ns), old_initial_bytes=initial, new_initial_bytes=new))
        else:
            opening = new
        initial = new
    stream_events.insert(0, WindowOpened(t_s=opened_s, window_bytes=opening))
    # SETTINGS never change the connection window (RFC 9113 6.9.2): only WINDOW_UPDATE on 0.
    connection_events: list[CreditEvent] = [
        WindowOpened(t_s=0.0, window_bytes=HTTP2_DEFAULT_WINDOW_BYTES)
    ]
    for data in record.data_sent:
        connection_events.append(DataSent(t_s=_seconds(data.t_ns), size_bytes=data.size_bytes))
        if data.stream_id == stream_id:
            stream_events.append(DataSent(t_s=_seconds(data.t_ns), size_bytes=data.size_bytes))
    for update in record.window_updates:
        increase = WindowIncreased(t_s=_seconds(update.t_ns),
                                   increment_bytes=update.increment_bytes)
        if update.stream_id == 0:
            connection_events.append(increase)
        elif update.stream_id == stream_id:
            stream_events.append(increase)
    stream = credit_ledger(stream_events, scope=LedgerScope.H2_STREAM,
                           label=f"stream {stream_id}", open_until_s=open_until_s)
    connection = credit_ledger(connection_events, scope=LedgerScope.H2_CONNECTION,
                               label="connection", open_until_s=open_until_s)
    ended_s = _seconds(record.ended_t_ns)
    first_data_s = stream.first_data_s if stream.first_data_s is not None else ended_s
    return H2UploadLedgers(stream=stream, connection=connection,
                           bound=binding_window(stream, connection),
                           upload_s=ended_s - first_data_s)


def ssh_channel_ledger(record: SshNativeRecord) -> CreditLedger:
    """Credit of the SSH channel from its opening window, the adjusts and the sends.

    Credit starts at channel open; adjusts during the advertisement count too.
    """
    events: list[CreditEvent] = [WindowOpened(t_s=0.0, window_bytes=record.window_bytes)]
    events += [WindowIncreased(t_s=_seconds(a.t_ns), increment_bytes=a.increment_bytes)
               for a in record.window_adjusts]
    events += [DataSent(t_s=_seconds(d.t_ns), size_bytes=d.size_bytes) for d in record.data_sent]
    return credit_ledger(events, scope=LedgerScope.SSH_CHANNEL, label="channel")


BURST_GAP_S = 0.005
"""Frames (reads) closer than this belong to one burst: a sender waiting for credit pauses
for about a round trip between bursts, far longer than the few microseconds between
frames."""


def _bursts(times: Sequence[float], sizes: Sequence[int]) -> tuple[float | None, float | None]:
    """Median bytes per burst (arrivals less than :data:`BURST_GAP_S` apart) and the longest
    gap; None without arrivals (a gap: without two)."""
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    bursts: list[int] = []
    for index, size in enumerate(sizes):
        if index == 0 or gaps[index - 1] >= BURST_GAP_S:
            bursts.append(0)
        bursts[-1] += size
    return statistics.median(bursts) if bursts else None, max(gaps) if gaps else None


@dataclass(frozen=True, kw_only=True)
class H2Pacing:
    """How the server paced its DATA under one window the receiving probe advertised."""

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


def h2_receiver_pacing(record: H2CreditLedger) -> H2Pacing:
    """A native HTTP/2 receiver's ledger summarised: bursts, pauses, the cumulative bytes."""
    times, sizes = record.data_t_s, record.data_bytes
    burst, gap = _bursts(times, sizes)
    origin = record.request_t_s if record.request_t_s is not None else (times[0] if times else 0)
    return H2Pacing(
        label=record.label, window_bytes=record.window_bytes, outcome=record.outcome,
        error=record.error, received_bytes=record.received_bytes,
        rate_bytes_per_s=record.rate_bytes_per_s, frames=len(sizes),
        median_burst_bytes=burst, longest_gap_s=gap,
        t_s=tuple(t - origin for t in times),
        cumulative_bytes=tuple(itertools.accumulate(sizes)))


@dataclass(frozen=True, kw_only=True)
class SshPacing:
    """How the server paced the pack under the channel window the receiving probe granted.

    The server may have sent at most what the client granted: the channel's initial window
    plus every window adjust the client sent since. Whatever of it the client has not read
    yet is in flight or buffered, so the channel's credit after each read (granted minus
    read) is the most the server can have had left: near zero, the channel window (not TCP,
    not the server) held the transfer."""

    target: str
    """``host:port``."""
    outcome: str
    """The native fetch's outcome."""
    error: str
    """Why it failed, else empty."""
    client_window_bytes: int
    """The channel window the client granted at the open."""
    client_max_packet_bytes: int
    """The largest channel packet the client accepts."""
    received_bytes: int
    """Bytes of upload-pack's answer received."""
    rate_bytes_per_s: float | None
    """Its rate."""
    reads: int
    """Reads of the answer."""
    median_burst_bytes: float | None
    """Median bytes per burst (reads less than ``BURST_GAP_S`` apart)."""
    longest_gap_s: float | None
    """Longest pause between two reads."""
    adjusts: int
    """Window adjusts the client sent."""
    median_adjust_bytes: float | None
    """Median bytes one adjust granted."""
    least_credit_bytes: int | None
    """The least the server can have had left to send (granted minus read, after each
    read); None without reads."""
    via: str = ""
    """The SSH jump host the download went through (git's single ``ProxyJump`` host,
    ``user@host:port``), "" when straight to ``target``."""


def granted_channel_ledger(record: SshCreditLedger) -> CreditLedger:
    """The channel credit the receiving probe granted, replayed: its opening window, each
    adjust it sent (one at a read's time counts before the read), each read as spent."""
    start = min((*record.read_t_s, *record.adjust_t_s), default=0.0)
    events: list[CreditEvent] = [WindowOpened(t_s=start, window_bytes=record.client_window_bytes)]
    events += [WindowIncreased(t_s=t_s, increment_bytes=size)
               for t_s, size in sorted(zip(record.adjust_t_s, record.adjust_bytes, strict=False))]
    events += [DataSent(t_s=t_s, size_bytes=size)
               for t_s, size in zip(record.read_t_s, record.read_bytes, strict=False)]
    return credit_ledger(events, scope=LedgerScope.SSH_CHANNEL, label="channel")


def ssh_receiver_pacing(record: SshCreditLedger) -> SshPacing:
    """A native SSH receiver's ledger summarised: bursts, pauses, grants, the least credit."""
    times, sizes = record.read_t_s, record.read_bytes
    burst, gap = _bursts(times, sizes)
    least = granted_channel_ledger(record).least_credit_after_data_bytes
    return SshPacing(
        target=record.target, outcome=record.outcome, error=record.error,
        client_window_bytes=record.client_window_bytes,
        client_max_packet_bytes=record.client_max_packet_bytes,
        received_bytes=record.received_bytes, rate_bytes_per_s=record.rate_bytes_per_s,
        reads=len(sizes), median_burst_bytes=burst, longest_gap_s=gap,
        adjusts=len(record.adjust_bytes),
        median_adjust_bytes=(statistics.median(record.adjust_bytes)
                             if record.adjust_bytes else None),
        least_credit_bytes=max(0, least) if least is not None else None, via=record.via)
