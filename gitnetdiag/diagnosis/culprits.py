"""The culprit catalogue: one small detector per id, all registered in :data:`CULPRITS`.

A detector reads :class:`Observations` and returns a :class:`Hit` (score,
cost, summary, evidence, fix) or ``None``; :class:`Culprit` wraps it into a
:class:`Finding`. Costs are physical estimates in seconds on a typical push
of the affected protocol (bursts: expected seconds per connection), built on
the rule of thumb

    upload rate <= min(HTTP/2 windows, SSH channel window, TCP receive window, cwnd) / RTT

so a window culprit's cost is the measured upload time minus the time the
same bytes take at the *next* limit (the fastest other protocol, the TCP
window / RTT, or the path rate). docs/culprits.md lists every signature.
Adding a culprit touches this file and its test.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from gitnetdiag.diagnosis.measures import (
    best_other_rate,
    failed_pushes,
    ok_pushes,
    path_rate_bytes_s,
    protocol_rates,
    push_bytes,
    push_duration_s,
    rtt_s,
    saved_time_s,
    tcp_window_rate,
    upload_rate_bytes_s,
    upload_s,
)
from gitnetdiag.diagnosis.model import Evidence, Finding
from gitnetdiag.diagnosis.observations import (
    PROTOCOL_LABELS,
    PROTOCOL_ORDER,
    BurstResult,
    ConfigFinding,
    Observations,
)
from gitnetdiag.diagnosis.units import fmt_bytes, fmt_rate, fmt_s, fmt_share
from gitnetdiag.thresholds import SMALL_BACKLOG

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


Detector = Callable[[Observations], Hit | None]


@dataclass(frozen=True, kw_only=True)
class Culprit:
    """A catalogue entry: stable id, title and detector; call it with observations."""

    id: str
    """Stable id (``h2-flow-control-window``)."""
    title: str
    """Short human name."""
    detect: Detector
    """The signature check."""

    def __call__(self, obs: Observations) -> Finding | None:
        hit = self.detect(obs)
        if hit is None:
            return None
        return Finding(
            id=self.id,
            title=self.title,
            score=round(min(1.0, max(0.0, hit.score)), 3),
            cost_s=round(max(0.0, hit.cost_s), 3),
            summary=hit.summary,
            evidence=hit.evidence,
            fix=hit.fix,
        )


def _label(name: str) -> str:
    return PROTOCOL_LABELS.get(name, name)


def _suggest_window(bdp_bytes: float | None) -> int:
    """A power of two at least twice the BDP and at least 1 MiB (HTTP/2 caps at 2^31-1)."""
    target = max(2 * (bdp_bytes or 0), float(1 << 20))
    size = 1 << 20
    while size < target and size < (1 << 30):
        size <<= 1
    return min(size, (1 << 31) - 1)


def _config(obs: Observations, pattern: str) -> list[ConfigFinding]:
    if obs.host is None:
        return []
    regex = re.compile(pattern, re.IGNORECASE)
    return [c for c in obs.host.config_findings if regex.search(c.setting)]


def _config_evidence(findings: list[ConfigFinding]) -> list[Evidence]:
    items = []
    for c in findings:
        where = f"{c.file} line {c.line}" if c.line is not None else f"{c.file} (default)"
        items.append(Evidence(what=f"configured {c.setting}", value=c.value, source=where))
    return items


def _failure_cost_s(obs: Observations, name: str, kinds: set[str]) -> tuple[float, int, int]:
    """Expected seconds lost per push to failures of ``kinds``: share x (time lost + redo)."""
    p = obs.protocols[name]
    failed = [push for push in failed_pushes(p) if (push.error_kind or "other") in kinds]
    if not p.pushes or not failed:
        return 0.0, 0, len(p.pushes)
    redo = push_duration_s(p)
    if redo is None:
        durations = [d for d in (push_duration_s(o) for o in obs.protocols.values()) if d]
        redo = min(durations) if durations else 0.0
    # As with burst connections: whoever retries waits at least one initial RTO,
    # however fast the refusal came.
    lost = sum(max(push.duration_s, SYN_RTO_S) + redo for push in failed)
    return lost / len(p.pushes), len(failed), len(p.pushes)


# --------------------------------------------------------------------- windows


def _h2_window(obs: Observations) -> Hit | None:
    p = obs.protocols.get("h2")
    if p is None:
        return None
    rtt = rtt_s(obs, p)
    size = push_bytes(p)
    h2_rate = upload_rate_bytes_s(p)
    other = best_other_rate(obs, "h2")
    cap, ledger = p.capture, p.h2_ledger
    evidence: list[Evidence] = []
    score = 0.0

    windows = []
    if ledger is not None:
        windows = [
            w
            for w in (ledger.server_initial_window_bytes, ledger.connection_window_bytes)
            if w is not None and w > 0
        ]
    window = min(windows) if windows else None

    next_limit: tuple[str, float] | None = None
    if other is not None:
        next_limit = (f"{_label(other[0])} push", other[1])
    elif (tcp := tcp_window_rate(obs, p)) is not None:
        next_limit = ("TCP receive window / RTT", tcp)
    elif (path := path_rate_bytes_s(obs)) is not None:
        next_limit = ("path rate", path)

    slower = h2_rate is not None and other is not None and h2_rate < SLOWER_RATIO * other[1]
    if slower and other is not None and h2_rate is not None:
        score += 0.35
        evidence.append(
            Evidence(
                what="HTTP/2 upload rate",
                value=fmt_rate(h2_rate),
                threshold=f"< {SLOWER_RATIO:.0%} of {_label(other[0])} {fmt_rate(other[1])}",
                source="pushes (trace2 upload phase)" if p.trace2 else "pushes",
            )
        )
    if cap is not None and (cap.self_limited_share or 0.0) >= SELF_LIMITED_SHARE:
        score += 0.15
        evidence.append(
            Evidence(
                what="TCP sender self-limited (waiting on HTTP/2, not TCP)",
                value=fmt_share(cap.self_limited_share),
                threshold=f">= {SELF_LIMITED_SHARE:.0%} of the upload",
                source=cap.source,
            )
        )
    if (
        cap is not None
        and cap.advertised_window_median_bytes
        and cap.bytes_in_flight_median
        and cap.advertised_window_median_bytes >= 2 * cap.bytes_in_flight_median
    ):
        score += 0.1
        evidence.append(
            Evidence(
                what="TCP window wide open: advertised vs in flight (median)",
                value=f"{fmt_bytes(cap.advertised_window_median_bytes)} vs "
                f"{fmt_bytes(cap.bytes_in_flight_median)}",
                threshold="advertised >= 2 x in flight",
                source=cap.source,
            )
        )

    predicted: float | None = None
    small_window = False
    if window is not None and rtt is not None and ledger is not None:
        predicted = window / rtt
        bdp = next_limit[1] * rtt if next_limit else None
        small_window = window < bdp if bdp is not None else window < CLAMP_FALLBACK_WINDOW_BYTES
        if small_window:
            score += 0.25
            evidence.append(
                Evidence(
                    what="HTTP/2 send window granted by the server (stream/connection)",
                    value=f"{window} B",
                    threshold=f"< BDP {fmt_bytes(bdp)} ({next_limit[0] if next_limit else ''}"
                    " x RTT)"
                    if bdp is not None
                    else f"< {fmt_bytes(CLAMP_FALLBACK_WINDOW_BYTES)}",
                    source=ledger.source,
                )
            )
            evidence.append(
                Evidence(
                    what="measured HTTP/2 upload rate vs what the window allows",
                    value=fmt_rate(h2_rate) if h2_rate else "no completed push",
                    threshold=f"window / RTT = {window} B / {fmt_s(rtt)} = {fmt_rate(predicted)}",
                    source=f"{ledger.source}; RTT from run",
                )
            )
            if h2_rate is not None and h2_rate <= MATCHES_CAP_RATIO * predicted:
                score += 0.1
        zero = max(ledger.stream_zero_credit_s or 0.0, ledger.connection_zero_credit_s or 0.0)
        up = upload_s(p)
        if zero > 0 and (up is None or zero >= 0.2 * up):
            score += 0.15
            evidence.append(
                Evidence(
                    what="time at zero HTTP/2 send credit",
                    value=fmt_s(zero),
                    threshold=f">= 20% of the upload ({fmt_s(up)})" if up else "> 0",
                    source=ledger.source,
                )
            )
        if ledger.window_updates is not None:
            evidence.append(
                Evidence(
                    what="WINDOW_UPDATE frames from the server",
                    value=str(ledger.window_updates),
                    source=ledger.source,
                )
            )

    stalled = [push for push in failed_pushes(p) if push.error_kind in ("hung", "timeout")]
    others_ok = any(ok_pushes(o) for n, o in obs.protocols.items() if n != "h2")
    if stalled and (small_window or (others_ok and score > 0) or (others_ok and not ok_pushes(p))):
        # Alone (HTTP/2 only hangs, the other transports push fine) the stall is
        # still the field's HTTP/2 edge story, reported as a stall.
        score += 0.2 if score > 0 else 0.4
        evidence.append(
            Evidence(
                what="HTTP/2 pushes that stalled with no progress",
                value=f"{len(stalled)} of {len(p.pushes)}",
                threshold="0",
                source="pushes: " + (stalled[0].error_message or stalled[0].error_kind or ""),
            )
        )

    # A slower HTTP/2 push is not blamed on its flow control when the ledger shows a
    # window above the BDP, or when the capture shows TCP bound by the network
    # (losses, cwnd) rather than waiting on HTTP/2: that is packet-loss's evidence.
    window_rules_out = window is not None and rtt is not None and not small_window
    network_bound = cap is not None and (cap.network_limited_share or 0.0) > (
        cap.self_limited_share or 0.0
    )
    if window_rules_out or network_bound:
        slower = False
    if not (slower or small_window or (stalled and score > 0)):
        return None

    # Expected seconds per push: completed pushes lose the rate gap, stalled ones
    # their wait plus a redo.
    slow_cost = 0.0
    if size is not None and h2_rate is not None and next_limit is not None:
        up = upload_s(p)
        assert up is not None
        slow_cost = saved_time_s(size, up, next_limit[1]) or 0.0
    elif ledger is not None:
        slow_cost = max(ledger.stream_zero_credit_s or 0.0, ledger.connection_zero_credit_s or 0.0)
    stall_cost, _, _ = _failure_cost_s(obs, "h2", {"hung", "timeout"})
    cost = slow_cost * len(ok_pushes(p)) / max(1, len(p.pushes)) + stall_cost

    parts = []
    if h2_rate is not None and other is not None:
        parts.append(
            f"HTTP/2 pushes uploaded at {fmt_rate(h2_rate)}, {other[1] / h2_rate:.1f}x slower "
            f"than {_label(other[0])} ({fmt_rate(other[1])})"
        )
    elif h2_rate is not None:
        parts.append(f"HTTP/2 pushes uploaded at {fmt_rate(h2_rate)}")
    if window is not None and predicted is not None and rtt is not None:
        parts.append(
            f"a {window} B HTTP/2 window over {fmt_s(rtt)} RTT allows only {fmt_rate(predicted)}"
        )
    if stalled:
        parts.append(
            f"{len(stalled)} of {len(p.pushes)} HTTP/2 pushes stalled with no progress "
            f"until the {fmt_s(max(s.duration_s for s in stalled))} timeout"
        )
    if not parts:
        parts.append("HTTP/2 flow control throttles the upload")
    bdp_text = ""
    if next_limit is not None and rtt is not None:
        bdp_text = f" (BDP here {fmt_bytes(next_limit[1] * rtt)})"
    suggest = _suggest_window(next_limit[1] * rtt if next_limit and rtt else None)
    evidence.extend(
        _config_evidence(
            _config(obs, r"initial-window-size|H2WindowSize|http2_body_preread_size|window_size")
        )
    )
    return Hit(
        score=score,
        cost_s=cost,
        summary="; ".join(parts) + ".",
        evidence=tuple(evidence),
        fix=(
            "Raise the HTTP/2 receive window on the server or edge that terminates HTTP/2 "
            f"above the BDP{bdp_text}, e.g. {suggest}: HAProxy `tune.h2.initial-window-size` "
            "(2.8+: `tune.h2.fe.initial-window-size`) in `global`; Apache `H2WindowSize`; "
            "nginx `http2_body_preread_size` (+ `client_body_buffer_size` when request "
            "buffering is off); Envoy `initial_stream_window_size` and "
            "`initial_connection_window_size`. Client workaround meanwhile: "
            "`git config http.version HTTP/1.1`."
        ),
    )


def _h2_frames(obs: Observations) -> Hit | None:
    p = obs.protocols.get("h2")
    if p is None or p.h2_ledger is None or p.h2_ledger.max_frame_size_bytes is None:
        return None
    ledger = p.h2_ledger
    h2_rate, other, size, up = (
        upload_rate_bytes_s(p),
        best_other_rate(obs, "h2"),
        push_bytes(p),
        upload_s(p),
    )
    rtt = rtt_s(obs, p)
    if h2_rate is None or other is None or size is None or up is None:
        return None
    frame = ledger.max_frame_size_bytes
    if frame is None or frame > 16384 or h2_rate >= 0.8 * other[1]:
        return None
    window = min(
        (w for w in (ledger.server_initial_window_bytes, ledger.connection_window_bytes) if w),
        default=None,
    )
    if window is not None and rtt is not None and window < other[1] * rtt:
        return None  # the window explains it: h2-flow-control-window
    zero = max(ledger.stream_zero_credit_s or 0.0, ledger.connection_zero_credit_s or 0.0)
    if zero >= 0.1 * up:
        return None
    cap = p.capture
    if cap is not None and (cap.network_limited_share or 0.0) > (cap.self_limited_share or 0.0):
        return None  # TCP was bound by the network (loss, cwnd), not by per-frame cost
    return Hit(
        score=0.45,
        cost_s=saved_time_s(size, up, other[1]) or 0.0,
        summary=(
            f"HTTP/2 uploaded at {fmt_rate(h2_rate)} vs {_label(other[0])} "
            f"{fmt_rate(other[1])} although its window was open; the server allows only "
            f"{ledger.max_frame_size_bytes} B frames, so per-frame overhead and buffering dominate."
        ),
        evidence=(
            Evidence(
                what="server SETTINGS_MAX_FRAME_SIZE",
                value=f"{ledger.max_frame_size_bytes} B",
                threshold="<= 16384 B (the protocol minimum)",
                source=ledger.source,
            ),
            Evidence(
                what="HTTP/2 upload rate",
                value=fmt_rate(h2_rate),
                threshold=f"< 80% of {_label(other[0])} {fmt_rate(other[1])}",
                source="pushes",
            ),
            Evidence(
                what="time at zero HTTP/2 credit",
                value=fmt_s(zero),
                threshold=f"< 10% of the upload ({fmt_s(up)}): the window is not the limit",
                source=ledger.source,
            ),
            *_config_evidence(_config(obs, r"max-frame-size|bufsize|StreamMaxMemSize|chunk_size")),
        ),
        fix=(
            "Raise the server's advertised frame size and per-stream buffers: HAProxy "
            "`tune.h2.max-frame-size` and `tune.bufsize`; Apache `H2StreamMaxMemSize`; nginx "
            "`http2_chunk_size`; Envoy `per_connection_buffer_limit_bytes`."
        ),
    )


@dataclass(frozen=True, kw_only=True)
class _Clamp:
    name: str
    window: int
    rate: float
    cost: float
    next_limit: tuple[str, float] | None
    rtt: float


def _clamped_protocols(obs: Observations) -> list[_Clamp]:
    """Protocols whose upload sat at the TCP advertised window."""
    rates = protocol_rates(obs)
    unclamped = {
        name: rate
        for name, rate in rates.items()
        if (c := obs.protocols[name].capture) is None
        or c.rwnd_limited_share is None
        or c.rwnd_limited_share < RWND_LIMITED_SHARE
    }
    found = []
    for name in PROTOCOL_ORDER:
        p = obs.protocols.get(name)
        if p is None or p.capture is None:
            continue
        c = p.capture
        window = c.advertised_window_max_bytes or c.advertised_window_median_bytes
        rtt, rate, size, up = rtt_s(obs, p), rates.get(name), push_bytes(p), upload_s(p)
        if (
            window is None
            or rtt is None
            or rate is None
            or size is None
            or up is None
            or c.rwnd_limited_share is None
            or c.rwnd_limited_share < RWND_LIMITED_SHARE
        ):
            continue
        next_limit: tuple[str, float] | None = None
        if (path := path_rate_bytes_s(obs)) is not None:
            next_limit = ("path rate", path)
        elif unclamped:
            best = max(unclamped, key=lambda key: unclamped[key])
            next_limit = (f"{_label(best)} push", unclamped[best])
        if next_limit is not None and window >= FLAT_RATIO * next_limit[1] * rtt:
            continue
        if next_limit is None and window >= CLAMP_FALLBACK_WINDOW_BYTES:
            continue
        if next_limit is not None:
            cost = saved_time_s(size, up, next_limit[1]) or 0.0
        else:
            cost = up * c.rwnd_limited_share * 0.5
        found.append(
            _Clamp(name=name, window=window, rate=rate, cost=cost, next_limit=next_limit, rtt=rtt)
        )
    return found


def _tcp_clamp(obs: Observations) -> Hit | None:
    clamps = _clamped_protocols(obs)
    if not clamps:
        return None
    worst = max(clamps, key=lambda c: c.cost)
    cap = obs.protocols[worst.name].capture
    assert cap is not None
    score = 0.45
    evidence = []
    for clamp in clamps:
        c = obs.protocols[clamp.name].capture
        assert c is not None
        evidence.append(
            Evidence(
                what=f"{_label(clamp.name)}: sender receive-window-limited",
                value=fmt_share(c.rwnd_limited_share),
                threshold=f">= {RWND_LIMITED_SHARE:.0%} of the upload",
                source=c.source,
            )
        )
    flat = (
        cap.bytes_in_flight_median is not None
        and cap.advertised_window_median_bytes
        and cap.bytes_in_flight_median >= FLAT_RATIO * cap.advertised_window_median_bytes
    )
    if flat:
        score += 0.2
        evidence.append(
            Evidence(
                what=f"{_label(worst.name)}: bytes in flight flat at the advertised window "
                "(median)",
                value=f"{fmt_bytes(cap.bytes_in_flight_median)} of "
                f"{fmt_bytes(cap.advertised_window_median_bytes)}",
                threshold=f">= {FLAT_RATIO:.0%}",
                source=cap.source,
            )
        )
    bdp = worst.next_limit[1] * worst.rtt if worst.next_limit else None
    evidence.append(
        Evidence(
            what=f"{_label(worst.name)}: largest advertised TCP window",
            value=fmt_bytes(worst.window),
            threshold=f"< BDP {fmt_bytes(bdp)} ({worst.next_limit[0]} x RTT {fmt_s(worst.rtt)})"
            if bdp is not None and worst.next_limit is not None
            else f"< {fmt_bytes(CLAMP_FALLBACK_WINDOW_BYTES)} (no path rate measured)",
            source=cap.source,
        )
    )
    evidence.append(
        Evidence(
            what=f"{_label(worst.name)}: measured upload rate vs what the window allows",
            value=fmt_rate(worst.rate),
            threshold=f"window / RTT = {fmt_bytes(worst.window)} / {fmt_s(worst.rtt)} = "
            f"{fmt_rate(worst.window / worst.rtt)}",
            source=f"{cap.source}; RTT from run",
        )
    )
    if bdp is not None:
        score += 0.2
    else:
        score -= 0.1
    measured = [n for n in PROTOCOL_ORDER if n in obs.protocols and obs.protocols[n].capture]
    if len(clamps) >= 2 and len(clamps) == len(measured):
        score += 0.1
    if cap.zero_window_count:
        score += 0.05
        evidence.append(
            Evidence(
                what="zero-window advertisements",
                value=f"{cap.zero_window_count} ({fmt_s(cap.zero_window_s)})",
                threshold="0",
                source=cap.source,
            )
        )
    scaling_off = cap.handshake_seen and cap.window_scale is None and worst.window <= 65535
    if scaling_off:
        score *= 0.6
    if worst.window >= AUTOTUNE_MAX_WINDOW_BYTES:
        score *= 0.5
    if obs.host is not None:
        for key in ("net.ipv4.tcp_rmem", "net.core.rmem_max"):
            if key in obs.host.sysctls:
                evidence.append(
                    Evidence(
                        what=f"sysctl {key}", value=obs.host.sysctls[key], source="host sysctl"
                    )
                )
    evidence.extend(_config_evidence(_config(obs, r"rcvbuf|SO_RCVBUF|tcp_rmem")))
    names = ", ".join(_label(c.name) for c in clamps)
    suggest = _suggest_window(bdp)
    return Hit(
        score=score,
        cost_s=worst.cost,
        summary=(
            f"{names} uploads sat at the receiver's TCP window: {fmt_bytes(worst.window)} per "
            f"{fmt_s(worst.rtt)} RTT allows {fmt_rate(worst.window / worst.rtt)}, measured "
            f"{fmt_rate(worst.rate)}"
            + (f", while the BDP is {fmt_bytes(bdp)}." if bdp is not None else ".")
        ),
        evidence=tuple(evidence),
        fix=(
            "On the receiver of the push (the server, or the edge that terminates TCP): raise "
            f"the maximum of `net.ipv4.tcp_rmem` (e.g. `4096 131072 {suggest}`) and "
            "`net.core.rmem_max`; remove fixed `SO_RCVBUF` sizes, which turn autotuning off "
            "(HAProxy `tune.rcvbuf.client`/`tune.rcvbuf.server`, nginx `listen ... rcvbuf=`), "
            "and check the proxy's buffer sizes."
        ),
    )


def _window_scaling_off(obs: Observations) -> Hit | None:
    clamps = {c.name: c for c in _clamped_protocols(obs)}
    hits = []
    for name in PROTOCOL_ORDER:
        p = obs.protocols.get(name)
        if p is None or p.capture is None:
            continue
        c = p.capture
        window = c.advertised_window_max_bytes or c.advertised_window_median_bytes
        if not c.handshake_seen or c.window_scale is not None or window is None or window > 65535:
            continue
        hits.append((name, c, window))
    if not hits:
        return None
    costs = {name: clamps[name].cost if name in clamps else 0.0 for name, _, _ in hits}
    name, cap, window = max(hits, key=lambda hit: costs[hit[0]])
    limited = name in clamps
    rtt = rtt_s(obs, obs.protocols[name])
    evidence = [
        Evidence(
            what=f"{_label(n)}: window scale option in the handshake",
            value="absent",
            threshold="present (RFC 7323)",
            source=c.source,
        )
        for n, c, _ in hits
    ]
    evidence.append(
        Evidence(
            what=f"{_label(name)}: largest advertised TCP window",
            value=f"{window} B",
            threshold="<= 65535 B without scaling",
            source=cap.source,
        )
    )
    if limited:
        evidence.append(
            Evidence(
                what=f"{_label(name)}: sender receive-window-limited",
                value=fmt_share(cap.rwnd_limited_share),
                threshold=f">= {RWND_LIMITED_SHARE:.0%}",
                source=cap.source,
            )
        )
    if obs.host is not None and "net.ipv4.tcp_window_scaling" in obs.host.sysctls:
        evidence.append(
            Evidence(
                what="sysctl net.ipv4.tcp_window_scaling",
                value=obs.host.sysctls["net.ipv4.tcp_window_scaling"],
                threshold="1",
                source="host sysctl",
            )
        )
    cap_text = f" caps the upload at {fmt_rate(window / rtt)} over {fmt_s(rtt)} RTT" if rtt else ""
    return Hit(
        score=0.9 if limited else 0.4,
        cost_s=costs[name],
        summary=(
            f"The {_label(name)} handshake carried no TCP window scale option, so the window "
            f"stays at {window} B and{cap_text or ' limits every round trip'}."
        ),
        evidence=tuple(evidence),
        fix=(
            "Enable `net.ipv4.tcp_window_scaling = 1` on both ends (the Linux default); if it is "
            "already on, a middlebox (firewall, load balancer, WAN optimiser) strips the window "
            "scale option from the SYN: capture on both sides of it to find which one."
        ),
    )


def _ssh_window(obs: Observations) -> Hit | None:
    p = obs.protocols.get("ssh")
    if p is None:
        return None
    rtt, size, up = rtt_s(obs, p), push_bytes(p), upload_s(p)
    rate, other = upload_rate_bytes_s(p), best_other_rate(obs, "ssh")
    ledger, cap = p.ssh_ledger, p.capture
    score = 0.0
    evidence: list[Evidence] = []
    slower = rate is not None and other is not None and rate < SLOWER_RATIO * other[1]
    if slower and rate is not None and other is not None:
        score += 0.35
        evidence.append(
            Evidence(
                what="SSH upload rate",
                value=fmt_rate(rate),
                threshold=f"< {SLOWER_RATIO:.0%} of {_label(other[0])} {fmt_rate(other[1])}",
                source="pushes",
            )
        )
    if cap is not None and (cap.self_limited_share or 0) >= SELF_LIMITED_SHARE:
        score += 0.15
        evidence.append(
            Evidence(
                what="TCP sender self-limited (waiting on the SSH channel)",
                value=fmt_share(cap.self_limited_share),
                threshold=f">= {SELF_LIMITED_SHARE:.0%}",
                source=cap.source,
            )
        )
    next_limit = other[1] if other else (path_rate_bytes_s(obs) or tcp_window_rate(obs, p))
    small = False
    window = ledger.initial_window_bytes if ledger else None
    if ledger is not None and window and rtt:
        bdp = next_limit * rtt if next_limit else None
        small = window < bdp if bdp is not None else window < CLAMP_FALLBACK_WINDOW_BYTES
        if small:
            score += 0.25
            evidence.append(
                Evidence(
                    what="SSH channel window granted by the server",
                    value=f"{window} B",
                    threshold=f"< BDP {fmt_bytes(bdp)}" if bdp else "< 1 MiB",
                    source=ledger.source,
                )
            )
            if rate is not None and rate <= MATCHES_CAP_RATIO * window / rtt:
                score += 0.1
                evidence.append(
                    Evidence(
                        what="measured SSH upload rate vs what the window allows",
                        value=fmt_rate(rate),
                        threshold=f"window / RTT = {window} B / {fmt_s(rtt)} = "
                        f"{fmt_rate(window / rtt)}",
                        source=ledger.source,
                    )
                )
        if ledger.zero_window_s and up and ledger.zero_window_s >= 0.2 * up:
            score += 0.15
            evidence.append(
                Evidence(
                    what="time at zero SSH channel window",
                    value=fmt_s(ledger.zero_window_s),
                    threshold=f">= 20% of the upload ({fmt_s(up)})",
                    source=ledger.source,
                )
            )
    if not (slower or small) or size is None or up is None or rate is None:
        return None
    cost = saved_time_s(size, up, next_limit) or 0.0
    window_text = (
        f"; the {window} B channel window allows {fmt_rate(window / rtt)}" if window and rtt else ""
    )
    other_text = f" vs {_label(other[0])} {fmt_rate(other[1])}" if other else ""
    return Hit(
        score=score,
        cost_s=cost,
        summary=f"SSH pushes uploaded at {fmt_rate(rate)}{other_text}{window_text}.",
        evidence=tuple(evidence),
        fix=(
            "Stock OpenSSH has a fixed channel window with no `sshd_config` option: run HPN-SSH "
            "(dynamic windows) on the server and client, or push large repositories over "
            "HTTPS from far-away sites (fewer round trips per window)."
        ),
    )


# --------------------------------------------------------------- connections


def _burst_cost_s(burst: BurstResult, rtt: float | None, *, syn: bool = True) -> float:
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


def _burst_evidence(burst: BurstResult) -> list[Evidence]:
    source = f"burst {_label(burst.protocol)} x{burst.concurrency}"
    items = []
    if burst.failed:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(burst.failed_by_kind.items()) if v)
        items.append(
            Evidence(
                what="failed connections",
                value=f"{burst.failed} of {burst.concurrency} ({kinds})",
                threshold="0",
                source=source,
            )
        )
    if burst.syn_retransmissions:
        items.append(
            Evidence(
                what="SYN retransmissions",
                value=str(burst.syn_retransmissions),
                threshold="0",
                source=source,
            )
        )
    if burst.synack_retransmissions:
        items.append(
            Evidence(
                what="SYN-ACK retransmissions",
                value=str(burst.synack_retransmissions),
                threshold="0",
                source=source,
            )
        )
    if burst.connect_p99_s is not None and burst.connect_p99_s >= SYN_RTO_S:
        items.append(
            Evidence(
                what="connect time p50 / p99 / max",
                value=f"{fmt_s(burst.connect_p50_s)} / {fmt_s(burst.connect_p99_s)} / "
                f"{fmt_s(burst.connect_max_s)}",
                threshold=f"p99 < {fmt_s(SYN_RTO_S)} (one SYN timeout)",
                source=source,
            )
        )
    return items


def _burst_symptoms(burst: BurstResult) -> bool:
    return bool(
        burst.syn_retransmissions
        or burst.synack_retransmissions
        or burst.failed_by_kind.get("timeout")
        or burst.failed_by_kind.get("hung")
        or (burst.connect_p99_s is not None and burst.connect_p99_s >= SYN_RTO_S)
    )


_QUEUE_COUNTERS = ("ListenOverflows", "ListenDrops")
_SYN_QUEUE_COUNTERS = ("TCPReqQFullDoCookies", "TCPReqQFullDrop", "SyncookiesSent")


def _accept_queue_evidence(obs: Observations) -> list[Evidence]:
    """Server-side evidence that a listen queue overflowed or is tiny."""
    host = obs.host
    if host is None:
        return []
    items = []
    for key in _QUEUE_COUNTERS + _SYN_QUEUE_COUNTERS:
        if host.counter_deltas.get(key, 0) > 0:
            items.append(
                Evidence(
                    what=f"kernel counter {key} (delta over the run)",
                    value=str(host.counter_deltas[key]),
                    threshold="0",
                    source=f"host counter {key}",
                )
            )
    burst_ports = {b.port for b in obs.bursts if b.port is not None}
    for listener in host.listeners:
        if listener.backlog <= SMALL_BACKLOG and (not burst_ports or listener.port in burst_ports):
            items.append(
                Evidence(
                    what=f"listen backlog of port {listener.port} ({listener.process or '?'})",
                    value=str(listener.backlog),
                    threshold=f"> {SMALL_BACKLOG}",
                    source="host ss -ltn (Send-Q)",
                )
            )
    for line in host.kernel_log:
        if "SYN flooding" in line or "drop open request" in line:
            items.append(Evidence(what="kernel log", value=line.strip(), source="host kernel log"))
    return items


def _listen_backlog(obs: Observations) -> Hit | None:
    host_items = _accept_queue_evidence(obs)
    if not host_items:
        return None
    rtt = rtt_s(obs)
    bursts = [b for b in obs.bursts if _burst_symptoms(b)]
    host = obs.host
    assert host is not None
    score = 0.3
    if any(host.counter_deltas.get(k, 0) > 0 for k in _QUEUE_COUNTERS):
        score += 0.3
    if any(host.counter_deltas.get(k, 0) > 0 for k in _SYN_QUEUE_COUNTERS):
        score += 0.1
    if any(listener.backlog <= SMALL_BACKLOG for listener in host.listeners):
        score += 0.15
    if bursts:
        score += 0.2
    evidence = list(host_items)
    for burst in bursts:
        evidence.extend(_burst_evidence(burst))
    cost = max((_burst_cost_s(b, rtt) for b in bursts), default=0.0)
    small = [listener for listener in host.listeners if listener.backlog <= SMALL_BACKLOG]
    git_daemon = any(x.port == 9418 or "git" in x.process for x in small) or any(
        b.protocol == "git" for b in bursts
    )
    somaxconn = host.sysctls.get("net.core.somaxconn")
    listener_text = (
        f"port {small[0].port} listens with a backlog of {small[0].backlog}"
        if small
        else "the accept queue overflowed"
    )
    overflow = host.counter_deltas.get("ListenOverflows", 0)
    worst = max(bursts, key=lambda b: b.failed + b.syn_retransmissions, default=None)
    burst_text = ""
    if worst is not None:
        burst_text = (
            f"; under {worst.concurrency} concurrent {_label(worst.protocol)} connections "
            f"{worst.failed} failed, {worst.syn_retransmissions} SYNs and "
            f"{worst.synack_retransmissions} SYN-ACKs were retransmitted"
        )
    fix = (
        "Raise the service's listen backlog and `net.core.somaxconn` (it caps every backlog"
        + (f", now {somaxconn}" if somaxconn else "")
        + ") and `net.ipv4.tcp_max_syn_backlog`: nginx `listen ... backlog=`, HAProxy "
        "`backlog`, Apache `ListenBacklog`."
    )
    if git_daemon:
        fix = (
            "`git daemon` calls listen() with a fixed backlog of 5: run it from systemd socket "
            "activation (`ListenStream=9418`, `Backlog=1024`, `Accept=yes` with `git daemon "
            "--inetd`) or behind a proxy with a large backlog. " + fix
        )
    return Hit(
        score=score,
        cost_s=cost,
        summary=(
            f"{listener_text[0].upper()}{listener_text[1:]}"
            + (f" and the kernel counted {overflow} accept-queue overflows" if overflow else "")
            + burst_text
            + "."
        ),
        evidence=tuple(evidence),
        fix=fix,
    )


def _syn_drop(obs: Observations) -> Hit | None:
    if _accept_queue_evidence(obs):
        return None
    rtt = rtt_s(obs)
    bursts = [b for b in obs.bursts if b.syn_retransmissions or b.synack_retransmissions]
    evidence: list[Evidence] = []
    for burst in bursts:
        evidence.extend(_burst_evidence(burst))
    push_syn = 0
    for name in PROTOCOL_ORDER:
        p = obs.protocols.get(name)
        c = p.capture if p is not None else None
        if c is not None and ((c.syn_retransmissions or 0) + (c.synack_retransmissions or 0)):
            push_syn += (c.syn_retransmissions or 0) + (c.synack_retransmissions or 0)
            evidence.append(
                Evidence(
                    what=f"{_label(name)}: SYN / SYN-ACK retransmissions",
                    value=f"{c.syn_retransmissions or 0} / {c.synack_retransmissions or 0}",
                    threshold="0",
                    source=c.source,
                )
            )
    if not evidence:
        return None
    cost = max((_burst_cost_s(b, rtt) for b in bursts), default=0.0) + push_syn * SYN_RTO_S
    total_syn = sum(b.syn_retransmissions for b in bursts)
    total_synack = sum(b.synack_retransmissions for b in bursts)
    return Hit(
        score=0.6 if bursts else 0.5,
        cost_s=cost,
        summary=(
            f"SYNs or SYN-ACKs were dropped: {total_syn} SYN and {total_synack} SYN-ACK "
            f"retransmissions in bursts and {push_syn} on the pushes, each costing at least "
            f"{fmt_s(SYN_RTO_S)}; no server-side evidence was available to tell a full SYN "
            "queue from a filter."
        ),
        evidence=tuple(evidence),
        fix=(
            "Check `net.ipv4.tcp_max_syn_backlog`, the service's listen backlog and "
            "`net.core.somaxconn`, `net.ipv4.tcp_syncookies`, and SYN rate limits in firewalls "
            "(`iptables -S | grep -i syn`, cloud security groups); rerun with host evidence "
            "(`gitnetdiag host`) to see ListenOverflows / TCPReqQFullDrop."
        ),
    )


def _ssh_maxstartups(obs: Observations) -> Hit | None:
    bursts = [
        b
        for b in obs.bursts
        if b.protocol == "ssh"
        and (b.failed_by_kind.get("refused", 0) + b.failed_by_kind.get("reset", 0)) > 0
    ]
    host = obs.host
    log = [line for line in (host.kernel_log if host else ()) if "MaxStartups" in line]
    configured = _config(obs, r"^MaxStartups$")
    if not bursts and not log:
        return None
    score = 0.45 if bursts else 0.3
    if log:
        score += 0.35
    if configured:
        score += 0.1
    evidence: list[Evidence] = []
    for burst in bursts:
        evidence.extend(_burst_evidence(burst))
    evidence.extend(
        Evidence(what="sshd log", value=line.strip(), source="host log") for line in log
    )
    evidence.extend(_config_evidence(configured))
    rtt = rtt_s(obs)
    cost = max((_burst_cost_s(b, rtt, syn=False) for b in bursts), default=0.0)
    refused = sum(b.failed for b in bursts)
    conc = max((b.concurrency for b in bursts), default=0)
    setting = f" (`MaxStartups {configured[0].value}`)" if configured else ""
    return Hit(
        score=score,
        cost_s=cost,
        summary=(
            f"sshd dropped {refused} of {conc} concurrent SSH connections before "
            f"authentication{setting}: the MaxStartups limit on unauthenticated connections."
            if bursts
            else "sshd logged MaxStartups throttling of unauthenticated connections."
        ),
        evidence=tuple(evidence),
        fix=(
            "Raise sshd `MaxStartups` (default `10:30:100` starts refusing 30% of new "
            "unauthenticated connections beyond 10), e.g. `MaxStartups 100:30:300`, shorten "
            "`LoginGraceTime`, and make clients retry with backoff."
        ),
    )


def _firewall_reset(obs: Observations) -> Hit | None:
    kinds = {"reset", "refused"}
    evidence: list[Evidence] = []
    worst_cost = 0.0
    summary_bits = []
    for name in PROTOCOL_ORDER:
        p = obs.protocols.get(name)
        if p is None:
            continue
        cost, failed, total = _failure_cost_s(obs, name, kinds)
        if not failed:
            continue
        worst_cost = max(worst_cost, cost)
        first = next(f for f in failed_pushes(p) if (f.error_kind or "other") in kinds)
        evidence.append(
            Evidence(
                what=f"{_label(name)} pushes reset or refused",
                value=f"{failed} of {total}",
                threshold="0",
                source="pushes: " + (first.error_message or first.error_kind or ""),
            )
        )
        summary_bits.append(f"{failed} of {total} {_label(name)} pushes were {first.error_kind}")
        c = p.capture
        if c is not None and c.resets_from_server:
            evidence.append(
                Evidence(
                    what=f"{_label(name)}: RST segments arriving from the server side",
                    value=str(c.resets_from_server),
                    threshold="0",
                    source=c.source,
                )
            )
    backlog = bool(_accept_queue_evidence(obs))
    maxstartups = _ssh_maxstartups(obs) is not None
    rtt = rtt_s(obs)
    burst_hits = [
        b
        for b in obs.bursts
        if (b.resets or b.failed_by_kind.get("reset") or b.failed_by_kind.get("refused"))
        and not backlog
        and not (b.protocol == "ssh" and maxstartups)
    ]
    for burst in burst_hits:
        evidence.extend(_burst_evidence(burst))
        if burst.resets:
            evidence.append(
                Evidence(
                    what="RSTs on burst connections",
                    value=str(burst.resets),
                    threshold="0",
                    source=f"burst {_label(burst.protocol)} x{burst.concurrency}",
                )
            )
        worst_cost = max(worst_cost, _burst_cost_s(burst, rtt, syn=False))
        summary_bits.append(
            f"{burst.failed} of {burst.concurrency} concurrent {_label(burst.protocol)} "
            "connections were reset or refused"
        )
    if not summary_bits:
        return None
    rules = [
        c
        for c in (obs.host.config_findings if obs.host else ())
        if re.search(r"REJECT|DROP|tcp-reset|deny", c.value, re.IGNORECASE)
    ]
    score = 0.45 if any(e.what.endswith("pushes reset or refused") for e in evidence) else 0.35
    if any("RST" in e.what for e in evidence):
        score += 0.15
    if rules:
        score += 0.3
        evidence.extend(_config_evidence(rules))
    rule_text = (
        f" `{rules[0].setting} {rules[0].value}` ({rules[0].file}"
        + (f" line {rules[0].line}" if rules[0].line is not None else "")
        + ")"
        if rules
        else ""
    )
    return Hit(
        score=score,
        cost_s=worst_cost,
        summary="; ".join(summary_bits)
        + ": connections are cut by a reset from the path or server.",
        evidence=tuple(evidence),
        fix=(
            f"Find and relax the filter that resets the connections{rule_text or ''}: "
            "`iptables -S` / `nft list ruleset` for REJECT `tcp-reset` rules, load-balancer idle "
            "or body-size limits, IDS/IPS and cloud security groups on the path; capture on "
            "both sides to see which hop sends the RST."
        ),
    )


# ------------------------------------------------------------------- the path


def _packet_loss(obs: Observations) -> Hit | None:
    hits = []
    for name in PROTOCOL_ORDER:
        p = obs.protocols.get(name)
        if p is None or p.capture is None or p.capture.retransmission_rate is None:
            continue
        c = p.capture
        if c.retransmission_rate is None or c.retransmission_rate < LOSS_RATE:
            continue
        rtt, size, up, rate = rtt_s(obs, p), push_bytes(p), upload_s(p), upload_rate_bytes_s(p)
        if rtt is None or size is None or up is None or rate is None:
            continue
        limits = [
            w
            for w in (
                c.advertised_window_max_bytes,
                p.h2_ledger.server_initial_window_bytes if p.h2_ledger else None,
                p.ssh_ledger.initial_window_bytes if p.ssh_ledger else None,
            )
            if w
        ]
        window_rate = min(limits) / rtt if limits else None
        if window_rate is not None and rate >= 0.7 * window_rate:
            continue  # a window explains the rate, not the loss
        ceiling = [r for r in (window_rate, path_rate_bytes_s(obs)) if r is not None]
        if ceiling:
            cost = saved_time_s(size, up, min(ceiling)) or 0.0
            fallback = False
        else:
            cost = (c.timeout_retransmissions or 0) * MIN_RTO_S
            fallback = True
        hits.append((name, c, rate, window_rate, cost, fallback))
    if not hits:
        return None
    name, cap, rate, window_rate, cost, fallback = max(hits, key=lambda hit: hit[4])
    assert cap.retransmission_rate is not None
    score = 0.55
    if cap.retransmission_rate >= 0.02:
        score += 0.15
    if cap.timeout_retransmissions:
        score += 0.1
    if (cap.network_limited_share or 0) >= 0.5:
        score += 0.1
    if fallback:
        score *= 0.7
    evidence = [
        Evidence(
            what=f"{_label(n)}: retransmission rate",
            value=f"{c.retransmission_rate * 100:.2f}% ({fmt_bytes(c.retransmitted_bytes)})"
            if c.retransmission_rate is not None
            else "-",
            threshold=f">= {LOSS_RATE * 100:.1f}%",
            source=c.source,
        )
        for n, c, *_ in hits
    ]
    evidence.append(
        Evidence(
            what=f"{_label(name)}: timeout / fast retransmissions",
            value=f"{cap.timeout_retransmissions or 0} / {cap.fast_retransmissions or 0}",
            source=cap.source,
        )
    )
    evidence.append(
        Evidence(
            what=f"{_label(name)}: upload rate vs what the windows allow",
            value=fmt_rate(rate),
            threshold=f"< 70% of {fmt_rate(window_rate)}" if window_rate else "window unknown",
            source=cap.source,
        )
    )
    return Hit(
        score=score,
        cost_s=cost,
        summary=(
            f"{_label(name)} retransmitted {cap.retransmission_rate * 100:.2f}% of its bytes and "
            f"uploaded at {fmt_rate(rate)}"
            + (f", below the {fmt_rate(window_rate)} its windows allow" if window_rate else "")
            + ": loss on the path makes congestion control back off."
        ),
        evidence=tuple(evidence),
        fix=(
            "Find the lossy hop: `mtr -rwc 200 HOST`, interface drops and errors "
            "(`ip -s link`, `ethtool -S`), policers and shapers on the path. On the sending "
            "side `net.ipv4.tcp_congestion_control = bbr` suffers far less from random loss than "
            "cubic."
        ),
    )


def _bandwidth_limit(obs: Observations) -> Hit | None:
    rates = protocol_rates(obs)
    if not rates:
        return None
    best = max(rates, key=lambda key: rates[key])
    p = obs.protocols[best]
    up = upload_s(p)
    if up is None:
        return None
    path = path_rate_bytes_s(obs)
    evidence: list[Evidence] = []
    if path is not None:
        if rates[best] < 0.8 * path:
            return None
        score = 0.6
        evidence.append(
            Evidence(
                what=f"{_label(best)} upload rate vs path capacity",
                value=f"{fmt_rate(rates[best])} of {fmt_rate(path)}",
                threshold=">= 80%",
                source="pushes; path rate from run",
            )
        )
    else:
        caps = [(n, o.capture) for n, o in obs.protocols.items() if o.capture is not None]
        if len(caps) < 2 or len(rates) < 2:
            return None
        if any(
            (c.network_limited_share or 0) < 0.6 or (c.retransmission_rate or 0) >= LOSS_RATE
            for _, c in caps
        ):
            return None
        if min(rates.values()) < 0.7 * max(rates.values()):
            return None
        score = 0.4
        evidence.extend(
            Evidence(
                what=f"{_label(n)}: network-limited (cwnd, window open, no loss)",
                value=fmt_share(c.network_limited_share),
                threshold=">= 60%",
                source=c.source,
            )
            for n, c in caps
        )
        evidence.append(
            Evidence(
                what="upload rates of all protocols",
                value=", ".join(f"{_label(n)} {fmt_rate(r)}" for n, r in rates.items()),
                threshold="within 30% of each other",
                source="pushes",
            )
        )
    return Hit(
        score=score,
        cost_s=up,
        summary=(
            f"The path is full: {_label(best)} uploaded at {fmt_rate(rates[best])}"
            + (f" of a {fmt_rate(path)} path" if path else ", and every protocol ran alike")
            + ". This is not a misconfiguration: the push takes as long as its bytes need."
        ),
        evidence=tuple(evidence),
        fix=(
            "Not a misconfiguration: more bandwidth on the narrowest link, or fewer bytes "
            "(smaller pushes, Git LFS for large binaries, `pack.compression`), or a QoS class for "
            "git traffic on a shared link."
        ),
    )


def _path_latency(obs: Observations) -> Hit | None:
    rtt = rtt_s(obs)
    if rtt is None or rtt < 2 * REFERENCE_RTT_S:
        return None
    best: tuple[float, str, int, float] | None = None
    for name in PROTOCOL_ORDER:
        p = obs.protocols.get(name)
        if p is None:
            continue
        size, up, rate = push_bytes(p), upload_s(p), upload_rate_bytes_s(p)
        if size is None or up is None or rate is None:
            continue
        windows = []
        if p.capture and (p.capture.rwnd_limited_share or 0) >= RWND_LIMITED_SHARE:
            windows.append(
                p.capture.advertised_window_max_bytes or p.capture.advertised_window_median_bytes
            )
        if p.h2_ledger and p.h2_ledger.server_initial_window_bytes:
            windows.append(p.h2_ledger.server_initial_window_bytes)
        if p.ssh_ledger and p.ssh_ledger.initial_window_bytes:
            windows.append(p.ssh_ledger.initial_window_bytes)
        known = [w for w in windows if w]
        if not known:
            continue
        window = min(known)
        if not window / rtt / MATCHES_CAP_RATIO <= rate <= MATCHES_CAP_RATIO * window / rtt:
            continue  # the rate is not window / RTT: not window-limited
        near = window / REFERENCE_RTT_S
        ceiling = path_rate_bytes_s(obs)
        cost = saved_time_s(size, up, min(near, ceiling) if ceiling else near) or 0.0
        if best is None or cost > best[0]:
            best = (cost, name, window, rate)
    if best is None:
        return None
    cost, worst, window, rate = best
    score = 0.6 if window >= AUTOTUNE_MAX_WINDOW_BYTES else 0.3
    return Hit(
        score=score,
        cost_s=cost,
        summary=(
            f"At {fmt_s(rtt)} RTT a {fmt_bytes(window)} window carries only "
            f"{fmt_rate(window / rtt)} ({_label(worst)} measured {fmt_rate(rate)}); at "
            f"{fmt_s(REFERENCE_RTT_S)} the same window would carry "
            f"{fmt_rate(window / REFERENCE_RTT_S)}."
        ),
        evidence=(
            Evidence(
                what="path RTT",
                value=fmt_s(rtt),
                threshold=f">= {fmt_s(2 * REFERENCE_RTT_S)}",
                source="run",
            ),
            Evidence(
                what=f"{_label(worst)}: limiting window",
                value=fmt_bytes(window),
                threshold=f"rate within {MATCHES_CAP_RATIO}x of window / RTT",
                source="capture / ledger",
            ),
        ),
        fix=(
            "Push to a closer endpoint (a regional git mirror or edge that accepts pushes, CI "
            "runners near the server); every window-limited rate scales as window / RTT, so the "
            "window fixes above also shrink this cost."
        ),
    )


# ----------------------------------------------------------- phases and hosts


def _phase(obs: Observations, attr: str) -> list[tuple[str, float]]:
    values: list[tuple[str, float]] = []
    for name in PROTOCOL_ORDER:
        p = obs.protocols.get(name)
        if p is None or p.trace2 is None:
            continue
        value = getattr(p.trace2, attr)
        if value is not None:
            values.append((name, float(value)))
    return values


def _phase_excess(
    obs: Observations, attr: str, rtts: float
) -> tuple[float, list[tuple[str, float]]]:
    values = _phase(obs, attr)
    if not values:
        return 0.0, []
    # A server-side step (a hook, an auth check) delays every transport alike, so the
    # fastest transport bounds it; slower ones may add client-side buffering (an SSH
    # upload "ends" when git has handed the pack to ssh, long before it is on the wire).
    typical = min(v for _, v in values)
    baseline = rtts * (rtt_s(obs) or 0.0)
    return max(0.0, typical - baseline), values


def _storage_slow(obs: Observations) -> float | None:
    """How far below the reference the slowest IOPS figure is (0..1), ``None`` if not slow."""
    s = obs.storage
    if s is None:
        return None
    measured = [v for v in (s.read_iops, s.write_iops) if v is not None]
    if not measured or min(measured) >= s.reference_iops:
        return None
    return 1.0 - min(measured) / s.reference_iops


def _phase_evidence(values: list[tuple[str, float]], what: str, threshold: str) -> list[Evidence]:
    return [
        Evidence(
            what=f"{_label(n)}: {what}", value=fmt_s(v), threshold=threshold, source=f"trace2 ({n})"
        )
        for n, v in values
    ]


def _server_processing(obs: Observations) -> Hit | None:
    excess, values = _phase_excess(obs, "server_wait_s", 2)
    if excess < SLOW_PHASE_S:
        return None
    score = 0.7 if len(values) >= 2 else 0.6
    if _storage_slow(obs) is not None:
        score = 0.4
    return Hit(
        score=score,
        cost_s=excess,
        summary=(
            f"After the upload the server took {fmt_s(excess)} beyond the network round trips "
            "to answer: hooks or receive-pack work on the server."
        ),
        evidence=tuple(
            _phase_evidence(
                values,
                "wait after upload until the server's status",
                f">= {fmt_s(SLOW_PHASE_S)} over 2 RTT",
            )
        ),
        fix=(
            "Time the server side of receive-pack: pre-receive / update / post-receive hooks "
            "(`GIT_TRACE2_PERF` on the server), `receive.fsckObjects`, the connectivity check "
            "of large packs, repository maintenance (`git maintenance run`), and storage latency."
        ),
    )


def _slow_ref_advertisement(obs: Observations) -> Hit | None:
    excess, values = _phase_excess(obs, "ref_advertisement_s", 3)
    if excess < SLOW_PHASE_S:
        return None
    return Hit(
        score=0.7 if len(values) >= 2 else 0.6,
        cost_s=excess,
        summary=(
            f"The first response (authentication and ref advertisement) arrived "
            f"{fmt_s(excess)} later than the connection's round trips explain."
        ),
        evidence=tuple(
            _phase_evidence(
                values, "time to the first response", f">= {fmt_s(SLOW_PHASE_S)} over 3 RTT"
            )
        ),
        fix=(
            "Check the authentication backend's latency (LDAP, SSO, token checks) on the first "
            "request, and the ref count (`git ls-remote URL | wc -l`): hide refs from pushes "
            "with `receive.hideRefs` / `transfer.hideRefs`, `git pack-refs --all` on the server."
        ),
    )


def _client_pack_cpu(obs: Observations) -> Hit | None:
    values = _phase(obs, "pack_objects_s")
    if not values:
        return None
    pack = sorted(v for _, v in values)[len(values) // 2]
    durations = [d for d in (push_duration_s(obs.protocols[n]) for n, _ in values) if d]
    total = min(durations) if durations else None
    if pack < SLOW_PHASE_S or (total is not None and pack < 0.3 * total):
        return None
    share = f" of a {fmt_s(total)} push" if total else ""
    return Hit(
        score=0.6,
        cost_s=pack,
        summary=(
            f"The client spent {fmt_s(pack)}{share} in pack-objects (counting and compressing) "
            "before sending."
        ),
        evidence=tuple(
            _phase_evidence(
                values, "pack-objects", f">= {fmt_s(SLOW_PHASE_S)} and >= 30% of the push"
            )
        ),
        fix=(
            "On the client: `pack.compression` 1 (or 0 for already-compressed data), check "
            "`pack.threads` is not pinned to 1, `core.bigFileThreshold` for large binaries, or "
            "Git LFS for them."
        ),
    )


@dataclass(frozen=True, kw_only=True)
class KnownBug:
    """A client version with a documented upload problem."""

    component: str
    """``libcurl``, ``git``, ``nghttp2`` or ``openssh``."""
    versions: tuple[str, ...]
    """Affected versions (exact strings)."""
    protocol: str
    """Protocol it shows on."""
    what: str
    """The symptom."""
    reference: str
    """Upstream report."""
    fixed_in: str
    """First fixed version."""


KNOWN_BUGS: tuple[KnownBug, ...] = (
    KnownBug(
        component="libcurl",
        versions=("8.0.0", "8.0.1"),
        protocol="h2",
        what="git push over HTTP/2 fails with 'HTTP/2 stream N was reset'",
        reference="curl issue 11353",
        fixed_in="8.2.0",
    ),
    KnownBug(
        component="libcurl",
        versions=("8.1.0", "8.1.1", "8.1.2"),
        protocol="h2",
        what="HTTP/2 uploads stall on a busy connection",
        reference="curl issue 11426",
        fixed_in="8.2.0",
    ),
    KnownBug(
        component="libcurl",
        versions=("8.7.1",),
        protocol="h2",
        what="git over HTTP/2 hangs",
        reference="curl issue 13474",
        fixed_in="8.8.0",
    ),
    KnownBug(
        component="libcurl",
        versions=("8.10.0",),
        protocol="h2",
        what="HTTP/2 uploads with http.postBuffer break (upload end-of-stream handling)",
        reference="curl issue 14892",
        fixed_in="8.10.1",
    ),
)
"""Versions with upload bugs; a finding needs the version AND the matching symptom."""


def _version(obs: Observations, component: str) -> str | None:
    raw = {
        "libcurl": obs.run.libcurl_version,
        "git": obs.run.git_version,
        "nghttp2": obs.run.nghttp2_version,
        "openssh": obs.run.openssh_version,
    }.get(component)
    if not raw:
        return None
    match = re.search(r"\d+(?:\.\d+)+(?:p\d+)?", raw)
    return match.group(0) if match else raw


def _client_http_stack(obs: Observations) -> Hit | None:
    for bug in KNOWN_BUGS:
        version = _version(obs, bug.component)
        if version not in bug.versions:
            continue
        p = obs.protocols.get(bug.protocol)
        if p is None:
            continue
        cost, failed, total = _failure_cost_s(
            obs, bug.protocol, {"hung", "timeout", "reset", "other"}
        )
        rate, other = upload_rate_bytes_s(p), best_other_rate(obs, bug.protocol)
        slow = rate is not None and other is not None and rate < SLOWER_RATIO * other[1]
        evidence = [
            Evidence(
                what=f"{bug.component} version",
                value=version,
                threshold=f"affected: {', '.join(bug.versions)}; fixed in {bug.fixed_in}",
                source=f"run metadata; {bug.reference}",
            )
        ]
        if failed:
            first = next(f for f in failed_pushes(p) if f.error_kind != "refused")
            evidence.append(
                Evidence(
                    what=f"{_label(bug.protocol)} pushes failed or stalled",
                    value=f"{failed} of {total}",
                    threshold="0",
                    source="pushes: " + (first.error_message or first.error_kind or ""),
                )
            )
        if not failed and not slow:
            score, cost = 0.3, 0.0
        else:
            score = 0.75 if failed else 0.45
        if slow and rate is not None and other is not None:
            size, up = push_bytes(p), upload_s(p)
            if size is not None and up is not None:
                cost += saved_time_s(size, up, other[1]) or 0.0
        return Hit(
            score=score,
            cost_s=cost,
            summary=(
                f"The client's {bug.component} {version} has a known bug: {bug.what} "
                f"({bug.reference})"
                + (
                    f"; {failed} of {total} {_label(bug.protocol)} pushes failed or stalled."
                    if failed
                    else "."
                )
            ),
            evidence=tuple(evidence),
            fix=(
                f"Upgrade {bug.component} to {bug.fixed_in} or newer (git uses the system "
                f"libcurl); meanwhile `git config http.version HTTP/1.1` avoids the HTTP/2 path."
            ),
        )
    return None


def _slow_storage(obs: Observations) -> Hit | None:
    slowness = _storage_slow(obs)
    if slowness is None or obs.storage is None:
        return None
    s = obs.storage
    lowest = min(v for v in (s.read_iops, s.write_iops) if v is not None)
    excess, values = _phase_excess(obs, "server_wait_s", 2)
    evidence = [
        Evidence(
            what=f"4 KiB random {kind} IOPS" + (f" on {s.path}" if s.path else ""),
            value=f"{value:.0f}",
            threshold=f">= {s.reference_iops:.0f}",
            source="fio",
        )
        for kind, value in (("read", s.read_iops), ("write", s.write_iops))
        if value is not None
    ]
    evidence.extend(
        _phase_evidence(values, "wait after upload until the server's status", "storage-bound")
    )
    return Hit(
        score=0.5 + 0.3 * slowness,
        cost_s=excess,
        summary=(
            f"The git data storage does {lowest:.0f} "
            f"IOPS, below the {s.reference_iops:.0f} reference"
            + (
                f", and the server took {fmt_s(excess)} after the upload to answer."
                if excess
                else "."
            )
        ),
        evidence=tuple(evidence),
        fix=(
            "Move the repositories to faster storage (local SSD/NVMe rather than network or "
            "burst-credit volumes), check the volume's IOPS quota, and keep packs consolidated "
            "(`git maintenance run --task=gc`) so fewer small files are touched."
        ),
    )


CULPRITS: tuple[Culprit, ...] = (
    Culprit(id="h2-flow-control-window", title="HTTP/2 flow-control window", detect=_h2_window),
    Culprit(id="h2-frame-settings", title="HTTP/2 frame and buffer settings", detect=_h2_frames),
    Culprit(id="tcp-receive-window-clamp", title="TCP receive window clamped", detect=_tcp_clamp),
    Culprit(
        id="tcp-window-scaling-off", title="TCP window scaling off", detect=_window_scaling_off
    ),
    Culprit(id="ssh-channel-window", title="SSH channel window", detect=_ssh_window),
    Culprit(id="ssh-maxstartups", title="sshd MaxStartups", detect=_ssh_maxstartups),
    Culprit(id="listen-backlog-overflow", title="Listen backlog overflow", detect=_listen_backlog),
    Culprit(id="syn-drop", title="SYN / SYN-ACK drops", detect=_syn_drop),
    Culprit(id="firewall-reset", title="Connections reset by a filter", detect=_firewall_reset),
    Culprit(id="packet-loss", title="Packet loss", detect=_packet_loss),
    Culprit(id="bandwidth-limit", title="Path bandwidth", detect=_bandwidth_limit),
    Culprit(id="path-latency", title="Path latency", detect=_path_latency),
    Culprit(id="server-processing", title="Server processing", detect=_server_processing),
    Culprit(
        id="slow-ref-advertisement", title="Slow first response", detect=_slow_ref_advertisement
    ),
    Culprit(id="client-pack-cpu", title="Client pack-objects CPU", detect=_client_pack_cpu),
    Culprit(id="client-http-stack", title="Client HTTP stack bug", detect=_client_http_stack),
    Culprit(id="slow-storage", title="Slow storage", detect=_slow_storage),
)
"""The catalogue, in DESIGN.md order; ids are stable (JSON and tests use them)."""
