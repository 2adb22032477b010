"""``edge-response-buffering`` on clone observations: the lab fault's figures rank it first;
the other download faults' signatures and a healthy run do not fire it."""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.analysis.tcpinfo import ReceiverTcpSummary
from gitnetdiag.diagnosis.culprits.edgeresponse import edge_response_buffering, nginx_facts
from gitnetdiag.diagnosis.transfers import TransferObservation
from gitnetdiag.lab.spec import FETCH_FAULT_FIX_NAMES
from tests.diagnosis.test_transfer_culprits import PHASES
from tests.diagnosis.transfer_cases import on, ranked

RTT = 0.05


def _tcp(window: int, rcv_space: int, median_rtt: float = 0.051) -> ReceiverTcpSummary:
    return ReceiverTcpSummary(
        source="ss -tin", samples=10, span_s=10.0, received_bytes=2_000_000,
        advertised_window_max_bytes=window, receive_buffer_max_bytes=2 * window,
        rcv_space_max_bytes=rcv_space, min_rtt_s=0.050, median_rtt_s=median_rtt)


def _clone(protocol: str, rate: float, measured_s: float, *, wall_s: float | None = None,
           tcp: ReceiverTcpSummary | None = None, outcome: str = "bounded",
           server_wait_s: float = 0.45) -> TransferObservation:
    phases = replace(PHASES, request_sent_s=0.3, first_pack_byte_s=0.3 + server_wait_s)
    return TransferObservation(
        protocol=protocol, repeat=1, outcome=outcome,  # type: ignore[arg-type]
        moved_bytes=int(rate * measured_s), measured_s=measured_s, rate_bytes_per_s=rate,
        wall_s=wall_s if wall_s is not None else measured_s + 1.0, phases=phases,
        tcp=tcp or _tcp(1_500_000, 2 * int(rate * RTT) + 1), path_rtt_s=RTT,
        client_rmem_max_bytes=6_291_456, stopped="budget")


# The lab's edge-response-buffering run (6 MiB of random data, 50 ms, nginx 1.22 with its temp
# files on a 30-IOPS sync device): HTTPS through the edge at 0.23 and 1.47 MB/s in bursts,
# SSH and git:// straight to the server at 11.8 MB/s.
LAB_FAULT = [
    _clone("h1", 231_821.0, 10.0, wall_s=13.2, tcp=_tcp(1_081_444, 263_296, 0.0507)),
    _clone("h2", 1_472_947.0, 4.45, wall_s=15.2, tcp=_tcp(7_281_062, 1_084_552), outcome="ok",
           server_wait_s=0.26),
    _clone("ssh", 11_780_309.0, 0.53, wall_s=1.58, tcp=_tcp(1_534_049, 450_328), outcome="ok"),
    _clone("git", 11_887_007.0, 0.53, wall_s=1.06, tcp=_tcp(609_702, 115_840), outcome="ok"),
]


def test_lab_fault_figures_rank_edge_response_buffering_first() -> None:
    findings = ranked(LAB_FAULT)
    top = findings[0]
    assert top.id == "edge-response-buffering", [f.id for f in findings]
    assert FETCH_FAULT_FIX_NAMES["edge-response-buffering"] in top.fix
    assert "https://nginx.org/en/docs/http/ngx_http_proxy_module.html#proxy_buffering" in top.fix
    # The h1 clone lost 10 s minus what 2.3 MB takes at git://'s 11.9 MB/s.
    assert 9.5 < top.cost_s < 10.0
    assert top.cost_protocol == "h1"
    whats = " ".join(e.what for e in top.evidence)
    assert "rcv_space" in whats and "advertised window" not in whats  # bursts, window as basis
    assert top.score >= 0.85


def test_silent_on_a_healthy_run() -> None:
    """Every way in at about the same rate: the edge costs nothing."""
    healthy = [_clone(p, 10e6 if p in ("h1", "h2") else 11e6, 3.0) for p in ("h1", "h2", "ssh")]
    assert edge_response_buffering(on(healthy)) is None
    assert ranked(healthy) == ()


