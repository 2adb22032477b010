"""What every culprit family shares: thresholds, the :class:`Hit` a detector
returns, the :class:`Culprit` wrapper, and evidence from configs, failed
pushes, connection bursts and trace2 phases."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from gitnetdiag.analysis.tcpinfo import ReceiverTcpSummary
from gitnetdiag.diagnosis.calibration import Calibration
from gitnetdiag.diagnosis.culprits.fitted import FITTED
from gitnetdiag.diagnosis.culprits.weights import weight
from gitnetdiag.diagnosis.measures import (
    DEFAULT_MSS_BYTES,
    failed_pushes,
    push_duration_s,
    ramp_time_s,
    rtt_s,
)
from gitnetdiag.diagnosis.model import Comparison, Evidence, Finding, Quantity, Unit
from gitnetdiag.diagnosis.observations import (
    PROTOCOL_LABELS,
    PROTOCOL_ORDER,
    BurstResult,
    CaptureMetrics,
    ConfigFinding,
    Observations,
    ProtocolObservation,
    PushObservation,
)
from gitnetdiag.diagnosis.transfers import Direction, TransferObservation
from gitnetdiag.outcomes import FailureKind
from gitnetdiag.thresholds import SMALL_BACKLOG as SMALL_BACKLOG

T = TypeVar("T")

SLOWER_RATIO = 0.5
"""A protocol is "much slower" when its rate is below this share of the fastest other one."""
MATCHES_CAP_RATIO = 1.5
"""A measured rate "matches" a window cap when it is at most this multiple of window/RTT."""
SELF_LIMITED_SHARE = 0.5
"""TCP sender application-limited at least this share of the time."""
RWND_LIMITED_SHARE = 0.5
"""TCP sender receive-window-limited at least this share of the time."""
FLAT_RATIO = 0.8
"""In flight "flat at the window" when its median is at least this share of the window."""
LOSS_RATE = 0.005
"""Retransmission rate above which loss is a suspect (0.5%)."""
OUT_OF_ORDER_SHARE = 0.05
"""Without the sender's retransmissions (a clone without a capture), the share of the data
segments the receiver got out of order above which loss is a suspect. Each loss puts the
segments behind it out of order until its retransmission arrives (up to a round trip's
worth), so the share runs far above the loss rate; reordering alone adds some too."""
CLAMP_FALLBACK_WINDOW_BYTES = 1 << 20
"""Without a next limit, a receive window below this (1 MiB) is called clamped."""
AUTOTUNE_MAX_WINDOW_BYTES = 4 << 20
"""Windows this large are the usual autotuning maximum, not a clamp."""
REFERENCE_RTT_S = 0.02
"""RTT of a nearby endpoint, the baseline of ``path-latency``."""
SYN_RTO_S = 1.0
"""Linux initial SYN retransmission timeout: each dropped SYN or SYN-ACK costs at least this."""
MIN_RTO_S = 0.2
"""Linux minimum retransmission timeout."""
SLOW_PHASE_S = 1.0
"""A trace2 phase is slow when its excess over the RTT baseline is at least this."""
ZERO_CREDIT_SHARE = 0.2
"""A window (HTTP/2 credit, SSH channel) at zero for at least this share of the upload
held the sender back."""


@dataclass(frozen=True, kw_only=True)
class Hit:
    """What a detector found (the :class:`Finding` without id and title)."""

    score: float
    """Confidence 0..1."""
    cost_s: float
    """Estimated seconds it costs."""
    summary: str
    """One sentence with numbers."""
    evidence: tuple[Evidence, ...]
    """Facts behind it."""
    fix: str
    """The change, naming the setting."""
    cost_protocol: str | None = None
    """The protocol whose push ``cost_s`` was measured on, when it is one protocol's."""
    compares: tuple[str, str] | None = None
    """``(judged, reference)`` when its evidence compares one protocol's rate with another's
    (HTTP/2 against SSH): the engine checks their first hops (:mod:`~gitnetdiag.diagnosis.
    crosshop`); None when it compares none."""


