"""``gitnetdiag analyze FILE``: what TCP was doing in a pcap/pcapng capture.

The work is one library call, :func:`gitnetdiag.analysis.capture_analysis.analyze_capture`;
this module only hands its result to :mod:`gitnetdiag.report.capture` and writes JSON.

Importing it imports no typer: the parameters of :func:`analyze` say what typer makes of
them in their annotations (``Annotated``), which typer reads only when :func:`register`
adds the command, so that ``gitnetdiag analyze FILE [--json OUT]`` can call
:func:`analyze` directly (:func:`gitnetdiag.commands._app.direct_analyze`) without typer's
30 ms of imports.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from rich.console import Console
from rich.text import Text

from gitnetdiag.analysis.capture_analysis import CaptureAnalysis, analyze_capture
from gitnetdiag.commands._output import emit, write_output
from gitnetdiag.errors import GitnetdiagError, UsageError
from gitnetdiag.inputfile import unusable_reason
from gitnetdiag.report.capture import print_capture_analysis

if TYPE_CHECKING:  # the HTTP/2 ledger (tshark) is only loaded with --keylog
    import typer

    from gitnetdiag.analysis.h2ledger import H2WireLedger
    from gitnetdiag.commands._options import JsonResults
    from gitnetdiag.diagnosis.model import Diagnosis

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
      a run directory (from probe / diagnose): every capture, then the ranked diagnosis;
      the directory is only read (--out DIR writes observations.json and the reports there);
      a --direction both run is one report of both directions, as 'report RUN' renders it

  gitnetdiag analyze customer.pcap --diagnose [--keylog keys.log]
      a bare capture (client or server side): the git transfers in it, ranked culprits;
      a push or a clone, told by the request (git-receive-pack / git-upload-pack) where
      it is readable, else by the bytes each way

  tcpdump -i any -s 128 -w clone.pcap 'port 443' &  git clone ...; kill %1
  gitnetdiag analyze clone.pcap --diagnose
      a slow clone: the download culprits a capture can show, and what it cannot

A capture cut short (tcpdump killed) is analysed up to the damage, with a warning.
"""


def write_json(
    result: CaptureAnalysis, out: str, *, h2_ledgers: list[H2WireLedger] | None = None
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
    file: Annotated[Path, typer.Argument(
        help="pcap or pcapng capture (tcpdump -w, dumpcap).")],
    json_out: JsonResults = None,
    keylog: Annotated[Path | None, typer.Option(
        "--keylog",
        metavar="FILE",
        help="TLS key log (SSLKEYLOGFILE): decrypt HTTP/2 and show its flow-control ledgers.",
    )] = None,
    then_diagnose: Annotated[bool, typer.Option(
        "--diagnose",
        help="Rank the culprits: of a run directory (as 'diagnose' did), or of the git "
        "transfers found in a bare capture.",
    )] = False,
    host_report: Annotated[Path | None, typer.Option(
        "--host-report", help="With --diagnose: add a 'gitnetdiag host --json' report."
    )] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", metavar="DIR", help="With --diagnose on a run directory: also write "
        "observations.json and report.md/html/json into DIR (created when missing). Without "
        "it nothing is written: the run directory is only read.")] = None,
) -> None:
    """Read a capture (or a run directory) and show what limited each TCP connection."""
    if out is not None and not (then_diagnose and file.is_dir()):
        raise UsageError("--out goes with --diagnose on a run directory",
                         hint="add --diagnose, or use --json OUT for a capture's analysis")
    if file.is_dir():
        _analyze_run(file, json_out, then_diagnose, host_report, out)
        return
    if then_diagnose:
        from gitnetdiag.commands._capture import print_capture_diagnosis

        print_capture_diagnosis(file, keylog, json_out)
        return
    result = analyze_capture(file)
    ledgers = None
    if keylog is not None or result.has_tls_secrets:
        from gitnetdiag.tools import tshark

        ledgers = tshark.h2_ledgers_from_capture(file, keylog)
    if json_out != "-":
        console = Console(highlight=False)
        print_capture_analysis(result, console)
        if ledgers is not None:
            from gitnetdiag.report.h2ledger_table import render_h2_ledgers

            render_h2_ledgers(ledgers, console,
                              keys_given=keylog is not None or result.has_tls_secrets)
    if json_out is not None:
        write_json(result, json_out, h2_ledgers=ledgers)


