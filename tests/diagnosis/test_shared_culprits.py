"""The culprits of both directions on clones: one detector each, fed the download's
evidence (:mod:`gitnetdiag.diagnosis.assembly`), with the same ids and fixes; and the
verdict of a download, never healthy with a failed clone that nothing explains."""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.analysis.tcpinfo import SenderTcpSummary
from gitnetdiag.commands.fetch import fetch_exit_error
from gitnetdiag.diagnosis.assembly import download_observations, in_download_words
from gitnetdiag.diagnosis.culprits import BOTH, CULPRITS
from gitnetdiag.diagnosis.engine import diagnose
from gitnetdiag.diagnosis.model import Diagnosis, Evidence, FetchDetails, Finding
from gitnetdiag.diagnosis.observations import CaptureMetrics
from gitnetdiag.diagnosis.transfers import TransferObservation
from gitnetdiag.errors import ExitCode, NetworkError
from gitnetdiag.outcomes import FailureKind
from gitnetdiag.rundir.manifest import FetchManifest
from gitnetdiag.rundir.records import RunError
from tests.diagnosis.test_transfer_culprits import HEALTHY, TCP
from tests.diagnosis.transfer_cases import judged, judgement, ranked

SHARED = {c.id for c in CULPRITS if c.directions == BOTH}


def test_the_shared_culprits_are_the_direction_independent_ones() -> None:
    assert {"packet-loss", "bandwidth-limit", "path-mtu-blackhole", "path-latency",
                      "syn-drop", "listen-backlog-overflow", "ssh-maxstartups",
                      "firewall-reset", "slow-ref-advertisement", "client-http-stack",
                      "edge-backend-errors", "edge-no-backend", "edge-idle-timeout",
                      "path-unreachable", "path-idle-timeout", "proxy-refused-tunnel"} == SHARED


def test_healthy_clones_rank_no_shared_culprit() -> None:
    assert ranked([HEALTHY, replace(HEALTHY, protocol="git")]) == ()


def test_a_clone_becomes_a_push_shaped_transfer() -> None:
    obs = download_observations([HEALTHY])
    (transfer,) = obs.protocols["h1"].pushes
    assert transfer.ok and transfer.bytes == 40_000_000
    assert abs(transfer.duration_s - 4.0) < 1e-9  # 40 MB at 10 MB/s
    capture = obs.protocols["h1"].capture
    assert capture is not None and capture.advertised_window_max_bytes == 3_000_000
    assert obs.run.rtt_s == 0.05


def test_server_retransmissions_of_a_download_rank_packet_loss() -> None:
    """The server resent 2% of the pack (a capture of the clone, sender's view), and the rate
    is far below what the client's window allows: loss, with the push culprit's fix."""
    lossy = replace(
        HEALTHY, moved_bytes=6_000_000, measured_s=20.0, rate_bytes_per_s=300_000.0,
        capture=CaptureMetrics(source="capture fetch h1 #1 (download, server -> client)",
                               min_rtt_s=0.05, median_rtt_s=0.055, mss_bytes=1448,
                               advertised_window_max_bytes=3_000_000,
                               retransmitted_bytes=120_000, retransmission_rate=0.02,
                               fast_retransmissions=70, timeout_retransmissions=5,
                               network_limited_share=0.9))
    findings = ranked([lossy])
    assert [f.id for f in findings][:1] == ["packet-loss"]
    assert "Find the lossy hop" in findings[0].fix and "mtr -rwc 200" in findings[0].fix
    assert "uploaded" not in findings[0].summary and "downloaded" in findings[0].summary


