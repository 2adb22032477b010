"""Each culprit: a crafted run whose top-ranked finding is that culprit, naming its fix."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from gitnetdiag.diagnosis import CULPRITS, Diagnosis, diagnose
from gitnetdiag.diagnosis.observations import (
    BurstResult,
    CaptureMetrics,
    ConfigFinding,
    H2Ledger,
    HostEvidence,
    Observations,
    ProtocolObservation,
    PushResult,
    RunInfo,
    SshLedger,
    StorageResult,
    Trace2Phases,
)
from tests.diagnosis import examples

MB = 24_000_000


def run(**kw: object) -> RunInfo:
    base: dict[str, object] = {"rtt_s": 0.05, "git_version": "2.43.0", "libcurl_version": "8.5.0"}
    base.update(kw)
    return RunInfo(**base)  # type: ignore[arg-type]


def cap(**kw: object) -> CaptureMetrics:
    """A healthy bulk connection unless overridden."""
    base: dict[str, object] = {
        "source": "capture conn 1",
        "handshake_rtt_s": 0.05,
        "window_scale": 7,
        "advertised_window_median_bytes": 6_000_000,
        "advertised_window_max_bytes": 6_291_456,
        "bytes_in_flight_median": 1_500_000,
        "bytes_in_flight_p95": 2_400_000,
        "rwnd_limited_share": 0.02,
        "network_limited_share": 0.3,
        "self_limited_share": 0.68,
        "retransmitted_bytes": 0,
        "retransmission_rate": 0.0,
    }
    base.update(kw)
    return CaptureMetrics(**base)  # type: ignore[arg-type]


def proto(
    upload_s: float,
    *,
    size: int = MB,
    n: int = 3,
    trace: dict[str, float] | None = None,
    **kw: object,
) -> ProtocolObservation:
    """``n`` completed pushes whose upload phase takes ``upload_s``."""
    phases = {"pack_objects_s": 0.2, "server_wait_s": 0.15, "ref_advertisement_s": 0.12}
    phases.update(trace or {})
    total = upload_s + sum(phases.values())
    pushes = tuple(PushResult(duration_s=total * (1 + 0.02 * i), bytes=size) for i in range(n))
    return ProtocolObservation(
        pushes=pushes,
        trace2=Trace2Phases(upload_s=upload_s, **phases),
        **kw,  # type: ignore[arg-type]
    )


def three(upload_s: float, **kw: object) -> dict[str, ProtocolObservation]:
    return {name: proto(upload_s, **kw) for name in ("h1", "h2", "ssh")}  # type: ignore[arg-type]


def case_h2_window() -> Observations:
    return examples.slow_h2_edge()


def case_h2_window_capture_only() -> Observations:
    """No decrypted ledger: the A/B test and the TCP picture alone."""
    obs = examples.slow_h2_edge()
    h2 = replace(obs.protocols["h2"], h2_ledger=None)
    return replace(obs, protocols={**obs.protocols, "h2": h2}, host=None)


def case_h2_frames() -> Observations:
    ledger = H2Ledger(
        source="capture h2 conn 1",
        server_initial_window_bytes=16_777_216,
        connection_window_bytes=16_777_216,
        max_frame_size_bytes=16384,
        stream_zero_credit_s=0.0,
        connection_zero_credit_s=0.0,
        window_updates=40,
    )
    return Observations(
        run=run(),
        protocols={
            "h1": proto(3.0, capture=cap()),
            "h2": proto(5.0, capture=cap(), h2_ledger=ledger),
        },
    )


def _clamped(
    window: int, *, scale: int | None = 2, upload_s: float | None = None
) -> CaptureMetrics:
    return cap(
        window_scale=scale,
        advertised_window_median_bytes=window,
        advertised_window_max_bytes=window,
        bytes_in_flight_median=int(window * 0.97),
        bytes_in_flight_p95=window,
        rwnd_limited_share=0.9,
        network_limited_share=0.05,
        self_limited_share=0.05,
    )


def case_tcp_clamp() -> Observations:
    window = 262_144
    upload = MB / (window / 0.05)
    return Observations(
        run=run(path_rate_bps=400e6),
        protocols=three(upload, capture=_clamped(window)),
        host=HostEvidence(sysctls={"net.ipv4.tcp_rmem": "4096 131072 262144"}),
    )


def case_window_scaling_off() -> Observations:
    window = 65535
    return Observations(
        run=run(path_rate_bps=400e6),
        protocols=three(MB / (window / 0.05), capture=_clamped(window, scale=None)),
    )


def case_ssh_window() -> Observations:
    ledger = SshLedger(
        source="ssh probe log",
        initial_window_bytes=131_072,
        max_packet_bytes=32_768,
        zero_window_s=12.0,
        window_adjusts=900,
    )
    return Observations(
        run=run(rtt_s=0.1),
        protocols={
            "h1": proto(3.0, capture=cap()),
            "ssh": proto(
                MB / (131_072 / 0.1), capture=cap(self_limited_share=0.9), ssh_ledger=ledger
            ),
        },
    )


def case_ssh_maxstartups() -> Observations:
    return Observations(
        run=run(),
        protocols={"ssh": proto(3.0)},
        bursts=(
            BurstResult(
                protocol="ssh",
                port=22,
                concurrency=100,
                ok=60,
                failed_by_kind={"refused": 40},
                connect_p50_s=0.05,
                connect_p99_s=0.2,
                connect_max_s=0.3,
                duration_p50_s=2.0,
            ),
        ),
        host=HostEvidence(
            kernel_log=("sshd[812]: error: beginning MaxStartups throttling",),
            config_findings=(
                ConfigFinding(
                    setting="MaxStartups", value="10:30:100", file="/etc/ssh/sshd_config", line=12
                ),
            ),
        ),
    )


def case_listen_backlog() -> Observations:
    return examples.git_daemon_backlog()


def case_syn_drop() -> Observations:
    return Observations(
        run=run(),
        protocols={"h1": proto(3.0)},
        bursts=(
            BurstResult(
                protocol="h1",
                port=443,
                concurrency=200,
                ok=200,
                connect_p50_s=0.05,
                connect_p99_s=3.05,
                connect_max_s=3.1,
                duration_p50_s=1.0,
                syn_retransmissions=80,
            ),
        ),
    )


def case_firewall_reset() -> Observations:
    h1 = proto(3.0, capture=cap(resets_from_server=2))
    failed = PushResult(
        duration_s=5.0,
        bytes=MB,
        ok=False,
        error_kind="reset",
        error_message="error: RPC failed; curl 56 Recv failure: Connection reset by peer",
    )
    h1 = replace(h1, pushes=(h1.pushes[0], failed, failed))
    return Observations(
        run=run(),
        protocols={"h1": h1, "ssh": proto(3.0)},
        host=HostEvidence(
            config_findings=(
                ConfigFinding(
                    setting="iptables FORWARD",
                    value="-p tcp --dport 443 -m connbytes --connbytes 10000000: "
                    "--connbytes-dir original --connbytes-mode bytes "
                    "-j REJECT --reject-with tcp-reset",
                    file="iptables-save",
                    line=7,
                ),
            ),
        ),
    )


def case_packet_loss() -> Observations:
    lossy = cap(
        retransmission_rate=0.02,
        retransmitted_bytes=480_000,
        timeout_retransmissions=12,
        fast_retransmissions=300,
        network_limited_share=0.8,
        self_limited_share=0.1,
        bytes_in_flight_median=60_000,
    )
    return Observations(run=run(path_rate_bps=400e6), protocols=three(20.0, capture=lossy))


def case_bandwidth_limit() -> Observations:
    full = cap(network_limited_share=0.9, self_limited_share=0.05, retransmission_rate=0.001)
    return Observations(run=run(path_rate_bps=20e6), protocols=three(MB / 2.4e6, capture=full))


def case_path_latency() -> Observations:
    window = 6_291_456
    size = 240_000_000
    return Observations(
        run=run(rtt_s=0.3, path_rate_bps=800e6),
        protocols=three(size / (window / 0.3), size=size, capture=_clamped(window, scale=7)),
    )


def case_server_processing() -> Observations:
    return Observations(
        run=run(), protocols=three(2.6, capture=cap(), trace={"server_wait_s": 8.0})
    )


def case_slow_ref_advertisement() -> Observations:
    return Observations(
        run=run(), protocols=three(2.6, capture=cap(), trace={"ref_advertisement_s": 6.0})
    )


def case_client_pack_cpu() -> Observations:
    return Observations(
        run=run(), protocols=three(2.6, capture=cap(), trace={"pack_objects_s": 12.0})
    )


def case_client_http_stack() -> Observations:
    ledger = H2Ledger(server_initial_window_bytes=16_777_216, connection_window_bytes=16_777_216)
    h2 = proto(2.7, capture=cap(), h2_ledger=ledger)
    broken = PushResult(
        duration_s=4.0,
        bytes=MB,
        ok=False,
        error_kind="other",
        error_message="error: RPC failed; curl 16 Error in the HTTP2 framing layer",
    )
    h2 = replace(h2, pushes=(h2.pushes[0], broken, broken))
    return Observations(
        run=run(libcurl_version="8.10.0"),
        protocols={"h1": proto(2.6, capture=cap()), "h2": h2},
    )


def case_slow_storage() -> Observations:
    return Observations(
        run=run(),
        protocols=three(2.6, capture=cap(), trace={"server_wait_s": 6.0}),
        storage=StorageResult(read_iops=300, write_iops=150, path="/srv/git"),
    )


CASES: dict[str, tuple[Callable[[], Observations], tuple[str, ...]]] = {
    "h2-flow-control-window": (
        case_h2_window,
        ("tune.h2.initial-window-size", "tune.h2.fe.initial-window-size", "H2WindowSize"),
    ),
    "h2-frame-settings": (case_h2_frames, ("tune.h2.max-frame-size",)),
    "tcp-receive-window-clamp": (case_tcp_clamp, ("net.ipv4.tcp_rmem", "SO_RCVBUF")),
    "tcp-window-scaling-off": (case_window_scaling_off, ("net.ipv4.tcp_window_scaling",)),
    "ssh-channel-window": (case_ssh_window, ("HPN-SSH",)),
    "ssh-maxstartups": (case_ssh_maxstartups, ("MaxStartups",)),
    "listen-backlog-overflow": (case_listen_backlog, ("net.core.somaxconn", "git daemon")),
    "syn-drop": (case_syn_drop, ("net.ipv4.tcp_max_syn_backlog",)),
    "firewall-reset": (case_firewall_reset, ("REJECT", "iptables-save line 7")),
    "packet-loss": (case_packet_loss, ("mtr", "net.ipv4.tcp_congestion_control")),
    "bandwidth-limit": (case_bandwidth_limit, ("Not a misconfiguration",)),
    "path-latency": (case_path_latency, ("closer endpoint",)),
    "server-processing": (case_server_processing, ("pre-receive", "receive.fsckObjects")),
    "slow-ref-advertisement": (case_slow_ref_advertisement, ("receive.hideRefs",)),
    "client-pack-cpu": (case_client_pack_cpu, ("pack.compression", "pack.threads")),
    "client-http-stack": (case_client_http_stack, ("8.10.1",)),
    "slow-storage": (case_slow_storage, ("storage",)),
}


def test_every_catalogue_id_has_a_case() -> None:
    """The crafted cases cover the whole catalogue, and ids are unique."""
    ids = [c.id for c in CULPRITS]
    assert len(ids) == len(set(ids)) == 17
    assert set(CASES) == set(ids)


@pytest.mark.parametrize("culprit_id", list(CASES))
def test_culprit_ranks_first_with_its_fix(culprit_id: str) -> None:
    """The crafted run's top finding is the culprit, with numbers, evidence and the setting."""
    make, settings = CASES[culprit_id]
    result: Diagnosis = diagnose(make())
    assert result.verdict == "degraded"
    top = result.findings[0]
    assert top.id == culprit_id, [(f.id, f.score, f.cost_s) for f in result.findings]
    assert 0 < top.score <= 1
    assert top.cost_s > 0
    assert any(ch.isdigit() for ch in top.summary)
    assert top.evidence and all(e.what and e.value for e in top.evidence)
    for setting in settings:
        assert setting in top.fix or any(setting in e.source for e in top.evidence), setting


