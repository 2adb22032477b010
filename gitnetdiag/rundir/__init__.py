"""The run directory: the one seam between the probes (I/O) and the pipeline (pure).

Everything a probe hands to the analysis crosses here, as files::

    gitnetdiag.probe ──write──> run directory ──read──> gitnetdiag.pipeline
                               manifest.json           (records.py: one TransferRecord, push or
                               fetch.json               clone; manifest.py: one loader)
                               fetch.json's ledgers    (ledgers.py)
                               native-h2.json          (native.py: raw flow-control events)
                               native-ssh.json
                               captures, trace2, ...

This package depends only on ``gitnetdiag.errors``, ``redaction``, ``safefile``,
``serial`` (the one dataclass<->JSON converter) and the standard library, so
both sides can import it and neither imports the other. Layout:
``docs/run-directory.md``.
"""

from __future__ import annotations

from gitnetdiag.redaction import redact_url
from gitnetdiag.rundir.files import (
    FETCH_FILE,
    HOST_REPORT_FILE,
    MANIFEST_NAME,
    NATIVE_FILES,
    NATIVE_H2_FILE,
    NATIVE_SSH_FILE,
    OBSERVATIONS_FILE,
    REPORT_FILES,
    STORAGE_REPORT_FILE,
    SWEEP_FILE,
)
from gitnetdiag.rundir.manifest import (
    SCHEMA,
    CloneProtocolRun,
    ProtocolRun,
    ProtocolTransfers,
    RunManifest,
    bad_run_dir,
    load_run,
    read_json_object,
    write_manifest,
)
from gitnetdiag.rundir.records import (
    BurstRecord,
    CaptureResult,
    CloneRecord,
    PathMeasurement,
    PushRecord,
    RepoInfo,
    RunError,
    ToolVersions,
)
from gitnetdiag.serial import from_jsonable, to_jsonable

__all__ = [
    "FETCH_FILE",
    "HOST_REPORT_FILE",
    "MANIFEST_NAME",
    "NATIVE_FILES",
    "NATIVE_H2_FILE",
    "NATIVE_SSH_FILE",
    "OBSERVATIONS_FILE",
    "REPORT_FILES",
    "SCHEMA",
    "STORAGE_REPORT_FILE",
    "SWEEP_FILE",
    "BurstRecord",
    "CaptureResult",
    "CloneProtocolRun",
    "CloneRecord",
    "PathMeasurement",
    "ProtocolRun",
    "ProtocolTransfers",
    "PushRecord",
    "RepoInfo",
    "RunError",
    "RunManifest",
    "ToolVersions",
    "bad_run_dir",
    "from_jsonable",
    "load_run",
    "read_json_object",
    "redact_url",
    "to_jsonable",
    "write_manifest",
]
