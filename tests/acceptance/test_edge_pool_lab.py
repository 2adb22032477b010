"""Issue 23's bad pool: an HAProxy edge balancing over Apache and a port that answers 308.

The pushes through the edge fail with an HTTP status, never a reset: ``diagnose --lab``
ranks ``edge-backend-errors`` first and no ``firewall-reset``; no branch is reported left
on the server unless the server's own ``git for-each-ref`` shows it; ``lab fix``
(health checks) takes the bad member out and the culprit is gone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gitnetdiag.lab.spec import FAULT_PROBE_ARGS
from tests.conftest import LabFactory

pytestmark = pytest.mark.lab

FAULT = "edge-backend-errors"


def _gitnetdiag(*args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "gitnetdiag", *args], capture_output=True,
                          text=True, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _diagnose(instance: str, out: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = _gitnetdiag("diagnose", "--lab", "--lab-instance", instance, "--size", "3MiB",
                       "--timeout", "60", "--format", "json", "--out", str(out),
                       *FAULT_PROBE_ARGS[FAULT])
    return proc, json.loads(proc.stdout)


def _server_branches(repo: str) -> set[str]:
    # The repository belongs to the lab's service user: git wants it declared safe.
    out = subprocess.run(["git", "-c", "safe.directory=*", "-C", repo, "for-each-ref",
                          "--format=%(refname:short)", "refs/heads/gitnetdiag/"],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    return set(out.split())


@pytest.mark.lab_lane("fail")  # edge-backend-errors: named from redirects, not a rate
def test_bad_pool_member_is_named_and_no_branch_is_claimed_left(lab_factory: LabFactory,
                                                                tmp_path: Path) -> None:
    state = lab_factory(FAULT)
    proc, report = _diagnose(state.instance, tmp_path / "run")
    ids = [c["id"] for c in report["culprits"]]
    print(f"{FAULT}: verdict {report['verdict']}, ranked {ids}, exit {proc.returncode}")
    assert ids and ids[0] == FAULT, ids
    assert "firewall-reset" not in ids, ids
    assert "option httpchk" in report["culprits"][0]["fix"]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    pushes = [p for run in manifest["protocols"] for p in run["pushes"]]
    # A protocol whose every push met the bad member fails the run (issue 33), explained.
    failing = {run["protocol"] for run in manifest["protocols"]
               if run["pushes"] and all(p["outcome"] == "failed" for p in run["pushes"])}
    if failing:
        assert report["verdict"] == "failed" and proc.returncode == 9, proc.stderr[-2000:]
        assert " pushes fail (edge-backend-errors)" in report["headline"], report["headline"]
    else:
        assert report["verdict"] == "degraded" and proc.returncode == 0, proc.stderr[-2000:]
    https = [p for p in pushes if p["protocol"] in ("h1", "h2")]
    assert any(p["failure_kind"] == "http-status" for p in https), https
    assert not any(p["failure_kind"] == "reset" for p in https), https
    on_server = _server_branches(state.repo_path)
    claimed = {p["branch"] for p in pushes if p["cleanup"] == "leftover"}
    assert claimed <= on_server, (claimed, on_server)
    assert not [e for e in manifest["errors"] if e["reference"] == "probe-ref-leftover"
                and not any(b in e["message"] for b in on_server)]
    print("clean-up:", sorted({p["cleanup"] for p in pushes}), "server branches:", on_server)

    assert _gitnetdiag("lab", "fix", "--name", state.instance).returncode == 0
    proc, fixed = _diagnose(state.instance, tmp_path / "fixed")
    assert FAULT not in [c["id"] for c in fixed["culprits"]], fixed["culprits"]
    assert all(fixed["protocols"][name]["pushes_failed"] == 0 for name in ("h1", "h2")), fixed
    assert not _server_branches(state.repo_path)
