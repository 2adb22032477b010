"""HTTP/2 flow control: the stream/connection window, granted by the server on a push
(``h2-flow-control-window``) and by the client on a clone (``client-http2-window``)."""

from __future__ import annotations

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
from gitnetdiag.diagnosis.culprits.edgeresponse import fastest
from gitnetdiag.diagnosis.culprits.headroom import (
    StoppedDead,
    stopped_within_window,
    window_headroom,
)
from gitnetdiag.diagnosis.culprits.libcurlwin import LibcurlWindow, window_for
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
from gitnetdiag.diagnosis.model import Evidence, Quantity
from gitnetdiag.diagnosis.observations import (
    CaptureMetrics,
    H2Ledger,
    Observations,
    ProtocolObservation,
    PushObservation,
)
from gitnetdiag.diagnosis.servers import (
    ServerIdentity,
    answering_server,
    terminator_name,
    window_fix,
)
from gitnetdiag.diagnosis.transfers import TransferObservation
from gitnetdiag.diagnosis.units import fmt_bytes, fmt_rate, fmt_s


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


def hops(identity: ServerIdentity | None) -> list[Evidence]:
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
) -> list[PushObservation]:
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


def _summary(h: _H2Push, predicted: float | None, stalled: list[PushObservation]) -> str:
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


def _fix(bdp: float | None, identity: ServerIdentity | None) -> str:
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
    return tally.hit(
        cost_s=cost or 0.0,
        summary=(f"The HTTP/2 upload{rate_text} sent about {fmt_bytes(window)} per "
                 f"{fmt_s(rtt)} round trip and waited {cap.self_limited_share:.0%} of the "
                 "time with the TCP window open: an HTTP/2 flow-control window is the likely "
                 "limit. Seen in a bare capture: no HTTP/1.1 or SSH push to compare, the "
                 "HTTP/2 frames not decrypted (give --keylog for the granted window)."),
        fix=_fix(bdp, answering_server(obs)),
    )


def _held_to(h: _H2Push) -> float | None:
    """The window the pushes were held to: the granted one, else the most the capture saw in
    flight (the sender cannot have more in flight than its credit)."""
    if h.window is not None:
        return h.window
    return h.p.capture.bytes_in_flight_p95 if h.p.capture is not None else None


def _stopped_dead(h: _H2Push) -> StoppedDead | None:
    """A hung HTTP/2 push that moved no more than one window before it stopped (its credit
    used up, never granted again); never when its frames show the client stopping with
    credit left (``client-http-stack``'s)."""
    if h.p.h2_client_stall is not None:
        return None
    return stopped_within_window(h.p.pushes, _held_to(h))


def _window_ruled_out(obs: Observations, h: _H2Push) -> bool:
    """The window's own evidence speaks against it: the rate it allows over the RTT is far
    above anything the pushes reached or needed (:mod:`.headroom`), so neither a slow nor
    a hung HTTP/2 push is its doing. Not when a hung push stopped within one window
    (:func:`_stopped_dead`): a push that stopped dead reached no rate to compare."""
    if _stopped_dead(h) is not None:
        return False
    return window_headroom(obs, _held_to(h), h.rtt) is not None


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
    if stalled and (dead := _stopped_dead(h)) is not None:
        held = p.h2_ledger.source if p.h2_ledger is not None else (
            p.capture.source if p.capture is not None else "")
        tally.note(dead.evidence("bytes a hung HTTP/2 push moved before it stopped: within "
                                 "one window (its credit used up, never granted again)", held))

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
    tally.note(*config_evidence(config_lines(obs, pattern)), *hops(identity))
    return tally.hit(
        cost_s=_cost_s(obs, h),
        summary=_summary(h, predicted, stalled),
        fix=_fix(h.bdp, identity),
        compares=("h2", h.other[0]) if h.other is not None else None,
    )


# The download direction: over HTTP/2 the client's stream window bounds the server's DATA
# at ``window / RTT``; libcurl's window changed from release to release
# (``gitnetdiag/data/libcurl_h2_windows.toml``). ``client-http2-window`` fires when the
# HTTP/2 clone ran slower than the HTTP/1.1 clone of the same repository at the same time,
# with about one small window per round trip: the window git's own decrypted frames show
# (``--full``), else the one its release is documented to advertise when that release is
# listed as small or slow, else HTTP/2's default 65,535 B when the rate per round trip sits
# at it (a build or a preloaded library can advertise less than its release's documented
# window; the evidence then gives both).

H2_SLOWER = 0.67
"""The HTTP/2 clone at most this share of the HTTP/1.1 clone's rate."""
NEAR_WINDOW = 1.5
"""Bytes per RTT within this factor of the window: the window binds."""
DEFAULT_WINDOW_LOW = 0.3
"""Without the client's frames or a listed release: bytes per RTT from this share of
HTTP/2's default window up (nghttp2 grants more once half the window is read, so a client
that keeps the default moves about 0.5-1 window per round trip) count as that window."""

H2_WINDOW_FIX = (
    "upgrade libcurl (and the git built on it) to a release with a large HTTP/2 download "
    "window (7.52.0 to 8.0.1, or 8.1.1 and later: 10 MB); a client that still advertises "
    "a small window (a build or a preloaded library that changes it) needs that fixed; until "
    "then let git use HTTP/1.1 to this server: git config http.version HTTP/1.1")