def test_silent_when_the_client_or_server_binds_every_way_in() -> None:
    """client-rmem-clamp, server-sndbuf-clamp, client-index-cpu: every transport alike slow."""
    rmem = [_clone(p, 600_000.0, 8.0, tcp=_tcp(32_768, 60_000)) for p in ("h1", "h2", "ssh")]
    sndbuf = [_clone(p, 900_000.0 * (1.1 if p == "ssh" else 1.0), 6.0)
              for p in ("h1", "h2", "ssh", "git")]
    index_cpu = [_clone(p, 400_000.0, 3.0, wall_s=12.0) for p in ("h1", "git")]
    for case in (rmem, sndbuf, index_cpu):
        assert edge_response_buffering(on(case)) is None


def test_silent_when_the_server_wait_dominates() -> None:
    """slow-pack-generation: the HTTPS clone slower, but its time went to the first pack
    byte (the busy server counting and compressing), not to the transfer."""
    busy = [_clone("h1", 200_000.0, 2.5, wall_s=20.0, server_wait_s=15.0),
            _clone("git", 2_000_000.0, 0.4, wall_s=16.0, server_wait_s=14.0)]
    assert edge_response_buffering(on(busy)) is None
    assert ranked(busy)[0].id == "server-pack-generation"


def test_a_wait_only_the_edge_clone_had_does_not_acquit_the_edge() -> None:
    """A fresh-clone fault-matrix run: a clone through the buffering edge waited 5.77 s for
    its first pack byte, the direct clones well under a second, and it then crawled in
    bursts to its budget. The wait acquitted the edge and server-pack-generation ranked
    first; the edge's slow transfer (10 s at 0.23 MB/s) ranks first now, priced without the
    wait, and the wait stays server-pack-generation's, ranked below."""
    waited = [_clone("h1", 230_000.0, 10.0, wall_s=16.5, server_wait_s=5.77,
                     tcp=_tcp(1_081_444, 263_296, 0.0507)),
              _clone("ssh", 8_700_000.0, 0.72, wall_s=1.8, server_wait_s=0.35, outcome="ok"),
              _clone("git", 8_600_000.0, 0.73, wall_s=1.3, server_wait_s=0.3, outcome="ok")]
    findings = ranked(waited)
    ids = [f.id for f in findings]
    assert ids[0] == "edge-response-buffering" and "server-pack-generation" in ids, ids
    # 10 s less 2.3 MB at git://'s 8.6 MB/s: the wait is not in the edge's cost.
    assert 9.6 < findings[0].cost_s < 9.8
    # Without the bursts the edge is not it (a steady flight is a send buffer's).
    steady = [replace(waited[0], tcp=_tcp(1_081_444, 2 * int(230_000 * RTT) + 1)), *waited[1:]]
    assert edge_response_buffering(on(steady)) is None
    assert "server-pack-generation" in [f.id for f in ranked(steady)]


def test_a_slow_server_beside_the_edge_does_not_acquit_the_edge() -> None:
    """A fresh-clone make test's lab run on a loaded host: the server took 2.25 s (HTTP/1.1)
    and 2.47 s (git://) to its first pack byte, and the clone through the edge still ran at
    0.26 MB/s in bursts: the wait every way in shared is the server's, the rest the edge's,
    which ranks first (it was not ranked at all while any wait over 30% of the clone acquitted
    it)."""
    loaded = [_clone("h1", 260_000.0, 4.5, wall_s=7.4, server_wait_s=2.25,
                     tcp=_tcp(1_081_444, 263_296, 0.0507)),
              _clone("git", 5_000_000.0, 1.2, wall_s=4.0, server_wait_s=2.47, outcome="ok")]
    findings = ranked(loaded)
    assert findings[0].id == "edge-response-buffering", [f.id for f in findings]
    assert "server-pack-generation" in [f.id for f in findings]


