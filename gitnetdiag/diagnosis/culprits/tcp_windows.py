"""TCP windows: a receive window clamped below the BDP, window scaling off."""

from __future__ import annotations

from dataclasses import dataclass

from gitnetdiag.diagnosis.culprits._common import (
    AUTOTUNE_MAX_WINDOW_BYTES,
    CLAMP_FALLBACK_WINDOW_BYTES,
    FLAT_RATIO,
    RWND_LIMITED_SHARE,
    Hit,
    Tally,
    above_zero,
    captured,
    config_evidence,
    config_lines,
    label,
    rate_vs_window,
    rwnd_limited,
    suggest_window,
    term,
    typical_costliest,
    unclamped_cost_s,
    window_below,
)
from gitnetdiag.diagnosis.culprits.headroom import window_headroom
from gitnetdiag.diagnosis.culprits.weights import weight
from gitnetdiag.diagnosis.measures import (
    path_rate_bytes_per_s,
    protocol_rates,
    push_bytes,
    rtt_s,
    saved_time_s,
    upload_s,
)
from gitnetdiag.diagnosis.model import Evidence, Quantity
from gitnetdiag.diagnosis.observations import (
    PROTOCOL_ORDER,
    UNSCALED_MAX_WINDOW_BYTES,
    Observations,
)
from gitnetdiag.diagnosis.transfers import TransferObservation
from gitnetdiag.diagnosis.units import fmt_bytes, fmt_rate, fmt_s


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
    for name, p, c in captured(obs):
        window = c.largest_window_bytes
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
        if window_headroom(obs, window, rtt) is not None:
            # The largest window allows far more than any push reached or needed: the
            # sender sat at a window the receiver shrank (it read slowly), not a clamp.
            continue
        next_limit: tuple[str, float] | None = None
        if (path := path_rate_bytes_per_s(obs)) is not None:
            next_limit = ("path rate", path)
        elif unclamped:
            best = max(unclamped, key=lambda key: unclamped[key])
            next_limit = (f"{label(best)} push", unclamped[best])
        if next_limit is not None and window >= FLAT_RATIO * next_limit[1] * rtt:
            continue
        if next_limit is None and window >= CLAMP_FALLBACK_WINDOW_BYTES:
            continue
        if next_limit is not None:
            cost = saved_time_s(size, up, next_limit[1]) or 0.0
        else:
            # No next limit (a bare capture, every protocol clamped): the rwnd-limited share
            # of the upload ran at window / RTT; at the 1 MiB the clamp is measured against
            # it would take window / 1 MiB of that time. Path latency prices the same window
            # at a shorter RTT, so this keeps the cause above its multiplier.
            cost = up * c.rwnd_limited_share * (1.0 - window / CLAMP_FALLBACK_WINDOW_BYTES)
        found.append(
            _Clamp(name=name, window=window, rate=rate, cost=cost, next_limit=next_limit, rtt=rtt)
        )
    return found


def _clamp_signals(obs: Observations, clamps: list[_Clamp], worst: _Clamp,
                   bdp: float | None) -> Tally:
    """The clamp's signals on its worst protocol: the sender at the window, in flight flat
    at it, the window below the BDP, every protocol clamped, zero windows."""
    cap = obs.protocols[worst.name].capture
    assert cap is not None
    tally = Tally("tcp-receive-window-clamp")
    tally.add("rwnd-limited")
    for clamp in clamps:
        c = obs.protocols[clamp.name].capture
        assert c is not None
        tally.note(rwnd_limited(clamp.name, c))
    in_flight, advertised = cap.bytes_in_flight_median, cap.advertised_window_median_bytes
    if in_flight is not None and advertised and in_flight >= FLAT_RATIO * advertised:
        tally.add("flat-in-flight", Evidence(
            what=f"{label(worst.name)}: bytes in flight flat at the advertised window (median)",
            value=in_flight, unit="B", threshold=FLAT_RATIO * advertised, comparison=">=",
            basis="{} of the advertised window {}",
            basis_terms=(term(FLAT_RATIO, "ratio"), term(advertised, "B")), source=cap.source))
    tally.note(
        window_below(f"{label(worst.name)}: largest advertised TCP window", worst.window, bdp,
                     cap.source,
                     basis=f"BDP ({worst.next_limit[0]} x RTT {{}})"
                     if bdp is not None and worst.next_limit is not None
                     else "fallback (no path rate measured)",
                     basis_terms=(term(worst.rtt, "s"),) if bdp is not None else ()),
        rate_vs_window(f"{label(worst.name)}: measured upload rate vs what the window allows",
                       worst.rate, worst.window, worst.rtt, f"{cap.source}; RTT from run"),
    )
    tally.add("below-bdp" if bdp is not None else "no-bdp")
    measured = [n for n in PROTOCOL_ORDER if n in obs.protocols and obs.protocols[n].capture]
    if len(clamps) >= 2 and len(clamps) == len(measured):
        tally.add("every-protocol")
    if cap.zero_window_count:
        tally.add("zero-window",
                  above_zero("zero-window advertisements", cap.zero_window_count, cap.source))
        if cap.zero_window_s is not None:
            tally.note(Evidence(what="time at zero window", value=cap.zero_window_s, unit="s",
                                source=cap.source))
    return tally