@dataclass
class Tally:
    """Raw score and evidence a detector gathers signal by signal; each signal's weight is
    read by name from :data:`~gitnetdiag.diagnosis.culprits.weights.WEIGHTS`."""

    culprit: str
    """The culprit id whose row of the weights table the signals name."""
    score: float = 0.0
    """Raw score so far."""
    evidence: list[Evidence] = field(default_factory=list)
    """Facts so far, in the order the report shows them."""

    def add(self, signal: str, *items: Evidence) -> None:
        """One signal held: add its weight, and the facts behind it."""
        self.score += weight(self.culprit, signal)
        self.evidence.extend(items)

    def add_part(self, signal: str, part: float, *items: Evidence) -> None:
        """A signal held to a degree: add ``part`` (clipped to 0..1) of its weight."""
        self.score += weight(self.culprit, signal) * min(1.0, max(0.0, part))
        self.evidence.extend(items)

    def scale(self, signal: str) -> None:
        """A caveat held: multiply the score so far by its factor."""
        self.score *= weight(self.culprit, signal)

    def note(self, *items: Evidence) -> None:
        """Facts that add no weight (context: a config line, a count)."""
        self.evidence.extend(items)

    def hit(self, *, cost_s: float, summary: str, fix: str, cost_protocol: str | None = None,
            cap: str | None = None, compares: tuple[str, str] | None = None) -> Hit:
        """The :class:`Hit` of the score and facts gathered; ``cap`` names the weight the
        score may reach at most (then rounded to two places)."""
        score = self.score if cap is None else round(min(weight(self.culprit, cap), self.score), 2)
        return Hit(score=score, cost_s=cost_s, summary=summary, evidence=tuple(self.evidence),
                   fix=fix, cost_protocol=cost_protocol, compares=compares)


Detector = Callable[[Observations], Hit | None]

UPLOAD: frozenset[Direction] = frozenset({"upload"})
"""A culprit of pushes only (the client sends)."""
DOWNLOAD: frozenset[Direction] = frozenset({"download"})
"""A culprit of clones only (the server sends): it reads ``Observations.transfers``."""
BOTH: frozenset[Direction] = frozenset({"upload", "download"})
"""A culprit of either direction (loss, SYN drops, the backlog, a black hole, a filter...):
one detector, fed a download's clones push-shaped (:mod:`gitnetdiag.diagnosis.assembly`)."""


def fitted_calibration(culprit_id: str, direction: str) -> Calibration | None:
    """The shipped calibration of a culprit judging ``direction``: the table's entry for
    (direction, id), else its upload entry (a culprit of both directions is fitted on the
    push matrix; the fetch matrix fits the download-only culprits)."""
    return FITTED.get((direction, culprit_id)) or FITTED.get(("upload", culprit_id))


@dataclass(frozen=True, kw_only=True)
class Culprit:
    """A catalogue entry: stable id, title, detector and the directions it judges; call it
    with observations.

    The finding's score is the detector's raw score calibrated on the lab's fault matrix
    of the direction when :data:`~gitnetdiag.diagnosis.culprits.fitted.FITTED` has it
    (docs/culprits.md, "Fitted confidence"; :func:`fitted_calibration`), else the raw score
    itself, the hand-set weights (:data:`~gitnetdiag.diagnosis.culprits.fitted.HAND_WEIGHTED`
    says why).
    """

    id: str
    """Stable id (``h2-flow-control-window``)."""
    title: str
    """Short human name."""
    detect: Detector
    """The signature check."""
    directions: frozenset[Direction] = UPLOAD
    """The directions it judges (``Observations.run.transfer``): the engine runs it on
    those only."""
    fitted: bool = True
    """Use the shipped fitted confidence when there is one (False: the hand-set
    weights, what the fault matrix compares against)."""
    calibration: Calibration | None = None
    """A calibration to use instead of the shipped one (the matrix evaluating a new fit)."""

    def judges(self, direction: str) -> bool:
        """Whether it runs on a run of ``direction``."""
        return direction in self.directions

    def confidence(self, raw_score: float, direction: str = "upload") -> float:
        """The finding's score for a detector's raw score, 0..1."""
        calibration = self.calibration
        if calibration is None and self.fitted:
            calibration = fitted_calibration(self.id, direction)
        if calibration is None:
            return min(1.0, max(0.0, raw_score))
        return calibration.confidence(raw_score)

    def __call__(self, obs: Observations) -> Finding | None:
        hit = self.detect(obs)
        if hit is None:
            return None
        return Finding(
            id=self.id,
            title=self.title,
            score=round(self.confidence(hit.score, obs.run.transfer), 3),
            cost_s=round(max(0.0, hit.cost_s), 3),
            summary=hit.summary,
            evidence=hit.evidence,
            fix=hit.fix,
            cost_protocol=hit.cost_protocol,
            compares=hit.compares,
        )


