"""Issue 24: a measurement is a measurement only above a floor.

A push too small to give a rate is ``too-small``, never healthy; a stall common to
two protocols is no evidence for one protocol's flow control; the hint of an
unexplained stall fits the evidence the run already has.
"""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.diagnosis.engine import diagnose
from gitnetdiag.diagnosis.observations import Observations, ProtocolObservation, PushObservation
from gitnetdiag.thresholds import MIN_RATE_BYTES
from tests.diagnosis.examples import PUSH_BYTES, healthy, slow_h2_edge


def _hung(seconds: float = 2.0) -> tuple[PushObservation, ...]:
    return (PushObservation(duration_s=seconds, bytes=PUSH_BYTES, ok=False, error_kind="hung",
                       error_message="no progress until the 2 s timeout"),)


def _with_pushes(obs: Observations, **pushes: tuple[PushObservation, ...]) -> Observations:
    protocols = {name: replace(p, pushes=pushes.get(name, p.pushes))
                 for name, p in obs.protocols.items()}
    return replace(obs, protocols=protocols)


def test_tiny_pushes_are_too_small_not_healthy() -> None:
    """433 B pushes in 0.4 s: the verdict is failed, each protocol too-small with a size."""
    obs = healthy()
    tiny = {name: (PushObservation(duration_s=0.4, bytes=433),) for name in obs.protocols}
    diagnosis = diagnose(_with_pushes(obs, **tiny))
    assert diagnosis.verdict == "failed"
    assert diagnosis.measured_protocols == ()
    refs = {(f.protocol, f.reference) for f in diagnosis.measurement_failures}
    assert refs == {(name, "too-small") for name in obs.protocols}
    first = diagnosis.measurement_failures[0]
    assert "433 B" in first.message and "--size 1MiB" in first.hint


def test_a_push_at_the_floor_is_a_measurement() -> None:
    """Exactly the floor is enough; one byte under is not."""
    obs = healthy()
    at_floor = {name: (PushObservation(duration_s=0.4, bytes=MIN_RATE_BYTES),) for name in obs.protocols}
    assert diagnose(_with_pushes(obs, **at_floor)).verdict != "failed"
    under = {name: (PushObservation(duration_s=0.4, bytes=MIN_RATE_BYTES - 1),)
             for name in obs.protocols}
    assert diagnose(_with_pushes(obs, **under)).verdict == "failed"


def test_invalid_durations_measure_nothing() -> None:
    """A saved observation with a zero or NaN duration is not a healthy measurement."""
    obs = healthy()
    for duration in (0.0, float("nan"), float("inf")):
        broken = {name: (PushObservation(duration_s=duration, bytes=PUSH_BYTES),)
                  for name in obs.protocols}
        diagnosis = diagnose(_with_pushes(obs, **broken))
        assert diagnosis.verdict == "failed", duration


def test_h2_window_not_blamed_when_http11_hung_alike() -> None:
    """Both HTTP versions hung behind a slow hook: the small HTTP/2 window is not the cause."""
    alone = _with_pushes(slow_h2_edge(), h2=_hung())
    assert "h2-flow-control-window" in [f.id for f in diagnose(alone).findings]
    both = _with_pushes(slow_h2_edge(), h1=_hung(), h2=_hung())
    diagnosis = diagnose(both)
    assert "h2-flow-control-window" not in [f.id for f in diagnosis.findings]
    assert "h2-flow-control-window" in [f.id for f in diagnosis.dropped]
    assert diagnosis.verdict != "healthy"


def test_common_stall_hint_points_at_the_server() -> None:
    """Every protocol stalled with capture and ledgers on: the hint names the common cause,
    not 'measure with packet capture and the native probes'."""
    obs = slow_h2_edge()
    obs = replace(obs, protocols={"h1": replace(obs.protocols["h1"], pushes=_hung()),
                                  "h2": replace(obs.protocols["h2"], pushes=_hung())},
                  host=None)
    diagnosis = diagnose(obs)
    # Every push of each hung: failed protocols (issue 42), each failure a hang.
    assert diagnosis.verdict == "failed"
    stalls = [f for f in diagnosis.measurement_failures if f.kind == "hung"]
    assert [f.protocol for f in stalls] == ["h1", "h2"], diagnosis.measurement_failures
    for failure in stalls:
        assert failure.hint.startswith("HTTP/1.1 and HTTP/2 stalled alike"), failure.hint
        assert "packet capture (root)" not in failure.hint


def test_stall_with_capture_does_not_ask_for_one() -> None:
    """A git:// push stalled: without a capture the hint asks for one; with its capture
    recorded (git:// has no ledger) it points at the run's files instead."""
    capture = slow_h2_edge().protocols["h1"].capture

    def hint(p: ProtocolObservation) -> str:
        obs = replace(healthy(), protocols={"git": p}, host=None)
        hints = [f.hint for f in diagnose(obs).measurement_failures if f.kind == "hung"]
        assert hints, diagnose(obs).measurement_failures
        return hints[0]

    assert "packet capture (root)" in hint(ProtocolObservation(pushes=_hung()))
    assert hint(ProtocolObservation(pushes=_hung(), capture=capture)).startswith(
        "the capture and ledgers show no known culprit")