def test_silent_when_only_http2_is_slow() -> None:
    """client-http2-window: the client's libcurl window holds HTTP/2; HTTP/1.1 through the
    same edge is as fast as SSH, so the edge is not what is slow."""
    runs = [_clone("h1", 10e6, 3.0), _clone("h2", 1e6, 6.0, tcp=_tcp(3_000_000, 300_000)),
            _clone("ssh", 11e6, 3.0)]
    assert edge_response_buffering(on(runs)) is None


def test_silent_without_a_direct_way_in_or_on_a_short_transfer() -> None:
    only_https = [c for c in LAB_FAULT if c.protocol in ("h1", "h2")]
    assert edge_response_buffering(on(only_https)) is None
    short = [replace(c, measured_s=1.0) if c.protocol in ("h1", "h2") else c for c in LAB_FAULT]
    assert edge_response_buffering(on(short)) is None


def _stalled(clone: TransferObservation, moved: int, wall_s: float) -> TransferObservation:
    """The clone as the monitor ends it after the stall timeout: no rate, its bytes moved."""
    return replace(clone, outcome="stalled", stopped="stall", moved_bytes=moved,
                   rate_bytes_per_s=None, measured_s=0.0, wall_s=wall_s)


def test_a_stall_through_the_edge_is_the_fault_at_its_worst() -> None:
    """The fresh-clone make-test run: the HTTP/1.1 clone stalled after 1,090,737 B (the edge's
    worker blocked on its temp files past the 15 s stall timeout). It counts at its average
    rate over its wall time, the stall is in the evidence, and the culprit still ranks first;
    with both HTTPS clones stalled too."""
    h1_stalled = _stalled(LAB_FAULT[0], 1_090_737, 22.4)
    findings = ranked([h1_stalled, *LAB_FAULT[1:]])
    top = findings[0]
    assert top.id == "edge-response-buffering", [f.id for f in findings]
    assert top.cost_protocol == "h1" and 22.0 < top.cost_s < 22.4
    stall = [e for e in top.evidence if "before it stalled" in e.what]
    assert [e.value for e in stall] == [1_090_737.0]
    both = [h1_stalled, _stalled(LAB_FAULT[1], 900_000, 20.0), *LAB_FAULT[2:]]
    assert ranked(both)[0].id == "edge-response-buffering"


def test_a_stall_before_the_pack_flows_is_not_the_edge() -> None:
    """A clone through the edge that stalled in its preamble (a few kB) shows nothing of the
    edge's buffering: with the other HTTPS clone as fast as SSH, nothing fires."""
    early = _stalled(LAB_FAULT[0], 4_000, 16.0)
    fast_h2 = _clone("h2", 11e6, 0.55, outcome="ok")
    assert edge_response_buffering(on([early, fast_h2, *LAB_FAULT[2:]])) is None


def test_a_steady_edge_send_buffer_is_the_send_buffer_not_response_buffering() -> None:
    """An edge whose send buffer is clamped is as slow through HTTPS, but steady: about the
    flight in every round trip, no bursts."""
    flight = int(300_000 * RTT)
    steady = [_clone(p, 300_000.0, 8.0, tcp=_tcp(1_500_000, 2 * flight), outcome="bounded")
              for p in ("h1", "h2")]
    steady = [replace(c, stopped="stable") for c in steady]
    runs = [*steady, _clone("ssh", 11e6, 0.6, outcome="ok")]
    assert ranked(runs)[0].id == "server-send-buffer"
    assert edge_response_buffering(on(runs)) is None
    bursty = [replace(c, tcp=_tcp(1_500_000, 10 * flight)) for c in steady]
    assert edge_response_buffering(on([*bursty, runs[-1]])) is not None


