"""A fetch run directory -> per-clone phases, TCP evidence and ranked download culprits.

The fetch side of the pipeline: reads ``fetch.json`` and each clone's
artifacts, derives the phases (:mod:`gitnetdiag.analysis.fetchphases`) and the
receiver's TCP evidence (:mod:`gitnetdiag.analysis.fetchtcp`), and ranks the
download culprits (:mod:`gitnetdiag.diagnosis.culprits.download`). Offline:
``fetch.json`` and its files reproduce the same answer anywhere.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitnetdiag.analysis.fetchphases import FetchPhases, fetch_phases
from gitnetdiag.analysis.fetchsender import summarize_sender
from gitnetdiag.analysis.fetchtcp import summarize_download
from gitnetdiag.analysis.fetchwindow import (
    DownloadPacing,
    DownloadWindowSeries,
    download_pacing,
    download_window_series,
)
from gitnetdiag.analysis.fetchwire import git_h2_window
from gitnetdiag.analysis.sshdownload import SshDownloadPacing, ssh_download_pacing
from gitnetdiag.diagnosis.culprits.download import FetchObservation, rank_download
from gitnetdiag.diagnosis.culprits.libcurlwin import window_for
from gitnetdiag.diagnosis.model import Finding
from gitnetdiag.rundir import bad_run_dir
from gitnetdiag.rundir.fetchrecords import (
    FetchManifest,
    FetchRecord,
    TimelinePoint,
    load_fetch_manifest,
)
from gitnetdiag.serial import Malformed, from_jsonable


@dataclass(frozen=True, kw_only=True)
class FetchDiagnosis:
    """What a fetch run showed: each clone observed, and the culprits ranked."""

    direction: str
    """Always ``fetch``."""
    manifest: FetchManifest
    """``fetch.json``."""
    observations: tuple[FetchObservation, ...]
    """One per clone, in order."""
    findings: tuple[Finding, ...]
    """Download culprits, the costliest first."""
    windows: tuple[DownloadWindowSeries | None, ...] = ()
    """Per observation, the download socket's window over time (the HTML report's plot)."""
    h2_pacing: tuple[DownloadPacing, ...] = ()
    """The native HTTP/2 download ledgers, one per window, side by side."""
    ssh_pacing: tuple[SshDownloadPacing, ...] = ()
    """The native SSH download ledger."""


def _read(run_dir: Path, record: FetchRecord, kind: str) -> str:
    name = record.artifacts.get(kind)
    if name is None:
        return ""
    try:
        return (run_dir / name).read_text(errors="replace")
    except FileNotFoundError:
        return ""


def _jsonl(text: str) -> list[dict[str, Any]]:
    rows = []
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _samples(text: str) -> list[dict[str, Any]]:
    """The TCP_INFO lines of a clone that have the shape the analysis reads."""
    return [row for row in _jsonl(text) if isinstance(row.get("counters"), dict)
            and isinstance(row.get("t_s"), int | float)]


def observe_fetch(run_dir: Path, record: FetchRecord, rtt_s: float | None,
                  rmem: tuple[int, ...] | None = None,
                  libcurl: str | None = None) -> FetchObservation:
    """One clone's observation from its record and artifacts."""
    try:
        timeline = [from_jsonable(TimelinePoint, row, where="timeline", unknown="ignore")
                    for row in _jsonl(_read(run_dir, record, "timeline"))]
    except Malformed as exc:
        raise bad_run_dir(f"{run_dir}: {exc}") from exc
    phases: FetchPhases = fetch_phases(
        trace2=_read(run_dir, record, "trace2").splitlines(),
        stderr=_read(run_dir, record, "stderr"), timeline=timeline,
        packet_trace=_read(run_dir, record, "packet_trace"),
        started_epoch_s=record.started_epoch_s)
    return FetchObservation(
        protocol=record.protocol, repeat=record.repeat, outcome=record.outcome,
        moved_bytes=record.moved_bytes, measured_s=record.measured_s,
        rate_bytes_per_s=record.rate_bytes_per_s, wall_s=record.wall_s, phases=phases,
        tcp=summarize_download(_samples(_read(run_dir, record, "tcpinfo"))), path_rtt_s=rtt_s,
        client_rmem_max_bytes=rmem[-1] if rmem else None, stopped=record.stopped,
        libcurl=libcurl,
        sender=summarize_sender(_samples(_read(run_dir, record, "server_tcpinfo"))),
        **_h2_windows(run_dir, record, libcurl),
    )


def _h2_windows(run_dir: Path, record: FetchRecord, libcurl: str | None) -> dict[str, Any]:
    """An HTTP/2 clone's windows: git's own (decrypted frames, ``--full``) beside the one its
    libcurl release is documented to advertise."""
    if record.protocol != "h2":
        return {}
    documented = window_for(libcurl)
    frames = _read(run_dir, record, "http2_frames")
    return {"git_h2_window": git_h2_window(frames) if frames else None,
            "libcurl_window_bytes": documented.steady_window or documented.initial_window
            if documented else None}


def diagnose_fetch_run(run_dir: Path) -> FetchDiagnosis | None:
    """The fetch side of ``run_dir``; None when the run fetched nothing."""
    manifest = load_fetch_manifest(run_dir)
    if manifest is None:
        return None
    rtts = {path.endpoint: path.connect_rtt_min_s for path in manifest.paths}
    libcurl = manifest.environment.libcurl if manifest.environment else None
    observations = tuple(observe_fetch(run_dir, record, rtts.get(run.endpoint),
                                       manifest.client_tcp_rmem, libcurl)
                         for run in manifest.protocols for record in run.fetches)
    windows = tuple(download_window_series(_samples(_read(run_dir, record, "tcpinfo")))
                    for run in manifest.protocols for record in run.fetches)
    return FetchDiagnosis(direction="fetch", manifest=manifest, observations=observations,
                          findings=rank_download(observations), windows=windows,
                          h2_pacing=tuple(download_pacing(r) for r in manifest.h2_downloads),
                          ssh_pacing=tuple(ssh_download_pacing(r)
                                           for r in manifest.ssh_downloads))