def test_a_queue_in_front_of_a_full_link_ranks_bandwidth_limit() -> None:
    """The receiver's RTT at 3x the minimum (a standing queue) while the rate is far below
    the client's window: the link is full. From TCP_INFO alone (no capture)."""
    full = replace(HEALTHY, moved_bytes=6_000_000, measured_s=5.0,
                   rate_bytes_per_s=1_200_000.0,
                   tcp=replace(TCP, min_rtt_s=0.05, median_rtt_s=0.15,
                               received_bytes=6_000_000))
    findings = ranked([full])
    assert [f.id for f in findings][:1] == ["bandwidth-limit"]
    assert "Not a misconfiguration" in findings[0].fix
    assert "clone" in findings[0].summary and "push " not in findings[0].summary
    # TCP_INFO alone gives no window-bound share: cited as not measured, never as 0.
    (share,) = [e for e in findings[0].evidence if "receive-window-limited" in e.what]
    assert share.value is None and share.text.startswith("not measured")


def test_no_queue_is_no_bandwidth_limit() -> None:
    flat = replace(HEALTHY, moved_bytes=6_000_000, measured_s=5.0,
                   rate_bytes_per_s=1_200_000.0)
    assert "bandwidth-limit" not in [f.id for f in ranked([flat])]


# The lab's slow-pack-generation at 20 ms (issue 26, bundle run slow-pack-generation-20ms-r2):
# upload-pack at 5% of a core. The HTTP/1.1 clone's socket was sampled for 22.8 s and
# received 657 kB, the pack at 398 kB/s over its last 2.09 s; the receiver's median RTT
# stood at 0.2 s against a 20 ms minimum. git:// saw no such RTT.
STARVED_H1 = replace(
    HEALTHY, outcome="ok", moved_bytes=710_338, measured_s=2.09, rate_bytes_per_s=397_512.0,
    wall_s=24.06, stopped=None, path_rtt_s=0.0203,
    tcp=replace(TCP, samples=76, span_s=22.75, received_bytes=657_093,
                advertised_window_max_bytes=420_583, receive_buffer_max_bytes=665_859,
                rcv_space_max_bytes=68_384, min_rtt_s=0.020206, median_rtt_s=0.2))
STARVED_GIT = replace(
    STARVED_H1, protocol="git", moved_bytes=714_506, measured_s=2.08, rate_bytes_per_s=313_000.0,
    tcp=replace(TCP, samples=74, span_s=19.26, received_bytes=705_955,
                advertised_window_max_bytes=230_462, rcv_space_max_bytes=73_734,
                min_rtt_s=0.020303, median_rtt_s=0.021))


def test_an_idle_sender_behind_an_inflated_rtt_is_no_full_link() -> None:
    """A server with nothing to send most of the time leaves the link idle: the receiver's
    RTT after each gap measures the gap, not a queue (the socket idle 93% of 22.8 s)."""
    ids = [f.id for f in ranked([STARVED_H1, STARVED_GIT])]
    assert "bandwidth-limit" not in ids
    capture = download_observations([STARVED_H1]).protocols["h1"].capture
    assert capture is not None and capture.self_limited_share is not None
    assert capture.self_limited_share > 0.9
    # The same receiver's RTT on a socket busy at the clone's rate all along: a full link.
    busy = replace(STARVED_H1, tcp=replace(STARVED_H1.tcp, span_s=2.0, received_bytes=790_000))
    findings = ranked([busy, STARVED_GIT])
    (hit,) = [f for f in findings if f.id == "bandwidth-limit"]
    assert any("application-limited" in e.what and e.value < 0.05 for e in hit.evidence)


def test_the_servers_own_application_share_speaks_for_its_idleness() -> None:
    """A local server's socket says how much of the pack it sent with nothing holding it
    (the application's pace): that, not the client's estimate, is the share read."""
    server = SenderTcpSummary(
        source="ss -tin, server", samples=8, sent_bytes=720_000, busy_s=2.0,
        rwnd_limited_s=0.0, sndbuf_limited_s=0.0, buffer_full_share=0.0,
        window_full_share=0.0, cwnd_full_share=0.1, app_share=0.9,
        flight_median_bytes=6_000, flight_max_bytes=60_000, send_buffer_max_bytes=2_000_000,
        peer_window_median_bytes=400_000)
    busy = replace(STARVED_H1, sender=server,
                   tcp=replace(STARVED_H1.tcp, span_s=2.0, received_bytes=790_000))
    assert "bandwidth-limit" not in [f.id for f in ranked([busy, STARVED_GIT])]
    full = replace(busy, sender=replace(server, app_share=0.0, cwnd_full_share=1.0))
    assert "bandwidth-limit" in [f.id for f in ranked([full, STARVED_GIT])]


