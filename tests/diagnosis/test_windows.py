"""The window arithmetic of the ledger and metrics types, each rule written once."""

from __future__ import annotations

import pytest

from gitnetdiag.diagnosis.culprits.h2 import h2_push_cost_s
from gitnetdiag.diagnosis.observations import (
    CaptureMetrics,
    H2ClientStall,
    H2Ledger,
    Observations,
    ProtocolObservation,
    PushObservation,
)


@pytest.mark.parametrize(("stream", "connection", "granted"), [
    (65535, 1 << 20, 65535), (1 << 20, 32768, 32768), (None, 32768, 32768),
    (0, 16384, 16384), (None, None, None), (0, 0, None),
])
def test_granted_window_is_the_smaller_known_one(stream: int | None, connection: int | None,
                                                 granted: int | None) -> None:
    ledger = H2Ledger(server_initial_window_bytes=stream, connection_window_bytes=connection)
    assert ledger.granted_window_bytes == granted


def test_zero_credit_is_the_longer_of_stream_and_connection() -> None:
    assert H2Ledger(stream_zero_credit_s=1.5, connection_zero_credit_s=0.5).zero_credit_s == 1.5
    assert H2Ledger(connection_zero_credit_s=0.7).zero_credit_s == 0.7
    assert H2Ledger().zero_credit_s == 0.0


def test_network_bound_when_the_network_held_tcp_longer_than_the_application() -> None:
    assert CaptureMetrics(network_limited_share=0.6, self_limited_share=0.3).network_bound
    assert not CaptureMetrics(network_limited_share=0.3, self_limited_share=0.6).network_bound
    assert CaptureMetrics(network_limited_share=0.1).network_bound
    assert not CaptureMetrics().network_bound


def test_largest_window_and_scaling_off() -> None:
    unscaled = CaptureMetrics(advertised_window_max_bytes=65535, window_scale=None)
    assert unscaled.largest_window_bytes == 65535 and unscaled.window_scaling_off
    assert CaptureMetrics(advertised_window_median_bytes=4096).largest_window_bytes == 4096
    assert not CaptureMetrics(advertised_window_max_bytes=65535, window_scale=7).window_scaling_off
    assert not CaptureMetrics(advertised_window_max_bytes=65536).window_scaling_off
    unseen = CaptureMetrics(advertised_window_max_bytes=65535, handshake_seen=False)
    assert not unseen.window_scaling_off
    assert not CaptureMetrics().window_scaling_off


def _h2(stall: H2ClientStall | None = None) -> Observations:
    pushes = (PushObservation(duration_s=10.0, bytes=1000),
              PushObservation(duration_s=10.0, bytes=1000),
              PushObservation(duration_s=30.0, bytes=1000, ok=False, error_kind="hung"))
    return Observations(protocols={"h2": ProtocolObservation(pushes=pushes,
                                                             h2_client_stall=stall)})


def test_stalled_push_cost_rule() -> None:
    """Completed pushes' share of the slow cost, plus the stalled one's wait and redo over
    every push; nothing for the stall when the client stopped with credit left."""
    obs = _h2()
    assert h2_push_cost_s(obs, obs.protocols["h2"], 6.0) == pytest.approx(
        6.0 * 2 / 3 + (30.0 + 10.0) / 3)
    stall = H2ClientStall(source="capture", push=3, stream_id=1, sent_bytes=100,
                          stream_credit_left_bytes=1000, connection_credit_left_bytes=1000)
    stalled = _h2(stall)
    assert h2_push_cost_s(stalled, stalled.protocols["h2"], 6.0) == pytest.approx(4.0)
