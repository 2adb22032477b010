"""HTTP/2 flow control: the stream/connection window and the frame settings."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitnetdiag.analysis.flowcontrol import HTTP2_DEFAULT_WINDOW_BYTES
from gitnetdiag.diagnosis.culprits._common import (
    FLAT_RATIO,
    MATCHES_CAP_RATIO,
    SELF_LIMITED_SHARE,
    SLOWER_RATIO,
    ZERO_CREDIT_SHARE,
    Hit,
    Tally,
    above_zero,
    below_bdp,
    config_evidence,
    config_lines,
    failure_cost_s,
    label,
    rate_vs_window,
    self_limited,
    share_of_upload,
    slower_than,
    suggest_window,
    term,
    window_below,
)
from gitnetdiag.diagnosis.culprits.headroom import window_headroom
from gitnetdiag.diagnosis.culprits.weights import weight
from gitnetdiag.diagnosis.measures import (
    best_other_rate,
    failed_pushes,
    ok_pushes,
    path_rate_bytes_per_s,
    push_bytes,
    rtt_s,
    saved_time_s,
    tcp_window_rate,
    upload_rate_bytes_per_s,
    upload_s,
)
from gitnetdiag.diagnosis.model import Evidence
from gitnetdiag.diagnosis.observations import (
    CaptureMetrics,
    H2Ledger,
    Observations,
    ProtocolObservation,
    PushResult,
)
from gitnetdiag.diagnosis.servers import (
    ServerIdentity,
    answering_server,
    frame_fix,
    terminator_name,
    window_fix,
)
from gitnetdiag.diagnosis.units import fmt_bytes, fmt_rate, fmt_s
from gitnetdiag.outcomes import REFUSALS


@dataclass(frozen=True, kw_only=True)
class _H2Push:
    """What the HTTP/2 window detector reads, gathered once."""

    p: ProtocolObservation
    rtt: float | None
    h2_rate: float | None
    other: tuple[str, float] | None
    """Fastest other protocol and its upload rate."""
    window: int | None
    """The smaller of the stream and connection windows the server granted."""
    next_limit: tuple[str, float] | None
    """What would bound the rate without the HTTP/2 window: its name and rate."""

    @property
    def bdp(self) -> float | None:
        if self.next_limit is None or self.rtt is None:
            return None
        return self.next_limit[1] * self.rtt


def _gather(obs: Observations, p: ProtocolObservation) -> _H2Push:
    other = best_other_rate(obs, "h2")
    next_limit: tuple[str, float] | None = None
    if other is not None:
        next_limit = (f"{label(other[0])} push", other[1])
    elif (tcp := tcp_window_rate(obs, p)) is not None:
        next_limit = ("TCP receive window / RTT", tcp)
    elif (path := path_rate_bytes_per_s(obs)) is not None:
        next_limit = ("path rate", path)
    return _H2Push(
        p=p,
        rtt=rtt_s(obs, p),
        h2_rate=upload_rate_bytes_per_s(p),
        other=other,
        window=p.h2_ledger.granted_window_bytes if p.h2_ledger is not None else None,
        next_limit=next_limit,
    )


def _ab_signals(h: _H2Push, tally: Tally) -> bool:
    """The A/B test and the TCP picture: is HTTP/2 much slower while TCP waits on it?"""
    cap = h.p.capture
    slower = h.h2_rate is not None and h.other is not None and h.h2_rate < SLOWER_RATIO * h.other[1]
    if slower and h.other is not None:
        source = "pushes (trace2 upload phase)" if h.p.trace2 else "pushes"
        tally.add("slower", slower_than("HTTP/2 upload rate", h.h2_rate, h.other, source))
    if cap is not None and (cap.self_limited_share or 0.0) >= SELF_LIMITED_SHARE:
        what = "TCP sender self-limited (waiting on HTTP/2, not TCP)"
        tally.add("self-limited", self_limited(what, cap))
    if (
        cap is not None
        and cap.advertised_window_median_bytes
        and cap.bytes_in_flight_median
        and cap.advertised_window_median_bytes >= 2 * cap.bytes_in_flight_median
    ):
        tally.add(
            "tcp-window-open",
            Evidence(
                what="TCP window wide open: advertised window (median)",
                value=cap.advertised_window_median_bytes,
                unit="B",
                threshold=2 * cap.bytes_in_flight_median,
                comparison=">=",
                basis="{} x bytes in flight (median) {}",
                basis_terms=(term(2, "count"), term(cap.bytes_in_flight_median, "B")),
                source=cap.source,
            ),
        )
    return slower


TERMINATOR = "the TLS terminator"
"""The hop whose SETTINGS, windows and connection closes the client sees: the HTTP/2
endpoint it talks to (an edge in front of the server that names itself, or that server)."""


def hop_source(source: str, identity: ServerIdentity | None) -> str:
    """``source`` of a SETTINGS or window fact (the TLS terminator's), with that hop's
    product where the evidence shows which one it is."""
    name = terminator_name(identity)
    return f"{source}; TLS terminator: {name}" if name else source


def _hops(identity: ServerIdentity | None) -> list[Evidence]:
    """Where another hop terminates HTTP/2 than the server that named itself: which one and
    why, and the ``server`` header that came from behind it."""
    if identity is None or not identity.terminator_basis:
        return []
    name = terminator_name(identity) or "another server"
    said = identity.product or identity.unrecognised
    return [
        Evidence(what=f"HTTP/2 terminated by {name} ({TERMINATOR}: SETTINGS, windows)",
                 text="; ".join(identity.terminator_basis),
                 source="native HTTP/2 probe SETTINGS and connection window; host listeners"),
        Evidence(what="`server` header (from the hop behind the TLS terminator)", text=said,
                 source="HTTP/2 response headers"),
    ]


def _window_signals(h: _H2Push, ledger: H2Ledger, rtt: float, window: int, tally: Tally,
                    identity: ServerIdentity | None) -> bool:
    """The ledger: a granted window below the BDP, time at zero credit. True when small."""
    bdp = h.bdp
    small = below_bdp(window, bdp)
    if small:
        basis = f"BDP ({h.next_limit[0]} x RTT)" if bdp is not None and h.next_limit else ""
        tally.add(
            "small-window",
            window_below(f"HTTP/2 send window granted by {TERMINATOR} (stream/connection)",
                         window, bdp, hop_source(ledger.source, identity), basis=basis),
            rate_vs_window("measured HTTP/2 upload rate vs what the window allows", h.h2_rate,
                           window, rtt, f"{ledger.source}; RTT from run",
                           text="" if h.h2_rate else "no completed push"),
        )
        if h.h2_rate is not None and h.h2_rate <= MATCHES_CAP_RATIO * (window / rtt):
            tally.add("rate-at-window")
    zero = ledger.zero_credit_s
    up = upload_s(h.p)
    if zero > 0 and (up is None or zero >= ZERO_CREDIT_SHARE * up):
        what = "time at zero HTTP/2 send credit"
        tally.add("zero-credit", share_of_upload(what, zero, up, ledger.source))
    if ledger.window_updates is not None:
        tally.note(
            Evidence(
                what=f"WINDOW_UPDATE frames from {TERMINATOR}",
                value=ledger.window_updates,
                unit="count",
                source=hop_source(ledger.source, identity),
            ),
        )
    return small


def _stall_signal(
    obs: Observations, p: ProtocolObservation, small_window: bool, tally: Tally
) -> list[PushResult]:
    """Pushes that hung: the HTTP/2 edge story even when nothing else is measured."""
    stalled = [push for push in failed_pushes(p) if push.error_kind in ("hung", "timeout")]
    if p.h2_client_stall is not None:
        # A hung push's own frames show the client stopping with credit left: the hangs
        # are client-http-stack's, not the window's (which only set the trap).
        return stalled
    others_ok = any(ok_pushes(o) for n, o in obs.protocols.items() if n != "h2")
    fired = tally.score > 0
    if stalled and (small_window or (others_ok and fired) or (others_ok and not ok_pushes(p))):
        # Alone (HTTP/2 only hangs, the other transports push fine) the stall is
        # still the field's HTTP/2 edge story, reported as a stall.
        source = "pushes: " + (stalled[0].error_message or stalled[0].error_kind or "")
        what = "HTTP/2 pushes that stalled with no progress"
        tally.add("stalled" if fired else "stalled-alone",
                  above_zero(what, len(stalled), source, of=len(p.pushes)))
    return stalled


def h2_push_cost_s(obs: Observations, p: ProtocolObservation, slow_s: float) -> float:
    """The stalled-push cost rule, per HTTP/2 push: the completed pushes' share of
    ``slow_s`` (what the window cost one completed push) plus the stalled pushes' wait
    and redo. Stalls cost nothing here when a hung push's own frames show the client
    stopping with credit left: those seconds are ``client-http-stack``'s (the window
    only set the trap). The detector and the cost model (:mod:`..costs`) both use it."""
    stall_s = 0.0
    if p.h2_client_stall is None:
        stall_s, _, _ = failure_cost_s(obs, "h2", {"hung", "timeout"})
    return slow_s * len(ok_pushes(p)) / max(1, len(p.pushes)) + stall_s


def _cost_s(obs: Observations, h: _H2Push) -> float:
    """Expected seconds per push: completed pushes lose the rate gap, stalled ones
    their wait plus a redo."""
    p, ledger = h.p, h.p.h2_ledger
    size = push_bytes(p)
    slow_cost = 0.0
    if size is not None and h.h2_rate is not None and h.next_limit is not None:
        up = upload_s(p)
        assert up is not None
        slow_cost = saved_time_s(size, up, h.next_limit[1]) or 0.0
    elif ledger is not None:
        slow_cost = ledger.zero_credit_s
    return h2_push_cost_s(obs, p, slow_cost)


def _summary(h: _H2Push, predicted: float | None, stalled: list[PushResult]) -> str:
    parts = []
    if h.h2_rate is not None and h.other is not None:
        parts.append(
            f"HTTP/2 pushes uploaded at {fmt_rate(h.h2_rate)}, {h.other[1] / h.h2_rate:.1f}x "
            f"slower than {label(h.other[0])} ({fmt_rate(h.other[1])})"
        )
    elif h.h2_rate is not None:
        parts.append(f"HTTP/2 pushes uploaded at {fmt_rate(h.h2_rate)}")
    if h.window is not None and predicted is not None and h.rtt is not None:
        parts.append(
            f"a {h.window} B HTTP/2 window over {fmt_s(h.rtt)} RTT allows only "
            f"{fmt_rate(predicted)}"
        )
    if stalled:
        parts.append(
            f"{len(stalled)} of {len(h.p.pushes)} HTTP/2 pushes stalled with no progress "
            f"until the {fmt_s(max(s.duration_s for s in stalled))} timeout"
        )
    if not parts:
        parts.append("HTTP/2 flow control throttles the upload")
    return "; ".join(parts) + "."


def _fix(h: _H2Push, identity: ServerIdentity | None) -> str:
    bdp = h.bdp
    bdp_text = f" (BDP here {fmt_bytes(bdp)})" if bdp is not None else ""
    return (
        "Raise the HTTP/2 receive window on the server or edge that terminates HTTP/2 "
        f"above the BDP{bdp_text}, to {suggest_window(bdp)} B. "
        + window_fix(identity, suggest_window(bdp))
        + " Client workaround meanwhile: `git config http.version HTTP/1.1`."
    )


CAPTURE_ONLY_SELF_LIMITED_SHARE = 0.7
"""Capture-only rule: the TCP sender waits on HTTP/2 at least this share of the time."""
CAPTURE_ONLY_OPEN_RATIO = 4
"""Capture-only rule: the advertised TCP window is at least this multiple of bytes in flight."""
CAPTURE_ONLY_DEFAULT_WINDOW_SLACK = 1.02
"""Capture-only rule: a plateau from HTTP/2's default window (65535 B of DATA) up to this
multiple of it is that window, with the frame headers and TLS records riding on it (a
recorded 65535 B edge: 65787 B in flight)."""


def _capture_only_signals(cap: CaptureMetrics, rate: float | None, rtt: float, window: int,
                          tally: Tally) -> None:
    """What a bare capture adds beside the waiting sender: the plateau carries the rate
    (about one plateau per round trip), it is flat, and it sits at HTTP/2's default window."""
    if rate and window / rtt <= MATCHES_CAP_RATIO * rate:
        tally.add("capture-rate-at-plateau", Evidence(
            what="HTTP/2 upload rate vs one plateau per round trip", value=rate, unit="B/s",
            threshold=window / rtt / MATCHES_CAP_RATIO, comparison=">=",
            basis="plateau {} / RTT {} / {}",
            basis_terms=(term(window, "B"), term(rtt, "s"), term(MATCHES_CAP_RATIO, "count")),
            source=f"pushes; {cap.source}"))
    median = cap.bytes_in_flight_median
    if median and median >= FLAT_RATIO * window:
        tally.add("capture-flat-plateau", Evidence(
            what="bytes in flight (median): flat at the plateau", value=median, unit="B",
            threshold=FLAT_RATIO * window, comparison=">=",
            basis="{} of bytes in flight (p95) {}",
            basis_terms=(term(FLAT_RATIO, "ratio"), term(window, "B")), source=cap.source))
    top = CAPTURE_ONLY_DEFAULT_WINDOW_SLACK * HTTP2_DEFAULT_WINDOW_BYTES
    if HTTP2_DEFAULT_WINDOW_BYTES <= window <= top:
        tally.add("capture-default-window", Evidence(
            what="bytes-in-flight plateau at HTTP/2's default window", value=window, unit="B",
            threshold=top, comparison="<=",
            basis="the default SETTINGS_INITIAL_WINDOW_SIZE {} (RFC 9113 section 6.9.2) x {} "
            "for frame headers and TLS records",
            basis_terms=(term(HTTP2_DEFAULT_WINDOW_BYTES, "B"),
                         term(CAPTURE_ONLY_DEFAULT_WINDOW_SLACK, "count")),
            source=cap.source))


