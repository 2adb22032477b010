"""``gitnetdiag analyze FILE``: what TCP was doing in each connection of a capture."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gitnetdiag.analysis.capture_analysis import CaptureAnalysis
from gitnetdiag.analysis.tcp import ConnectionAnalysis, LimitKind
from gitnetdiag.capture.flows import endpoint


def _bytes(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 1:
        return f"{value * 1000:.1f} ms"
    return f"{value:.2f} s"


def _rate(c: ConnectionAnalysis) -> str:
    bulk = c.bulk
    if bulk.first_data_ts_ns is None or bulk.last_data_ts_ns is None:
        return "-"
    span = (bulk.last_data_ts_ns - bulk.first_data_ts_ns) / 1e9
    if span <= 0:
        return "-"
    return f"{bulk.unique_bytes * 8 / span / 1e6:.2f} Mbit/s"


def limit_summary(c: ConnectionAnalysis) -> str:
    """Dominant limit of the bulk sender and the other shares, e.g. ``rwnd 81% (self 12%)``."""
    limits = c.bulk.limits
    kinds = sorted(LimitKind, key=limits.share, reverse=True)
    kinds = [k for k in kinds if limits.share(k) >= 0.005]
    if not kinds:
        return "-"
    head = f"{kinds[0].name.lower()} {limits.share(kinds[0]):.0%}"
    rest = ", ".join(f"{k.name.lower()} {limits.share(k):.0%}" for k in kinds[1:3])
    return f"{head} ({rest})" if rest else head


def _retransmissions(c: ConnectionAnalysis) -> str:
    b = c.bulk
    if not b.retransmissions:
        return "0"
    text = f"{b.retransmissions} ({b.loss_rate:.2%}; {b.fast_retransmissions} fast, "
    text += f"{b.timeout_retransmissions} RTO"
    if b.spurious_retransmissions:
        text += f", {b.spurious_retransmissions} spurious"
    return text + ")"


def _zero_windows(c: ConnectionAnalysis) -> str:
    parts = [f"{label}: {d.zero_window_count} / {_seconds(d.zero_window_s)}"
             for label, d in (("a", c.a_to_b), ("b", c.b_to_a)) if d.zero_window_count]
    return ", ".join(parts) or "0"


def _syn(c: ConnectionAnalysis) -> str:
    hs = c.handshake
    if not (hs.syn_retransmissions or hs.synack_retransmissions):
        return "0"
    text = f"SYN {hs.syn_retransmissions}, SYN-ACK {hs.synack_retransmissions}"
    if hs.synack_after_ack:
        text += f" ({hs.synack_after_ack} after ACK)"
    return text


def _resets(c: ConnectionAnalysis) -> str:
    parts = [f"{label} {d.resets_sent}" for label, d in (("a", c.a_to_b), ("b", c.b_to_a))
             if d.resets_sent]
    return ", ".join(parts) or "0"


def _window(c: ConnectionAnalysis) -> str:
    receiver = c.b_to_a if c.bulk_direction == 0 else c.a_to_b
    text = _bytes(receiver.max_window_bytes)
    if receiver.window_scale is None:
        return text + " (scale ?)"
    if not c.handshake.window_scaling:
        return text + " (no wscale)"
    return text


def connection_rows(c: ConnectionAnalysis) -> list[tuple[str, str]]:
    """The (what, value) lines shown for one connection."""
    bulk_label = "a -> b" if c.bulk_direction == 0 else "b -> a"
    rtt = c.bulk.rtt
    return [
        ("bytes a -> b / b -> a",
         f"{_bytes(c.a_to_b.payload_bytes)} / {_bytes(c.b_to_a.payload_bytes)}"),
        ("packets", f"{c.packets:,}"),
        ("duration", _seconds(c.duration_s)),
        (f"rate ({bulk_label})", _rate(c)),
        ("handshake RTT", _seconds(c.handshake.rtt_s)),
        ("data RTT (median)", _seconds(rtt.median_s) + (f" ({rtt.samples:,} samples)"
                                                       if rtt.samples else "")),
        (f"limited by ({bulk_label})", limit_summary(c)),
        ("receiver window (max)", _window(c)),
        ("retransmissions", _retransmissions(c)),
        ("zero windows", _zero_windows(c)),
        ("SYN / SYN-ACK rtx", _syn(c)),
        ("resets sent", _resets(c)),
    ]


def print_capture_analysis(result: CaptureAnalysis, console: Console) -> None:
    """One small table per connection, then the warnings, onto a console (a run directory
    prints several)."""
    # Text, never markup: addresses ("[2001:db8::b:1]:443" holds ":b:", an
    # emoji code) and file names must print as they are.
    console.print(Text(
        f"{result.path}: {result.records:,} frames, {result.tcp_segments:,} TCP segments, "
        f"{len(result.connections)} connection(s)"
    ))
    for c in result.connections:
        conn = c.connection
        title = (
            f"#{conn.index} {c.protocol}  a={endpoint(conn.a_addr, conn.a_port)}  "
            f"b={endpoint(conn.b_addr, conn.b_port)}"
        )
        if not conn.syn_seen:
            title += "  (no SYN: a = first sender)"
        # Above the table, not its title: a title wraps at the table's width.
        console.print(Text(title, style="table.title"))
        table = Table(show_header=False, box=None, padding=(0, 2))
        table.add_column("what", style="bold")
        table.add_column("value", overflow="fold")
        for what, value in connection_rows(c):
            table.add_row(Text(what), Text(value))
        console.print(table)
    for warning in result.warnings:
        console.print(Text.assemble(("warning:", "yellow"), " ", warning))