def _reset_ssh() -> list[TransferObservation]:
    reset = replace(HEALTHY, protocol="ssh", outcome="failed", rate_bytes_per_s=None,
                    moved_bytes=0, measured_s=0.0, wall_s=0.06, tcp=None,
                    failure_kind=FailureKind.RESET,
                    last_line="kex_exchange_identification: read: Connection reset by peer")
    return [HEALTHY, reset, replace(reset, repeat=2)]


def test_reset_clones_rank_firewall_reset_and_are_its_evidence() -> None:
    """SSH's clones reset, HTTP/1.1's measured: firewall-reset ranks and explains them, and
    a requested protocol that fails fails the run, as for pushes (verdict.py: explained or
    not, the headline says which clones fail and why)."""
    clones = _reset_ssh()
    findings = ranked(clones)
    assert [f.id for f in findings][:1] == ["firewall-reset"]
    assert "2 of 2 SSH clones were reset" in findings[0].summary
    assert "iptables -S" in findings[0].fix
    verdict, failures = judged(clones, findings)
    assert verdict == "failed"
    assert [f.explained_by for f in failures] == ["firewall-reset", "firewall-reset"]
    headline = judgement(clones, findings).headline
    assert headline.startswith("SSH clones fail (firewall-reset): "), headline


def _refused_ssh(refused_after_s: float | None) -> list[TransferObservation]:
    refused = replace(HEALTHY, protocol="ssh", outcome="failed", rate_bytes_per_s=None,
                      moved_bytes=0, measured_s=0.0, wall_s=0.09, tcp=None,
                      failure_kind=FailureKind.REFUSED,
                      last_line="ssh: connect to host 10.77.1.2 port 22: Connection refused",
                      capture=CaptureMetrics(source="capture fetch ssh #1 22->40000",
                                             resets_from_server=1,
                                             refused_after_s=refused_after_s))
    return [HEALTHY, refused]


def test_a_refusal_sooner_than_a_round_trip_is_a_filters() -> None:
    """The clone's capture: the SYN answered by a reset 0.2 ms later on a 50 ms path, a hop
    before the server refused it (git's own run, 90 ms, says nothing): firewall-reset."""
    findings = ranked(_refused_ssh(0.0002))
    assert [f.id for f in findings][:1] == ["firewall-reset"]
    assert any(e.what.startswith("refused connection: its SYN to the reset")
               for e in findings[0].evidence)
    assert judged(_refused_ssh(0.0002), findings)[0] == "failed"


def test_a_refusal_after_a_round_trip_is_no_filter_evidence() -> None:
    """A closed port on the server refuses after a whole round trip: nothing ranks, and the
    refused SSH clones fail the run with no cause named (issue 42; it was inconclusive)."""
    clones = _refused_ssh(0.051)
    assert ranked(clones) == ()
    assert judged(clones, ())[0] == "failed"
    assert judgement(clones, ()).headline.endswith("): cause not identified.")


