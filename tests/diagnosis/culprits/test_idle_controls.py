"""The idle probe's application keepalives in the diagnosis (crafted observations): an
HTTP/2 PING or an OpenSSH keepalive unanswered after a silence is the path forgetting; one
answered clearly longer clears the path; one answered as long as the transfer waited says
the server still works. And a clone starved of full-size segments on a path that forgot
it is no path-MTU black hole."""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.assembly import download_observations
from gitnetdiag.diagnosis.culprits.idlepath import (
    dropped_by_path,
    idle_kept_hint,
    path_bracket,
)
from gitnetdiag.diagnosis.culprits.mtu import forgotten_in_silence
from gitnetdiag.diagnosis.engine import rank_findings
from gitnetdiag.diagnosis.observations import ControlAnswer, IdlePathProbe
from tests.diagnosis.culprits.test_idlepath import _hung, _probe, case_path_idle_timeout
from tests.diagnosis.test_receiver_blackhole import STALLED

PING_OK = ControlAnswer(kind="h2-ping", silence_s=3.75, answered=True, round_trip_ms=51.0,
                        wait_s=1.5)
PING_LOST = ControlAnswer(kind="h2-ping", silence_s=4.25, answered=False, wait_s=1.5)
SSH_OK = ControlAnswer(kind="ssh-keepalive", silence_s=3.75, answered=True,
                       round_trip_ms=52.0, wait_s=1.5)
SSH_LOST = ControlAnswer(kind="ssh-keepalive", silence_s=4.25, answered=False, wait_s=1.5)


def _with(probe: IdlePathProbe, *controls: ControlAnswer) -> IdlePathProbe:
    return replace(probe, controls=controls)


def test_the_controls_tighten_the_bracket_and_are_cited() -> None:
    probe = _with(_probe("198.18.2.2:8443", low=3.0, high=4.0), PING_OK, PING_LOST)
    assert path_bracket(probe) == (3.75, 4.0)  # the keepalives' (3, 4) and the PING's
    obs = case_path_idle_timeout()
    obs = replace(obs, protocols={**obs.protocols, "h1": _hung(probe)})
    top = diagnose(obs).findings[0]
    assert top.id == "path-idle-timeout"
    values = {e.what: (e.value, e.unit, e.text) for e in top.evidence}
    assert values["HTTP/2 PING answered after this silence"] == (3.75, "s", "PING ACK came")
    assert values["HTTP/2 PING round trip"][:2] == (0.051, "s")
    assert values["HTTP/2 PING unanswered after this silence"][:2] == (4.25, "s")
    assert "HTTP/2 PING of HTTP/1.1 was answered after 3.8 s and not after 4.2 s" in top.summary


def test_an_unanswered_control_alone_is_the_path_forgetting() -> None:
    """Keepalives answered at every silence (a middlebox that answers them itself, or
    keeps its state on their account) while the SSH keepalive after 4.25 s was not."""
    probe = _with(_probe("198.18.2.2:22", low=10.0, high=None), SSH_OK, SSH_LOST)
    assert dropped_by_path(probe) and path_bracket(probe) == (3.75, 4.25)
    assert not dropped_by_path(_with(probe, SSH_OK))
    assert not dropped_by_path(replace(probe, new_connection_ok=False))  # the server is down


def test_a_control_answered_clearly_longer_clears_the_path() -> None:
    """Keepalives unanswered after 4 s but the PING answered after 8 s: the path kept the
    connection (something drops bare keepalive probes); the path is not blamed."""
    late = ControlAnswer(kind="h2-ping", silence_s=8.0, answered=True, round_trip_ms=50.0)
    probe = _with(_probe("198.18.2.2:8443", low=3.0, high=4.0), late)
    assert not dropped_by_path(probe)
    # Within the timers' noise (4.2 s against 4.0 s) it does not.
    near = replace(late, silence_s=4.2)
    assert dropped_by_path(_with(_probe("198.18.2.2:8443", low=3.0, high=4.0), near))


def test_a_control_answered_as_long_as_the_push_waited_says_the_server_works() -> None:
    obs = case_path_idle_timeout()
    alive = ControlAnswer(kind="ssh-keepalive", silence_s=12.0, answered=True,
                          round_trip_ms=50.0)
    kept = {name: replace(p, idle_path=_with(replace(
        p.idle_path, answered_up_to_s=12.0, unanswered_from_s=None, unanswered_probes=0),
        alive)) for name, p in obs.protocols.items() if p.idle_path is not None}
    hint = idle_kept_hint(replace(obs, protocols=kept))
    assert hint is not None and "SSH keepalive (keepalive@openssh.com) answered after 12" in hint
    assert "the server's own software answered" in hint and "still works" in hint
    assert "path-idle-timeout" not in [f.id for f in diagnose(replace(
        obs, protocols=kept)).findings]


def _clone_obs(probe: IdlePathProbe | None):  # type: ignore[no-untyped-def]
    return download_observations([STALLED], idle_paths={"h1": probe} if probe else {})


def test_a_starved_clone_on_a_path_that_forgot_it_is_no_black_hole() -> None:
    """The idle-state-drop clone: 884 B the largest segment before an 8 s silence, the pack
    after it dropped. The probe saw keepalives and PINGs unanswered after 4 s while a new
    connection worked: path-idle-timeout, and no path-mtu-blackhole."""
    forgot = _with(_probe("198.18.2.2:8443", low=3.75, high=4.0, silence_s=6.0),
                   PING_OK, PING_LOST)
    alone = [f.id for f in rank_findings(_clone_obs(None))[0]]
    assert alone[:1] == ["path-mtu-blackhole"]  # the starved evidence by itself
    obs = _clone_obs(forgot)
    assert forgotten_in_silence(obs, "h1")
    ids = [f.id for f in rank_findings(obs)[0]]
    assert "path-mtu-blackhole" not in ids, ids
    assert ids[:1] == ["path-idle-timeout"], ids


def test_a_black_hole_keeps_its_rank_when_every_small_packet_is_answered() -> None:
    """Under a real black hole the keepalives and the PING (small packets) are answered
    after every silence: the path kept the connection, the black hole stays first."""
    answered = ControlAnswer(kind="h2-ping", silence_s=6.0, answered=True, round_trip_ms=50.0)
    kept = _with(_probe("198.18.2.2:8443", low=6.0, high=None, silence_s=6.0), answered)
    obs = _clone_obs(kept)
    assert not forgotten_in_silence(obs, "h1")
    assert [f.id for f in rank_findings(obs)[0]][:1] == ["path-mtu-blackhole"]