def _capture_only(obs: Observations, p: ProtocolObservation) -> Hit | None:
    """A bare capture (no other transport to compare, no HTTP/2 ledger): the TCP sender
    over TLS self-limited most of the time while the TCP window stood wide open; the
    bytes-in-flight plateau estimates the HTTP/2 window it waits on."""
    cap = p.capture
    rtt = rtt_s(obs, p)
    if (cap is None or rtt is None or cap.self_limited_share is None
            or cap.self_limited_share < CAPTURE_ONLY_SELF_LIMITED_SHARE
            or not cap.bytes_in_flight_p95 or not cap.advertised_window_median_bytes
            or cap.advertised_window_median_bytes
            < CAPTURE_ONLY_OPEN_RATIO * cap.bytes_in_flight_p95):
        return None
    if cap.network_bound:
        return None
    window = cap.bytes_in_flight_p95
    tcp_rate = tcp_window_rate(obs, p)
    size, up, rate = push_bytes(p), upload_s(p), upload_rate_bytes_per_s(p)
    cost = saved_time_s(size, up, tcp_rate) if size and up else None
    bdp = tcp_rate * rtt if tcp_rate else None
    tally = Tally("h2-flow-control-window")
    tally.add(
        "capture-only",
        Evidence(what="TCP sender self-limited (waiting above TCP) with its window open",
                 value=cap.self_limited_share, unit="ratio",
                 threshold=CAPTURE_ONLY_SELF_LIMITED_SHARE, comparison=">=",
                 source=cap.source),
        Evidence(what="advertised TCP window (median) vs bytes in flight (p95)",
                 value=cap.advertised_window_median_bytes, unit="B",
                 threshold=CAPTURE_ONLY_OPEN_RATIO * window, comparison=">=",
                 basis="{} x bytes in flight (p95) {}",
                 basis_terms=(term(CAPTURE_ONLY_OPEN_RATIO, "count"), term(window, "B")),
                 source=cap.source),
        Evidence(what="HTTP/2 window estimated from the bytes-in-flight plateau",
                 value=window, unit="B", threshold=bdp, comparison="<" if bdp else None,
                 basis="BDP (TCP window / RTT x RTT)" if bdp else "",
                 text="estimate: the HTTP/2 frames are encrypted; a key log gives the "
                 "granted window", source=cap.source),
    )
    _capture_only_signals(cap, rate, rtt, window, tally)
    rate_text = f" at {fmt_rate(rate)}" if rate else ""
    return Hit(
        score=tally.score,
        cost_s=cost or 0.0,
        summary=(f"The HTTP/2 upload{rate_text} sent about {fmt_bytes(window)} per "
                 f"{fmt_s(rtt)} round trip and waited {cap.self_limited_share:.0%} of the "
                 "time with the TCP window open: an HTTP/2 flow-control window is the likely "
                 "limit. Seen in a bare capture: no HTTP/1.1 or SSH push to compare, the "
                 "HTTP/2 frames not decrypted (give --keylog for the granted window)."),
        evidence=tuple(tally.evidence),
        fix=_fix(_H2Push(p=p, rtt=rtt, h2_rate=rate, other=None, window=window,
                         next_limit=("TCP receive window / RTT", tcp_rate) if tcp_rate
                         else None), answering_server(obs)),
    )


