"""fio ``--output-format=json`` -> :class:`FioResult` (pure)."""

from __future__ import annotations

import json
from typing import Any

from gitnetdiag.errors import InputError
from gitnetdiag.model.storage.records import FioDirection, FioResult

_NS = 1e-9

DIRECT_IO_UNSUPPORTED_MARKERS = (
    "does not support O_DIRECT",
    "does not support direct=1",
)
"""What fio prints on stderr when the filesystem refuses O_DIRECT."""


def direct_io_refused(stderr: str) -> bool:
    """Whether fio's stderr says the filesystem refuses O_DIRECT."""
    return any(marker in stderr for marker in DIRECT_IO_UNSUPPORTED_MARKERS)


def _bad(message: str) -> InputError:
    return InputError(
        f"fio output: {message}",
        hint="fio must run with --output-format=json (fio 3.x); rerun it by hand to see its output",
        reference="fio-output",
    )


def _number(section: dict[str, Any], key: str, where: str) -> float:
    value = section.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise _bad(f"{where}.{key} is missing or not a number")
    return float(value)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _percentile_s(clat: dict[str, Any], percent: float) -> float | None:
    table = clat.get("percentile")
    if not isinstance(table, dict):
        return None
    for key, value in table.items():
        try:
            if abs(float(key) - percent) < 1e-6 and isinstance(value, int | float):
                return float(value) * _NS
        except ValueError:
            continue
    return None


def _direction(job: dict[str, Any], name: str) -> FioDirection:
    section = job.get(name)
    if not isinstance(section, dict):
        raise _bad(f"job has no '{name}' section")
    clat = _mapping(section.get("clat_ns"))
    lat = _mapping(section.get("lat_ns"))
    ios = section.get("total_ios", 0)
    mean = lat.get("mean")
    return FioDirection(
        iops=_number(section, "iops", name),
        bandwidth_bytes_per_s=_number(section, "bw_bytes", name),
        io_count=int(ios) if isinstance(ios, int | float) else 0,
        latency_p50_s=_percentile_s(clat, 50.0),
        latency_p99_s=_percentile_s(clat, 99.0),
        latency_mean_s=float(mean) * _NS if isinstance(mean, int | float) and ios else None,
    )


def parse_fio_json(text: str) -> FioResult:
    """Read fio's JSON report of one job (``--group_reporting``); raises ``InputError``.

    fio may print warnings before the JSON document on stdout; they are skipped.
    """
    start = text.find("{")
    if start < 0:
        raise _bad("no JSON document")
    try:
        data = json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise _bad(f"not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(data, dict):
        raise _bad("the document is not a JSON object")
    jobs = data.get("jobs")
    if not isinstance(jobs, list) or not jobs or not isinstance(jobs[0], dict):
        raise _bad("no job in 'jobs'")
    job = jobs[0]
    error = job.get("error", 0)
    if error:
        raise _bad(f"the job failed with error {error}")
    raw_options = job.get("job options")
    options = (
        {str(k): str(v) for k, v in raw_options.items()} if isinstance(raw_options, dict) else {}
    )
    runtime_ms = job.get("job_runtime")
    return FioResult(
        fio_version=str(data.get("fio version", "")),
        read=_direction(job, "read"),
        write=_direction(job, "write"),
        runtime_s=float(runtime_ms) / 1000 if isinstance(runtime_ms, int | float) else 0.0,
        direct=options.get("direct", "0") == "1",
        options=options,
    )
