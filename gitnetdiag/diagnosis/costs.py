"""Costs that add up: what removing one limit would save on the measured push.

The detectors decide *whether* a culprit fired; this module, applied to their
findings before ranking, decides *how many seconds* the rate limits among them
cost, with one model for all of them::

    cost = measured upload time - predicted upload time with that limit removed

The prediction keeps every other known limit of the same protocol's push
(:class:`Limit`): the HTTP/2 window, the SSH channel window, the TCP receive
window (when the sender sat at it), congestion control under the measured
loss (the Mathis bound MSS / RTT x 1.22 / sqrt(p)) and the measured path
rate. The push then runs at the smallest of them after a slow-start ramp
(Linux starts at ten segments and doubles each round trip). Another
protocol's measured rate bounds the prediction too when that protocol does
not suffer the removed limit: it crossed the same path and server, so it
includes what no model knows (server ingest, client CPU).

Both times use the same basis as the measured push: a bounded push reports
the whole pack at its measured rate (no slow start, no ref advertisement or
server wait), a complete one its trace2 upload phase.

Shared seconds are counted once. ``path-latency`` only multiplies a window's
limit: when a window culprit also fired on that push, latency carries the
remainder, what a 20 ms endpoint would still save *after* the window fixes,
and says which culprit holds the rest (``Finding.shares_with``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from gitnetdiag.diagnosis.culprits._common import (
    AUTOTUNE_MAX_WINDOW_BYTES,
    LOSS_RATE,
    REFERENCE_RTT_S,
    RWND_LIMITED_SHARE,
    label,
)
from gitnetdiag.diagnosis.culprits.h2 import h2_push_cost_s
from gitnetdiag.diagnosis.measures import (
    DEFAULT_MSS_BYTES,
    path_rate_bytes_per_s,
    push_bytes,
    ramp_time_s,
    rtt_s,
    upload_rate_bytes_per_s,
    upload_s,
)
from gitnetdiag.diagnosis.model import Finding
from gitnetdiag.diagnosis.observations import PROTOCOL_ORDER, CaptureMetrics, Observations
from gitnetdiag.diagnosis.units import fmt_rate, fmt_s

MATHIS_C = 1.22
"""Constant of the Mathis et al. (1997) loss-limited rate for periodic loss."""
MIN_LOSS_SEGMENTS = 10
"""Retransmitted segments below which a push's loss rate bounds nothing in the model.

A rate from k events is known to about 1 / sqrt(k): three or four retransmissions
in a few thousand segments (a spurious timeout on a busy machine, one burst) say
nothing of the path's steady loss, and under the square root of the Mathis bound
they priced a clamped window's fix at half its measured gain (CI, 2026-11-27:
tcp-rmem-clamp predicted 4.6 s against 9.8 s measured). Ten keeps the estimate
within about a third; the lab's 2% loss gives hundreds."""

WINDOW_CULPRITS = (
    "h2-flow-control-window",
    "ssh-channel-window",
    "tcp-receive-window-clamp",
    "tcp-window-scaling-off",
)
"""Culprits whose limit is a window: rate = window / RTT, which latency multiplies."""
RATE_CULPRITS = (*WINDOW_CULPRITS, "packet-loss")
"""Culprits whose cost this module computes from the rate limits."""
LATENCY = "path-latency"
SLOW_START_ONLY = "TCP slow start alone, no other limit measured"


@dataclass(frozen=True, kw_only=True)
class Limit:
    """One ceiling on a push's upload rate."""

    culprits: tuple[str, ...]
    """The culprits whose fix removes it; empty for the path rate (not a fault)."""
    what: str
    """What it is, for the summary (``TCP receive window / RTT``)."""
    rate_bytes_per_s: float
    """The rate it allows at the measured RTT."""
    rtt_bound: bool
    """Whether the rate scales as 1 / RTT (windows, the Mathis bound), not a path rate."""
    window_bytes: float | None = None
    """The window, for window limits."""


