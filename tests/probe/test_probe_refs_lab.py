"""Throwaway branches against a lab whose pre-receive hook is slower than the client's
patience: timeout, Ctrl-C and SIGTERM, for ``probe`` and ``load``. Afterwards the
server's refs are exactly those before, and the run says what became of each branch.
Also: ``probe --repo`` with a history the server holds sends its real weight."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitnetdiag.analysis.capture_analysis import analyze_capture
from gitnetdiag.model.lab.state import LabState
from gitnetdiag.model.load.records import LoadReport
from gitnetdiag.rundir import PushRecord, load_run
from tests.conftest import LabFactory
from tests.labutil import in_client

# The idle lane (tests/conftest.py): a hook that sleeps, timeouts, signals.
# Pushes cut by a timeout or a signal while the hook sleeps: named from their failure, no
# rate; their slow-hook lab (5 ms, its own hook delay) is no other test's, so they run in
# the fail lane (the idle lane was the longest: 1179 s against busy 1007 s and fail 354 s in
# a fresh-clone run of 2026-12-02).
pytestmark = [pytest.mark.lab, pytest.mark.lab_lane("fail")]
HOOK_S = 5.0


@pytest.fixture(scope="module")
def hook_lab(shared_lab: LabFactory) -> LabState:
    return shared_lab("slow-hook", rtt_ms=5.0, hook_delay_s=HOOK_S)


def _refs(lab: LabState) -> str:
    proc = in_client(lab, "git", "ls-remote", lab.endpoints.git, timeout_s=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "gitnetdiag", *args]


def _probe_args(lab: LabState, out: Path, *args: str) -> list[str]:
    return _cli("probe", "--lab", "--lab-instance", lab.instance, "--size", "1MiB",
                "--no-native", "--no-capture", "--out", str(out), *args)


def _only_push(out: Path) -> PushRecord:
    manifest = load_run(out)
    pushes = [p for run in manifest.protocols for p in run.pushes]
    assert len(pushes) == 1, pushes
    return pushes[0]


def test_probe_timeout_shorter_than_the_hook(hook_lab: LabState, tmp_path: Path) -> None:
    """git gives up at 2 s, the hook creates the branch at ~5 s: the clean-up waits for it,
    deletes it and says ``deleted``; nothing is left."""
    before = _refs(hook_lab)
    proc = subprocess.run(_probe_args(hook_lab, tmp_path / "run", "--protocols", "git",
                                      "--timeout", "2"),
                          capture_output=True, text=True, timeout=240)
    assert _refs(hook_lab) == before
    push = _only_push(tmp_path / "run")
    assert push.outcome == "hung" and push.cleanup == "deleted", (push, proc.stderr[-2000:])
    assert push.cleanup_s is not None and HOOK_S - 2 - 1 < push.cleanup_s < 4 * HOOK_S
    print(f"push killed after {push.wall_s:.1f} s; clean-up took {push.cleanup_s:.1f} s "
          f"behind a {HOOK_S:.0f} s hook")
    log = (tmp_path / "run" / push.artifacts["cleanup_stderr"]).read_text()
    assert "deleting a non-existent ref" not in log


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_probe_signal_while_the_hook_runs(hook_lab: LabState, tmp_path: Path,
                                          sig: signal.Signals) -> None:
    before = _refs(hook_lab)
    out = tmp_path / "run"
    proc = subprocess.Popen(_probe_args(hook_lab, out, "--protocols", "h1", "--timeout", "60"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (out / "h1-1.trace2.json").exists():
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
            time.sleep(0.05)
        time.sleep(2.0)  # the 1 MiB pack is sent; the hook sleeps
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr[-2000:]
    assert _refs(hook_lab) == before
    manifest = load_run(out)
    assert manifest.status == "interrupted"
    push = _only_push(out)
    assert push.outcome == "interrupted" and push.cleanup == "deleted", push


def _load(lab: LabState, tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    return subprocess.Popen(
        _cli("load", "--lab", "--lab-instance", lab.instance, "--protocol", "git",
             "--ops", "push", "--concurrency", "1", "--duration", "1s", "--no-live",
             "--json", str(tmp_path / "load.json"), *args),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(scratch)})


def test_load_sigterm_mid_push(hook_lab: LabState, tmp_path: Path) -> None:
    before = _refs(hook_lab)
    proc = _load(hook_lab, tmp_path, "--timeout", "60")
    try:
        deadline = time.monotonic() + 60
        while not list((tmp_path / "tmp").glob("gitnetdiag-load-*/push.git")):
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
            time.sleep(0.05)
        time.sleep(2.0)  # first push sent, its hook sleeping
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr[-2000:]
    assert _refs(hook_lab) == before
    report = LoadReport.from_dict(json.loads((tmp_path / "load.json").read_text()))
    assert report.interrupted
    assert report.cleanup == {"deleted": 1, "leftover": 0}, (report.cleanup, stderr[-2000:])
    assert list((tmp_path / "tmp").iterdir()) == []


def test_load_timeout_shorter_than_the_hook(hook_lab: LabState, tmp_path: Path) -> None:
    before = _refs(hook_lab)
    proc = _load(hook_lab, tmp_path, "--timeout", "2", "--out", str(tmp_path / "run"))
    _, stderr = proc.communicate(timeout=180)
    assert _refs(hook_lab) == before
    report = LoadReport.from_dict(json.loads((tmp_path / "load.json").read_text()))
    (step,) = report.steps
    assert step.ops == 1 and [e.kind for e in step.errors] == ["hung"], stderr[-2000:]
    assert report.cleanup == {"deleted": 1, "leftover": 0}, report.cleanup
    (record,) = [json.loads(line)
                 for line in (tmp_path / "run" / "ops.jsonl").read_text().splitlines()]
    assert record["op"] == "push" and record["cleanup"] == "deleted", record
    assert list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.lab_lane("fail")  # the healthy lab of the fail lane's load tests: bytes, no rate
def test_repo_the_server_holds_is_sent_in_full(
    shared_lab: LabFactory, tmp_path: Path
) -> None:
    """The history is on the server already; the salted copy still goes over the wire:
    the capture's upload bytes match the pack size reported."""
    lab = shared_lab("healthy", rtt_ms=5.0)
    url = lab.endpoints.git
    repo = tmp_path / "user"
    assert in_client(lab, "git", "clone", "-q", url, str(repo)).returncode == 0
    (repo / "notes.txt").write_text("".join(f"{i}: lorem ipsum dolor sit amet\n"
                                            for i in range(60000)))
    (repo / "blob.bin").write_bytes(os.urandom(1024 * 1024))
    history = f"refs/heads/t-history-{os.getpid()}"
    for argv in (("add", "-A"), ("-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm",
                                 "x"), ("push", "-q", url, f"HEAD:{history}")):
        done = in_client(lab, "git", *argv, cwd=repo)
        assert done.returncode == 0, done.stderr
    try:
        before = _refs(lab)
        out = tmp_path / "run"
        proc = subprocess.run(
            _cli("probe", "--lab", "--lab-instance", lab.instance, "--protocols", "git",
                 "--repo", str(repo), "--no-native", "--timeout", "60", "--out", str(out)),
            capture_output=True, text=True, timeout=240)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert _refs(lab) == before
        manifest = load_run(out)
        push = _only_push(out)
        assert manifest.repo is not None and push.outcome == "ok" and push.capture is not None
        planned = manifest.repo.pack_bytes
        analysis = analyze_capture(out / push.capture.path)
        upload = max(c.a_to_b.payload_bytes for c in analysis.connections)
        print(f"pack {planned} bytes, upload on the wire {upload} bytes")
        assert abs(upload - planned) <= 0.1 * planned
    finally:
        in_client(lab, "git", "push", "-q", url, f":{history}", cwd=repo)


