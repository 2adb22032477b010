"""The server's side of a download in the lab: a fetch samples the server's own sockets (its
namespace is on this machine) and the shares of what held its bytes in flight tell a clamped
send buffer (``server-sndbuf-clamp``) from a clamped client window (``client-rmem-clamp``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LabFactory

pytestmark = pytest.mark.lab


def _fetch_report(instance: str, out: Path, tmp: Path, protocol: str) -> dict[str, Any]:
    tmp.mkdir(exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--lab", "--lab-instance", instance,
         "--direction", "fetch", "--protocols", protocol, "--format", "json", "--out", str(out),
         "--timeout", "60"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "TMPDIR": str(tmp)})
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr[-3000:]
    report: dict[str, Any] = json.loads(proc.stdout)
    assert report["schema"] == "gitnetdiag.fetch-report/3"
    return report


def _sender(report: dict[str, Any]) -> dict[str, Any]:
    (fetch,) = report["fetches"]
    print(json.dumps({k: fetch[k] for k in ("protocol", "outcome", "rate_bytes_per_s",
                                            "server_sndbuf_limited_share",
                                            "server_rwnd_limited_share")}),
          json.dumps(fetch["sender"]))
    assert fetch["outcome"] in ("ok", "bounded"), fetch
    assert fetch["sender"] is not None and fetch["sender"]["samples"] >= 3, fetch
    assert fetch["sender"]["source"].startswith("ss -tin, server (netns gnd-")
    return dict(fetch)


def test_a_clamped_send_buffer_shows_on_the_servers_socket(
        shared_lab: LabFactory, tmp_path: Path) -> None:
    state = shared_lab("server-sndbuf-clamp")
    # HTTP/1.1 through the edge: git daemon's upload-pack overfills a clamped buffer (its
    # socket held 1.46 MB against a 64 KiB tb in one run) and its 6 MB clone is mostly slow
    # start (cwnd-bound), so git:// shows the clamp only now and then.
    report = _fetch_report(state.instance, tmp_path / "run", tmp_path / "tmp", "h1")
    fetch = _sender(report)
    assert fetch["server_sndbuf_limited_share"] >= 0.6
    assert fetch["server_rwnd_limited_share"] <= 0.2
    top = report["culprits"][0]
    assert top["id"] == "server-send-buffer"
    assert any("send buffer" in e["what"] and e["unit"] == "ratio" for e in top["evidence"])
    samples = (tmp_path / "run" / "fetch-h1-1.server-tcpinfo.jsonl").read_text().splitlines()
    assert samples and all(json.loads(line)["peer"].startswith("198.18.") for line in samples)


def test_a_clamped_client_window_shows_as_the_receivers_limit(
        shared_lab: LabFactory, tmp_path: Path) -> None:
    state = shared_lab("client-rmem-clamp")
    report = _fetch_report(state.instance, tmp_path / "run", tmp_path / "tmp", "git")
    fetch = _sender(report)
    assert fetch["server_rwnd_limited_share"] >= 0.6
    assert fetch["server_sndbuf_limited_share"] <= 0.2
    ids = [c["id"] for c in report["culprits"]]
    assert ids[:1] == ["client-tcp-receive-window-clamp"] and "server-send-buffer" not in ids