@dataclass(frozen=True, kw_only=True)
class Prediction:
    """A culprit's cost on one protocol's push."""

    protocol: str
    """The protocol whose push the cost is measured on."""
    cost_s: float
    """Measured upload time minus the predicted one (never negative)."""
    predicted_s: float
    """Predicted upload time with the limit removed."""
    next_limit: str
    """What binds then, in words with its rate."""
    shares_with: str | None = None
    """The culprit that holds the rest of the seconds (see :func:`apply_costs`)."""


def mathis_rate(mss_bytes: float, rtt: float, loss: float) -> float:
    """Loss-limited TCP rate (Mathis et al. 1997): MSS / RTT x 1.22 / sqrt(p)."""
    return mss_bytes / rtt * MATHIS_C / math.sqrt(loss)


def protocol_limits(obs: Observations, name: str) -> list[Limit]:
    """Every known ceiling on one protocol's upload rate, at the measured RTT."""
    p = obs.protocols[name]
    rtt = rtt_s(obs, p)
    limits: list[Limit] = []
    if rtt is not None:
        c = p.capture
        windows: list[tuple[tuple[str, ...], str, float | None]] = [
            (("h2-flow-control-window",), "HTTP/2 window / RTT",
             p.h2_ledger.granted_window_bytes if name == "h2" and p.h2_ledger else None),
            (("ssh-channel-window",), "SSH channel window / RTT",
             p.ssh_ledger.initial_window_bytes if name == "ssh" and p.ssh_ledger else None)]
        if c is not None and (c.rwnd_limited_share or 0.0) >= RWND_LIMITED_SHARE:
            # Without window scaling the window cannot grow past 64 KiB whatever the
            # buffers: both culprits name this limit.
            windows.append((("tcp-receive-window-clamp", "tcp-window-scaling-off")
                            if c.window_scaling_off else ("tcp-receive-window-clamp",),
                            "TCP receive window / RTT", c.largest_window_bytes))
        limits += [Limit(culprits=culprits, what=what, rate_bytes_per_s=window / rtt,
                         rtt_bound=True, window_bytes=window)
                   for culprits, what, window in windows if window]
        if c is not None and c.retransmission_rate and _loss_events(c) >= MIN_LOSS_SEGMENTS:
            limits.append(Limit(
                culprits=("packet-loss",), what=f"cwnd under {c.retransmission_rate:.2%} loss",
                rate_bytes_per_s=mathis_rate(c.mss_bytes or DEFAULT_MSS_BYTES, rtt,
                                         c.retransmission_rate),
                rtt_bound=True))
    if (path := path_rate_bytes_per_s(obs)) is not None:
        limits.append(Limit(culprits=(), what="path rate", rate_bytes_per_s=path, rtt_bound=False))
    return limits


def _loss_events(c: CaptureMetrics) -> float:
    """Retransmitted segments: the capture's count, else bytes over the segment size."""
    counted = (c.timeout_retransmissions or 0) + (c.fast_retransmissions or 0)
    if counted:
        return counted
    return (c.retransmitted_bytes or 0) / (c.mss_bytes or DEFAULT_MSS_BYTES)


def _reference(obs: Observations, name: str, removed: set[str]) -> tuple[str, float] | None:
    """The fastest other protocol's measured rate, among those none of ``removed`` limits
    (:func:`_limited`)."""
    rates = [(other, upload_rate_bytes_per_s(obs.protocols[other])) for other in PROTOCOL_ORDER
             if other != name and other in obs.protocols
             and not _limited(obs, other, removed)]
    best = max(((other, rate) for other, rate in rates if rate is not None),
               key=lambda item: item[1], default=None)
    return (f"{label(best[0])} push", best[1]) if best is not None else None


