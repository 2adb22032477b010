"""A path-MTU black hole towards the client, seen from the client (``pmtu-blackhole-client``):
the server's full-size segments vanish before they reach it, so no capture there shows them
resent; the clone stalls with only small segments received, the largest well below the MSS
the client advertised (TCP_INFO ``rcv_mss`` against ``advmss``, any user)."""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.analysis.tcpinfo import summarize_receiver
from gitnetdiag.diagnosis.culprits.mtu import RECEIVER_FIX
from gitnetdiag.diagnosis.observations import CaptureMetrics
from gitnetdiag.diagnosis.transfers import TransferObservation
from tests.diagnosis.test_transfer_culprits import HEALTHY, TCP
from tests.diagnosis.transfer_cases import judged, judgement, ranked

# As measured on the lab (h1, 50 ms, --stall-timeout 6): 3,973 B received, rcv_mss 883 B.
STARVED_TCP = replace(TCP, received_bytes=3973, advertised_window_max_bytes=67_072,
                      rcv_mss_max_bytes=883, advmss_bytes=1448)
STALLED = replace(HEALTHY, outcome="stalled", moved_bytes=3973, measured_s=6.36,
                  rate_bytes_per_s=None, wall_s=6.6, tcp=STARVED_TCP, stopped="stall",
                  last_line="remote: Compressing objects: 100% (9/9), done.")


def _sample(t: float, received: float, rcv_mss: float) -> dict[str, object]:
    return {"t_s": t, "local": "a:1", "source": "ss -tin",
            "counters": {"bytes_received": received, "rcv_mss": rcv_mss, "advmss": 1448.0}}


def test_the_largest_segment_estimate_is_kept_through_the_stall() -> None:
    """``rcv_mss`` is a level: the largest over every sample, the stalled ones included."""
    summary = summarize_receiver([_sample(0.25, 2142, 536), _sample(0.5, 3973, 883),
                                  _sample(6.0, 3973, 883)])
    assert summary is not None
    assert (summary.rcv_mss_max_bytes, summary.advmss_bytes) == (883, 1448)
    older = summarize_receiver([{"t_s": 0.25, "local": "a:1", "source": "ss -tin",
                                 "counters": {"bytes_received": 10.0}}])
    assert older is not None and older.rcv_mss_max_bytes is None


def test_a_stalled_clone_of_small_segments_ranks_the_black_hole_first() -> None:
    """From TCP_INFO alone (no root, no capture): the push culprit's id, the receiver's fix,
    the figures cited; the stall is its evidence: the only clone hung, so the run failed
    (issue 42; it was degraded), the black hole named as the cause."""
    findings = ranked([STALLED])
    assert [f.id for f in findings][:1] == ["path-mtu-blackhole"]
    top = findings[0]
    assert "clamp-mss-to-pmtu" in top.fix and top.fix == RECEIVER_FIX and "advmss" in top.fix
    assert "883 B" in top.summary and "1448 B" in top.summary and "clones" in top.summary
    assert " push" not in top.summary
    values = {e.what: (e.value, e.unit) for e in top.evidence}
    assert values["HTTP/1.1: largest segment received (payload)"] == (883, "B")
    assert values["HTTP/1.1: MSS the receiver advertised"] == (1448, "B")
    assert top.cost_s == 6.6 and top.score >= 0.5
    verdict, failures = judged([STALLED], findings)
    assert verdict == "failed"
    assert [f.explained_by for f in failures] == ["path-mtu-blackhole"]
    assert judgement([STALLED], findings).headline.startswith(
        "HTTP/1.1 clones fail (path-mtu-blackhole): ")


def test_two_transports_in_the_hole_score_higher() -> None:
    one = ranked([STALLED])[0].score
    two = ranked([STALLED, replace(STALLED, protocol="git")])[0].score
    assert two > one


