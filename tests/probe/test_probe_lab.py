"""Against a private lab instance: every protocol pushed and cleaned up; error kinds."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gitnetdiag.model.lab.state import LabState
from gitnetdiag.rundir import load_run

# The idle lane (tests/conftest.py): pushes checked for capture, clean-up and errors, no rate.
pytestmark = [pytest.mark.lab, pytest.mark.lab_lane("idle")]


def _refs_in_lab(lab: LabState, url: str) -> dict[str, str]:
    out = subprocess.run(
        ["ip", "netns", "exec", lab.client_ns, "git", "ls-remote", url],
        capture_output=True, text=True, check=True, timeout=60,
        env={**os.environ, "GIT_SSL_CAINFO": lab.ca_file},
    ).stdout
    return {line.split("\t")[1]: line.split("\t")[0] for line in out.splitlines() if "\t" in line}


def _probe(lab: LabState, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "probe", "--lab", "--lab-instance", lab.instance,
         "--size", "2MiB", "--timeout", "60", "--out", str(out), *args],
        capture_output=True, text=True, timeout=300,
    )


def test_all_protocols_pushed_captured_and_cleaned_up(
    probe_lab: LabState, tmp_path: Path, remote_refs: Callable[[str], dict[str, str]]
) -> None:
    before = _refs_in_lab(probe_lab, probe_lab.endpoints.git)
    proc = _probe(probe_lab, tmp_path / "run", "--full", "--burst", "4",
                  "--json", str(tmp_path / "summary.json"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _refs_in_lab(probe_lab, probe_lab.endpoints.git) == before
    manifest = load_run(tmp_path / "run")
    assert manifest.status == "complete"
    assert [p.protocol for p in manifest.protocols] == ["h1", "h2", "ssh", "git"]
    versions = {p.protocol: p.pushes[0].http_version for p in manifest.protocols}
    assert versions["h1"] == "HTTP/1.1" and versions["h2"] == "HTTP/2"
    for run in manifest.protocols:
        push = run.pushes[0]
        assert push.outcome == "ok" and push.cleanup == "deleted", push
        assert push.capture is not None and (push.capture.packets_captured or 0) > 100
        # whole packets (--full): most of the 2 MiB pack is in the file (tcpdump may
        # lose a few packets on a busy machine; the manifest records how many)
        assert (tmp_path / "run" / push.artifacts["capture"]).stat().st_size > 1024 * 1024
        assert push.capture.packets_dropped is not None
        assert run.burst is not None and run.burst.ok_count == 4
    h2 = manifest.protocols[1].pushes[0]
    keylog = tmp_path / "run" / h2.artifacts["keylog"]
    assert keylog.stat().st_mode & 0o777 == 0o600 and keylog.stat().st_size > 0
    assert (tmp_path / "run" / h2.artifacts["capture_decrypted"]).is_file()
    rtt = manifest.paths[0].connect_rtt_min_s
    assert rtt is not None and rtt >= 0.004  # the router adds 5 ms
    assert manifest.paths[0].alpn == "h2"
    assert (tmp_path / "summary.json").is_file()


def test_wrong_ssh_key_is_auth_error(probe_lab: LabState, tmp_path: Path) -> None:
    key = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    proc = _probe(probe_lab, tmp_path / "run", "--protocols", "ssh", "--ssh-key", str(key),
                  "--no-capture")
    assert proc.returncode == 5
    assert "error [auth-failed]:" in proc.stderr
    manifest = load_run(tmp_path / "run")
    assert manifest.errors[0].kind == "auth"
    assert manifest.protocol("ssh") is not None


def test_tls_without_ca_is_tls_error(probe_lab: LabState, tmp_path: Path) -> None:
    proc = subprocess.run(
        ["ip", "netns", "exec", probe_lab.client_ns, sys.executable, "-m", "gitnetdiag",
         "probe", "--http", probe_lab.endpoints.https_direct, "--protocols", "h1",
         "--size", "1MiB", "--no-capture", "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 5
    assert "error [tls-verification]:" in proc.stderr
    manifest = load_run(tmp_path / "run")
    assert manifest.protocol("h1") is not None
    assert manifest.errors[0].kind == "tls"
    assert manifest.paths[0].error is not None and manifest.paths[0].error.startswith("tls")
