"""HTTP/2 flow control: the stream/connection window and the frame settings."""

from __future__ import annotations

from gitnetdiag.diagnosis.culprits._common import (
    CLAMP_FALLBACK_WINDOW_BYTES,
    MATCHES_CAP_RATIO,
    SELF_LIMITED_SHARE,
    SLOWER_RATIO,
    Hit,
    config_evidence,
    config_lines,
    failure_cost_s,
    label,
    suggest_window,
)
from gitnetdiag.diagnosis.measures import (
    best_other_rate,
    failed_pushes,
    ok_pushes,
    path_rate_bytes_s,
    push_bytes,
    rtt_s,
    saved_time_s,
    tcp_window_rate,
    upload_rate_bytes_s,
    upload_s,
)
from gitnetdiag.diagnosis.model import Evidence
from gitnetdiag.diagnosis.observations import (
    Observations,
)
from gitnetdiag.diagnosis.units import fmt_bytes, fmt_rate, fmt_s, fmt_share


def h2_flow_control_window(obs: Observations) -> Hit | None:
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
        next_limit = (f"{label(other[0])} push", other[1])
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
                threshold=f"< {SLOWER_RATIO:.0%} of {label(other[0])} {fmt_rate(other[1])}",
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
    stall_cost, _, _ = failure_cost_s(obs, "h2", {"hung", "timeout"})
    cost = slow_cost * len(ok_pushes(p)) / max(1, len(p.pushes)) + stall_cost

    parts = []
    if h2_rate is not None and other is not None:
        parts.append(
            f"HTTP/2 pushes uploaded at {fmt_rate(h2_rate)}, {other[1] / h2_rate:.1f}x slower "
            f"than {label(other[0])} ({fmt_rate(other[1])})"
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
    suggest = suggest_window(next_limit[1] * rtt if next_limit and rtt else None)
    evidence.extend(
        config_evidence(
            config_lines(
                obs, r"initial-window-size|H2WindowSize|http2_body_preread_size|window_size"
            )
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


def h2_frame_settings(obs: Observations) -> Hit | None:
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
            f"HTTP/2 uploaded at {fmt_rate(h2_rate)} vs {label(other[0])} "
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
                threshold=f"< 80% of {label(other[0])} {fmt_rate(other[1])}",
                source="pushes",
            ),
            Evidence(
                what="time at zero HTTP/2 credit",
                value=fmt_s(zero),
                threshold=f"< 10% of the upload ({fmt_s(up)}): the window is not the limit",
                source=ledger.source,
            ),
            *config_evidence(
                config_lines(obs, r"max-frame-size|bufsize|StreamMaxMemSize|chunk_size")
            ),
        ),
        fix=(
            "Raise the server's advertised frame size and per-stream buffers: HAProxy "
            "`tune.h2.max-frame-size` and `tune.bufsize`; Apache `H2StreamMaxMemSize`; nginx "
            "`http2_chunk_size`; Envoy `per_connection_buffer_limit_bytes`."
        ),
    )
