"""Accept queue, SYN drops and resets: crafted runs whose top finding is the culprit."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.observations import (
    BurstResult,
    ConfigFinding,
    DeadPath,
    HostEvidence,
    Listener,
    Observations,
    PushObservation,
)
from tests.diagnosis import examples
from tests.diagnosis.culprits.crafted import (
    MB,
    Case,
    assert_ranks_first_with_its_fix,
    cap,
    proto,
    run,
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
    failed = PushObservation(
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


CASES: dict[str, Case] = {
    "listen-backlog-overflow": (case_listen_backlog, ("net.core.somaxconn", "git daemon")),
    "syn-drop": (case_syn_drop, ("net.ipv4.tcp_max_syn_backlog",)),
    "firewall-reset": (case_firewall_reset, ("REJECT", "iptables-save line 7")),
}
"""Each culprit of the family, its crafted run and the settings its fix names."""


@pytest.mark.parametrize("culprit_id", list(CASES))
def test_culprit_ranks_first_with_its_fix(culprit_id: str) -> None:
    """The crafted run's top finding is the culprit, with numbers, evidence and the setting."""
    assert_ranks_first_with_its_fix(culprit_id, CASES[culprit_id])


def test_backlog_evidence_cites_host_counters() -> None:
    top = diagnose(case_listen_backlog()).findings[0]
    sources = {e.source for e in top.evidence}
    assert "host counter ListenOverflows" in sources
    assert any(e.value == 5 and "9418" in e.what for e in top.evidence)


def test_syn_drop_gives_way_to_backlog_when_host_evidence_exists() -> None:
    """SYN-side symptoms plus ListenOverflows on the server: the backlog, not syn-drop."""
    obs = replace(case_syn_drop(), host=HostEvidence(counter_deltas={"ListenOverflows": 30}))
    ids = [f.id for f in diagnose(obs).findings]
    assert ids[0] == "listen-backlog-overflow"
    assert "syn-drop" not in ids


def test_syn_drop_with_clean_server_counters_points_at_the_path() -> None:
    """The server's counters were read and saw no overflow: the SYNs were lost on the
    path, so the filter comes first in the fix and the counters are cited as evidence."""
    clean = {"ListenOverflows": 0, "ListenDrops": 0, "TCPReqQFullDrop": 0,
             "TCPReqQFullDoCookies": 0}
    obs = replace(case_syn_drop(), host=HostEvidence(counter_deltas=clean))
    top = diagnose(obs).findings[0]
    assert top.id == "syn-drop"
    assert "lost on the path" in top.summary
    assert top.fix.index("SYN rate limits in firewalls") < top.fix.index("tcp_max_syn_backlog")
    cited = {e.what: e.value for e in top.evidence if e.source == "host netstat"}
    assert cited == {f"server counter {k} over the run": 0 for k in clean}
    unknown = diagnose(case_syn_drop()).findings[0]
    assert "no server-side evidence" in unknown.summary and top.score > unknown.score


def test_a_reset_the_capture_did_not_see_is_not_a_firewall() -> None:
    """git says "Empty reply from server" (kind reset) but the capture saw no RST from the
    server side: an edge closed or refused the HTTP/2 request, no filter reset it."""
    obs = case_firewall_reset()
    h1 = replace(obs.protocols["h1"], capture=cap(resets_from_server=0))
    quiet = replace(obs, protocols={**obs.protocols, "h1": h1}, host=None)
    assert "firewall-reset" not in [f.id for f in diagnose(quiet).findings]
    # the same pushes without a capture: git's word is all there is, and it counts
    no_capture = replace(quiet, protocols={**obs.protocols,
                                           "h1": replace(h1, capture=None)})
    assert diagnose(no_capture).findings[0].id == "firewall-reset"


def test_burst_rsts_without_failed_connections_are_not_a_firewall() -> None:
    burst = BurstResult(protocol="git", port=9418, concurrency=40, ok=40,
                        connect_p50_s=0.02, connect_p99_s=0.03, duration_p50_s=0.2, resets=1)
    obs = Observations(run=run(), protocols={"git": proto(3.0)}, bursts=(burst,))
    assert "firewall-reset" not in [f.id for f in diagnose(obs).findings]
    cut = replace(burst, ok=10, failed_by_kind={"reset": 30}, resets=30, duration_p50_s=2.0)
    assert diagnose(replace(obs, bursts=(cut,))).findings[0].id == "firewall-reset"


