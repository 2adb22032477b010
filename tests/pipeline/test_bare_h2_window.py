"""Issue 33 item 5: a bare client-side capture of a push flat-lined by a 65535 B HTTP/2
window (TLS, nothing above TCP readable) ranks the window first, with or without a
timestamp stepping back mid-transfer, and the run's RTT is the handshake's."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitnetdiag.pipeline import diagnose_capture, observations_from_capture
from tests.pipeline.flatpush import RTT_S, FlatPush, flat_h2_push

WINDOW_CULPRIT = "h2-flow-control-window"


@pytest.fixture(scope="module")
def push() -> FlatPush:
    """4 MiB at about one 65535 B window per 57 ms round trip (~1.1 MB/s, ~3.9 s)."""
    return flat_h2_push()


VARIANTS = {
    "no step": lambda p: p,
    # The capture's clock steps back 10 s half a second into the upload and runs on: read
    # as before, every later frame was squeezed into one instant (a 0.6 s push, healthy).
    "clock stepped back": lambda p: p.clock_stepped_back(0.5, 10.0),
    # One frame alone stamped 10 s early: read as before, the ACK it is gave a 1 ms RTT
    # sample, a 47 ms "queue" above it, and bandwidth-limit first.
    "one frame early": lambda p: p.one_frame_early(1.5, 10.0),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_window_ranks_first(push: FlatPush, variant: str, tmp_path: Path) -> None:
    """The window culprit is first and costs most of the push, with a confidence that the
    flat plateau at HTTP/2's default window earns (it was 0.47 without a step, healthy
    with a clock step back, second behind bandwidth-limit with a frame stamped early)."""
    path = VARIANTS[variant](push).pcap(tmp_path / "push.pcap")
    diagnosis, warnings = diagnose_capture(path)
    assert diagnosis.verdict == "degraded", diagnosis.headline
    top = diagnosis.findings[0]
    assert top.id == WINDOW_CULPRIT, [f.id for f in diagnosis.findings]
    assert top.score >= 0.7
    (h2,) = diagnosis.protocols
    assert h2.duration_s is not None and h2.duration_s == pytest.approx(3.9, abs=0.15)
    assert top.cost_s >= 0.9 * h2.duration_s
    window = next(e for e in top.evidence if e.what.startswith("HTTP/2 window estimated"))
    assert window.value is not None and 65535 <= window.value <= 66846
    assert any("step backwards" in w for w in warnings) == (variant != "no step")


def test_the_runs_rtt_is_the_handshakes(push: FlatPush, tmp_path: Path) -> None:
    """RunInfo.rtt_s (and the report's RTT) come from the push connection's handshake."""
    observations, _ = observations_from_capture(push.pcap(tmp_path / "push.pcap"))
    assert observations.run.rtt_s == pytest.approx(RTT_S, abs=0.001)
    diagnosis, _ = diagnose_capture(push.pcap(tmp_path / "push.pcap"))
    assert diagnosis.environment.rtt_s == pytest.approx(RTT_S, abs=0.001)


def test_a_clock_step_back_keeps_the_transfer_and_its_round_trips(
        push: FlatPush, tmp_path: Path) -> None:
    """Across a 10 s step back the connection keeps its duration, its sender picture and
    its RTT samples (none across the step), and the warning says how it was read."""
    clean, _ = observations_from_capture(push.pcap(tmp_path / "clean.pcap"))
    stepped, warnings = observations_from_capture(
        push.clock_stepped_back(0.5, 10.0).pcap(tmp_path / "stepped.pcap"))
    before, after = clean.protocols["h2"], stepped.protocols["h2"]
    assert after.pushes[0].duration_s == pytest.approx(before.pushes[0].duration_s, abs=0.1)
    assert before.capture is not None and after.capture is not None
    assert after.capture.min_rtt_s == pytest.approx(RTT_S, abs=0.002)
    assert after.capture.median_rtt_s == pytest.approx(RTT_S, abs=0.002)
    assert after.capture.self_limited_share == pytest.approx(
        before.capture.self_limited_share, abs=0.02)
    assert "server side" not in after.capture.source
    assert any("1 clock step(s) back bridged" in w for w in warnings), warnings
