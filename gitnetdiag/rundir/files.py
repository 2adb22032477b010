"""Names of the files in a run directory (layout: ``docs/run-directory.md``)."""

from __future__ import annotations

MANIFEST_NAME = "manifest.json"
"""What ran, with what outcome; every other file is named from here or below."""
FETCH_FILE = "fetch.json"
"""The clones of a run (``probe --direction fetch``), as ``manifest.json`` lists the pushes."""
NATIVE_H2_FILE = "native-h2.json"
"""Native HTTP/2 probe: flow-control events (:mod:`gitnetdiag.rundir.native`)."""
NATIVE_SSH_FILE = "native-ssh.json"
"""Native SSH probe: channel flow-control events."""
NATIVE_FILES = {"h2": NATIVE_H2_FILE, "ssh": NATIVE_SSH_FILE}
"""Protocol -> native event file."""
NATIVE_BODY_FILE = "native-body.json"
"""Native body probe: answers to POSTs of the pack's kind (:mod:`gitnetdiag.rundir.bodyprobe`)."""
NATIVE_IDLE_GLOB = "native-idle-*.json"
"""Idle probe: keepalives on silent connections, one file per endpoint
(:mod:`gitnetdiag.rundir.idleprobe`)."""
SWEEP_FILE = "native-h2-sweep.json"
"""``--h2-sweep``: one row per client SETTINGS variant, derived from the variant files."""
SWEEP_VARIANT_PATTERN = "native-h2-sweep-{n}.json"
"""``--h2-sweep``: the raw events of variant ``n`` (1, 2, ...), schema as ``native-h2.json``."""


def sweep_variant_file(n: int) -> str:
    """The event file of the sweep's variant ``n`` (counted from 1)."""
    return SWEEP_VARIANT_PATTERN.format(n=n)


OBSERVATIONS_FILE = "observations.json"
"""What the diagnosis saw, written by the pipeline."""
HOST_REPORT_FILE = "host.json"
"""Server-side evidence of the run (``gitnetdiag host --since``), when collected."""
STORAGE_REPORT_FILE = "storage.json"
"""Storage check of the server's git data (``gitnetdiag storage --json``), when collected."""
HOST_REPORT_SCHEMA = "gitnetdiag.host/1"
"""Schema of ``host.json`` and of ``gitnetdiag host --json`` (docs/host.md)."""
REPORT_FILES = {"md": "report.md", "html": "report.html", "json": "report.json"}
"""Report files left in the run directory."""
