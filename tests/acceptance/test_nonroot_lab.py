"""Issue 13's acceptance: without root there is no capture, yet the kernel's TCP_INFO
(``ss -tin`` for git's sockets) still ranks the TCP faults first, and the HTTP/2
window fault stays first.

``diagnose`` runs as ``nobody`` inside the lab's client namespace (entering it
needs root; ``setpriv`` drops uid, gid and groups after), with Debian's python3
reading the project's installed packages, its own key and run directory, and
``HOME`` pointed at a directory it owns.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitnetdiag.lab.spec import FAULT_CULPRIT
from tests.conftest import LabFactory

pytestmark = pytest.mark.lab

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def nobody_home() -> Iterator[Path]:
    nobody = pwd.getpwnam("nobody")
    home = Path(tempfile.mkdtemp(prefix="gitnetdiag-nobody-"))
    home.chmod(0o755)
    os.chown(home, nobody.pw_uid, nobody.pw_gid)
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _own(src: str, home: Path, name: str) -> Path:
    nobody = pwd.getpwnam("nobody")
    dst = home / name
    shutil.copyfile(src, dst)
    dst.chmod(0o600)
    os.chown(dst, nobody.pw_uid, nobody.pw_gid)
    return dst


def _keep(run: Path, fault: str) -> Path:
    """A failed run's directory, copied out of the home the fixture removes: the
    evidence of a diagnosis that ranked the wrong culprit (``gitnetdiag report DIR``)."""
    kept = Path(tempfile.mkdtemp(prefix=f"gitnetdiag-nonroot-{fault}-"))
    shutil.copytree(run, kept / "run", dirs_exist_ok=True)
    return kept / "run"


@pytest.mark.parametrize("fault", ["tcp-rmem-clamp", "loss", "h2-small-window"])
def test_diagnose_as_nobody_ranks_the_fault_first_from_tcp_info(
        fault: str, shared_lab: LabFactory, nobody_home: Path) -> None:
    if not Path("/usr/bin/python3").is_file() or sys.version_info[:2] != (3, 11):
        pytest.skip("needs Debian's python3 of this venv's version")
    state = shared_lab(fault)  # diagnose deletes the refs it pushes: the shared lab
    key = _own(state.ssh_key, nobody_home, "id")
    known = _own(state.ssh_known_hosts, nobody_home, "known_hosts")
    ca = _own(state.ca_file, nobody_home, "ca.pem")
    run = nobody_home / "run"
    site = sysconfig.get_paths()["purelib"]
    proc = subprocess.run(
        ["ip", "netns", "exec", state.client_ns, "setpriv", "--reuid=nobody",
         "--regid=nogroup", "--clear-groups", "--", "env", f"HOME={nobody_home}",
         f"PYTHONPATH={REPO}:{site}", "/usr/bin/python3", "-m", "gitnetdiag", "diagnose",
         "--http", state.endpoints.https_edge, "--ssh", state.endpoints.ssh,
         "--ca-file", str(ca), "--ssh-key", str(key), "--ssh-known-hosts", str(known),
         "--protocols", "h1,h2,ssh", "--size", "8MiB", "--timeout", "90",
         "--format", "json", "--out", str(run)],
        capture_output=True, text=True, timeout=600, cwd=nobody_home,
        env={k: v for k, v in os.environ.items() if k != "SSLKEYLOGFILE"},
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "captures are off" in proc.stderr
    report = json.loads(proc.stdout)
    ids = [c["id"] for c in report["culprits"]]
    if not ids or ids[0] != FAULT_CULPRIT[fault]:
        kept = _keep(run, fault)
        pytest.fail(f"{fault}: ranked {ids}; run directory kept in {kept}\n{proc.stderr}")
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["capture_enabled"] is False
    if fault != "h2-small-window":
        sources = [e["source"] for e in report["culprits"][0]["evidence"]]
        assert any(s.startswith("TCP_INFO (ss -tin)") for s in sources), sources
