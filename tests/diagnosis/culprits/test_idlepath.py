"""``path-idle-timeout``: pushes that hang after the pack, told from a busy server by the idle
probe's keepalives (crafted observations)."""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.culprits.idlepath import (
    idle_kept_hint,
    joint_bracket,
    matching_middleboxes,
)
from gitnetdiag.diagnosis.idletimeouts import MIDDLEBOXES
from gitnetdiag.diagnosis.observations import (
    IdlePathProbe,
    Observations,
    ProtocolObservation,
    PushObservation,
)
from gitnetdiag.diagnosis.verdict import verdict_error
from gitnetdiag.errors import ExitCode
from tests.diagnosis.culprits.crafted import MB, Case, proto, run

HUNG = tuple(PushObservation(duration_s=12.0, bytes=MB, ok=False, error_kind="hung",
                        error_message="made no progress within 12 s") for _ in range(2))


def _probe(target: str, *, low: float | None = 3.0, high: float | None = 4.0,
           new_ok: bool = True, silence_s: float = 12.0) -> IdlePathProbe:
    return IdlePathProbe(source=f"idle probe of {target}", silence_s=silence_s,
                         answered_up_to_s=low, unanswered_from_s=high,
                         unanswered_probes=2 if high is not None else 0,
                         new_connection_ok=new_ok, new_connection_s=0.05 if new_ok else None)


def _hung(probe: IdlePathProbe | None) -> ProtocolObservation:
    return replace(proto(1.0, size=MB), pushes=HUNG, idle_path=probe)


def case_path_idle_timeout(**probe: object) -> Observations:
    """A router forgets connections after 4 s; an 8 s hook: HTTPS and SSH pushes hang after
    the pack; keepalives answered after 3 s, unanswered after 4 s; new connections work."""
    return Observations(run=run(repo_bytes=MB), protocols={
        "h1": _hung(_probe("198.18.2.2:8443", **probe)),  # type: ignore[arg-type]
        "ssh": _hung(_probe("198.18.2.2:22", **probe)),  # type: ignore[arg-type]
    })


CASES: dict[str, Case] = {
    "path-idle-timeout": (case_path_idle_timeout, ("receive.keepAlive", "ServerAliveInterval")),
}


def test_a_forgotten_connection_fails_the_run_with_n_bracketed() -> None:
    result = diagnose(case_path_idle_timeout())
    assert [f.id for f in result.findings][:1] == ["path-idle-timeout"]
    assert result.verdict == "failed", result.headline
    error = verdict_error(result.verdict, result.measurement_failures)
    assert error is not None and error.exit_code == ExitCode.NOT_MEASURED
    top = result.findings[0]
    unanswered = [e for e in top.evidence if e.what.startswith("keepalive unanswered")]
    answered = [e for e in top.evidence if e.what.startswith("keepalive answered")]
    assert [e.value for e in unanswered] == [4.0, 4.0]
    assert [e.value for e in answered] == [3.0, 3.0]
    assert "3.0 s to 4.0 s" in top.summary and "no RST or FIN" in top.summary
    assert "receive.keepAlive 1" in top.fix and "uploadpack.keepAlive" in top.fix
    assert "ServerAliveInterval" in top.fix
    assert "No known managed product" in top.fix
    assert "most likely the server" not in " ".join(f.hint for f in result.measurement_failures)
    assert all(f.explained_by == "path-idle-timeout" for f in result.measurement_failures
               if f.stage == "push")


def test_every_keepalive_answered_is_a_busy_server_not_the_path() -> None:
    """The server's kernel answers keepalives however long its hook runs: the stall stays
    unexplained (every HTTP/1.1 push hung: failed, cause not identified), and its hint says
    the path kept the connection."""
    obs = case_path_idle_timeout(low=12.0, high=None)
    assert "path-idle-timeout" not in [f.id for f in diagnose(obs).findings]
    # HTTP/1.1 alone hangs (SSH pushes fine): no common stall to blame the server by.
    obs = replace(obs, protocols={**obs.protocols, "ssh": proto(1.0, size=MB)})
    result = diagnose(obs)
    assert "path-idle-timeout" not in [f.id for f in result.findings]
    assert result.verdict == "failed", result.headline
    assert result.headline.endswith("cause not identified."), result.headline
    hints = [f.hint for f in result.measurement_failures if f.reference == "push-failed"]
    assert hints and all("the path keeps idle connections" in h for h in hints), hints


def test_a_failed_new_connection_is_no_proof_against_the_path() -> None:
    """Keepalives unanswered and no new connection either: the server or the whole path is
    down, not a middlebox's idle timeout."""
    result = diagnose(case_path_idle_timeout(new_ok=False))
    assert "path-idle-timeout" not in [f.id for f in result.findings]


def test_a_push_silent_shorter_than_the_answered_time_is_not_explained() -> None:
    result = diagnose(case_path_idle_timeout(silence_s=2.0))
    assert "path-idle-timeout" not in [f.id for f in result.findings]


