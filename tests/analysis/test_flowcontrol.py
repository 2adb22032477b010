"""The pure credit ledger: crafted event sequences with known answers."""

from __future__ import annotations

import pytest

from gitnetdiag.analysis.flowcontrol import (
    CreditEvent,
    DataSent,
    InitialWindowChanged,
    LedgerScope,
    WindowIncreased,
    WindowOpened,
    binding_window,
    credit_ledger,
)


def _small_window_upload(rtt_s: float, rounds: int) -> list[CreditEvent]:
    """A sender spending a 65535-byte window per round trip, then waiting for a refill."""
    events: list[CreditEvent] = [WindowOpened(t_s=0.0, window_bytes=65_535)]
    t = 0.0
    for _ in range(rounds):
        for size in (16_384, 16_384, 16_384, 16_383):
            t += 0.001
            events.append(DataSent(t_s=t, size_bytes=size))
        t += rtt_s
        events.append(WindowIncreased(t_s=t, increment_bytes=65_535))
    return events


def test_stall_at_65535_counts_each_round_trip() -> None:
    """Each exhausted 64 KiB window is one stall lasting one round trip, except the last."""
    events = _small_window_upload(rtt_s=0.05, rounds=5)
    ledger = credit_ledger(events, scope=LedgerScope.H2_STREAM, label="stream 3")
    assert ledger.initial_window_bytes == 65_535
    assert ledger.peak_credit_bytes == 65_535
    assert ledger.bytes_sent == 5 * 65_535
    assert ledger.updates_received == 5
    # The 5th refill is not followed by more data: nobody waited for it.
    assert ledger.stall_count == 4
    assert ledger.stalled_s == pytest.approx(4 * 0.05)
    assert int(ledger.credit_bytes.min()) == 0
    assert ledger.effective_rate_bytes_per_s is not None
    # Well below what the path could do: about one window per round trip.
    assert ledger.effective_rate_bytes_per_s < 1.5 * 65_535 / 0.05


def test_large_window_never_stalls() -> None:
    events: list[CreditEvent] = [WindowOpened(t_s=0.0, window_bytes=16_777_216)]
    events += [DataSent(t_s=0.001 * i, size_bytes=16_384) for i in range(1, 200)]
    ledger = credit_ledger(events, scope=LedgerScope.H2_STREAM, label="stream 1")
    assert ledger.stall_count == 0
    assert ledger.stalled_s == 0.0
    assert int(ledger.credit_bytes[-1]) == 16_777_216 - 199 * 16_384


def test_settings_change_shifts_open_stream_window() -> None:
    """A SETTINGS_INITIAL_WINDOW_SIZE change moves an open stream's credit by new - old."""
    events: list[CreditEvent] = [
        WindowOpened(t_s=0.0, window_bytes=65_535),
        DataSent(t_s=0.1, size_bytes=60_000),
        InitialWindowChanged(t_s=0.2, old_initial_bytes=65_535, new_initial_bytes=1_048_576),
        DataSent(t_s=0.3, size_bytes=100_000),
        InitialWindowChanged(t_s=0.4, old_initial_bytes=1_048_576, new_initial_bytes=16_384),
    ]
    ledger = credit_ledger(events, scope=LedgerScope.H2_STREAM, label="s")
    assert ledger.credit_bytes.tolist() == [
        65_535,
        5_535,
        5_535 + 1_048_576 - 65_535,
        5_535 + 1_048_576 - 65_535 - 100_000,
        5_535 - 100_000 + 16_384 - 65_535,
    ]
    # Shrinking the window below what was sent leaves negative credit (RFC 9113 6.9.2).
    assert int(ledger.credit_bytes[-1]) < 0


def test_unsorted_events_are_replayed_in_time_order() -> None:
    events: list[CreditEvent] = [
        DataSent(t_s=0.2, size_bytes=10),
        WindowOpened(t_s=0.0, window_bytes=10),
        WindowIncreased(t_s=0.5, increment_bytes=10),
        DataSent(t_s=0.6, size_bytes=10),
    ]
    ledger = credit_ledger(events, scope=LedgerScope.SSH_CHANNEL, label="channel 0")
    assert ledger.t_s.tolist() == [0.0, 0.2, 0.5, 0.6]
    assert ledger.stalled_s == pytest.approx(0.3)


