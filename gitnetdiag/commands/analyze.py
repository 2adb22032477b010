"""``gitnetdiag analyze FILE``: what TCP was doing in a pcap/pcapng capture.

The work is one library call, :func:`gitnetdiag.analysis.capture_analysis.analyze_capture`;
this module only renders its result (:func:`render_analysis`) and writes JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from gitnetdiag.analysis.capture_analysis import CaptureAnalysis, analyze_capture
from gitnetdiag.analysis.tcp import ConnectionAnalysis, LimitKind
from gitnetdiag.capture.flows import endpoint
from gitnetdiag.commands._output import write_output
from gitnetdiag.errors import UsageError

if TYPE_CHECKING:  # the HTTP/2 ledger (tshark) is only loaded with --keylog
    from gitnetdiag.analysis.h2ledger import H2Ledger

HELP = """Read a pcap/pcapng capture and show, per TCP connection, what limited it.

For every connection: who talked to whom, the protocol guessed from the port
(443 https, 22 ssh, 9418 git), bytes each way, duration, rate, handshake RTT,
what limited the bulk sender and for what share of the time (rwnd = the
receiver's window, cwnd / loss = the network, self = the sender itself, e.g.
HTTP/2 or SSH flow control above TCP), retransmissions, zero windows,
SYN / SYN-ACK retransmissions and resets.

[bold]Examples[/bold]

  gitnetdiag analyze push.pcap
      one table row per connection

  tcpdump -i any -s 128 -w push.pcapng 'port 443' &  git push ...; kill %1
  gitnetdiag analyze push.pcapng --json analysis.json
      headers-only capture of a push, analysed, JSON kept for the ticket

  gitnetdiag analyze push.pcap --json - | jq '.connections[0].a_to_b.limits'
      JSON on stdout (no table)

  gitnetdiag analyze captures/h2-small-window --diagnose
      a run directory (from probe / diagnose): every capture, then the ranked diagnosis

A capture cut short (tcpdump killed) is analysed up to the damage, with a warning.
"""

_LIMIT_LABEL = {
    LimitKind.RWND: "rwnd",
    LimitKind.CWND: "cwnd",
    LimitKind.LOSS: "loss",
    LimitKind.SELF: "self",
}


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
    head = f"{_LIMIT_LABEL[kinds[0]]} {limits.share(kinds[0]):.0%}"
    rest = ", ".join(f"{_LIMIT_LABEL[k]} {limits.share(k):.0%}" for k in kinds[1:3])
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
    parts = []
    for label, d in (("a", c.a_to_b), ("b", c.b_to_a)):
        if d.zero_window_count:
            parts.append(f"{label}: {d.zero_window_count} / {_seconds(d.zero_window_s)}")
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
    scale = receiver.window_scale
    text = _bytes(receiver.max_window_bytes)
    if scale is None:
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


def render_analysis(result: CaptureAnalysis, console: Console) -> None:
    """Print one small table per connection, then the warnings."""
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


def write_json(
    result: CaptureAnalysis, out: str, *, h2_ledgers: list[H2Ledger] | None = None
) -> None:
    """Write the result as JSON to ``out`` (``-`` for stdout); ``h2_ledgers`` under its own key."""
    data = result.to_dict()
    if h2_ledgers is not None:
        data["h2_ledgers"] = [ledger.to_dict() for ledger in h2_ledgers]
    text = json.dumps(data, indent=2)
    if out == "-":
        sys.stdout.write(text + "\n")
        return
    write_output(Path(out), text + "\n")


def analyze(
    file: Path = typer.Argument(..., help="pcap or pcapng capture (tcpdump -w, dumpcap)."),
    json_out: str | None = typer.Option(
        None, "--json", metavar="OUT", help="Also write the results as JSON to OUT ('-' = stdout)."
    ),
    keylog: Path | None = typer.Option(
        None,
        "--keylog",
        metavar="FILE",
        help="TLS key log (SSLKEYLOGFILE): decrypt HTTP/2 and show its flow-control ledgers.",
    ),
    then_diagnose: bool = typer.Option(
        False, "--diagnose", help="For a run directory: rank the culprits (as 'diagnose' did)."
    ),
    host_report: Path | None = typer.Option(
        None, "--host-report", help="With --diagnose: add a 'gitnetdiag host --json' report."
    ),
) -> None:
    """Read a capture (or a run directory) and show what limited each TCP connection."""
    if file.is_dir():
        _analyze_run(file, json_out, then_diagnose, host_report)
        return
    if then_diagnose:
        raise UsageError(
            "--diagnose needs a run directory, not a single capture",
            hint="run 'gitnetdiag probe' or 'diagnose' to make one; try: "
            "gitnetdiag analyze captures/h2-small-window --diagnose",
        )
    result = analyze_capture(file)
    ledgers = None
    if keylog is not None or result.has_tls_secrets:
        from gitnetdiag.tools import tshark

        ledgers = tshark.h2_ledgers_from_capture(file, keylog)
    if json_out != "-":
        console = Console(highlight=False)
        render_analysis(result, console)
        if ledgers is not None:
            from gitnetdiag.report.h2ledger_table import render_h2_ledgers

            render_h2_ledgers(ledgers, console,
                              keys_given=keylog is not None or result.has_tls_secrets)
    if json_out is not None:
        write_json(result, json_out, h2_ledgers=ledgers)


def _analyze_run(run_dir: Path, json_out: str | None, then_diagnose: bool,
                 host_report: Path | None) -> None:
    """Every capture of a run directory; with --diagnose the ranked diagnosis too."""
    from gitnetdiag.commands.probe import ReportFormat, print_diagnosis
    from gitnetdiag.host.adapter import load_host_report
    from gitnetdiag.rundir import MANIFEST_NAME, load_run

    if not (run_dir / MANIFEST_NAME).is_file():
        raise UsageError(f"{run_dir} is a directory without {MANIFEST_NAME}",
                         hint="give a run directory written by 'gitnetdiag probe' or 'diagnose'")
    manifest = load_run(run_dir)
    captures = [r.capture.path for p in manifest.protocols for r in p.pushes if r.capture]
    captures += [p.burst.capture for p in manifest.protocols if p.burst and p.burst.capture]
    results = {name: analyze_capture(run_dir / name) for name in captures}
    if json_out is not None:
        data = {"run_dir": str(run_dir),
                "captures": {name: r.to_dict() for name, r in results.items()}}
        text = json.dumps(data, indent=2) + "\n"
        if json_out == "-":
            sys.stdout.write(text)
        else:
            write_output(Path(json_out), text)
    if json_out != "-":
        console = Console(highlight=False)
        for name, result in results.items():
            console.print(Text(name, style="bold"))
            render_analysis(result, console)
    if then_diagnose:
        from gitnetdiag.diagnosis.verdict import verdict_error

        host = load_host_report(host_report) if host_report else None
        diagnosis = print_diagnosis(run_dir, host, ReportFormat.TERMINAL)
        failure = verdict_error(diagnosis.verdict, diagnosis.measurement_failures)
        if failure is not None:
            raise failure


def register(app: typer.Typer) -> None:
    """Add the ``analyze`` command."""
    app.command("analyze", help=HELP)(analyze)