def test_h2_window_evidence_cites_window_rtt_and_rates() -> None:
    """The HTTP/2 window finding quotes 65535, the RTT, window/RTT and the measured rate."""
    top = diagnose(case_h2_window()).findings[0]
    text = " ".join(f"{e.what} {e.value} {e.threshold}" for e in top.evidence)
    assert "window / RTT = 65535 B / 50 ms = 1.31 MB/s" in text
    assert "upload rate vs what the window allows 1.30 MB/s" in text
    assert "1 of 3" in text  # the hung push is evidence too
    assert "stalled" in top.summary
    # cost = (2/3) x (18.4 s - 24 MB at SSH's 7.74 MB/s) + (60 s + 28.65 s redo) / 3
    expected = (2 / 3) * (18.4 - MB / (MB / 3.1)) + (60.0 + 28.65) / 3
    assert top.cost_s == pytest.approx(expected, abs=0.01)


def test_h2_window_without_ledger_still_first() -> None:
    """Without decryption the A/B test plus a self-limited sender still point at HTTP/2."""
    top = diagnose(case_h2_window_capture_only()).findings[0]
    assert top.id == "h2-flow-control-window"
    assert top.score < 1.0  # less sure than with the ledger


def test_window_scaling_off_also_reports_the_clamp_lower() -> None:
    """A 64 KiB window without scaling is also a clamp, ranked below the specific cause."""
    ids = [f.id for f in diagnose(case_window_scaling_off()).findings]
    assert ids[0] == "tcp-window-scaling-off"
    assert "tcp-receive-window-clamp" in ids