def _sysctls(obs: Observations, *keys: str, basis: str = "") -> list[Evidence]:
    """The host's value of each sysctl of ``keys`` it reported."""
    sysctls = obs.host.sysctls if obs.host is not None else {}
    return [Evidence(what=f"sysctl {key}", text=sysctls[key], basis=basis, source="host sysctl")
            for key in keys if key in sysctls]


def tcp_receive_window_clamp(obs: Observations) -> Hit | None:
    clamps = _clamped_protocols(obs)
    if not clamps:
        return None
    worst = max(clamps, key=lambda c: c.cost)
    cap = obs.protocols[worst.name].capture
    assert cap is not None
    bdp = worst.next_limit[1] * worst.rtt if worst.next_limit else None
    tally = _clamp_signals(obs, clamps, worst, bdp)
    if cap.window_scaling_off:
        # Without the scale option no window can pass 65535 B: tcp-window-scaling-off owns
        # these seconds, and a clamp cannot be told apart until scaling is on again.
        return None
    if worst.window >= AUTOTUNE_MAX_WINDOW_BYTES:
        tally.scale("autotune-maximum")
    tally.note(*_sysctls(obs, "net.ipv4.tcp_rmem", "net.core.rmem_max"))
    tally.note(*config_evidence(config_lines(obs, r"rcvbuf|SO_RCVBUF|tcp_rmem")))
    names = ", ".join(label(c.name) for c in clamps)
    suggest = suggest_window(bdp)
    return tally.hit(
        cost_s=worst.cost,
        summary=(
            f"{names} uploads sat at the receiver's TCP window: {fmt_bytes(worst.window)} per "
            f"{fmt_s(worst.rtt)} RTT allows {fmt_rate(worst.window / worst.rtt)}, measured "
            f"{fmt_rate(worst.rate)}"
            + (f", while the BDP is {fmt_bytes(bdp)}." if bdp is not None else ".")
        ),
        fix=(
            "On the receiver of the push (the server, or the edge that terminates TCP): raise "
            f"the maximum of `net.ipv4.tcp_rmem` (e.g. `4096 131072 {suggest}`) and "
            "`net.core.rmem_max`; remove fixed `SO_RCVBUF` sizes, which turn autotuning off "
            "(HAProxy `tune.rcvbuf.client`/`tune.rcvbuf.server`, nginx `listen ... rcvbuf=`), "
            "and check the proxy's buffer sizes."
        ),
    )


def tcp_window_scaling_off(obs: Observations) -> Hit | None:
    clamps = {c.name: c for c in _clamped_protocols(obs)}
    hits = [(name, c, window) for name, _, c in captured(obs)
            if (window := c.largest_window_bytes) is not None and c.window_scaling_off]
    if not hits:
        return None
    costs = {name: clamps[name].cost if name in clamps else 0.0 for name, _, _ in hits}
    name, cap, window = max(hits, key=lambda hit: costs[hit[0]])
    limited = name in clamps
    rtt = rtt_s(obs, obs.protocols[name])
    evidence = [
        Evidence(
            what=f"{label(n)}: window scale option in the handshake",
            text="absent",
            basis="present (RFC 7323)",
            source=c.source,
        )
        for n, c, _ in hits
    ]
    evidence.append(
        Evidence(
            what=f"{label(name)}: largest advertised TCP window",
            value=window,
            unit="B",
            threshold=UNSCALED_MAX_WINDOW_BYTES,
            comparison="<=",
            basis="the largest window without scaling",
            source=cap.source,
        )
    )
    if limited:
        evidence.append(rwnd_limited(name, cap))
    evidence += _sysctls(obs, "net.ipv4.tcp_window_scaling", basis="1 (on)")
    cap_text = f" caps the upload at {fmt_rate(window / rtt)} over {fmt_s(rtt)} RTT" if rtt else ""
    return Hit(
        score=weight("tcp-window-scaling-off", "rwnd-limited" if limited else "unscaled"),
        cost_s=costs[name],
        summary=(
            f"The {label(name)} handshake carried no TCP window scale option, so the window "
            f"stays at {window} B and{cap_text or ' limits every round trip'}."
        ),
        evidence=tuple(evidence),
        fix=(
            "Enable `net.ipv4.tcp_window_scaling = 1` on both ends (the Linux default); if it is "
            "already on, a middlebox (firewall, load balancer, WAN optimiser) strips the window "
            "scale option from the SYN: capture on both sides of it to find which one."
        ),
    )