def test_unknown_ssh_host_key_is_named(hook_lab: LabState, tmp_path: Path) -> None:
    """An empty known_hosts: the error says host key (not "...and the repository exists"),
    and nothing is deleted because nothing reached the server."""
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    out = tmp_path / "run"
    proc = subprocess.run(_probe_args(hook_lab, out, "--protocols", "ssh", "--timeout", "30",
                                      "--ssh-known-hosts", str(empty)),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 5, proc.stderr[-2000:]
    push = _only_push(out)
    assert push.failure_kind == "host-key" and push.cleanup == "never-created", push
    assert "host key" in push.last_line.lower() and "repository exists" not in push.last_line
    (error,) = load_run(out).errors
    assert error.reference == "ssh-host-key" and "repository exists" not in error.message
    assert "error [ssh-host-key]" in proc.stderr and "known_hosts" in proc.stderr


def test_native_probes_wait_for_the_hook(hook_lab: LabState, tmp_path: Path) -> None:
    """The native HTTP/2 and SSH probes give up (or not) before the hook accepts their
    push: their branches end like git's, waited for and deleted under a lease; each
    native outcome names its branch's end, and the server's refs are as before."""
    before = _refs(hook_lab)
    out = tmp_path / "run"
    # --complete: the native probes send the whole pack (a bounded native pack is cut and
    # never creates a branch, so there would be no hook to wait for).
    args = [a for a in _probe_args(hook_lab, out, "--protocols", "h2,ssh", "--timeout", "2",
                                   "--complete") if a != "--no-native"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=400)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert _refs(hook_lab) == before
    manifest = load_run(out)
    assert not [e for e in manifest.errors if e.stage == "cleanup"], manifest.errors
    ends = {}
    for protocol, name in (("h2", "native-h2.json"), ("ssh", "native-ssh.json")):
        if (out / name).is_file():
            ends[protocol] = json.loads((out / name).read_text())["cleanup"]
        else:
            error = next(e for e in manifest.errors if e.stage == "native"
                         and e.protocol == protocol)
            ends[protocol] = error.message.rpartition("(its branch: ")[2].rstrip(")")
    assert set(ends.values()) <= {"deleted"}, (ends, manifest.errors)
    print(f"native branch ends behind a {HOOK_S:.0f} s hook: {ends}; native errors: "
          f"{[e.message for e in manifest.errors if e.stage == 'native']}")
