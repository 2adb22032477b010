"""HTTP/2 flow control culprits: crafted runs whose top-ranked finding is the culprit."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.culprits.h2 import h2_flow_control_window
from gitnetdiag.diagnosis.culprits.weights import weight
from gitnetdiag.diagnosis.observations import (
    ConfigFinding,
    H2Ledger,
    HostEvidence,
    Observations,
    ProtocolObservation,
    PushObservation,
)
from gitnetdiag.report.units import fmt_evidence_threshold, fmt_evidence_value
from tests.diagnosis import examples
from tests.diagnosis.culprits.crafted import (
    MB,
    Case,
    assert_ranks_first_with_its_fix,
    cap,
    proto,
    run,
)


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


def case_h2_buffer_below_a_frame() -> Observations:
    """The lab's h2-frame-settings fault: HAProxy ``tune.bufsize 8192``; every HTTP/2 push
    ends in "Empty reply from server", HTTP/1.1 through the same edge pushes."""
    failed = PushObservation(duration_s=0.2, bytes=MB, ok=False, error_kind="reset",
                        error_message="Empty reply from server")
    return Observations(
        run=run(),
        protocols={"h1": proto(3.0, capture=cap()),
                   "h2": ProtocolObservation(pushes=(failed,))},
        host=HostEvidence(config_findings=(
            ConfigFinding(setting="tune.bufsize", value="8192", file="haproxy.cfg", line=5),
        )),
    )


def test_a_buffer_below_one_frame_outranks_the_reset_it_causes() -> None:
    """The failed HTTP/2 pushes are the edge's too-small buffer, not a firewall: the finding
    cites the configured size against one 16384 B frame and names tune.bufsize."""
    findings = diagnose(case_h2_buffer_below_a_frame()).findings
    assert [f.id for f in findings][:2] == ["h2-frame-settings", "firewall-reset"]
    first = findings[0]
    assert "tune.bufsize" in first.fix and "http.version HTTP/1.1" in first.fix
    size = first.evidence[0]
    assert (size.value, size.unit, size.threshold, size.comparison) == (8192, "B", 16384, "<")
    assert size.source == "haproxy.cfg line 5"
    # Without the config line there is no evidence of the buffer: no such finding.
    bare = replace(case_h2_buffer_below_a_frame(), host=None)
    assert "h2-frame-settings" not in [f.id for f in diagnose(bare).findings]


CASES: dict[str, Case] = {
    "h2-flow-control-window": (
        case_h2_window,
        ("tune.h2.initial-window-size", "tune.h2.fe.initial-window-size", "H2WindowSize"),
    ),
    "h2-frame-settings": (case_h2_frames, ("tune.h2.max-frame-size",)),
}
"""Each culprit of the family, its crafted run and the settings its fix names."""


@pytest.mark.parametrize("culprit_id", list(CASES))
def test_culprit_ranks_first_with_its_fix(culprit_id: str) -> None:
    """The crafted run's top finding is the culprit, with numbers, evidence and the setting."""
    assert_ranks_first_with_its_fix(culprit_id, CASES[culprit_id])


def test_h2_window_evidence_cites_window_rtt_and_rates() -> None:
    """The HTTP/2 window finding quotes 65535, the RTT, window/RTT and the measured rate."""
    top = diagnose(case_h2_window()).findings[0]
    text = " ".join(
        f"{e.what} {fmt_evidence_value(e)} {fmt_evidence_threshold(e)}" for e in top.evidence
    )
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


def test_http2_that_only_hangs_is_reported_as_a_stall() -> None:
    """Every HTTP/2 push hung (no ledger, no rate): still a finding, worded as a stall."""
    hung = PushObservation(
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


def _bare_h2(self_limited: float, in_flight: int) -> Observations:
    """A bare capture: HTTP/2 alone, no ledger, no other transport to compare."""
    capture = cap(self_limited_share=self_limited, network_limited_share=1 - self_limited,
                  rwnd_limited_share=0.0, bytes_in_flight_median=in_flight,
                  bytes_in_flight_p95=in_flight, advertised_window_median_bytes=540_000,
                  advertised_window_max_bytes=570_000)
    return Observations(run=run(rtt_s=None),
                        protocols={"h2": proto(18.0, n=1, capture=capture)})


def test_bare_capture_rule_estimates_the_window_from_the_plateau() -> None:
    """Self-limited >= 70% with the window >= 4 x in flight: the HTTP/2 window, less sure
    than with a ledger, saying that the frames were not seen."""
    top = diagnose(_bare_h2(0.95, 65_535)).findings[0]
    assert top.id == "h2-flow-control-window"
    assert top.score < diagnose(case_h2_window()).findings[0].score
    assert "65535 B" in " ".join(fmt_evidence_value(e) for e in top.evidence)
    assert "--keylog" in top.summary
    assert "tune.h2.initial-window-size" in top.fix


@pytest.mark.parametrize(("in_flight", "signals"), [
    (65_535, ["capture-rate-at-plateau", "capture-flat-plateau", "capture-default-window"]),
    (66_000, ["capture-rate-at-plateau", "capture-flat-plateau", "capture-default-window"]),
    (90_000, ["capture-rate-at-plateau", "capture-flat-plateau"]),
    (130_000, ["capture-flat-plateau"]),
])
def test_bare_capture_rule_scores_the_shape_of_the_plateau(in_flight: int,
                                                           signals: list[str]) -> None:
    """Beside the waiting sender: the rate carried by one plateau per RTT (24 MB in 18 s,
    1.33 MB/s, is within 1.5x of a plateau up to 100 kB per 50 ms, not 130 kB), a flat
    line, and HTTP/2's default window (65535 B of DATA, up to 2% above it with the frames'
    and TLS records' bytes)."""
    hit = h2_flow_control_window(_bare_h2(0.95, in_flight))
    assert hit is not None
    assert hit.score == pytest.approx(
        weight("h2-flow-control-window", "capture-only")
        + sum(weight("h2-flow-control-window", s) for s in signals))


@pytest.mark.parametrize(("self_limited", "in_flight"), [(0.4, 65_535), (0.95, 300_000)])
def test_bare_capture_rule_needs_a_waiting_sender_and_an_open_window(
        self_limited: float, in_flight: int) -> None:
    ids = [f.id for f in diagnose(_bare_h2(self_limited, in_flight)).findings]
    assert "h2-flow-control-window" not in ids