def test_cookie_resets_under_an_overflowing_backlog_are_the_backlogs() -> None:
    """The lab's tiny-backlog burst as one full run saw it: no SYN was retransmitted, but
    122 of 150 connections were reset; the kernel counted 122 failed SYN cookies (a client
    ACK meeting a still-full accept queue is answered with a RST) and 657 overflows. The
    backlog ranks first, never "healthy"; without the failed cookies the resets are not
    the backlog's (nothing here proves a filter either)."""
    base = examples.git_daemon_backlog()
    burst = replace(base.bursts[0], ok=28, failed_by_kind={"reset": 122}, connect_p99_s=0.062,
                    connect_max_s=0.064, duration_p50_s=0.43, syn_retransmissions=0,
                    synack_retransmissions=0, resets=122)
    host = replace(base.host, listeners=(replace(base.host.listeners[0], accept_queue=0),),
                   counter_deltas={"ListenOverflows": 657, "ListenDrops": 657,
                                   "SyncookiesSent": 288, "SyncookiesFailed": 122,
                                   "TCPReqQFullDoCookies": 288}, kernel_log=())
    obs = replace(base, bursts=(burst,), host=host)
    diagnosis = diagnose(obs)
    assert diagnosis.verdict == "degraded"
    assert diagnosis.findings[0].id == "listen-backlog-overflow"
    assert diagnosis.findings[0].cost_s > 0.5
    no_cookies = replace(obs, host=replace(host, counter_deltas={
        k: v for k, v in host.counter_deltas.items() if k != "SyncookiesFailed"}))
    assert "listen-backlog-overflow" not in [f.id for f in diagnose(no_cookies).findings
                                             if f.cost_s > 0.5]


def _refused_everywhere(*, checked: bool = True) -> Observations:
    """HTTP/1.1 and SSH to a host whose ports 8443 and 22 refuse every connect: the path
    check's two connects per port and git's one push each (0.3 s, above the 50 ms RTT, so
    the refusal's speed says nothing), no capture, no host evidence."""
    def refused(message: str) -> PushObservation:
        return PushObservation(duration_s=0.3, bytes=0, ok=False, error_kind="refused",
                          error_message=message)
    h1 = replace(proto(3.0, n=1), pushes=(refused(
        "fatal: unable to access 'https://git.example:8443/r.git/': Failed to connect to "
        "git.example port 8443 after 0 ms: Couldn't connect to server"),))
    ssh = replace(proto(3.0, n=1), pushes=(refused(
        "ssh: connect to host git.example port 22: Connection refused"),))
    dead = tuple(DeadPath(protocol=name, endpoint=f"git.example:{port}", reach="refused",
                          connects=2, waited_s=0.0, error="refused")
                 for name, port in (("h1", 8443), ("ssh", 22))) if checked else ()
    return Observations(run=run(), protocols={"h1": h1, "ssh": ssh}, dead_paths=dead)


def test_a_port_that_refuses_every_connect_is_named_with_both_causes() -> None:
    """Nothing tells a closed port from a REJECT rule: firewall-reset names each port with
    its protocols and says both, with how to tell them apart; path-unreachable stays out."""
    result = diagnose(_refused_everywhere())
    ids = [f.id for f in result.findings]
    top = result.findings[0]
    assert ids[0] == "firewall-reset" and "path-unreachable" not in ids, ids
    for who in ("HTTP/1.1 (git.example:8443)", "SSH (git.example:22)"):
        assert f"{who}: every connection refused" in top.summary, top.summary
    assert top.summary.count("nothing listens on that port, or a firewall rejects it") == 2
    for port in ("8443", "22"):
        assert f"nothing listens on TCP port {port} at git.example" in top.fix, top.fix
        assert f"rejects TCP port {port} to git.example" in top.fix
    assert "ss -ltn" in top.fix and "tcp-reset" in top.fix and "TTL" in top.fix
    assert "body-size" not in top.fix  # no connection was cut mid-transfer
    checks = [e for e in top.evidence if e.source.startswith("path check")]
    assert [(e.value, e.unit) for e in checks] == [(2, "count"), (2, "count")]


def test_a_listener_on_the_refused_port_names_the_filter() -> None:
    """The server's ss -ltn shows haproxy on 8443 and sshd on 22: the service is up, so a
    filter rejects the SYNs; the fix names the rule to find, not a closed port."""
    obs = replace(_refused_everywhere(), host=HostEvidence(listeners=(
        Listener(port=8443, backlog=128, process="haproxy"),
        Listener(port=22, backlog=128, process="sshd"))))
    top = diagnose(obs).findings[0]
    assert top.id == "firewall-reset"
    assert ("HTTP/1.1 (git.example:8443): every connection refused, the path check's and "
            "git's pushes alike (a TCP reset to each SYN); a filter rejects them (listener on "
            "the refused port 8443 (haproxy) in the server's `ss -ltn`)") in top.summary
    assert "nothing listens" not in top.summary + top.fix
    assert "Remove or narrow the rule that rejects TCP port 22 to git.example" in top.fix


def test_a_refusal_without_the_path_check_still_counts_for_nothing() -> None:
    """The same refused pushes with no path check behind them (a run recorded before it):
    a closed port refuses too, so the refusal alone names no culprit, as before."""
    ids = [f.id for f in diagnose(_refused_everywhere(checked=False)).findings]
    assert "firewall-reset" not in ids and "path-unreachable" not in ids, ids