def test_a_capture_at_the_client_gives_the_largest_segment_it_acknowledged() -> None:
    """With a capture (root) its largest acknowledged segment is read, as TCP_INFO's."""
    captured = replace(STALLED, tcp=None, capture=CaptureMetrics(
        source="capture fetch h1 #1 8443->49268 (download, at the client)", mss_bytes=1460,
        max_received_segment_bytes=884, retransmitted_bytes=0, retransmission_rate=0.0))
    findings = ranked([captured])
    assert [f.id for f in findings][:1] == ["path-mtu-blackhole"]
    assert "884 B" in findings[0].summary and "1460 B" in findings[0].summary


def test_no_black_hole_without_its_signature() -> None:
    """A stall after full-size segments arrived (a server that went quiet), a clone that
    finished with small segments only (a tiny repository), no estimate at all, or a
    loopback connection (no link between the two ends)."""
    full = replace(STALLED, tcp=replace(STARVED_TCP, rcv_mss_max_bytes=1448))
    near = replace(STALLED, tcp=replace(STARVED_TCP, rcv_mss_max_bytes=1420))
    unknown = replace(STALLED, tcp=replace(STARVED_TCP, rcv_mss_max_bytes=None))
    finished = replace(HEALTHY, tcp=STARVED_TCP)
    # Loopback (MSS 65,483 B): segments as small as the sender wrote them, no link to blame.
    loopback = replace(STALLED, tcp=replace(STARVED_TCP, rcv_mss_max_bytes=8008,
                                            advmss_bytes=65_483))
    for clones in ([full], [near], [unknown], [finished], [loopback]):
        assert "path-mtu-blackhole" not in [f.id for f in ranked(clones)], clones


def test_an_unexplained_stall_of_every_clone_fails_the_run() -> None:
    """Every clone stalled and no culprit explains it: failed (exit 9; issue 42, it was
    inconclusive), the headline saying so, never healthy."""
    verdict, failures = judged([STALLED], ())
    assert verdict == "failed" and failures[0].explained_by is None
    assert failures[0].reference == "fetch-failed"
    assert judgement([STALLED], ()).headline.endswith("): cause not identified.")


def test_healthy_clone_keeps_no_finding() -> None:
    healthy: TransferObservation = replace(HEALTHY, tcp=replace(TCP, rcv_mss_max_bytes=1448,
                                                              advmss_bytes=1448))
    assert ranked([healthy]) == ()


def test_no_black_hole_from_what_a_stall_elsewhere_also_shows() -> None:
    """A second read found three stalls this detector took for a hole (2026-11-27):
    - a server that hung before its pack: nothing above the kernel's first estimate of
      536 B ever arrived, which says no larger segment came, not that none could;
    - a server still counting objects when the clone stalled: its pack was not ready, and
      the counting progress itself got through;
    - a server whose own MSS is smaller than the client's (a 1400 B MTU at its end): its
      largest segments are full-size for it (TCP_INFO ``snd_mss`` gives its MSS)."""
    initial = replace(STALLED, protocol="git", moved_bytes=700,
                      tcp=replace(STARVED_TCP, received_bytes=700, rcv_mss_max_bytes=536))
    counting = replace(STALLED, last_line="remote: Counting objects:  12% (5/41)")
    small_server = replace(STALLED, moved_bytes=200_000, tcp=replace(
        STARVED_TCP, received_bytes=200_000, rcv_mss_max_bytes=1308, peer_mss_bytes=1308))
    for clone in (initial, counting, small_server):
        findings = ranked([clone])
        assert "path-mtu-blackhole" not in [f.id for f in findings], clone
        assert judged([clone], findings)[0] == "failed"  # the only clone stalled, unexplained
    # The lab's hole, with the server's MSS known (1448 B, as the client's): still named.
    lab = replace(STALLED, tcp=replace(STARVED_TCP, peer_mss_bytes=1448))
    assert [f.id for f in ranked([lab])][:1] == ["path-mtu-blackhole"]
    done_counting = replace(STALLED, last_line="remote: Counting objects: 100% (41/41), done.")
    assert [f.id for f in ranked([done_counting])][:1] == ["path-mtu-blackhole"]