def _window_ruled_out(obs: Observations, h: _H2Push) -> bool:
    """The window's own evidence speaks against it: the rate it allows over the RTT is far
    above anything the pushes reached or needed (:mod:`.headroom`), so neither a slow nor
    a hung HTTP/2 push is its doing. The window is the granted one, else the most the
    capture saw in flight (the sender cannot have more in flight than its credit)."""
    window = h.window
    if window is None and h.p.capture is not None:
        window = h.p.capture.bytes_in_flight_p95
    return window_headroom(obs, window, h.rtt) is not None


def h2_flow_control_window(obs: Observations) -> Hit | None:
    """HTTP/2 much slower than the other transports while TCP waits on it, a granted
    window below the BDP, time at zero credit, or pushes that hang; never a window whose
    rate (window / RTT) is far above what the pushes reached or needed."""
    p = obs.protocols.get("h2")
    if p is None:
        return None
    if p.h2_client_stall is not None and not ok_pushes(p):
        # Every push hung and their frames show the client stopping with credit left:
        # no push measured what the window costs (client-http-stack names the window).
        return None
    h = _gather(obs, p)
    if _window_ruled_out(obs, h):
        return None
    if h.other is None and p.h2_ledger is None and ok_pushes(p):
        return _capture_only(obs, p)
    tally = Tally("h2-flow-control-window")
    identity = answering_server(obs)
    slower = _ab_signals(h, tally)
    predicted: float | None = None
    small_window = False
    if h.window is not None and h.rtt is not None and p.h2_ledger is not None:
        predicted = h.window / h.rtt
        small_window = _window_signals(h, p.h2_ledger, h.rtt, h.window, tally, identity)
    stalled = _stall_signal(obs, p, small_window, tally)

    # A slower HTTP/2 push is not blamed on its flow control when the ledger shows a
    # window above the BDP, or when the capture shows TCP bound by the network
    # (losses, cwnd) rather than waiting on HTTP/2: that is packet-loss's evidence.
    window_rules_out = h.window is not None and h.rtt is not None and not small_window
    network_bound = p.capture is not None and p.capture.network_bound
    if window_rules_out or network_bound:
        slower = False
    if not (slower or small_window or (stalled and tally.score > 0)):
        return None
    pattern = r"initial-window-size|H2WindowSize|http2_body_preread_size|window_size"
    tally.note(*config_evidence(config_lines(obs, pattern)), *_hops(identity))
    return Hit(
        score=tally.score,
        cost_s=_cost_s(obs, h),
        summary=_summary(h, predicted, stalled),
        evidence=tuple(tally.evidence),
        fix=_fix(h, identity),
    )


