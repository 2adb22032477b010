"""Names of the files in a run directory (layout: ``docs/run-directory.md``)."""

from __future__ import annotations

MANIFEST_NAME = "manifest.json"
"""What ran, with what outcome; every other file is named from here or below."""
NATIVE_H2_FILE = "native-h2.json"
"""Native HTTP/2 probe: flow-control events (:mod:`gitnetdiag.rundir.native`)."""
NATIVE_SSH_FILE = "native-ssh.json"
"""Native SSH probe: channel flow-control events."""
NATIVE_FILES = {"h2": NATIVE_H2_FILE, "ssh": NATIVE_SSH_FILE}
"""Protocol -> native event file."""
SWEEP_FILE = "native-h2-sweep.json"
"""``--h2-sweep``: one row per client SETTINGS variant."""
OBSERVATIONS_FILE = "observations.json"
"""What the diagnosis saw, written by the pipeline."""
HOST_REPORT_FILE = "host.json"
"""Server-side evidence of the run (``gitnetdiag host --since``), when collected."""
REPORT_FILES = {"md": "report.md", "html": "report.html", "json": "report.json"}
"""Report files left in the run directory."""