def test_silent_on_the_send_buffer_clamp_lab_run() -> None:
    """server-sndbuf-clamp at 20 ms (the fetch fault matrix's run): git:// 3.4x faster than
    HTTPS (its daemon keeps more in flight), but the HTTPS data came steadily (rcv_space 3.8x
    the flight), so the edge's buffering is not it."""
    rtt = 0.0205
    runs = [replace(_clone("h1", 1_690_348.0, 3.71, wall_s=4.26, outcome="ok",
                           tcp=_tcp(554_631, 130_950, 0.021)), path_rtt_s=rtt),
            replace(_clone("h2", 1_758_917.0, 3.17, wall_s=3.43, outcome="ok",
                           tcp=_tcp(818_025, 131_714, 0.0211)), path_rtt_s=rtt),
            replace(_clone("ssh", 4_018_463.0, 1.56, wall_s=2.35, outcome="ok"), path_rtt_s=rtt),
            replace(_clone("git", 5_929_452.0, 1.06, wall_s=1.32, outcome="ok"), path_rtt_s=rtt)]
    assert edge_response_buffering(on(runs)) is None


def test_nginx_facts_have_a_source_for_every_default() -> None:
    facts = nginx_facts()
    assert facts.defaults["proxy_buffering"] == "on"
    assert facts.defaults["proxy_max_temp_file_size"] == "1024m"
    assert set(facts.defaults) == set(facts.sources)
    assert all(s.startswith("https://nginx.org/en/docs/") for s in facts.sources.values())
    assert facts.fix_setting == "proxy_buffering off"


def test_the_edge_config_backs_a_fired_culprit_and_fires_nothing_alone() -> None:
    """host.json's lint (nginx proxy_buffering on by default) adds its line to a fired
    edge-response-buffering and re-ranks; without the culprit, or with buffering off, the
    findings stay as they were."""
    from gitnetdiag.diagnosis.culprits.edgeresponse import with_edge_config
    from gitnetdiag.diagnosis.observations import ConfigFinding

    default_on = ConfigFinding(setting="proxy_buffering", value="on (default)",
                               file="/etc/nginx/nginx.conf")
    findings = ranked(LAB_FAULT)
    backed = with_edge_config(findings, [default_on])
    top = backed[0]
    assert top.id == "edge-response-buffering"
    assert top.score == min(0.95, findings[0].score + 0.05)
    assert top.evidence[-1].what == "configured proxy_buffering"
    assert top.evidence[-1].text == "on (default)"
    off = ConfigFinding(setting="proxy_buffering", value="off", file="n.conf", line=3)
    assert with_edge_config(findings, [off]) == findings
    healthy = ranked([_clone(p, 10e6, 3.0) for p in ("h1", "ssh")])
    assert with_edge_config(healthy, [default_on]) == healthy == ()


def test_gaps_without_a_byte_are_bursts_when_rcv_space_stays_under_its_bound() -> None:
    """A fresh-clone CI run (2026-12-04): HTTP/1.1 through the edge at 748 kB/s, git:// at
    8.6 MB/s; its largest rcv_space 289,600 B, just under 8 x its 37,557 B per round trip, but
    1.34 s without a byte mid-pack. Without the gap, nothing ranked (healthy)."""
    tcp = replace(_tcp(6_000_000, 289_600), longest_gap_s=1.34)
    ci = [_clone("h1", 748_145.7, 9.35, wall_s=10.05, tcp=tcp, outcome="ok",
                 server_wait_s=0.37),
          _clone("git", 8_572_577.0, 0.73, wall_s=1.30, outcome="ok", server_wait_s=0.25)]
    findings = ranked(ci)
    assert [f.id for f in findings][:1] == ["edge-response-buffering"]
    assert any(e.what == "longest time without a byte mid-pack through the edge"
               and e.value == 1.34 for e in findings[0].evidence)
    # the same clone steady (no gap of ten round trips): no bursts, nothing for the edge
    steady = [replace(ci[0], tcp=replace(tcp, longest_gap_s=0.3)), ci[1]]
    assert edge_response_buffering(on(steady)) is None