H2_DEFAULT_FRAME_BYTES = 16384
"""HTTP/2's default SETTINGS_MAX_FRAME_SIZE (RFC 9113 section 6.5.2), the largest DATA
payload a client sends before the server says otherwise; also the smallest a server
may set."""


def _buffer_below_a_frame(obs: Observations) -> Hit | None:
    """HTTP/2 pushes fail while other transports push, and the edge's per-stream buffer
    (HAProxy ``tune.bufsize``) is smaller than one full DATA frame. Measured with HAProxy 2.6
    at 4096, 8192 and 12288 B: every HTTP/2 request, the first GET of the ref advertisement
    included, ends in "Empty reply from server", while HTTP/1.1 through it works."""
    p = obs.protocols.get("h2")
    if p is None or not any(ok_pushes(o) for n, o in obs.protocols.items() if n != "h2"):
        return None
    small = [c for c in config_lines(obs, r"^tune\.bufsize$")
             if (size := _size_bytes(c.value)) is not None and size < H2_DEFAULT_FRAME_BYTES]
    cost, failed, total = failure_cost_s(obs, "h2", {"reset", "other", "hung", "timeout"})
    if not small or not failed:
        return None
    first = next(f for f in failed_pushes(p) if f.error_kind not in REFUSALS)
    size = _size_bytes(small[0].value)
    return Hit(
        score=weight("h2-frame-settings", "buffer-below-a-frame"),
        cost_s=cost,
        summary=(
            f"{failed} of {total} HTTP/2 pushes failed while the other transports pushed: the "
            f"edge buffers {size} B per stream, less than one {H2_DEFAULT_FRAME_BYTES} B "
            "HTTP/2 frame, and drops HTTP/2 requests (\"Empty reply from server\")."
        ),
        evidence=(
            Evidence(
                what="edge buffer per stream (tune.bufsize)",
                value=size,
                unit="B",
                threshold=H2_DEFAULT_FRAME_BYTES,
                comparison="<",
                basis="one HTTP/2 DATA frame at the default maximum frame size",
                source=f"{small[0].file} line {small[0].line}",
            ),
            above_zero("HTTP/2 pushes failed", failed,
                       "pushes: " + (first.error_message or first.error_kind or ""), of=total),
        ),
        fix=(
            f"Raise HAProxy `tune.bufsize` to at least {H2_DEFAULT_FRAME_BYTES} (its default) "
            "so a whole HTTP/2 frame fits; meanwhile `git config http.version HTTP/1.1` "
            "pushes through the same edge."
        ),
    )


