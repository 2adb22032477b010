"""Crafted observations the culprit tests build on: a healthy bulk connection,
completed pushes with trace2 phases, and the assertion every culprit case shares."""

from __future__ import annotations

from collections.abc import Callable

from gitnetdiag.diagnosis import Diagnosis, diagnose
from gitnetdiag.diagnosis.observations import (
    CaptureMetrics,
    Observations,
    ProtocolObservation,
    PushObservation,
    RunInfo,
    Trace2Phases,
)

MB = 24_000_000

Case = tuple[Callable[[], Observations], tuple[str, ...]]
"""A crafted run whose top finding is the culprit, and the settings its fix must name."""


def run(**kw: object) -> RunInfo:
    base: dict[str, object] = {"rtt_s": 0.05, "git_version": "2.43.0", "libcurl_version": "8.5.0"}
    base.update(kw)
    return RunInfo(**base)  # type: ignore[arg-type]


def cap(**kw: object) -> CaptureMetrics:
    """A healthy bulk connection unless overridden."""
    base: dict[str, object] = {
        "source": "capture conn 1",
        "handshake_rtt_s": 0.05,
        "window_scale": 7,
        "advertised_window_median_bytes": 6_000_000,
        "advertised_window_max_bytes": 6_291_456,
        "bytes_in_flight_median": 1_500_000,
        "bytes_in_flight_p95": 2_400_000,
        "rwnd_limited_share": 0.02,
        "network_limited_share": 0.3,
        "self_limited_share": 0.68,
        "retransmitted_bytes": 0,
        "retransmission_rate": 0.0,
    }
    base.update(kw)
    return CaptureMetrics(**base)  # type: ignore[arg-type]


def proto(
    upload_s: float,
    *,
    size: int = MB,
    n: int = 3,
    trace: dict[str, float] | None = None,
    **kw: object,
) -> ProtocolObservation:
    """``n`` completed pushes whose upload phase takes ``upload_s``."""
    phases = {"pack_objects_s": 0.2, "server_wait_s": 0.15, "ref_advertisement_s": 0.12}
    phases.update(trace or {})
    total = upload_s + sum(phases.values())
    pushes = tuple(PushObservation(duration_s=total * (1 + 0.02 * i), bytes=size) for i in range(n))
    return ProtocolObservation(
        pushes=pushes,
        trace2=Trace2Phases(upload_s=upload_s, **phases),
        **kw,  # type: ignore[arg-type]
    )


def three(upload_s: float, **kw: object) -> dict[str, ProtocolObservation]:
    return {name: proto(upload_s, **kw) for name in ("h1", "h2", "ssh")}  # type: ignore[arg-type]


def clamped(
    window: int, *, scale: int | None = 2, upload_s: float | None = None
) -> CaptureMetrics:
    return cap(
        window_scale=scale,
        advertised_window_median_bytes=window,
        advertised_window_max_bytes=window,
        bytes_in_flight_median=int(window * 0.97),
        bytes_in_flight_p95=window,
        rwnd_limited_share=0.9,
        network_limited_share=0.05,
        self_limited_share=0.05,
    )


def assert_ranks_first_with_its_fix(culprit_id: str, case: Case) -> None:
    """The crafted run's top finding is the culprit, with numbers, evidence and the setting;
    the run is degraded, or failed with the culprit as the headline's cause when every push
    of a protocol failed (a hang behind a black hole: issue 42's rule)."""
    make, settings = case
    obs = make()
    result: Diagnosis = diagnose(obs)
    failing = [name for name, p in obs.protocols.items()
               if p.pushes and not any(push.ok for push in p.pushes)]
    if failing:
        assert result.verdict == "failed", result.headline
        assert f" fail ({culprit_id}): " in result.headline, result.headline
    else:
        assert result.verdict == "degraded"
    top = result.findings[0]
    assert top.id == culprit_id, [(f.id, f.score, f.cost_s) for f in result.findings]
    assert 0 < top.score <= 1
    assert top.cost_s > 0
    assert any(ch.isdigit() for ch in top.summary)
    assert top.evidence and all(e.what and (e.value is not None or e.text) for e in top.evidence)
    for setting in settings:
        assert setting in top.fix or any(setting in e.source for e in top.evidence), setting
