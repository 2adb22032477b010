"""path-unreachable: ports the probe's bounded path check found dead (no SYN answered, no
route, TLS never completed), each protocol's transfer recorded failed, not started.

Crafted as the probe records them (one failed transfer per dead protocol, kind
``unreachable`` or ``tls``; ``Observations.dead_paths``): the culprit ranks first with the
SYNs and seconds measured, the fix names the port, and a run whose every requested protocol
is dead is ``failed`` with a non-zero exit, in either direction.
"""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.assembly import download_observations
from gitnetdiag.diagnosis.culprits.reach import path_unreachable
from gitnetdiag.diagnosis.model import Diagnosis
from gitnetdiag.diagnosis.observations import (
    BurstResult,
    DeadPath,
    Observations,
    ProtocolObservation,
    PushObservation,
)
from gitnetdiag.diagnosis.verdict import judge, verdict_error
from gitnetdiag.errors import ExitCode
from gitnetdiag.outcomes import FailureKind
from tests.diagnosis.culprits.crafted import Case, proto, run
from tests.diagnosis.test_transfer_culprits import HEALTHY

HTTPS, SSH = "198.18.2.2:8443", "198.18.2.2:22"


def _filtered(protocol: str, endpoint: str) -> DeadPath:
    return DeadPath(protocol=protocol, endpoint=endpoint, reach="filtered",  # type: ignore[arg-type]
                    syns_sent=3, waited_s=3.5, error="timeout")


def _not_started(kind: FailureKind = FailureKind.UNREACHABLE) -> ProtocolObservation:
    return ProtocolObservation(pushes=(PushObservation(
        duration_s=3.5, bytes=3_000_000, ok=False, error_kind=kind,
        error_message="not started: no answer from 198.18.2.2:22 to 3 SYNs over 3.5 s"),))


def case_every_port_filtered() -> Observations:
    """HTTPS (8443, both HTTP versions) and SSH (22) filtered: nothing was transferred."""
    return Observations(
        run=run(requested_protocols=("h1", "h2", "ssh")),
        protocols={name: _not_started() for name in ("h1", "h2", "ssh")},
        dead_paths=(_filtered("h1", HTTPS), _filtered("h2", HTTPS), _filtered("ssh", SSH)))


def case_ssh_filtered() -> Observations:
    """SSH filtered while HTTPS pushes fine."""
    return Observations(
        run=run(requested_protocols=("h1", "h2", "ssh")),
        protocols={"h1": proto(1.0), "h2": proto(1.05), "ssh": _not_started()},
        dead_paths=(replace(_filtered("ssh", SSH), syns_sent=8, connects=2),))


CASES: dict[str, Case] = {
    "path-unreachable": (case_every_port_filtered, ("8443", "22", "iptables -S")),
}


def _check(result: Diagnosis, settings: tuple[str, ...]) -> None:
    top = result.findings[0]
    assert top.id == "path-unreachable", [(f.id, f.score, f.cost_s) for f in result.findings]
    assert top.score >= 0.9 and top.cost_s >= 100
    for setting in settings:
        assert setting in top.fix, (setting, top.fix)
    assert result.verdict == "failed"
    error = verdict_error(result.verdict, result.measurement_failures)
    assert error is not None and error.exit_code != ExitCode.OK


def test_every_port_filtered_is_failed_with_path_unreachable_first() -> None:
    """Every requested protocol's port dropped its SYNs: failed, non-zero exit, the culprit
    first with 3 SYNs and 3.5 s per port, each protocol named, every failure explained."""
    make, settings = CASES["path-unreachable"]
    result = diagnose(make())
    _check(result, settings)
    top = result.findings[0]
    assert top.summary.startswith("HTTP/1.1 and HTTP/2 (198.18.2.2:8443): no answer to 3 SYNs "
                                  "over 3.5 s (filtered); SSH (198.18.2.2:22): no answer")
    syns = [e for e in top.evidence if e.unit == "count"]
    assert [e.value for e in syns] == [3, 3]
    assert {e.value for e in top.evidence if e.unit == "s"} == {3.5}
    assert result.measurement_failures
    assert all(f.explained_by == "path-unreachable" for f in result.measurement_failures)


def test_one_dead_protocol_fails_the_run_and_ranks_first() -> None:
    """SSH filtered while HTTPS works: the protocol that moved nothing fails the run, its
    culprit first; the fix names port 22 only."""
    result = diagnose(case_ssh_filtered())
    _check(result, ("port 22",))
    assert "8443" not in result.findings[0].fix
    summary = result.findings[0].summary
    assert summary.startswith("SSH (198.18.2.2:22): no answer to 8 SYNs on 2 connects over 3.5 s")
    assert "HTTP/1.1" not in summary
    (syns,) = [e for e in result.findings[0].evidence if e.unit == "count"]
    assert syns.value == 8 and "on 2 connects" in syns.what


