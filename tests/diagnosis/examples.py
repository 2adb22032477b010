"""Crafted example runs, modelled on the lab's measurements.

They feed the report tests and golden files, and show adapter authors what a
filled :class:`Observations` looks like. Series are generated arithmetically
(no randomness) so rendered output is reproducible.
"""

from __future__ import annotations

from gitnetdiag.diagnosis.observations import (
    BurstResult,
    CaptureMetrics,
    ConfigFinding,
    FlightSeries,
    H2Ledger,
    HostEvidence,
    Listener,
    Observations,
    ProtocolObservation,
    PushObservation,
    RunInfo,
    TimeSeries,
    Trace2Phases,
)

PUSH_BYTES = 24_000_000
"""Size of the example pushes (the lab's 24 MB random-data repository)."""


def _run(**overrides: object) -> RunInfo:
    base: dict[str, object] = {
        "started": "2026-11-22T00:45:00+00:00",
        "target_url": "https://git.example.test/team/repo.git",
        "rtt_s": 0.05,
        "git_version": "2.39.5",
        "libcurl_version": "7.88.1",
        "nghttp2_version": "1.52.0",
        "openssh_version": "9.2p1",
        "measured_by": "gitnetdiag diagnose: 3 pushes per protocol, tcpdump -s 128, trace2",
    }
    base.update(overrides)
    return RunInfo(**base)  # type: ignore[arg-type]


def pushes(*durations_s: float, size: int = PUSH_BYTES) -> tuple[PushObservation, ...]:
    """Completed pushes of ``size`` bytes with the given durations."""
    return tuple(PushObservation(duration_s=d, bytes=size) for d in durations_s)


def _flight(duration_s: float, in_flight: float, window: float, ramp_s: float) -> FlightSeries:
    points = 200
    t = tuple(round(duration_s * i / (points - 1), 4) for i in range(points))
    flight = tuple(
        round(min(1.0, (x + 0.05) / ramp_s) * in_flight * (0.97 + 0.03 * ((i * 7) % 5) / 4))
        for i, x in enumerate(t)
    )
    return FlightSeries(t_s=t, bytes_in_flight=flight, advertised_window=tuple(window for _ in t))


