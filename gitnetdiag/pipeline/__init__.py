"""The pure pipeline, its one public entry: run directory or capture -> observations ->
diagnosis -> reports.

Commands, ``watch`` and library callers import from here, never from the private
modules (``tests/test_architecture.py`` holds every module of gitnetdiag to that):

    _run       a probe's run directory: observations, diagnosis, summaries, comparison,
               the report files
    _capture   a bare capture (no run directory)
    _both      a --direction both run's two diagnoses -> one (used by ``watch``)
    _clones    a fetch run directory (``fetch.json``), reached through ``_run``'s entries
    _load      a load run's record
    _host      ``gitnetdiag host`` / ``storage`` JSON -> the engine's evidence
    _probe     the native probes' own summaries, replayed from their events
    _native    the native event files -> the engine's ledgers (used by ``_run``)
    _h2stall   who stopped an HTTP/2 upload, from git's recorded frames (used by ``_run``)

The names load on first use (PEP 562 ``__getattr__``), so a command pays only for the
part it calls (``load`` imports ``_load``, not the capture analysis of ``_run``).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitnetdiag.pipeline._both import joined_diagnosis as joined_diagnosis
    from gitnetdiag.pipeline._capture import diagnose_capture as diagnose_capture
    from gitnetdiag.pipeline._capture import observations_from_capture as observations_from_capture
    from gitnetdiag.pipeline._clones import diagnose_clones as diagnose_clones
    from gitnetdiag.pipeline._host import (
        host_observation_from_report as host_observation_from_report,
    )
    from gitnetdiag.pipeline._host import load_host_report as load_host_report
    from gitnetdiag.pipeline._host import load_storage_report as load_storage_report
    from gitnetdiag.pipeline._host import (
        storage_observation_from_report as storage_observation_from_report,
    )
    from gitnetdiag.pipeline._load import diagnose_load as diagnose_load
    from gitnetdiag.pipeline._load import observations_from_load as observations_from_load
    from gitnetdiag.pipeline._probe import H2PushLedger as H2PushLedger
    from gitnetdiag.pipeline._probe import NativeProgress as NativeProgress
    from gitnetdiag.pipeline._probe import SshPushLedger as SshPushLedger
    from gitnetdiag.pipeline._probe import h2_push_ledger as h2_push_ledger
    from gitnetdiag.pipeline._probe import ssh_push_ledger as ssh_push_ledger
    from gitnetdiag.pipeline._probe import sweep_records as sweep_records
    from gitnetdiag.pipeline._probe import sweep_rows as sweep_rows
    from gitnetdiag.pipeline._run import OBSERVATIONS_FILE as OBSERVATIONS_FILE
    from gitnetdiag.pipeline._run import REPORT_FILES as REPORT_FILES
    from gitnetdiag.pipeline._run import compare_runs as compare_runs
    from gitnetdiag.pipeline._run import diagnose_run as diagnose_run
    from gitnetdiag.pipeline._run import diagnosis_from_saved as diagnosis_from_saved
    from gitnetdiag.pipeline._run import observations_from_run as observations_from_run
    from gitnetdiag.pipeline._run import summarize_run as summarize_run
    from gitnetdiag.pipeline._run import write_reports as write_reports

EXPORTS: dict[str, str] = {name: module for module, names in {
    "_both": ("joined_diagnosis",),
    "_capture": ("diagnose_capture", "observations_from_capture"),
    "_host": ("host_observation_from_report", "load_host_report", "load_storage_report",
              "storage_observation_from_report"),
    "_load": ("diagnose_load", "observations_from_load"),
    "_probe": ("H2PushLedger", "NativeProgress", "SshPushLedger", "h2_push_ledger",
               "ssh_push_ledger", "sweep_records", "sweep_rows"),
    "_run": ("OBSERVATIONS_FILE", "REPORT_FILES", "compare_runs", "diagnose_run",
             "diagnosis_from_saved", "observations_from_run", "summarize_run", "write_reports"),
    "_clones": ("diagnose_clones",),
}.items() for name in names}
"""Public name -> the private module that defines it."""

__all__ = sorted(EXPORTS)


def __getattr__(name: str) -> object:
    module = EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
