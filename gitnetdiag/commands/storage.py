"""``gitnetdiag storage PATH``: is the disk under the git data slow?

One library call, :func:`gitnetdiag.storage.runner.run_storage_check`; this
module only parses options, renders the result and writes JSON.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from gitnetdiag.commands._options import JsonResults
from gitnetdiag.diagnosis.engine import diagnose
from gitnetdiag.diagnosis.model import Finding
from gitnetdiag.errors import UsageError
from gitnetdiag.model.storage.records import StorageCheck
from gitnetdiag.model.storage.reference import Verdict, verdict
from gitnetdiag.report.storage import StorageReport, render_markdown, render_terminal
from gitnetdiag.storage.adapter import storage_only_observations
from gitnetdiag.storage.runner import run_storage_check
from gitnetdiag.vocabulary import SIZE_RULE, parse_duration_s, parse_size

HELP = """Benchmark the storage under the git data before blaming the network.

Runs fio with the reference job (random 4 KiB, 75% reads, iodepth 64, libaio,
direct I/O) on a test file under PATH, writes and reads back 1,000 small files,
and with --repo times reading the repository's pack files (cold cache). The
figures are compared with reference points (networked SSD ~33,000 read /
11,000 write IOPS, spinning disk ~2,000 / 700; 1,000 files well under 10 s);
below 1,000 IOPS the slow-storage finding is shown. Everything is written to a
scratch directory under PATH and removed afterwards, also on Ctrl-C.

[bold]Examples[/bold]

  gitnetdiag storage /srv/git
      1 GiB test file, 30 s of fio

  gitnetdiag storage /srv/git --size 256M --runtime 10s --repo /srv/git/big.git
      shorter run, plus a cold read of big.git's packs

  gitnetdiag storage /srv/git --json storage.json --format md > storage.md
      JSON and Markdown for the ticket

Without fio only the small-file test runs; where O_DIRECT is refused (ramfs,
some network filesystems) fio runs with buffered I/O and says so.
"""


def storage_findings(result: StorageCheck) -> tuple[Finding, ...]:
    """The engine's findings on a storage check alone (``slow-storage`` when below reference).

    A storage check has no push whose time it could cost, so the engine's
    minimum impact is set to zero: the finding is shown on its confidence alone.
    """
    return diagnose(storage_only_observations(result), min_impact_s=0.0).findings


class OutputFormat(StrEnum):
    terminal = "terminal"
    md = "md"


def result_dict(
    check: StorageCheck, assessment: Verdict, findings: tuple[Finding, ...]
) -> dict[str, Any]:
    """What ``--json`` writes."""
    return {
        "check": check.to_dict(),
        "verdict": {
            "grade": assessment.grade,
            "reasons": list(assessment.reasons),
            "comparable": assessment.comparable,
            "line": assessment.line(),
        },
        "findings": [asdict(f) for f in findings],
    }


def _write_json(data: dict[str, Any], out: str) -> None:
    text = json.dumps(data, indent=2) + "\n"
    if out == "-":
        sys.stdout.write(text)
        return
    try:
        Path(out).write_text(text)
    except OSError as exc:
        raise UsageError(
            f"cannot write {out}: {exc.strerror}", hint="pass a writable path or - for stdout"
        ) from exc


def storage(
    path: Path = typer.Argument(..., help="Directory on the storage that holds the git data."),
    size: str = typer.Option("1G", "--size", help=f"fio test file size, {SIZE_RULE}."),
    runtime: str = typer.Option("30s", "--runtime",
                                help="fio run time: 30s, 2m (a bare number is seconds)."),
    repo: Path | None = typer.Option(
        None, "--repo", help="Also time a cold read of this repository's pack files."
    ),
    small_files: int = typer.Option(
        1000, "--small-files", min=1, help="Files the small-file test writes and reads back."),
    drop_caches: bool = typer.Option(
        False, "--drop-caches",
        help="As root, drop the whole page cache before the pack read (default: only the packs').",
    ),
    json_out: JsonResults = None,
    output_format: OutputFormat = typer.Option(
        OutputFormat.terminal, "--format", help="terminal table or md (Markdown)."
    ),
) -> None:
    """Benchmark the git data storage with fio and a small-file test."""
    size_bytes = parse_size(size)
    runtime_s = parse_duration_s(runtime)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    check = run_storage_check(
        path, size_bytes=size_bytes, runtime_s=runtime_s, repo=repo, drop_caches=drop_caches,
        small_files=small_files,
        progress=lambda line: err.print(line, markup=False),
    )
    report = StorageReport(check=check, verdict=verdict(check), findings=storage_findings(check))
    if json_out != "-":
        if output_format is OutputFormat.md:
            sys.stdout.write(render_markdown(report))
        else:
            sys.stdout.write(render_terminal(report))
    if json_out is not None:
        _write_json(result_dict(report.check, report.verdict, report.findings), json_out)


def register(app: typer.Typer) -> None:
    """Add the ``storage`` command."""
    app.command("storage", help=HELP)(storage)
