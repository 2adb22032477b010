"""A host report (JSON, schema ``gitnetdiag.host/1``) -> the engine's :class:`HostEvidence`.

Pure conversion on the pipeline side of the run directory: the host collector
writes the report, this module reads it back.

``gitnetdiag diagnose --host-report FILE`` reads the file, calls
:func:`host_observation_from_report` and puts the result in
``Observations.host``. Bad reports raise :class:`InputError` naming the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitnetdiag.diagnosis.observations import (
    ConfigFinding,
    HostEvidence,
    Listener,
    StorageResult,
)
from gitnetdiag.errors import InputError
from gitnetdiag.inputfile import read_json_input
from gitnetdiag.rundir.files import HOST_REPORT_SCHEMA as SCHEMA

_HINT = "pass the JSON written by `gitnetdiag host --json FILE`"


def _bad(field: str, why: str) -> InputError:
    return InputError(f"host report: {field} {why}", hint=_HINT, reference="bad-host-report")


def _int(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(field, f"is {value!r}, not an integer")
    return value


def _listeners(items: Any) -> tuple[Listener, ...]:
    if not isinstance(items, list):
        raise _bad("listeners", "is not a list")
    result = []
    for index, item in enumerate(items):
        where = f"listeners[{index}]"
        if not isinstance(item, dict):
            raise _bad(where, "is not an object")
        if item.get("backlog") is None:
            continue  # backlog unknown (no ss, no netlink): nothing to judge it by
        result.append(
            Listener(
                port=_int(item.get("port"), f"{where}.port"),
                backlog=_int(item["backlog"], f"{where}.backlog"),
                accept_queue=max(
                    _int(item.get("accept_queue", 0), f"{where}.accept_queue"),
                    _int(item.get("accept_queue_max", 0), f"{where}.accept_queue_max"),
                ),
                process=str(item.get("process") or ""),
                address=str(item.get("address") or ""),
            )
        )
    return tuple(result)


def _findings(items: Any) -> tuple[ConfigFinding, ...]:
    if not isinstance(items, list):
        raise _bad("config_findings", "is not a list")
    result = []
    for index, item in enumerate(items):
        where = f"config_findings[{index}]"
        if not isinstance(item, dict):
            raise _bad(where, "is not an object")
        for key in ("setting", "value", "file"):
            if not isinstance(item.get(key), str):
                raise _bad(f"{where}.{key}", "is missing or not a string")
        line = item.get("line")
        result.append(
            ConfigFinding(
                setting=item["setting"],
                value=item["value"],
                file=item["file"],
                line=None if line is None else _int(line, f"{where}.line"),
            )
        )
    return tuple(result)


def host_observation_from_report(report: dict[str, Any]) -> HostEvidence:
    """Map a host report (as parsed JSON) onto the diagnosis engine's host evidence."""
    if not isinstance(report, dict):
        raise _bad("document", "is not a JSON object")
    if report.get("schema") != SCHEMA:
        raise _bad("schema", f"is {report.get('schema')!r}, expected {SCHEMA!r}")
    counters = report.get("counters", {})
    sysctls = report.get("sysctls", {})
    log = report.get("kernel_log", [])
    if not isinstance(counters, dict):
        raise _bad("counters", "is not an object")
    if not isinstance(sysctls, dict):
        raise _bad("sysctls", "is not an object")
    if not isinstance(log, list) or not all(isinstance(line, str) for line in log):
        raise _bad("kernel_log", "is not a list of strings")
    return HostEvidence(
        listeners=_listeners(report.get("listeners", [])),
        counter_deltas={str(k): _int(v, f"counters.{k}") for k, v in counters.items()},
        sysctls={str(k): str(v) for k, v in sysctls.items()},
        kernel_log=tuple(log),
        config_findings=_findings(report.get("config_findings", [])),
    )


def _read_report(path: Path, what: str, hint: str) -> Any:
    """A ``what`` report file's JSON; an unreadable or non-JSON file raises InputError."""
    def bad(message: str) -> InputError:
        return InputError(f"{what} report: {message}", hint=hint,
                          reference=f"bad-{what}-report")

    try:
        return read_json_input(path, error=bad)
    except FileNotFoundError as exc:
        raise InputError(f"cannot read {what} report {path}: {exc.strerror}", hint=hint) from exc


def load_host_report(path: Path) -> HostEvidence:
    """Read a host report file and map it; unreadable or non-JSON files raise InputError."""
    return host_observation_from_report(_read_report(path, "host", _HINT))


_STORAGE_HINT = "pass the JSON written by `gitnetdiag storage PATH --json FILE`"


def storage_observation_from_report(report: dict[str, Any]) -> StorageResult:
    """fio's 4 KiB random read and write IOPS of a storage check (``check.fio``) for the
    engine; a check without fio gives a result with no IOPS (the culprit stays silent)."""
    check = report.get("check") if isinstance(report, dict) else None
    if not isinstance(check, dict):
        raise InputError("storage report: check is missing or not an object",
                         hint=_STORAGE_HINT, reference="bad-storage-report")
    fio = check.get("fio") or {}
    iops: dict[str, float | None] = {}
    for kind in ("read", "write"):
        value = (fio.get(kind) or {}).get("iops") if isinstance(fio, dict) else None
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise InputError(f"storage report: check.fio.{kind}.iops is {value!r}, not a number",
                             hint=_STORAGE_HINT, reference="bad-storage-report")
        iops[kind] = None if value is None else float(value)
    return StorageResult(read_iops=iops["read"], write_iops=iops["write"],
                         path=str(check.get("path") or ""))


def load_storage_report(path: Path) -> StorageResult:
    """Read a storage report file (``storage.json`` in a run directory) and map it."""
    return storage_observation_from_report(_read_report(path, "storage", _STORAGE_HINT))