def test_backlog_evidence_cites_host_counters() -> None:
    top = diagnose(case_listen_backlog()).findings[0]
    sources = {e.source for e in top.evidence}
    assert "host counter ListenOverflows" in sources
    assert any(e.value == "5" and "9418" in e.what for e in top.evidence)


def test_syn_drop_gives_way_to_backlog_when_host_evidence_exists() -> None:
    """SYN-side symptoms plus ListenOverflows on the server: the backlog, not syn-drop."""
    obs = replace(case_syn_drop(), host=HostEvidence(counter_deltas={"ListenOverflows": 30}))
    ids = [f.id for f in diagnose(obs).findings]
    assert ids[0] == "listen-backlog-overflow"
    assert "syn-drop" not in ids


def test_bandwidth_limit_says_not_a_misconfiguration() -> None:
    top = diagnose(case_bandwidth_limit()).findings[0]
    assert "not a misconfiguration" in top.summary


def test_storage_outranks_server_processing_when_storage_is_slow() -> None:
    ids = [f.id for f in diagnose(case_slow_storage()).findings]
    assert ids[:2] == ["slow-storage", "server-processing"]


def test_known_bad_version_alone_is_not_blamed() -> None:
    """A bad libcurl without any symptom stays below the threshold."""
    obs = replace(examples.healthy(), run=replace(examples.healthy().run, libcurl_version="8.10.0"))
    result = diagnose(obs)
    assert result.verdict == "healthy"
    assert [f.id for f in result.dropped] == ["client-http-stack"]


