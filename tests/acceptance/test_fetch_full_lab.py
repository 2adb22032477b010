"""``--full`` on an HTTP/2 fetch in the lab: git's clone is captured with its TLS keys, its
frames decrypted, and the report shows the window git really advertised beside the one its
libcurl release is documented to advertise."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gitnetdiag.report.transfers import WIRE_TITLE
from tests.conftest import LabFactory

# The idle lane (tests/conftest.py): a capture, its decrypted frames' window values and the
# key file's mode, no rate.
pytestmark = [pytest.mark.lab, pytest.mark.lab_lane("idle")]


def test_full_reads_the_window_git_advertised_from_its_decrypted_frames(
        shared_lab: LabFactory, tmp_path: Path) -> None:
    state = shared_lab("server-sndbuf-clamp")
    (tmp_path / "tmp").mkdir()
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--lab", "--lab-instance",
         state.instance, "--direction", "fetch", "--protocols", "h2", "--full", "--no-native",
         "--format", "json", "--out", str(out), "--timeout", "60"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    (fetch,) = json.loads(proc.stdout)["fetches"]
    print(json.dumps({k: fetch[k] for k in ("libcurl", "libcurl_window_bytes",
                                            "git_h2_window")}))
    seen = fetch["git_h2_window"]
    assert seen is not None, fetch
    assert seen["stream_window_bytes"] > 0 and seen["connection_window_bytes"] >= 65535
    assert seen["data_bytes"] > 1_000_000  # the pack came over that connection
    assert fetch["libcurl"] and fetch["libcurl_window_bytes"]
    (record,) = json.loads((out / "fetch.json").read_text())["protocols"][0]["fetches"]
    assert {"keylog", "capture", "http2_frames"} <= set(record["artifacts"])
    assert record["full_warning"] == ""
    assert stat.S_IMODE((out / record["artifacts"]["keylog"]).stat().st_mode) == 0o600
    text = subprocess.run([sys.executable, "-m", "gitnetdiag", "report", str(out)],
                          capture_output=True, text=True, timeout=120).stdout
    assert WIRE_TITLE in text