def _limited(obs: Observations, name: str, removed: set[str]) -> bool:
    """One of ``removed`` limits ``name``'s push: in the model, or, for ``packet-loss``, by
    its retransmissions at the loss threshold even when they were too few events for the
    model to bound the rate (:data:`MIN_LOSS_SEGMENTS`). Such a push moved at its loss's
    rate, not at what the path would carry without it: it is no reference (CI, 2026-12-04:
    the HTTP/1.1 push's 14,480 B resent, 9.9 segments at the default MSS, were its 2.4% loss,
    and its 187.5 kB/s priced the loss of the other two at 0 s: `healthy` at 0.19-0.26 MB/s)."""
    if any(removed.intersection(limit.culprits) for limit in protocol_limits(obs, name)):
        return True
    c = obs.protocols[name].capture
    return ("packet-loss" in removed and c is not None
            and (c.retransmission_rate or 0.0) >= LOSS_RATE)


def predicted_upload_s(obs: Observations, name: str, removed: set[str], *,
                       rtt_scale: float = 1.0,
                       measured_references: bool = True) -> tuple[float, str] | None:
    """Upload time of ``name``'s push with the limits of ``removed`` culprits gone,
    and what binds then. ``rtt_scale`` scales the RTT (path-latency's nearer endpoint);
    other protocols' measured rates bound it only at the measured RTT."""
    p = obs.protocols[name]
    size, rtt = push_bytes(p), rtt_s(obs, p)
    if size is None or rtt is None:
        return None
    kept = [limit for limit in protocol_limits(obs, name)
            if not removed.intersection(limit.culprits)]
    rates = [(limit.rate_bytes_per_s / rtt_scale if limit.rtt_bound else limit.rate_bytes_per_s,
              limit.what) for limit in kept]
    model_rate, model_what = min(rates) if rates else (None, SLOW_START_ONLY)
    mss = (p.capture.mss_bytes if p.capture else None) or DEFAULT_MSS_BYTES
    seconds = ramp_time_s(size, model_rate, rtt * rtt_scale, mss)
    what = f"{model_what} {fmt_rate(model_rate)}" if model_rate else model_what
    use_references = measured_references and rtt_scale == 1.0
    reference = _reference(obs, name, removed) if use_references else None
    if reference is not None and size / reference[1] > seconds:
        seconds, what = size / reference[1], f"{reference[0]} {fmt_rate(reference[1])}"
    return seconds, what


def _small(limit: Limit) -> bool:
    """A window below the usual autotuning maximum: a setting to fix, which latency
    only multiplies. At or above it, latency is the lever and the window amplifies it."""
    return limit.window_bytes is not None and limit.window_bytes < AUTOTUNE_MAX_WINDOW_BYTES


def _removal_cost(obs: Observations, culprit: str, fired: set[str]) -> Prediction | None:
    """Seconds removing ``culprit``'s limit saves, on the protocol where it saves most.

    A window at the autotuning maximum while ``path-latency`` fired only amplifies the
    latency: it carries what raising it would still save at a 20 ms endpoint."""
    best: Prediction | None = None
    for name in PROTOCOL_ORDER:
        if name not in obs.protocols:
            continue
        p = obs.protocols[name]
        up, rtt = upload_s(p), rtt_s(obs, p)
        mine = [lim for lim in protocol_limits(obs, name) if culprit in lim.culprits]
        if up is None or rtt is None or not mine:
            continue
        predicted = predicted_upload_s(obs, name, {culprit})
        if predicted is None:
            continue
        cost, shares_with = max(0.0, up - predicted[0]), None
        amplifies = (LATENCY in fired and culprit in WINDOW_CULPRITS
                     and not any(_small(lim) for lim in mine) and rtt > REFERENCE_RTT_S)
        near_with = predicted_upload_s(obs, name, set(), rtt_scale=REFERENCE_RTT_S / rtt)
        near_without = predicted_upload_s(obs, name, {culprit}, rtt_scale=REFERENCE_RTT_S / rtt)
        if amplifies and near_with is not None and near_without is not None:
            cost, shares_with = max(0.0, near_with[0] - near_without[0]), LATENCY
        if best is None or cost > best.cost_s:
            best = Prediction(protocol=name, cost_s=cost, predicted_s=predicted[0],
                              next_limit=predicted[1], shares_with=shares_with)
    return best


