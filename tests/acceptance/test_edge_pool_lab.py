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
import time
from pathlib import Path
from typing import Any

import pytest

from gitnetdiag.diagnosis.culprits.pool import across_requesters
from gitnetdiag.diagnosis.observations import Observations
from gitnetdiag.lab.spec import FAULT_PROBE_ARGS
from gitnetdiag.pipeline import OBSERVATIONS_FILE
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
    obs = Observations.from_dict(json.loads((tmp_path / "run" / OBSERVATIONS_FILE).read_text()))
    h2 = obs.protocols["h2"].http_requests
    print("HTTP/2 requests:", [(r.push, r.kind, r.status, r.server) for r in h2])
    # Round-robin: each push's GET lands on Apache and its POST on the redirecting member;
    # the native HTTP/2 probe's own GET and POST to the same paths passed (issue 42).
    assert {r.status for r in h2 if r.kind == "GET info/refs"} == {200}, h2
    assert {r.status for r in h2 if r.kind == "POST git-receive-pack"} == {308}, h2
    assert [m.kind for m in across_requesters(obs, "h2")] == [
        "POST git-receive-pack (git's and gitnetdiag's own)"], h2
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


@pytest.mark.lab_lane("fail")  # edge-no-backend: a 503 to everything, named from statuses
def test_an_edge_without_backend_fails_the_run_and_is_named_first(lab_factory: LabFactory,
                                                                   tmp_path: Path) -> None:
    """Issue 42: HAProxy's only backend is down (a dead port, its health check marks it
    down): every HTTPS push and clone gets 503 from the edge itself while SSH works. One
    ``--direction both`` run: failed, non-zero exit, ``edge-no-backend`` first in each
    direction, HAProxy named from its own 503 page and the fix in its terms."""
    state = lab_factory("edge-no-backend")
    started = time.monotonic()
    proc = _gitnetdiag("diagnose", "--lab", "--lab-instance", state.instance, "--size", "1MiB",
                       "--timeout", "30", "--direction", "both", "--format", "json",
                       "--out", str(tmp_path / "run"), *FAULT_PROBE_ARGS["edge-no-backend"])
    took = time.monotonic() - started
    report = json.loads(proc.stdout)
    print(f"edge-no-backend: {took:.1f} s, exit {proc.returncode}, verdict {report['verdict']}, "
          f"ranked {[(c['direction'], c['id']) for c in report['culprits']]}")
    for direction in ("push", "fetch"):
        part = report["parts"][direction]
        ids = [c["id"] for c in part["culprits"]]
        print(f"  {direction}: {part['verdict']}: {part['headline']}")
        assert ids and ids[0] == "edge-no-backend", (direction, ids)
        assert part["verdict"] in ("failed", "inconclusive"), part["verdict"]
        assert "ssh-channel-window" not in ids[:1]
        top = part["culprits"][0]
        # Named from its own 503 page, which the native HTTP/2 probes read (the push's
        # GET info/refs; on the fetch side, its one GET after the failed clones).
        assert "On the edge, HAProxy" in top["fix"], top["fix"]
        assert "could not identify" not in top["fix"], top["fix"]
        assert "option httpchk" in top["fix"], top["fix"]
        assert "configuration.html#1.3.1" in top["fix"], top["fix"]
        pages = [e["text"] for e in top["evidence"] if "gitnetdiag's" in e["what"]]
        assert any("No server is available to handle this request." in t for t in pages), \
            top["evidence"]
        assert "503" in top["summary"], top["summary"]
    assert report["verdict"] in ("failed", "inconclusive") and proc.returncode != 0
    assert "edge-no-backend" in report["parts"]["push"]["headline"]
