"""The native SSH download ledger against the lab's sshd: upload-pack's answer read through a
paramiko channel, with the window this client granted and every grant it renewed; the
server's repository unchanged, the ledger in every report format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import paramiko
import pytest

from gitnetdiag.report.transfers import SSH_LEDGER_TITLE
from tests.conftest import LabFactory
from tests.probe.test_fetch_daemon import tree_digest

pytestmark = pytest.mark.lab


def _cli(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitnetdiag", *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "TMPDIR": str(tmp)})


def test_an_ssh_fetch_records_the_window_the_client_grants_and_the_pacing(
        shared_lab: LabFactory, tmp_path: Path) -> None:
    state = shared_lab("server-sndbuf-clamp")
    before = tree_digest(Path(state.repo_path))
    (tmp_path / "tmp").mkdir()
    out = tmp_path / "run"
    proc = _cli("diagnose", "--lab", "--lab-instance", state.instance, "--direction", "fetch",
                "--protocols", "ssh", "--format", "json", "--out", str(out), "--timeout", "60",
                tmp=tmp_path / "tmp")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    (ledger,) = report["ssh_downloads"]
    print(json.dumps(ledger))
    assert ledger["outcome"] in ("ok", "bounded"), ledger
    assert ledger["client_window_bytes"] == paramiko.common.DEFAULT_WINDOW_SIZE
    assert ledger["client_max_packet_bytes"] == paramiko.common.DEFAULT_MAX_PACKET_SIZE
    # pack data, not the preamble: the download gets twenty round trips of the path
    assert ledger["received_bytes"] > 2**19 and ledger["reads"] > 20
    assert ledger["adjusts"] >= 1 and ledger["rate_bytes_per_s"] > 0
    (raw,) = json.loads((out / "fetch.json").read_text())["ssh_downloads"]
    assert sum(raw["read_bytes"]) == raw["received_bytes"] == ledger["received_bytes"]
    assert raw["wants"] >= 1 and raw["request_t_s"] < raw["read_t_s"][0]
    assert sorted(raw["read_t_s"]) == raw["read_t_s"]
    for fmt in ("md", "terminal"):
        text = _cli("report", str(out), "--format", fmt, tmp=tmp_path / "tmp").stdout
        assert SSH_LEDGER_TITLE in text
    assert tree_digest(Path(state.repo_path)) == before  # upload-pack wrote nothing
    assert list((tmp_path / "tmp").glob("gitnetdiag-clone-*")) == []