FRAME_SLOWER_RATIO = 0.8
"""Small frames are a suspect when HTTP/2 runs below this share of the fastest other rate."""
FRAME_ZERO_CREDIT_SHARE = 0.1
"""...and spent less than this share of the upload at zero credit (the window is open)."""


def _size_bytes(text: str) -> int | None:
    match = re.fullmatch(r"(\d+)\s*([kKmM]?)", text.strip())
    if match is None:
        return None
    return int(match.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20}[match.group(2).lower()]


def h2_frame_settings(obs: Observations) -> Hit | None:
    broken = _buffer_below_a_frame(obs)
    if broken is not None:
        return broken
    p = obs.protocols.get("h2")
    if p is None or p.h2_ledger is None or p.h2_ledger.max_frame_size_bytes is None:
        return None
    ledger = p.h2_ledger
    h2_rate, other, size, up = (
        upload_rate_bytes_per_s(p),
        best_other_rate(obs, "h2"),
        push_bytes(p),
        upload_s(p),
    )
    rtt = rtt_s(obs, p)
    if h2_rate is None or other is None or size is None or up is None:
        return None
    frame = ledger.max_frame_size_bytes
    if frame is None or frame > H2_DEFAULT_FRAME_BYTES or h2_rate >= FRAME_SLOWER_RATIO * other[1]:
        return None
    window = ledger.granted_window_bytes
    if window is not None and rtt is not None and window < other[1] * rtt:
        return None  # the window explains it: h2-flow-control-window
    zero = ledger.zero_credit_s
    if zero >= FRAME_ZERO_CREDIT_SHARE * up:
        return None
    if p.capture is not None and p.capture.network_bound:
        return None  # TCP was bound by the network (loss, cwnd), not by per-frame cost
    identity = answering_server(obs)
    return Hit(
        score=weight("h2-frame-settings", "small-frames"),
        cost_s=saved_time_s(size, up, other[1]) or 0.0,
        summary=(
            f"HTTP/2 uploaded at {fmt_rate(h2_rate)} vs {label(other[0])} "
            f"{fmt_rate(other[1])} although its window was open; the server allows only "
            f"{ledger.max_frame_size_bytes} B frames, so per-frame overhead and buffering dominate."
        ),
        evidence=(
            Evidence(
                what=f"SETTINGS_MAX_FRAME_SIZE of {TERMINATOR}",
                value=ledger.max_frame_size_bytes,
                unit="B",
                threshold=H2_DEFAULT_FRAME_BYTES,
                comparison="<=",
                basis="the protocol minimum",
                source=hop_source(ledger.source, identity),
            ),
            slower_than("HTTP/2 upload rate", h2_rate, other, "pushes", ratio=FRAME_SLOWER_RATIO),
            share_of_upload("time at zero HTTP/2 credit (the window is not the limit)", zero,
                            up, ledger.source, share=FRAME_ZERO_CREDIT_SHARE, comparison="<"),
            *config_evidence(
                config_lines(obs, r"max-frame-size|bufsize|StreamMaxMemSize|chunk_size")
            ),
            *_hops(identity),
        ),
        fix=frame_fix(identity),
    )