def _analyze_run(run_dir: Path, json_out: str | None, then_diagnose: bool,
                 host_report: Path | None, out_dir: Path | None) -> None:
    """Every capture of a run directory; with --diagnose the ranked diagnosis too."""
    from gitnetdiag.commands._diagnosis import print_diagnosis
    from gitnetdiag.commands._options import ReportFormat
    from gitnetdiag.pipeline import load_host_report
    from gitnetdiag.rundir import FETCH_FILE, MANIFEST_NAME, load_run

    if (run_dir / FETCH_FILE).exists() and not (run_dir / MANIFEST_NAME).exists():
        # a fetch run: its report, derived again
        _analyze_fetch_run(run_dir, json_out, out_dir)
        return
    if unusable_reason(run_dir / MANIFEST_NAME) == "does not exist":  # else load_run says
        raise UsageError(f"{run_dir} is a directory without {MANIFEST_NAME}",
                         hint="give a run directory written by 'gitnetdiag probe' or 'diagnose'")
    manifest = load_run(run_dir)
    captures = [r.capture.path for p in manifest.protocols for r in p.pushes if r.capture]
    captures += [p.burst.capture for p in manifest.protocols if p.burst and p.burst.capture]
    results = {name: analyze_capture(run_dir / name, own_capture=True) for name in captures}
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
            print_capture_analysis(result, console)
    if then_diagnose:
        from gitnetdiag.diagnosis.verdict import verdict_error

        host = load_host_report(host_report) if host_report else None
        if out_dir is not None:
            _make_out_dir(out_dir)
        clones, clones_missing = _clones_of(run_dir)
        diagnosis = print_diagnosis(run_dir, host, ReportFormat.TERMINAL, out_dir=out_dir,
                                    to_stderr=json_out == "-", joined=clones,
                                    clones_missing=clones_missing)
        failure = verdict_error(diagnosis.verdict, diagnosis.measurement_failures)
        if failure is not None:
            raise failure


def _clones_of(run_dir: Path) -> tuple[Diagnosis | None, str | None]:
    """The clones' diagnosis of a ``--direction both`` run (its ``RUN-fetch``), to be joined
    to the pushes' into the one report, as ``report RUN`` does, or why there is none (the
    half missing, or its ``fetch.json`` damaged: the pushes are still reported, the half
    said and judged); (None, None) for any other run."""
    from gitnetdiag.pipeline import diagnose_run
    from gitnetdiag.rundir.both import fetch_half_of, missing_half, unreadable_half

    clones = fetch_half_of(run_dir)
    if clones is None:
        return None, missing_half(run_dir)
    try:
        diagnosis, warnings = diagnose_run(clones)
    except GitnetdiagError as exc:
        return None, unreadable_half(clones, exc.message)
    err = Console(stderr=True, highlight=False)
    for warning in warnings:
        err.print(f"warning: {warning}", style="yellow", markup=False)
    return diagnosis, None


def _analyze_fetch_run(run_dir: Path, json_out: str | None, out_dir: Path | None) -> None:
    """A fetch run's report (its JSON with --json, the reports into --out DIR), then the
    exit of its verdict, as a push run's: 8 inconclusive, 9 failed, 5 a branch left."""
    from gitnetdiag.diagnosis.verdict import verdict_error
    from gitnetdiag.pipeline import diagnose_run, write_reports
    from gitnetdiag.report import RENDERERS

    diagnosis, _ = diagnose_run(run_dir)
    err = Console(stderr=True, highlight=False)
    if json_out is not None:
        emit(RENDERERS["json"](diagnosis), None if json_out == "-" else Path(json_out))
    if json_out != "-":
        sys.stdout.write(RENDERERS["terminal"](diagnosis))
    if out_dir is not None:
        _make_out_dir(out_dir)
        written = write_reports(diagnosis, out_dir, lambda message: err.print(
            f"warning: {message}", style="yellow", markup=False))
        if written:
            err.print("reports: " + ", ".join(str(p) for p in written.values()), markup=False)
    failure = verdict_error(diagnosis.verdict, diagnosis.measurement_failures)
    if failure is not None:
        raise failure


def _make_out_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create --out {path}: {exc.strerror}",
                         hint="choose a writable directory", reference="cannot-write") from exc


def register(app: typer.Typer) -> None:
    """Add the ``analyze`` command (typer reads :func:`analyze`'s annotations now: the
    names they use are put in this module's namespace first)."""
    import typer as typer_module

    from gitnetdiag.commands._options import JsonResults as json_results

    globals().update(typer=typer_module, JsonResults=json_results)
    app.command("analyze", help=HELP)(analyze)