def _latency_cost(obs: Observations, fired: set[str]) -> Prediction | None:
    """What a 20 ms endpoint saves once the fired window culprits are fixed, on the
    protocol where it saves most, and the window culprit holding the rest."""
    best: Prediction | None = None
    for name in PROTOCOL_ORDER:
        if name not in obs.protocols:
            continue
        p = obs.protocols[name]
        up, rtt = upload_s(p), rtt_s(obs, p)
        if up is None or rtt is None or rtt <= REFERENCE_RTT_S:
            continue
        limits = protocol_limits(obs, name)
        if not any(lim.window_bytes for lim in limits):
            continue  # latency multiplies window limits; the detector asks for one too
        owners = [culprit for lim in limits if _small(lim)
                  for culprit in lim.culprits if culprit in fired and culprit in WINDOW_CULPRITS]
        removed = set(owners)
        near = predicted_upload_s(obs, name, removed, rtt_scale=REFERENCE_RTT_S / rtt)
        here = predicted_upload_s(obs, name, removed, measured_references=False)
        if near is None or here is None or here[0] <= 0:
            continue
        # With window culprits fixed first, they hold the seconds latency multiplies and
        # latency keeps the gap that is left; else the measured upload shrinks as the model.
        cost = (max(0.0, here[0] - near[0]) if removed
                else up * max(0.0, 1.0 - near[0] / here[0]))
        if best is None or cost > best.cost_s:
            best = Prediction(protocol=name, cost_s=cost, predicted_s=near[0], next_limit=near[1],
                              shares_with=owners[0] if owners else None)
    return best


def _priced(obs: Observations, finding: Finding, fired: set[str]) -> Finding:
    """The finding with its cost from the one model, unchanged when the model has none."""
    if finding.id in RATE_CULPRITS and (
            prediction := _removal_cost(obs, finding.id, fired)) is not None:
        p, owner = obs.protocols[prediction.protocol], prediction.shares_with
        cost = prediction.cost_s
        if finding.id == "h2-flow-control-window":
            # The model prices a completed push; stalled pushes add theirs (this
            # replaces the detector's own estimate, built on the same rule).
            cost = h2_push_cost_s(obs, p, cost)
        text = (f"Without it the {label(prediction.protocol)} upload would take about "
                f"{fmt_s(prediction.predicted_s)} instead of {fmt_s(upload_s(p))} (then bound "
                f"by {prediction.next_limit}).")
        if owner is not None:
            text = (f"This window is already at the usual autotuning maximum: it amplifies "
                    f"{owner}, whose cost holds those seconds; at a {fmt_s(REFERENCE_RTT_S)} "
                    f"endpoint raising it would save {fmt_s(prediction.cost_s)}.")
    elif finding.id == LATENCY and (prediction := _latency_cost(obs, fired)) is not None:
        owner, cost = prediction.shares_with, prediction.cost_s
        if owner is None:
            text = (f"A {fmt_s(REFERENCE_RTT_S)} endpoint would upload in about "
                    f"{fmt_s(prediction.predicted_s)}.")
        else:
            text = (f"Latency here multiplies the {owner} limit, whose cost holds those "
                    f"seconds; after that fix a {fmt_s(REFERENCE_RTT_S)} endpoint would "
                    f"save only {fmt_s(prediction.cost_s)} more.")
    else:
        return finding
    return replace(finding, cost_s=round(max(0.0, cost), 3), summary=f"{finding.summary} {text}",
                   cost_protocol=prediction.protocol, shares_with=owner)


def apply_costs(obs: Observations, findings: Sequence[Finding]) -> list[Finding]:
    """The findings with the rate culprits' and path latency's costs from the one model."""
    fired = {f.id for f in findings}
    return [_priced(obs, finding, fired) for finding in findings]