def test_a_failed_clone_nothing_explains_fails_the_run() -> None:
    """An auth failure ranks nothing: the run is not healthy (fails on the old code, which
    had no fetch verdict and printed 'no download culprit'); SSH's only clone failed, so
    the run failed (issue 42; it was inconclusive)."""
    denied = replace(HEALTHY, protocol="ssh", outcome="failed", rate_bytes_per_s=None,
                     moved_bytes=0, wall_s=0.4, tcp=None, failure_kind=FailureKind.AUTH,
                     last_line="Permission denied (publickey)")
    clones = [HEALTHY, denied]
    findings = ranked(clones)
    assert findings == ()
    verdict, failures = judged(clones, findings)
    assert verdict == "failed"
    (failure,) = failures
    assert (failure.protocol, failure.reference, failure.explained_by) == (
        "ssh", "fetch-failed", None)
    assert "Permission denied" in failure.message
    assert judgement(clones, findings).headline == (
        "SSH clones fail (auth: Permission denied (publickey)): cause not identified.")


def test_verdicts_of_clean_and_empty_runs() -> None:
    assert judged([HEALTHY], ()) == ("healthy", ())
    stalled = replace(HEALTHY, outcome="stalled", rate_bytes_per_s=None)
    verdict, failures = judged([stalled], ())
    assert verdict == "failed" and failures[0].reference == "fetch-failed"
    verdict, failures = judged([HEALTHY, replace(stalled, repeat=2)], ())
    assert verdict == "inconclusive" and failures[0].reference == "fetch-stalled"


def test_fetch_words_keep_id_and_fix() -> None:
    finding = Finding(id="bandwidth-limit", title="Path bandwidth", score=0.5, cost_s=1.0,
                      summary="3 of 3 SSH pushes uploaded at 1 MB/s; the push took 2 s",
                      evidence=(Evidence(what="SSH upload rate", value=1.0, unit="B/s",
                                         source="pushes"),),
                      fix="fewer bytes (smaller pushes)")
    worded = in_download_words(finding)
    assert (worded.id, worded.fix, worded.score) == (finding.id, finding.fix, finding.score)
    assert worded.summary == "3 of 3 SSH clones downloaded at 1 MB/s; the clone took 2 s"
    assert worded.evidence[0].what == "SSH download rate"
    assert worded.evidence[0].source == "clones"


def _diagnosis(clones: list[TransferObservation], errors: tuple[RunError, ...]) -> Diagnosis:
    findings = ranked(clones)
    verdict, failures = judged(clones, findings)
    manifest = FetchManifest(
        schema="gitnetdiag.fetch/1", direction="fetch", tool_version="0", run_id="r",
        started_at="", finished_at="", status="failed", options={}, environment=None,
        protocols=(), paths=(), errors=errors, warnings=())
    return replace(diagnose(download_observations(clones)), direction="fetch",
                   fetch_details=FetchDetails(record=manifest), findings=findings,
                   verdict=verdict, measurement_failures=failures)


def test_exit_code_of_a_fetch_run() -> None:
    """Clones reset by a filter ranked firewall-reset: the failing protocol fails the run,
    exit 9, as a push's. An auth failure of SSH's only clone, nothing to explain it: failed
    too (issue 42; it was exit 8); of one SSH clone of two: the verdict's error (exit 8).
    Either way the verdict's error, not the raw one."""
    reset_error = RunError(stage="fetch", protocol="ssh", reference="fetch-failed",
                           kind=FailureKind.RESET, message="reset")
    raw = NetworkError("ssh: fetch failed", reference="fetch-failed")
    explained = fetch_exit_error(_diagnosis(_reset_ssh(), (reset_error,)), raw)
    assert explained is not None and explained.exit_code == ExitCode.NOT_MEASURED
    denied = replace(HEALTHY, protocol="ssh", outcome="failed", rate_bytes_per_s=None,
                     moved_bytes=0, wall_s=0.4, tcp=None, failure_kind=FailureKind.AUTH,
                     last_line="Permission denied (publickey)")
    error = fetch_exit_error(_diagnosis([HEALTHY, denied], (reset_error,)), raw)
    assert error is not None and error.exit_code == ExitCode.NOT_MEASURED
    assert "fetch-failed: SSH: clone #1 failed (Permission denied" in error.message
    ssh = replace(HEALTHY, protocol="ssh")
    error = fetch_exit_error(_diagnosis([HEALTHY, ssh, replace(denied, repeat=2)],
                                        (reset_error,)), raw)
    assert error is not None and error.exit_code == ExitCode.INCONCLUSIVE
    assert "SSH: clone #2 failed (Permission denied" in error.message
    # A clean verdict still exits with a run error of another stage (a clone left behind).
    left = RunError(stage="cleanup", protocol="h1", reference="clone-left", kind=None,
                    message="left")
    assert fetch_exit_error(_diagnosis([HEALTHY], (left,)), raw) is raw


