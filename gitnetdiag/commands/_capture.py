"""The diagnosis of a bare capture, printed: shared by ``analyze FILE --diagnose`` and
``diagnose --capture FILE``."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.console import Console

from gitnetdiag.commands._output import write_output


def print_capture_diagnosis(file: Path, keylog: Path | None, json_out: str | None) -> None:
    """Diagnose a bare capture, print it (terminal, or JSON to ``json_out``); exit non-zero
    when the verdict is inconclusive or failed."""
    from gitnetdiag.diagnosis.verdict import verdict_error
    from gitnetdiag.pipeline import diagnose_capture
    from gitnetdiag.report import RENDERERS
    from gitnetdiag.report.terminal import render_terminal

    ledgers, responses = None, []
    if keylog is not None or analyze_capture_secrets(file):
        from gitnetdiag.tools import tshark

        ledgers = tshark.h2_ledgers_from_capture(file, keylog)
        responses = tshark.http1_responses_from_capture(file, keylog)
    diagnosis, warnings = diagnose_capture(file, h2_ledgers=ledgers, h1_responses=responses)
    err = Console(stderr=True, highlight=False)
    for warning in warnings:
        err.print(f"warning: {warning}", style="yellow", markup=False)
    if json_out is not None:
        text = RENDERERS["json"](diagnosis)
        assert isinstance(text, str)
        if json_out == "-":
            sys.stdout.write(text)
        else:
            write_output(Path(json_out), text)
    if json_out != "-":
        out = Console(highlight=False)
        width = out.width if out.is_terminal else 100
        typer.echo(render_terminal(diagnosis, width=width, color=out.is_terminal), nl=False)
    failure = verdict_error(diagnosis.verdict, diagnosis.measurement_failures)
    if failure is not None:
        raise failure


def analyze_capture_secrets(file: Path) -> bool:
    """Whether the pcapng carries TLS secrets (then tshark decrypts without --keylog)."""
    from gitnetdiag.capture.reader import CaptureReader

    with CaptureReader(file, parallel=False) as reader:
        for _ in reader.chunks():
            break
        return reader.has_tls_secrets