def test_unfinished_stall_counts_only_when_sender_still_waiting() -> None:
    events: list[CreditEvent] = [
        WindowOpened(t_s=0.0, window_bytes=100),
        DataSent(t_s=1.0, size_bytes=100),
    ]
    done = credit_ledger(events, scope=LedgerScope.H2_STREAM, label="s")
    assert done.stall_count == 0
    hung = credit_ledger(events, scope=LedgerScope.H2_STREAM, label="s", open_until_s=31.0)
    assert hung.stall_count == 1
    assert hung.stalls[0].resolved is False
    assert hung.stalled_s == pytest.approx(30.0)


def test_threshold_near_zero() -> None:
    """Credit that stays below a threshold (too small for a frame) counts as a stall."""
    events: list[CreditEvent] = [
        WindowOpened(t_s=0.0, window_bytes=20_000),
        DataSent(t_s=0.01, size_bytes=19_000),
        WindowIncreased(t_s=0.06, increment_bytes=500),
        WindowIncreased(t_s=0.11, increment_bytes=20_000),
        DataSent(t_s=0.12, size_bytes=16_384),
    ]
    exact = credit_ledger(events, scope=LedgerScope.H2_STREAM, label="s")
    assert exact.stall_count == 0
    near = credit_ledger(
        events, scope=LedgerScope.H2_STREAM, label="s", stall_threshold_bytes=2_048
    )
    assert near.stall_count == 1
    assert near.stalled_s == pytest.approx(0.10)


def test_connection_vs_stream_window() -> None:
    """Stream window large, connection window 65535 and slowly refilled: the connection binds."""
    stream_events: list[CreditEvent] = [WindowOpened(t_s=0.0, window_bytes=1 << 24)]
    conn_events: list[CreditEvent] = [WindowOpened(t_s=0.0, window_bytes=65_535)]
    t = 0.0
    for _ in range(3):
        t += 0.001
        for event_list in (stream_events, conn_events):
            event_list.append(DataSent(t_s=t, size_bytes=65_535))
        t += 0.04
        conn_events.append(WindowIncreased(t_s=t, increment_bytes=65_535))
        stream_events.append(WindowIncreased(t_s=t, increment_bytes=65_535))
    stream = credit_ledger(stream_events, scope=LedgerScope.H2_STREAM, label="stream 3")
    conn = credit_ledger(conn_events, scope=LedgerScope.H2_CONNECTION, label="connection")
    assert stream.stall_count == 0
    assert conn.stall_count == 2
    bound = binding_window(stream, conn)
    assert bound.which == "connection"
    assert bound.window_bytes == 65_535
    assert bound.stalled_s == pytest.approx(0.08)


def test_to_dict_is_json_ready() -> None:
    import json

    ledger = credit_ledger(_small_window_upload(0.01, 2), scope=LedgerScope.H2_STREAM, label="x")
    data = json.loads(json.dumps(ledger.to_dict()))
    assert data["scope"] == "h2-stream"
    assert data["stall_count"] == 1
    assert data["credit_series"][0] == [0.0, 65_535]
    assert "credit_series" not in ledger.to_dict(series=False)


def test_empty_ledger() -> None:
    ledger = credit_ledger([], scope=LedgerScope.SSH_CHANNEL, label="empty")
    assert ledger.bytes_sent == 0
    assert ledger.stall_count == 0
    assert ledger.effective_rate_bytes_per_s is None


def test_the_least_credit_after_sending_ignores_credit_granted_before_any_data() -> None:
    """A receiver that granted more before the first byte (a window adjust sent early) never
    left the sender with less than it has after each send: the opening credit is no send."""
    ledger = credit_ledger([WindowOpened(t_s=0.0, window_bytes=1000),
                            WindowIncreased(t_s=0.1, increment_bytes=10_000),
                            DataSent(t_s=0.2, size_bytes=500),
                            DataSent(t_s=0.3, size_bytes=2000),
                            WindowIncreased(t_s=0.4, increment_bytes=500)],
                           scope=LedgerScope.SSH_CHANNEL, label="channel")
    assert int(ledger.credit_bytes.min()) == 1000  # the opening window, before any send
    assert ledger.least_credit_after_data_bytes == 8500
    quiet = credit_ledger([WindowOpened(t_s=0.0, window_bytes=4000)],
                          scope=LedgerScope.SSH_CHANNEL, label="channel")
    assert quiet.least_credit_after_data_bytes is None
