"""Credit ledgers from the native probes' raw events (:mod:`gitnetdiag.rundir.native`).

    H2NativeRecord  --h2_ledgers()-->         stream + connection CreditLedger, binding window
    SshNativeRecord --ssh_channel_ledger()--> channel CreditLedger

Pure: the probe records, the pipeline (and the probe's own live summary)
replays here with :func:`gitnetdiag.analysis.flowcontrol.credit_ledger`.
"""

from __future__ import annotations

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
    initial = HTTP2_DEFAULT_WINDOW_BYTES
    stream_events: list[CreditEvent] = []
    for settings in record.settings_received:
        new = settings.settings.get("INITIAL_WINDOW_SIZE")
        if new is None:
            continue
        if _seconds(settings.t_ns) > opened_s:
            # RFC 9113 6.9.2: a new initial window shifts the open stream's window.
            stream_events.append(InitialWindowChanged(
                t_s=_seconds(settings.t_ns), old_initial_bytes=initial, new_initial_bytes=new))
        initial = new
    opening = HTTP2_DEFAULT_WINDOW_BYTES
    for settings in record.settings_received:
        if _seconds(settings.t_ns) <= opened_s and "INITIAL_WINDOW_SIZE" in settings.settings:
            opening = settings.settings["INITIAL_WINDOW_SIZE"]
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