def test_no_route_and_tls_stalled_are_named_for_what_was_seen() -> None:
    """No route (EHOSTUNREACH) for SSH, a TLS handshake that never completed on HTTPS: each
    its own words, the route and openssl s_client in the fix."""
    obs = Observations(
        run=run(requested_protocols=("h1", "ssh")),
        protocols={"h1": _not_started(FailureKind.TLS), "ssh": _not_started()},
        dead_paths=(DeadPath(protocol="h1", endpoint=HTTPS, reach="tls-stalled", waited_s=5.0,
                             error="tls: handshake not completed"),
                    DeadPath(protocol="ssh", endpoint=SSH, reach="no-route", waited_s=0.01,
                             error="unreachable")))
    result = diagnose(obs)
    _check(result, ("ip route get 198.18.2.2", "openssl s_client -connect 198.18.2.2:8443"))
    summary = result.findings[0].summary
    assert "no route" in summary and "TLS handshake not completed over 5.0 s" in summary


def test_syn_drops_of_another_protocol_do_not_outrank_a_dead_port() -> None:
    """A git:// burst that lost SYNs (syn-drop's evidence) beside an SSH port that never
    answered: the port that moved nothing ranks first."""
    obs = replace(case_ssh_filtered(), bursts=(BurstResult(
        protocol="git", concurrency=40, ok=40, port=9418, syn_retransmissions=12,
        connect_p50_s=0.05, connect_p99_s=1.05, connect_max_s=3.05),))
    result = diagnose(obs)
    ids = [f.id for f in result.findings]
    assert ids[0] == "path-unreachable" and "syn-drop" in ids


def test_no_dead_path_no_culprit() -> None:
    """A refused or open port is not this culprit's: without dead paths it never fires."""
    assert path_unreachable(Observations(protocols={"ssh": _not_started(FailureKind.REFUSED)})) \
        is None


def test_dead_paths_round_trip_and_are_not_written_when_empty() -> None:
    obs = case_every_port_filtered()
    data = obs.to_dict()
    assert data["dead_paths"][2] == {"protocol": "ssh", "endpoint": SSH, "reach": "filtered",
                                     "syns_sent": 3, "connects": None, "waited_s": 3.5,
                                     "error": "timeout"}
    assert Observations.from_dict(data) == obs
    assert "dead_paths" not in Observations().to_dict()


def test_clones_over_dead_ports_are_failed_with_path_unreachable_first() -> None:
    """The download direction: the clones not started over filtered ports are judged as the
    pushes are (failed, the culprit first, every clone's failure explained)."""
    clones = [replace(HEALTHY, protocol=name, outcome="failed", moved_bytes=0, measured_s=0.0,
                      rate_bytes_per_s=None, wall_s=3.5, failure_kind=FailureKind.UNREACHABLE,
                      last_line="not started: no answer", tcp=None)
              for name in ("h1", "ssh")]
    obs = download_observations(clones, requested=("h1", "ssh"),
                                dead_paths=(_filtered("h1", HTTPS), _filtered("ssh", SSH)))
    result = diagnose(obs)
    assert [f.id for f in result.findings][:1] == ["path-unreachable"]
    judged = judge(obs, result.findings)
    assert judged.verdict == "failed"
    assert judged.failures and all(f.explained_by == "path-unreachable"
                                   for f in judged.failures if f.stage == "fetch")


def test_no_route_is_named_from_the_check_while_gits_own_transfers_failed_fast() -> None:
    """No route to SSH's host (ICMP net-unreachable): git ran and failed in 20 ms, as the
    check did; the culprit names the route, not the SYN wait, and explains the failure."""
    failed = ProtocolObservation(pushes=(PushObservation(
        duration_s=0.02, bytes=3_000_000, ok=False, error_kind=FailureKind.UNREACHABLE,
        error_message="ssh: connect to host 198.18.9.9 port 22: Network is unreachable"),))
    obs = Observations(
        run=run(requested_protocols=("h1", "ssh")),
        protocols={"h1": proto(1.0), "ssh": failed},
        dead_paths=(DeadPath(protocol="ssh", endpoint="198.18.9.9:22", reach="no-route",
                             waited_s=0.004, error="unreachable"),))
    result = diagnose(obs)
    top = result.findings[0]
    assert top.id == "path-unreachable", [(f.id, f.score, f.cost_s) for f in result.findings]
    assert "git's connects failed within a round trip" in top.summary
    assert "SYN retries" not in top.summary and 1.0 <= top.cost_s < 10.0
    assert "ip route get 198.18.9.9" in top.fix
    assert result.verdict == "failed"
    assert [f.explained_by for f in result.measurement_failures] == ["path-unreachable"]