def test_healthy_run_is_healthy() -> None:
    """Three fast, alike transports: verdict healthy and no culprit at all."""
    result = diagnose(examples.healthy())
    assert result.verdict == "healthy"
    assert result.findings == ()
    assert "No culprit" in result.headline


def test_empty_observations_are_healthy_without_crashing() -> None:
    result = diagnose(Observations())
    assert result.verdict == "healthy"
    assert result.protocols == ()


def test_http2_that_only_hangs_is_reported_as_a_stall() -> None:
    """Every HTTP/2 push hung (no ledger, no rate): still a finding, worded as a stall."""
    hung = PushResult(
        duration_s=60.0, bytes=MB, ok=False, error_kind="hung", error_message="no DATA sent"
    )
    obs = Observations(
        run=run(),
        protocols={"h1": proto(3.0), "h2": ProtocolObservation(pushes=(hung, hung))},
    )
    result = diagnose(obs)
    top = result.findings[0]
    assert top.id == "h2-flow-control-window"
    assert "2 of 2 HTTP/2 pushes stalled" in top.summary
    # each hung push loses its 60 s wait plus a redo at HTTP/1.1's median push duration
    redo = proto(3.0).pushes[1].duration_s
    assert top.cost_s == pytest.approx(60.0 + redo, abs=0.001)