def _window_evidence(tally: Tally, h2: TransferObservation, h1_flight: float,
                     entry: LibcurlWindow | None) -> int | None:
    """The window that held HTTP/2, with its evidence; None when none did.

    git's own frames (``--full``) win over the release's documented window; without them a
    listed release's window, else HTTP/2's default when the bytes per RTT sit at it."""
    rtt = h2.rtt_s or 0.0
    flight = (h2.rate_bytes_per_s or 0.0) * rtt
    seen = h2.git_h2_window
    listed = entry is not None and entry.slow_downloads
    documented = entry.steady_window if entry is not None else None
    if seen is not None:
        window = min(seen.stream_window_bytes, seen.connection_window_bytes)
        source = f"--full: git's SETTINGS and WINDOW_UPDATE frames, from frame {seen.first_frame}"
        if window >= h1_flight or flight > NEAR_WINDOW * window:
            return None  # the window git advertised did not hold it
        tally.add("advertised-small-window", Evidence(
            what="HTTP/2 window git advertised (stream and connection, the smaller)",
            value=float(window), unit="B", threshold=h1_flight, comparison="<",
            basis="the HTTP/1.1 clone's bytes per round trip {}",
            basis_terms=(Quantity(value=h1_flight, unit="B"),), source=source))
    elif listed and documented is not None:
        window = documented
    elif listed:
        return 0  # a release known to be slow, its window not documented
    else:
        window = HTTP2_DEFAULT_WINDOW_BYTES
        if not DEFAULT_WINDOW_LOW * window <= flight <= NEAR_WINDOW * window:
            return None
        tally.add("rate-at-default-window", Evidence(
            what="HTTP/2 bytes per round trip (rate x RTT)", value=flight, unit="B",
            threshold=NEAR_WINDOW * window, comparison="<=",
            basis="1.5 x HTTP/2's default window {}, what a client that does not raise it "
                  "advertises", basis_terms=(Quantity(value=float(window), unit="B"),),
            source="fetch monitor x path RTT; RFC 9113 section 6.9.2"))
        if documented is not None and entry is not None:
            tally.note(Evidence(
                what=f"HTTP/2 window libcurl {h2.libcurl} is documented to advertise (the "
                     "rate says the window this client advertised was smaller)",
                value=float(documented), unit="B", source=entry.source))
        return window
    if flight > NEAR_WINDOW * window:
        return None
    tally.add("rate-at-window", Evidence(
        what="HTTP/2 bytes per round trip (rate x RTT)", value=flight, unit="B",
        threshold=NEAR_WINDOW * window, comparison="<=",
        basis=("1.5 x the window git advertised {}" if seen is not None
               else "1.5 x the stream window its libcurl release advertises {}"),
        basis_terms=(Quantity(value=float(window), unit="B"),),
        source="fetch monitor x path RTT" + (f"; {entry.source}" if seen is None and entry
                                             else "")))
    if seen is not None and entry is not None and documented not in (None, window):
        tally.note(Evidence(
            what=f"HTTP/2 window libcurl {h2.libcurl} is documented to advertise (git's frames "
                 "show another)", value=float(documented or 0), unit="B", source=entry.source))
    return window


def client_http2_window(run: Observations) -> Hit | None:
    """A download: the client advertises a small HTTP/2 window: its libcurl release's, the
    one its decrypted frames show (``--full``), or the one its HTTP/2 rate gives away."""
    h2, h1 = fastest(run.transfers, ("h2",)), fastest(run.transfers, ("h1",))
    if h2 is None or h1 is None or not h2.rtt_s:
        return None
    entry = window_for(h2.libcurl)
    h2_rate, h1_rate = h2.rate_bytes_per_s or 0.0, h1.rate_bytes_per_s or 0.0
    if h2_rate > H2_SLOWER * h1_rate:
        return None
    tally = Tally("client-http2-window")
    if entry is not None and entry.slow_downloads:
        tally.add("listed-release", Evidence(
            what="client's libcurl", text=str(h2.libcurl),
            source=f"git version --build-options / curl-config; {entry.source}"))
    tally.add("slower-than-h1", Evidence(
        what="HTTP/2 clone's rate", value=h2_rate, unit="B/s", threshold=H2_SLOWER * h1_rate,
        comparison="<=", basis="two thirds of the HTTP/1.1 clone's {}",
        basis_terms=(Quantity(value=h1_rate, unit="B/s"),), source="fetch monitor, h1 and h2"))
    window = _window_evidence(tally, h2, h1_rate * h2.rtt_s, entry)
    if window is None:
        return None
    cost = h2.measured_s - h2.moved_bytes / h1_rate if h1_rate > h2_rate else 0.0
    return tally.hit(cost_s=max(0.0, cost), summary=_client_summary(h2, h1_rate, window, entry),
                     fix=H2_WINDOW_FIX, cost_protocol="h2", cap="cap", compares=("h2", "h1"))


def _client_summary(h2: TransferObservation, h1_rate: float, window: int,
             entry: LibcurlWindow | None) -> str:
    rates = (f"the HTTP/2 clone ran at {h2.rate_bytes_per_s or 0.0:.0f} B/s against "
             f"{h1_rate:.0f} B/s over HTTP/1.1")
    documented = entry.steady_window if entry is not None else None
    release = (f"; libcurl {h2.libcurl} is documented to advertise {documented} B"
               if documented is not None and documented != window else "")
    if h2.git_h2_window is not None:
        return (f"git advertised a {window} B HTTP/2 window for its download (its decrypted "
                f"frames{release}): {rates}")
    if entry is not None and entry.slow_downloads:
        window_text = f"{window} B" if window else "a window that is not documented"
        return (f"libcurl {h2.libcurl} advertises {window_text} for an HTTP/2 download "
                f"({entry.fact.split(':')[0]}): {rates}")
    return (f"the HTTP/2 clone moved about HTTP/2's default {window} B window per round trip, "
            f"as from a client that does not raise it{release}: {rates}")