def test_loss_not_a_send_buffer_when_the_capture_shows_retransmissions() -> None:
    """A small flight below an open window with no queue is a send buffer's signature, and a
    lossy path's: with the server's retransmissions at 2% in the clone's capture, packet-loss
    ranks and server-send-buffer stays silent."""
    from tests.diagnosis.test_send_buffer_and_client import SNDBUF

    assert [f.id for f in ranked([SNDBUF])][:1] == ["server-send-buffer"]
    lossy = replace(SNDBUF, capture=CaptureMetrics(
        source="capture fetch h1 #1", mss_bytes=1448, retransmitted_bytes=50_000,
        retransmission_rate=0.02, fast_retransmissions=30, timeout_retransmissions=2,
        advertised_window_max_bytes=3_000_000, min_rtt_s=0.05, median_rtt_s=0.05))
    assert [f.id for f in ranked([lossy])] == ["packet-loss"]


def test_a_dropped_syn_on_any_clone_ranks_syn_drop() -> None:
    """Each clone opens its own download connection: a SYN retransmitted on a clone other
    than the one whose evidence is read (the one that measured most) still counts."""
    clean = CaptureMetrics(source="capture fetch h1 #1", min_rtt_s=0.05, median_rtt_s=0.05,
                           advertised_window_max_bytes=3_000_000, syn_retransmissions=0)
    best = replace(HEALTHY, capture=clean)
    slow = replace(HEALTHY, repeat=2, moved_bytes=30_000_000, wall_s=5.5,
                   capture=replace(clean, source="capture fetch h1 #2", syn_retransmissions=1))
    assert "syn-drop" not in [f.id for f in ranked([best, replace(slow, capture=clean)])]
    findings = ranked([best, slow])
    assert [f.id for f in findings][:1] == ["syn-drop"]
    assert "1 on the clones" in findings[0].summary
    assert findings[0].cost_s >= 1.0


def _out_of_order(share: float) -> TransferObservation:
    """A clone without a capture (not root) at 180 kB/s, far below what the client's 3 MB
    window allows at 50 ms, with ``share`` of its data segments received out of order."""
    return replace(HEALTHY, moved_bytes=2_000_000, measured_s=11.0, rate_bytes_per_s=180_000.0,
                   tcp=replace(TCP, data_segments_in=1382,
                               out_of_order_segments=round(share * 1382)))


def test_out_of_order_arrivals_without_a_capture_rank_packet_loss() -> None:
    """Without a capture the client, the receiver, has no counter of the server's losses; the
    segments it received out of order (19% in the lab's 2% loss) stand for them, worded as
    what they are."""
    findings = ranked([_out_of_order(0.193)])
    assert [f.id for f in findings][:1] == ["packet-loss"]
    top = findings[0]
    assert "out of order (the sender's losses, or reordering on the path)" in top.summary
    assert "retransmitted" not in top.summary and "downloaded" in top.summary
    (seen,) = [e for e in top.evidence if "out of order" in e.what]
    assert seen.value == round(0.193 * 1382) / 1382 and seen.unit == "ratio"
    assert seen.source.startswith("TCP_INFO (ss -tin)")
    assert not any("retransmi" in e.what for e in top.evidence)