def unclamped_cost_s(obs: TransferObservation, flight_bytes: float, rtt: float) -> float:
    """What a clone held by a window or a buffer loses against one that could keep
    ``flight_bytes`` in flight: its measured time less the same bytes sent by slow start
    from Linux's initial window, doubling each round trip up to ``flight_bytes`` a round
    trip (:func:`gitnetdiag.diagnosis.measures.ramp_time_s`, the push costs' ramp). Without
    the ramp a 6 MiB clone at 50 ms was priced as if it took 0.1 s once fixed; it took
    0.83-0.86 s (lab 2026-11-28), the ramp says 0.45 s."""
    unclamped = flight_bytes / rtt
    if unclamped <= (obs.rate_bytes_per_s or 0.0):
        return 0.0
    mss = float(obs.capture.mss_bytes if obs.capture and obs.capture.mss_bytes
                else DEFAULT_MSS_BYTES)
    return max(0.0, obs.measured_s - ramp_time_s(obs.moved_bytes, unclamped, rtt, mss))


def typical_max(items: Iterable[T], protocol: Callable[[T], str],
                cost: Callable[[T], float]) -> T | None:
    """The typical item of the costliest protocol: per protocol the item of median cost
    (the lower middle of an even count), then the protocol where that costs most; None
    for no items.

    The repeats of one clone vary (three clones through a clamped send buffer: 5.3, 5.5 and
    6.6 s; through an edge buffering to a slow disk 5.9, 23 and 34 s; lab 2026-11-28): the
    slowest one's cost priced its noise into the prediction (+42% and +55% against the gain
    ``compare`` measures, median against median, as the push's costs price each protocol's
    median push)."""
    groups: dict[str, list[T]] = {}
    for item in items:
        groups.setdefault(protocol(item), []).append(item)
    typical = [sorted(group, key=cost)[(len(group) - 1) // 2] for group in groups.values()]
    return max(typical, key=cost) if typical else None


def typical_costliest(transfers: Iterable[TransferObservation],
                      detect: Callable[[TransferObservation], Hit | None]) -> Hit | None:
    """The hit of a per-transfer detector over a download's transfers, priced on the
    typical clone of the costliest protocol (:func:`typical_max`); None when none fired."""
    hits = [(obs.protocol, hit) for obs in transfers if (hit := detect(obs)) is not None]
    chosen = typical_max(hits, lambda pair: pair[0], lambda pair: pair[1].cost_s)
    return chosen[1] if chosen is not None else None


def label(name: str) -> str:
    return PROTOCOL_LABELS.get(name, name)


def term(value: float, unit: Unit) -> Quantity:
    """One number of a threshold's basis."""
    return Quantity(value=value, unit=unit)


def above_zero(what: str, count: int, source: str, *, of: int | None = None) -> Evidence:
    """A count of events that should not happen at all (failures, retransmissions, RSTs)."""
    return Evidence(
        what=what, value=count, unit="count", of=of, threshold=0, comparison=">", source=source
    )


def suggest_window(bdp_bytes: float | None) -> int:
    """A power of two at least twice the BDP and at least 1 MiB (HTTP/2 caps at 2^31-1)."""
    target = max(2 * (bdp_bytes or 0), float(1 << 20))
    size = 1 << 20
    while size < target and size < (1 << 30):
        size <<= 1
    return min(size, (1 << 31) - 1)


def config_lines(obs: Observations, pattern: str) -> list[ConfigFinding]:
    if obs.host is None:
        return []
    regex = re.compile(pattern, re.IGNORECASE)
    return [c for c in obs.host.config_findings if regex.search(c.setting)]


def config_evidence(findings: list[ConfigFinding]) -> list[Evidence]:
    return [Evidence(what=f"configured {c.setting}", text=c.value,
                     source=f"{c.file} line {c.line}" if c.line is not None
                     else f"{c.file} (default)") for c in findings]


def failure_cost_s(obs: Observations, name: str,
                   kinds: Collection[str]) -> tuple[float, int, int]:
    """Expected seconds lost per push to failures of ``kinds``: share x (time lost + redo)."""
    p = obs.protocols[name]
    failed = [push for push in failed_pushes(p) if (push.error_kind or "other") in kinds]
    return lost_pushes_cost_s(obs, name, failed), len(failed), len(p.pushes)


def lost_pushes_cost_s(obs: Observations, name: str, failed: Sequence[PushObservation]
                       ) -> float:
    """Expected seconds lost per push of ``name`` to the ``failed`` ones among them."""
    p = obs.protocols[name]
    if not p.pushes or not failed:
        return 0.0
    redo = push_duration_s(p)
    if redo is None:
        durations = [d for d in (push_duration_s(o) for o in obs.protocols.values()) if d]
        redo = min(durations) if durations else 0.0
    # As with burst connections: whoever retries waits at least one initial RTO,
    # however fast the refusal came.
    lost: float = sum(max(push.duration_s, SYN_RTO_S) + redo for push in failed)
    return lost / len(p.pushes)


def burst_cost_s(burst: BurstResult, rtt: float | None, *, syn: bool = True) -> float:
    """Seconds a burst's connections lose: the larger of the mean per connection
    (SYN/SYN-ACK retransmissions at one initial RTO each, failures at their wait
    plus a redo) and the p99 - p50 connect spread (what the unlucky clients wait)."""
    if burst.concurrency <= 0:
        return 0.0
    # A failed connection loses the wait until it failed plus doing the operation
    # again, and a client retries no sooner than TCP's initial RTO (what a dropped
    # SYN costs), however fast the reset came.
    lost = burst.failed * (
        max(burst.connect_max_s or 0.0, SYN_RTO_S) + (burst.duration_p50_s or 0.0)
    )
    if syn:
        lost += (burst.syn_retransmissions + burst.synack_retransmissions) * SYN_RTO_S
    spread = 0.0
    if burst.connect_p99_s is not None:
        spread = burst.connect_p99_s - (burst.connect_p50_s or rtt or 0.0)
    return max(lost / burst.concurrency, spread)


def burst_evidence(burst: BurstResult) -> list[Evidence]:
    source = f"burst {label(burst.protocol)} x{burst.concurrency}"
    items = []
    if burst.failed:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(burst.failed_by_kind.items()) if v)
        failed = above_zero("failed connections", burst.failed, source, of=burst.concurrency)
        items.append(replace(failed, text=kinds))
    if burst.syn_retransmissions:
        items.append(above_zero("SYN retransmissions", burst.syn_retransmissions, source))
    if burst.synack_retransmissions:
        items.append(above_zero("SYN-ACK retransmissions", burst.synack_retransmissions, source))
    if burst.connect_p99_s is not None and burst.connect_p99_s >= SYN_RTO_S:
        connect = [
            Evidence(what="connect time p50", value=burst.connect_p50_s, unit="s", source=source),
            Evidence(
                what="connect time p99",
                value=burst.connect_p99_s,
                unit="s",
                threshold=SYN_RTO_S,
                comparison=">=",
                basis="one SYN timeout",
                source=source,
            ),
            Evidence(what="connect time max", value=burst.connect_max_s, unit="s", source=source),
        ]
        items += [item for item in connect if item.value is not None]
    return items


def burst_symptoms(burst: BurstResult) -> bool:
    return bool(
        burst.syn_retransmissions
        or burst.synack_retransmissions
        or burst.failed_by_kind.get(FailureKind.TIMEOUT)
        or burst.failed_by_kind.get(FailureKind.HUNG)
        or (burst.connect_p99_s is not None and burst.connect_p99_s >= SYN_RTO_S)
    )


def observed(obs: Observations, names: Iterable[str] = PROTOCOL_ORDER
             ) -> Iterator[tuple[str, ProtocolObservation]]:
    """The protocols of ``names`` the run measured, in that order, with their observations."""
    return ((name, obs.protocols[name]) for name in names if name in obs.protocols)


def captured(obs: Observations) -> Iterator[tuple[str, ProtocolObservation, CaptureMetrics]]:
    """The measured protocols with a capture, canonical order: name, observation, capture."""
    return ((name, p, p.capture) for name, p in observed(obs) if p.capture is not None)


def phase_values(obs: Observations, attr: str,
                 names: Iterable[str] = PROTOCOL_ORDER) -> list[tuple[str, float]]:
    """Each protocol's trace2 phase ``attr`` where measured, in the order of ``names``."""
    return [(name, float(value)) for name, p in observed(obs, names)
            if p.trace2 is not None and (value := getattr(p.trace2, attr)) is not None]


@dataclass(frozen=True, kw_only=True)
class PhaseExcess:
    """A server-side phase beyond the round trips it needs, on the protocol where it was
    the least (a server-side step delays every transport alike)."""

    excess_s: float
    """That least excess, at least 0."""
    protocol: str | None
    """Where it was measured: the culprit's ``cost_protocol``."""
    values: list[tuple[str, float]]
    """Each protocol's phase, canonical order."""


def phase_excess(obs: Observations, attr: str, rtts: Mapping[str, float]) -> PhaseExcess:
    """``attr`` of each protocol's trace2 phases minus the round trips that protocol needs
    for it (``rtts[name]``, else ``rtts["*"]``), at the least."""
    values = phase_values(obs, attr)
    if not values:
        return PhaseExcess(excess_s=0.0, protocol=None, values=[])
    rtt = rtt_s(obs) or 0.0
    # A server-side step (a hook, an auth check) delays every transport alike, so the
    # fastest transport bounds it; slower ones may add client-side buffering (an SSH
    # upload "ends" when git has handed the pack to ssh, long before it is on the wire).
    excess, name = min((v - rtts.get(n, rtts["*"]) * rtt, n) for n, v in values)
    return PhaseExcess(excess_s=max(0.0, excess), protocol=name, values=values)


def storage_slowness(obs: Observations) -> float | None:
    """How far below the reference the slowest IOPS figure is (0..1), ``None`` if not slow."""
    s = obs.storage
    if s is None:
        return None
    measured = [v for v in (s.read_iops, s.write_iops) if v is not None]
    if not measured or min(measured) >= s.reference_iops:
        return None
    return 1.0 - min(measured) / s.reference_iops


def phase_evidence(
    values: list[tuple[str, float]],
    what: str,
    *,
    threshold: float | None = None,
    comparison: Comparison | None = ">=",
    basis: str = "",
    basis_terms: tuple[Quantity, ...] = (),
) -> list[Evidence]:
    """One item per protocol's trace2 phase, all against the same threshold."""
    return [
        Evidence(
            what=f"{label(n)}: {what}",
            value=v,
            unit="s",
            threshold=threshold,
            comparison=comparison if threshold is not None else None,
            basis=basis,
            basis_terms=basis_terms,
            source=f"trace2 ({n})",
        )
        for n, v in values
    ]


# Evidence blocks several detectors show alike.


def slower_than(what: str, rate: float | None, other: tuple[str, float], source: str, *,
                ratio: float = SLOWER_RATIO) -> Evidence:
    """A protocol's upload rate below ``ratio`` of the fastest other protocol's."""
    return Evidence(
        what=what,
        value=rate,
        unit="B/s",
        threshold=ratio * other[1],
        comparison="<",
        basis=f"{{}} of {label(other[0])} {{}}",
        basis_terms=(term(ratio, "ratio"), term(other[1], "B/s")),
        source=source,
    )


def self_limited(what: str, cap: CaptureMetrics) -> Evidence:
    """The TCP sender had nothing to send (waiting on the layer above) most of the time."""
    return Evidence(what=what, value=cap.self_limited_share, unit="ratio",
                    threshold=SELF_LIMITED_SHARE, comparison=">=", source=cap.source)


def rwnd_limited(name: str, cap: CaptureMetrics) -> Evidence:
    """The TCP sender sat at the receiver's advertised window most of the time."""
    return Evidence(what=f"{label(name)}: sender receive-window-limited",
                    value=cap.rwnd_limited_share, unit="ratio", threshold=RWND_LIMITED_SHARE,
                    comparison=">=", source=cap.source)


def share_of_upload(what: str, seconds: float, upload: float | None, source: str, *,
                    share: float = ZERO_CREDIT_SHARE, comparison: Comparison = ">=") -> Evidence:
    """Seconds of the upload against ``share`` of it (above 0 when the upload time is
    unknown): time at a zero window over a fifth of the upload, and the like."""
    if not upload:
        return Evidence(what=what, value=seconds, unit="s", threshold=0, comparison=">",
                        source=source)
    return Evidence(what=what, value=seconds, unit="s", threshold=share * upload,
                    comparison=comparison, basis="{} of the upload {}",
                    basis_terms=(term(share, "ratio"), term(upload, "s")), source=source)


def below_bdp(window: float, bdp: float | None) -> bool:
    """A window is small: below the BDP, or below the 1 MiB fallback when no BDP is known."""
    return window < bdp if bdp is not None else window < CLAMP_FALLBACK_WINDOW_BYTES


def window_below(what: str, window: float, bdp: float | None, source: str, *,
                 basis: str = "", basis_terms: tuple[Quantity, ...] = ()) -> Evidence:
    """A window below the BDP, or below the 1 MiB fallback when no BDP is known."""
    return Evidence(what=what, value=window, unit="B",
                    threshold=bdp if bdp is not None else CLAMP_FALLBACK_WINDOW_BYTES,
                    comparison="<", basis=basis, basis_terms=basis_terms, source=source)


def rate_vs_window(what: str, rate: float | None, window: float, rtt: float, source: str, *,
                   text: str = "") -> Evidence:
    """A measured rate beside what a window allows, window / RTT."""
    return Evidence(what=what, value=rate, unit="B/s", text=text, threshold=window / rtt,
                    basis="window / RTT = {} / {}",
                    basis_terms=(term(window, "B"), term(rtt, "s")), source=source)


def flight_in_window(what: str, flight: float, window: float, share: float,
                     source: str) -> Evidence:
    """A download's bytes per round trip (rate x RTT) at most ``share`` of the window the
    client advertised: the client's window did not bind."""
    basis = ("half of the client's advertised window {}" if share == 0.5
             else "{} of the client's advertised window {}")
    terms = (term(window, "B"),) if share == 0.5 else (term(share, "ratio"), term(window, "B"))
    return Evidence(what=what, value=flight, unit="B", threshold=share * window,
                    comparison="<=", basis=basis, basis_terms=terms, source=source)


def no_queue(tcp: ReceiverTcpSummary, factor: float) -> Evidence | None:
    """No queue on the path of a download: the receiver's median RTT within ``factor`` of
    the minimum (None when it is above, or either is unknown)."""
    median, least = tcp.median_rtt_s, tcp.min_rtt_s
    if median is None or not least or median > factor * least:
        return None
    return Evidence(what="receiver's median RTT (no queue on the path)", value=median,
                    unit="s", threshold=factor * least, comparison="<=",
                    basis=f"{factor:g} x the minimum RTT {{}}", basis_terms=(term(least, "s"),),
                    source=f"{tcp.source} rcv_rtt, minrtt")