def test_unanswered_from_the_first_rung_is_weaker_and_says_at_most() -> None:
    both = diagnose(case_path_idle_timeout()).findings[0]
    first = diagnose(case_path_idle_timeout(low=None, high=1.0)).findings[0]
    assert first.id == "path-idle-timeout" and "at most 1.0 s" in first.summary
    assert first.score < both.score


def test_pushes_that_passed_are_not_blamed() -> None:
    obs = case_path_idle_timeout()
    ok = replace(obs, protocols={**obs.protocols, "h1": replace(proto(1.0, size=MB),
                                                                idle_path=_probe("x:1"))})
    top = diagnose(ok).findings[0]
    assert top.id == "path-idle-timeout" and top.summary.startswith("SSH pushes hang")


def test_a_managed_balancers_timeout_is_named_when_it_matches() -> None:
    """350 s bracketed: the AWS NLB's TLS listener (fixed) and TCP listener (configurable)."""
    names = {m.id for m in matching_middleboxes(300.0, 400.0)}
    assert {"aws-nlb-tls", "aws-nlb-tcp"} <= names
    top = diagnose(case_path_idle_timeout(low=300.0, high=400.0, silence_s=900.0)).findings[0]
    assert "fixed by the provider" in top.fix and "tcp.idle_timeout.seconds" in top.fix
    assert "docs.aws.amazon.com" in top.fix


def test_the_middlebox_table_is_sourced_and_says_fixed_or_how() -> None:
    assert MIDDLEBOXES["aws-nlb-tls"].idle_timeout_s == 350
    assert MIDDLEBOXES["aws-nlb-tls"].configurable is False
    for entry in MIDDLEBOXES.values():
        assert entry.source.startswith("https://") and entry.idle_timeout_s > 0
        assert entry.configurable == bool(entry.setting)


def test_observations_round_trip_with_the_idle_probe() -> None:
    obs = case_path_idle_timeout()
    assert Observations.from_dict(obs.to_dict()) == obs


def case_clones_path_idle_timeout() -> Observations:
    """The same path under a fetch: the server prepares each clone's pack silently for 8 s;
    HTTPS and SSH clones stall after the pack request; the probe of each port brackets
    the 4 s timeout to a quarter second (3.75-4 s on one, 4-4.25 s on the other)."""
    stalled = tuple(replace(p, error_kind="hung", error_message="stalled waiting for the "
                            "server: nothing for 10.3 s") for p in HUNG)
    return Observations(
        run=replace(run(repo_bytes=MB), transfer="download", measured_by="fetch"),
        protocols={
            "h1": replace(_hung(_probe("198.18.2.2:8443", low=3.75, high=4.0, silence_s=10.0)),
                          pushes=stalled),
            "ssh": replace(_hung(_probe("198.18.2.2:22", low=4.0, high=4.25, silence_s=10.0)),
                           pushes=stalled),
        })


def test_clones_that_hang_after_the_pack_request_name_the_path_with_n() -> None:
    """(The verdict of a fetch reads its whole clones, which these push-shaped ones are not:
    the lab test, tests/acceptance/test_idle_path_lab.py, judges it.)"""
    result = diagnose(case_clones_path_idle_timeout())
    assert [f.id for f in result.findings][:1] == ["path-idle-timeout"], result.findings
    top = result.findings[0]
    # The two ports' brackets overlap in one point: the path forgets after about 4 s.
    assert "clones hang after the pack was asked for" in top.summary
    assert "about 4.0 s" in top.summary and "push" not in top.summary
    assert [e.what for e in top.evidence][:1] == [
        "HTTP/1.1 clone: silence after its pack request until given up"]
    # The server's keepalive during pack preparation first, then the client's own.
    assert top.fix.index("uploadpack.keepAlive 2") < top.fix.index("ServerAliveInterval 2")
    assert "receive.keepAlive" not in top.fix and "git's default is 5 s" in top.fix
    assert "AWS Network Load Balancer, TLS listener 350 s" in top.fix  # the data's values


def test_the_ports_brackets_join_where_they_overlap_else_span() -> None:
    assert joint_bracket([(3.75, 4.0), (4.0, 4.25)]) == (4.0, 4.0)
    assert joint_bracket([(3.0, 4.0), (3.5, 4.5)]) == (3.5, 4.0)
    # No overlap (each probe's own noise): both together, not an empty bracket.
    assert joint_bracket([(3.0, 3.5), (4.0, 4.5)]) == (3.0, 4.5)


def test_a_clone_whose_keepalives_were_answered_is_hinted_at_the_pack_preparation() -> None:
    obs = case_clones_path_idle_timeout()
    kept = {name: replace(p, idle_path=replace(p.idle_path, answered_up_to_s=10.0,
                                               unanswered_from_s=None, unanswered_probes=0))
            for name, p in obs.protocols.items() if p.idle_path is not None}
    hint = idle_kept_hint(replace(obs, protocols=kept))
    assert hint is not None and "as long as the clone waited" in hint
    assert "pack-objects" in hint and "--stall-timeout" in hint and "pre-receive" not in hint