def test_few_or_no_out_of_order_arrivals_are_no_loss() -> None:
    """The lab's clones without loss received none out of order (0 of 2074); a little
    reordering (2%) stays below the threshold; an unknown count is no evidence."""
    for clone in (_out_of_order(0.0), _out_of_order(0.02),
                  replace(_out_of_order(0.0), tcp=TCP)):
        assert "packet-loss" not in [f.id for f in ranked([clone])]


def test_out_of_order_arrivals_behind_a_standing_queue_are_the_full_links() -> None:
    """The lab's bandwidth-limit: the full link's queue overflows (1,065 of 4,369 segments out
    of order) and the receiver's RTT stands at 7x the minimum: bandwidth-limit, not a lossy
    hop, as with a capture's retransmissions."""
    full = _out_of_order(0.24)
    assert full.tcp is not None
    full = replace(full, rate_bytes_per_s=1_200_000.0, moved_bytes=6_000_000, measured_s=5.0,
                   tcp=replace(full.tcp, median_rtt_s=0.35, received_bytes=6_000_000))
    ids = [f.id for f in ranked([full])]
    assert ids[:1] == ["bandwidth-limit"] and "packet-loss" not in ids


def test_a_capture_speaks_for_the_loss_before_the_out_of_order_count() -> None:
    """With a capture the server's own retransmissions decide: none, whatever TCP_INFO says."""
    clean = CaptureMetrics(source="capture fetch h1 #1", min_rtt_s=0.05, median_rtt_s=0.05,
                           mss_bytes=1448, advertised_window_max_bytes=3_000_000,
                           retransmitted_bytes=0, retransmission_rate=0.0)
    assert "packet-loss" not in [
        f.id for f in ranked([replace(_out_of_order(0.3), capture=clean)])]


def test_out_of_order_loss_is_not_a_send_buffer() -> None:
    """The send buffer's signature (a small flight below an open window, no queue) is a lossy
    path's too: with a fifth of the segments out of order, packet-loss ranks instead."""
    from tests.diagnosis.test_send_buffer_and_client import SNDBUF

    assert SNDBUF.tcp is not None
    lossy = replace(SNDBUF, tcp=replace(SNDBUF.tcp, data_segments_in=2000,
                                        out_of_order_segments=400))
    assert [f.id for f in ranked([lossy])] == ["packet-loss"]


def _far(rwnd_limited_share: float) -> TransferObservation:
    """A clone at 300 ms RTT through an 8 MB window that autotuning reached (the buffer half
    of a 32 MiB tcp_rmem maximum: no clamp), at 25 MB/s: about window / RTT (26.7 MB/s). Its
    capture says how long the server sent all the window allowed."""
    return replace(
        HEALTHY, moved_bytes=250_000_000, measured_s=10.0, rate_bytes_per_s=25_000_000.0,
        path_rtt_s=0.3, client_rmem_max_bytes=32 << 20,
        tcp=replace(TCP, advertised_window_max_bytes=8_000_000,
                    receive_buffer_max_bytes=16_000_000, min_rtt_s=0.3, median_rtt_s=0.3),
        capture=CaptureMetrics(source="capture fetch h1 #1 (download, at the client)",
                               min_rtt_s=0.3, median_rtt_s=0.3, mss_bytes=1448,
                               advertised_window_max_bytes=8_000_000, retransmitted_bytes=0,
                               retransmission_rate=0.0,
                               rwnd_limited_share=rwnd_limited_share))


def test_a_window_bound_clone_at_a_long_rtt_ranks_path_latency() -> None:
    """The server sent all the client's window allowed 90% of the time and the rate is window /
    RTT: at 20 ms the same window carries 400 MB/s. Held by the window only 10% of the time,
    the same rate is not the window's: no path-latency."""
    findings = ranked([_far(0.9)])
    assert [f.id for f in findings][:1] == ["path-latency"]
    assert "At 300 ms RTT" in findings[0].summary and findings[0].cost_s > 9.0
    (share,) = [e for e in findings[0].evidence if "receive-window-limited" in e.what]
    assert share.value == 0.9 and share.source.startswith("capture fetch h1 #1")
    assert "path-latency" not in [f.id for f in ranked([_far(0.1)])]


