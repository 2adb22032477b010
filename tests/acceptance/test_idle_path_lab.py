"""Issue 42: a path that forgets idle connections is named, with N bracketed.

The router of ``idle-state-drop`` forgets a TCP connection after 4 s of silence and drops
what follows (conntrack INVALID, no RST); an 8 s silent pre-receive hook makes every push
(HTTPS and SSH) send its pack and wait for an answer that never comes. ``diagnose --lab``
must say ``failed`` (non-zero exit), rank ``path-idle-timeout`` first with the router's
timeout inside the bracket its idle probe measured, name ``receive.keepAlive``, not blame
the server, and leave no probe branch behind.

Clones (``--direction fetch``) on the same lab: the server prepares each clone's pack in
silence for 8 s (a pack-objects hook, no ``uploadpack.keepAlive``), so every clone (HTTPS
and SSH) gets the server's ``packfile`` line and then nothing. The fetch runs the idle
probe after its clones stall; ``path-idle-timeout`` must rank first with N within 10% of
the router's 4 s on each port (the probe's finer round: quarter-second steps), and its fix
name ``uploadpack.keepAlive`` and ``ServerAliveInterval``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gitnetdiag.lab.idlefaults import (
    IDLE_FAULT_CULPRIT,
    IDLE_FAULT_FETCH_ARGS,
    IDLE_FAULT_FETCH_FIX_NAMES,
    IDLE_FAULT_FIX_NAMES,
    IDLE_FAULT_PROBE_ARGS,
    IDLE_STATE_TIMEOUT_S,
)
from tests.conftest import LabFactory

pytestmark = pytest.mark.lab

FAULT = "idle-state-drop"
EXIT_FAILED = 9


def _evidence(culprit: dict[str, Any], starts: str) -> list[float]:
    return [e["value"] for e in culprit["evidence"] if e["what"].startswith(starts)]


@pytest.mark.lab_lane("fail")
def test_a_path_that_forgets_idle_connections_is_named_with_n_bracketed(
        lab_factory: LabFactory, tmp_path: Path) -> None:
    state = lab_factory(FAULT)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--lab", "--lab-instance",
         state.instance, "--format", "json", "--out", str(tmp_path / "run"),
         *IDLE_FAULT_PROBE_ARGS[FAULT]], capture_output=True, text=True, timeout=300)
    took = time.monotonic() - started
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    ids = [c["id"] for c in report["culprits"]]
    print(f"{FAULT}: exit {proc.returncode} after {took:.0f} s, verdict {report['verdict']}, "
          f"ranked {ids}\n  headline: {report['headline']}")
    assert ids and ids[0] == IDLE_FAULT_CULPRIT[FAULT], ids
    assert report["verdict"] == "failed" and proc.returncode == EXIT_FAILED, proc.stderr[-2000:]
    top = report["culprits"][0]
    for e in top["evidence"]:
        print(f"  - {e['what']}: {e['value']} {e['unit'] or ''} {e['text']}")
    answered = _evidence(top, "keepalive answered")
    unanswered = _evidence(top, "keepalive unanswered")
    print(f"  bracket: answered up to {answered} s, unanswered from {unanswered} s "
          f"(router: {IDLE_STATE_TIMEOUT_S} s)")
    assert len(unanswered) == 2, top["evidence"]  # HTTPS's port and SSH's
    assert max(answered) <= IDLE_STATE_TIMEOUT_S <= min(unanswered), (answered, unanswered)
    assert IDLE_FAULT_FIX_NAMES[FAULT] in top["fix"] and "ServerAliveInterval" in top["fix"]
    # The positive controls agree.
    for name in ("HTTP/2 PING", "SSH keepalive (keepalive@openssh.com)"):
        ok, lost = _evidence(top, f"{name} answered"), _evidence(top, f"{name} unanswered")
        print(f"  {name}: answered after {ok} s, unanswered after {lost} s")
        assert ok and lost and max(ok) < IDLE_STATE_TIMEOUT_S < min(lost), (name, ok, lost)
    hints = " ".join(f["hint"] for f in report["measurement_failures"])
    assert "most likely the server" not in hints, hints
    run = tmp_path / "run"
    manifest = json.loads((run / "manifest.json").read_text())
    for protocol_run in manifest["protocols"]:
        for push in protocol_run["pushes"]:
            stderr = (run / push["artifacts"]["stderr"]).read_text()
            # git sent the whole pack, then heard nothing: no error of its own.
            assert "Total " in stderr and "error:" not in stderr, stderr[-800:]
            assert push["cleanup"] == "deleted", push


N_MARGIN = 0.1
"""N measured on a clone's port lies within this share of the router's timeout."""


@pytest.mark.lab_lane("fail")
def test_clones_that_wait_for_a_pack_through_a_forgetful_path_name_it_with_n(
        lab_factory: LabFactory, tmp_path: Path) -> None:
    state = lab_factory(FAULT)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--lab", "--lab-instance",
         state.instance, "--format", "json", "--out", str(tmp_path / "run"),
         *IDLE_FAULT_FETCH_ARGS[FAULT]], capture_output=True, text=True, timeout=300)
    took = time.monotonic() - started
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    ids = [c["id"] for c in report["culprits"]]
    print(f"{FAULT} clones: exit {proc.returncode} after {took:.0f} s, verdict "
          f"{report['verdict']}, ranked {ids}\n  headline: {report['headline']}")
    assert ids and ids[0] == IDLE_FAULT_CULPRIT[FAULT], ids
    assert report["verdict"] == "failed" and proc.returncode == EXIT_FAILED, proc.stderr[-2000:]
    top = report["culprits"][0]
    for e in top["evidence"]:
        print(f"  - {e['what']}: {e['value']} {e['unit'] or ''} {e['text']}")
    answered = _evidence(top, "keepalive answered")
    unanswered = _evidence(top, "keepalive unanswered")
    print(f"  bracket: answered up to {answered} s, unanswered from {unanswered} s "
          f"(router: {IDLE_STATE_TIMEOUT_S} s)")
    assert len(unanswered) == 2 and len(answered) == 2, top["evidence"]  # HTTPS's and SSH's
    for value in (*answered, *unanswered):
        assert abs(value - IDLE_STATE_TIMEOUT_S) <= N_MARGIN * IDLE_STATE_TIMEOUT_S, value
    assert max(answered) <= IDLE_STATE_TIMEOUT_S + 0.1 and min(unanswered) >= (
        IDLE_STATE_TIMEOUT_S - 0.1), (answered, unanswered)  # within a timer's tick
    # The positive controls on the tool's own connections say the same, each port its own.
    for name in ("HTTP/2 PING", "SSH keepalive (keepalive@openssh.com)"):
        ok, lost = _evidence(top, f"{name} answered"), _evidence(top, f"{name} unanswered")
        print(f"  {name}: answered after {ok} s, unanswered after {lost} s")
        assert len(ok) == 1 and len(lost) == 1, top["evidence"]
        assert ok[0] < IDLE_STATE_TIMEOUT_S < lost[0], (name, ok, lost)
        for value in (*ok, *lost):
            assert abs(value - IDLE_STATE_TIMEOUT_S) <= N_MARGIN * IDLE_STATE_TIMEOUT_S, value
    # Nothing in this lab drops big packets: the stalled clones are not a black hole's.
    assert "path-mtu-blackhole" not in ids, ids
    assert "clones hang after the pack was asked for" in top["summary"]
    assert IDLE_FAULT_FETCH_FIX_NAMES[FAULT] in top["fix"] and "ServerAliveInterval" in top["fix"]
    run = tmp_path / "run"
    fetch = json.loads((run / "fetch.json").read_text())
    for protocol_run in fetch["protocols"]:
        for clone in protocol_run["fetches"]:
            stderr = (run / clone["artifacts"]["stderr"]).read_text()
            # The pack was asked for and none of it came: git counted no object.
            assert clone["outcome"] == "stalled" and "Receiving objects" not in stderr, clone
    assert took < 60, took