# The download direction: the client receives, so its own receive window caps the clone.

WINDOW_BOUND_SHARE = 0.5
"""A rate at least this share of ``window / RTT`` is held by the window (the rest is the
receiver's ACK pacing and slow start)."""
BUFFER_AT_CEILING = 0.9
"""A receive buffer this close to ``tcp_rmem``'s maximum has no room left to grow."""
SMALL_WINDOW_BYTES = 256 * 1024
"""Without the client's ``tcp_rmem``: an advertised window cap below this is clamped
(Linux autotuning grows it to megabytes on any path with more than a few ms of RTT)."""
UNCLAMPED_WINDOW_BYTES = 3 * 1024 * 1024
"""The window Linux's default ``tcp_rmem`` maximum (6 MiB) lets the client advertise
(half the buffer with ``tcp_adv_win_scale`` 1): the rate an unclamped client could reach."""


def client_tcp_receive_window_clamp(obs: Observations) -> Hit | None:
    """A download: the client's advertised window caps it (``tcp_rmem`` clamp)."""
    return typical_costliest(obs.transfers, _client_window_hit)


def _client_window_hit(obs: TransferObservation) -> Hit | None:
    tcp, rtt = obs.tcp, obs.rtt_s
    if not obs.measured or tcp is None or not rtt or tcp.advertised_window_max_bytes is None:
        return None
    window = tcp.advertised_window_max_bytes
    limit = window / rtt
    rate = obs.rate_bytes_per_s or 0.0
    if rate < WINDOW_BOUND_SHARE * limit:
        return None
    ceiling = obs.client_rmem_max_bytes
    buffer = tcp.receive_buffer_max_bytes
    # With the client's tcp_rmem and its socket's buffer known, the buffer at the ceiling is
    # the clamp; a small window below an unreached ceiling is autotuning still growing.
    known = ceiling is not None and buffer is not None
    at_ceiling = known and buffer >= BUFFER_AT_CEILING * ceiling  # type: ignore[operator]
    if (known and not at_ceiling) or (not known and window >= SMALL_WINDOW_BYTES):
        return None
    cost = unclamped_cost_s(obs, UNCLAMPED_WINDOW_BYTES, rtt)
    evidence = [
        Evidence(what="client's advertised receive window (largest rcv_ssthresh)",
                 value=float(window), unit="B", source=f"{tcp.source}, fetch {obs.protocol}"),
        Evidence(what="download rate", value=rate, unit="B/s", threshold=WINDOW_BOUND_SHARE * limit,
                 comparison=">=", basis="half of {} / RTT {}",
                 basis_terms=(Quantity(value=float(window), unit="B"),
                              Quantity(value=rtt, unit="s")),
                 source=f"fetch {obs.protocol} #{obs.repeat}"),
    ]
    if buffer is not None:
        evidence.append(Evidence(
            what="client's receive buffer (skmem rb)", value=float(buffer), unit="B",
            threshold=BUFFER_AT_CEILING * ceiling if ceiling else None,
            comparison=">=" if ceiling else None,
            basis="90% of the tcp_rmem maximum {}" if ceiling else "",
            basis_terms=(Quantity(value=float(ceiling), unit="B"),) if ceiling else (),
            source=f"{tcp.source}; client sysctl net.ipv4.tcp_rmem"))
    return Hit(
        score=weight("client-tcp-receive-window-clamp",
                     "buffer-at-ceiling" if at_ceiling else "window-bound"),
        cost_s=max(0.0, cost),
        summary=(f"the client advertised at most {window} B, so the download ran at "
                 f"window / RTT ({rate:.0f} B/s): its receive buffer is clamped"),
        evidence=tuple(evidence),
        fix=("raise the client's receive buffer: the third value of sysctl net.ipv4.tcp_rmem "
             "(Linux's default is 6291456) to at least twice the path's bandwidth-delay "
             "product, and net.core.rmem_max when an application sets SO_RCVBUF"),
        cost_protocol=obs.protocol,
    )