def test_the_servers_own_counters_decide_the_window_share() -> None:
    """A local server's socket (the lab) says how long the client's window held it: that,
    not the capture's estimate from the receiver, is the share path-latency reads."""
    def sender(rwnd_limited_s: float) -> SenderTcpSummary:
        return SenderTcpSummary(
            source="ss -tin, server", samples=40, sent_bytes=250_000_000, busy_s=10.0,
            rwnd_limited_s=rwnd_limited_s, sndbuf_limited_s=0.0, buffer_full_share=0.0,
            window_full_share=0.0, cwnd_full_share=0.5, app_share=0.5,
            flight_median_bytes=7_000_000, flight_max_bytes=8_000_000,
            send_buffer_max_bytes=16_000_000, peer_window_median_bytes=8_000_000)
    held = download_observations([replace(_far(0.1), sender=sender(9.0))])
    capture = held.protocols["h1"].capture
    assert capture is not None and capture.rwnd_limited_share == 0.9
    findings = ranked([replace(_far(0.1), sender=sender(9.0))])
    assert [f.id for f in findings][:1] == ["path-latency"]
    (share,) = [e for e in findings[0].evidence if "receive-window-limited" in e.what]
    assert share.source.endswith("window and application shares: ss -tin, server")
    no_capture = replace(_far(0.9), capture=None, sender=sender(1.0))
    assert "path-latency" not in [f.id for f in ranked([no_capture])]


def test_a_clamped_window_at_a_long_rtt_stays_the_clamps() -> None:
    """The lab's client-rmem-clamp at 200 ms: a 40 kB window, the buffer at the 64 KiB
    tcp_rmem maximum, 188 kB/s, the capture's window share 0.69 (the server's own: 0.998).
    Latency multiplies the clamp and path-latency says so, but the clamp ranks first."""
    clamped = replace(
        HEALTHY, moved_bytes=1_977_555, measured_s=10.25, rate_bytes_per_s=187_575.0,
        path_rtt_s=0.2, client_rmem_max_bytes=65_536,
        tcp=replace(TCP, advertised_window_max_bytes=40_808, receive_buffer_max_bytes=65_536,
                    min_rtt_s=0.2, median_rtt_s=0.2),
        capture=CaptureMetrics(source="capture fetch h1 #1 (download, at the client)",
                               min_rtt_s=0.2, median_rtt_s=0.2, mss_bytes=1448,
                               advertised_window_max_bytes=40_832, retransmitted_bytes=0,
                               retransmission_rate=0.0, rwnd_limited_share=0.69))
    ids = [f.id for f in ranked([clamped])]
    assert ids[:2] == ["client-tcp-receive-window-clamp", "path-latency"]


def test_a_finished_clone_without_a_rate_is_no_failure() -> None:
    """A CPU-starved client's HTTP/1.1 clone finished (0.7 MiB) in too few progress lines to
    give a rate: the old rule listed it as "clone #1 ok (ok); no culprit explains it" and
    made the run inconclusive. It did not fail; the measured git:// clone decides."""
    unrated = replace(HEALTHY, protocol="h1", outcome="ok", rate_bytes_per_s=None)
    measured = replace(HEALTHY, protocol="git")
    assert judged((unrated, measured), ()) == ("healthy", ())
    # Alone it is a measurement too (issue 34: a clone that finished is one, whatever its
    # speed; its bytes over its time bound the rate), as a push that completed is.
    assert judged((unrated,), ()) == ("healthy", ())
    # One too small to time is not (as a push's too-small): failed, with the seed's hint.
    tiny = replace(unrated, moved_bytes=2_000)
    verdict, (failure,) = judged((tiny,), ())
    assert (verdict, failure.reference) == ("failed", "too-small")
    assert "--fetch-seed" in failure.hint