def _credit(duration_s: float, window: int) -> TimeSeries:
    """Send credit as a saw-tooth: spent in eight DATA frames, refilled by one WINDOW_UPDATE."""
    points = 400
    t = tuple(round(duration_s * i / (points - 1), 4) for i in range(points))
    values = tuple(float(max(0, window - (i % 8) * window // 7)) for i in range(points))
    return TimeSeries(t_s=t, values=values)


def healthy() -> Observations:
    """All three transports fast and alike at 50 ms: nothing to blame."""

    def proto(durations: tuple[float, ...], upload: float) -> ProtocolObservation:
        return ProtocolObservation(
            pushes=pushes(*durations),
            trace2=Trace2Phases(
                pack_objects_s=0.2, upload_s=upload, server_wait_s=0.15, ref_advertisement_s=0.12
            ),
            capture=CaptureMetrics(
                source="capture conn 1",
                handshake_rtt_s=0.05,
                window_scale=7,
                advertised_window_median_bytes=6_000_000,
                advertised_window_max_bytes=6_291_456,
                bytes_in_flight_median=1_500_000,
                bytes_in_flight_p95=2_400_000,
                rwnd_limited_share=0.02,
                network_limited_share=0.3,
                self_limited_share=0.68,
                retransmitted_bytes=0,
                retransmission_rate=0.0,
            ),
        )

    return Observations(
        run=_run(),
        protocols={
            "h1": proto((3.0, 3.2, 3.4), 2.6),
            "h2": proto((3.1, 3.2, 3.5), 2.7),
            "ssh": proto((3.3, 3.5, 3.6), 2.9),
        },
    )


def slow_h2_edge() -> Observations:
    """HAProxy edge with default HTTP/2 window: HTTP/2 8x slower, one push hung."""
    h1 = ProtocolObservation(
        pushes=pushes(3.4, 4.1, 7.4),
        trace2=Trace2Phases(
            pack_objects_s=0.3, upload_s=3.3, server_wait_s=0.2, ref_advertisement_s=0.15
        ),
        capture=CaptureMetrics(
            source="capture h1 conn 2 frames 40-31877",
            handshake_rtt_s=0.05,
            window_scale=7,
            advertised_window_median_bytes=3_100_000,
            advertised_window_max_bytes=6_291_456,
            bytes_in_flight_median=1_300_000,
            bytes_in_flight_p95=2_900_000,
            rwnd_limited_share=0.05,
            network_limited_share=0.4,
            self_limited_share=0.55,
            retransmission_rate=0.0,
        ),
        flight=_flight(3.3, 1_300_000, 3_100_000, 0.6),
    )
    h2 = ProtocolObservation(
        pushes=(
            PushObservation(duration_s=29.2, bytes=PUSH_BYTES),
            PushObservation(duration_s=28.1, bytes=PUSH_BYTES),
            PushObservation(
                duration_s=60.0,
                bytes=PUSH_BYTES,
                ok=False,
                error_kind="hung",
                error_message='no DATA after "Using Stream ID: 5" until the 60 s timeout',
            ),
        ),
        trace2=Trace2Phases(
            pack_objects_s=0.3, upload_s=18.4, server_wait_s=0.2, ref_advertisement_s=0.15
        ),
        capture=CaptureMetrics(
            source="capture h2 conn 3 frames 120-4410",
            handshake_rtt_s=0.05,
            window_scale=7,
            advertised_window_median_bytes=3_000_000,
            advertised_window_max_bytes=6_291_456,
            bytes_in_flight_median=65_000,
            bytes_in_flight_p95=65_700,
            rwnd_limited_share=0.0,
            network_limited_share=0.04,
            self_limited_share=0.96,
            retransmission_rate=0.0,
        ),
        h2_ledger=H2Ledger(
            source="capture h2 conn 3 frames 120-4410 (decrypted)",
            server_initial_window_bytes=65535,
            connection_window_bytes=65535,
            max_frame_size_bytes=16384,
            stream_zero_credit_s=16.9,
            connection_zero_credit_s=16.9,
            window_updates=366,
            credit=_credit(18.4, 65535),
        ),
        flight=_flight(18.4, 65_000, 3_000_000, 0.2),
    )
    ssh = ProtocolObservation(
        pushes=pushes(3.5, 3.6, 3.9),
        trace2=Trace2Phases(
            pack_objects_s=0.3, upload_s=3.1, server_wait_s=0.2, ref_advertisement_s=0.2
        ),
    )
    host = HostEvidence(
        config_findings=(
            ConfigFinding(
                setting="tune.h2.initial-window-size",
                value="65535 (default)",
                file="/etc/haproxy/haproxy.cfg",
                line=None,
            ),
        ),
    )
    return Observations(
        run=_run(
            target_url="https://alice:s3cret@git.example.test/team/repo.git?private_token=abc123"
        ),
        protocols={"h1": h1, "h2": h2, "ssh": ssh},
        host=host,
    )


def git_daemon_backlog() -> Observations:
    """git daemon with listen(fd, 5) under 150 concurrent ls-remote."""
    return Observations(
        run=_run(target_url="git://git.example.test/team/repo.git", libcurl_version=None),
        protocols={"git": ProtocolObservation(pushes=pushes(2.9, 3.0, 3.1))},
        bursts=(
            BurstResult(
                protocol="git",
                port=9418,
                concurrency=150,
                ok=128,
                failed_by_kind={"timeout": 22},
                connect_p50_s=0.05,
                connect_p99_s=7.1,
                connect_max_s=15.2,
                duration_p50_s=0.4,
                syn_retransmissions=96,
                synack_retransmissions=44,
            ),
        ),
        host=HostEvidence(
            listeners=(Listener(port=9418, backlog=5, accept_queue=6, process="git-daemon"),),
            counter_deltas={
                "ListenOverflows": 116,
                "SyncookiesSent": 121,
                "TCPReqQFullDoCookies": 140,
            },
            sysctls={"net.core.somaxconn": "4096"},
            kernel_log=(
                "TCP: request_sock_TCP: Possible SYN flooding on port 0.0.0.0:9418. "
                "Sending cookies.",
            ),
        ),
    )
