"""The idle probe's positive controls against the lab's servers (issue 42, point 4).

Under ``idle-state-drop`` the router forgets a TCP connection after 4 s of silence and
drops what follows (no RST). An HTTP/2 PING on a native HTTP/2 connection, and OpenSSH's
``keepalive@openssh.com`` request on a native SSH connection, must be answered after a
silence below 4 s and go unanswered after one above it, with both within 10% of 4 s,
while a new connection works. On the healthy lab both are answered after the ladder's
longest step held (a push silent 9 s: 10 s). Each test waits through its silences: the
idle lane.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from gitnetdiag.lab.idlefaults import IDLE_STATE_TIMEOUT_S
from gitnetdiag.model.lab.state import LabState
from gitnetdiag.probe.idleprobe import idle_ladder
from tests.conftest import LabFactory
from tests.labutil import in_client

pytestmark = [pytest.mark.lab, pytest.mark.lab_lane("idle")]

ROOT = Path(__file__).resolve().parents[2]
N_MARGIN = 0.1
"""Each control's bracket lies within this share of the router's timeout."""
AROUND_S = (3.75, 4.25)
"""Silences held under the fault: a quarter second below its 4 s and above, all within 10%."""

SCRIPT = """
import json, sys
from gitnetdiag.probe.idlecontrols import Control, ControlRound
from gitnetdiag.serial import to_jsonable
kind, url, ca, key, known, *rungs = sys.argv[1:]
control = Control(kind=kind, url=url, ca_file=ca, ssh_key=key, ssh_known_hosts=known)
answers = ControlRound([control], [float(r) for r in rungs]).join(60.0)
print(json.dumps(to_jsonable(answers)))
"""


def _controls(state: LabState, kind: str, url: str, rungs: tuple[float, ...]) -> list[Any]:
    proc = in_client(state, sys.executable, "-c", SCRIPT, kind, url, state.ca_file,
                     state.ssh_key, state.ssh_known_hosts, *map(str, rungs), timeout_s=90,
                     cwd=ROOT, extra_env={"PYTHONPATH": os.fspath(ROOT)})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    answers: list[Any] = json.loads(proc.stdout.splitlines()[-1])
    for a in answers:
        print(f"  {kind} after {a['silence_s']} s: {a['answer']}, round trip "
              f"{a['round_trip_ms']} ms {a['detail']}")
    return answers


def _new_connection_works(state: LabState, port: int) -> None:
    probe = ("import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), "
             "timeout=5).close()")
    proc = in_client(state, sys.executable, "-c", probe, state.server_ip, str(port))
    assert proc.returncode == 0, proc.stderr


def _brackets_the_drop(answers: list[Any]) -> tuple[float, float]:
    answered = [a["silence_s"] for a in answers if a["answer"] == "answered"]
    unanswered = [a["silence_s"] for a in answers if a["answer"] == "unanswered"]
    assert answered and unanswered, answers
    low, high = max(answered), min(unanswered)
    print(f"  bracket: answered up to {low} s, unanswered from {high} s "
          f"(router: {IDLE_STATE_TIMEOUT_S} s)")
    assert low < IDLE_STATE_TIMEOUT_S < high, answers
    for value in (low, high):
        assert abs(value - IDLE_STATE_TIMEOUT_S) <= N_MARGIN * IDLE_STATE_TIMEOUT_S, value
    assert all(a["round_trip_ms"] is not None and a["round_trip_ms"] < 1000
               for a in answers if a["answer"] == "answered"), answers
    return low, high


def _port(url: str) -> int:
    from urllib.parse import urlsplit
    return urlsplit(url).port or 443


def test_an_h2_ping_is_answered_below_the_idle_drop_and_not_above(
        shared_lab: LabFactory) -> None:
    state = shared_lab("idle-state-drop")
    url = state.endpoints.https_edge
    _brackets_the_drop(_controls(state, "h2-ping", url, AROUND_S))
    _new_connection_works(state, _port(url))


def test_an_ssh_keepalive_is_answered_below_the_idle_drop_and_not_above(
        shared_lab: LabFactory) -> None:
    state = shared_lab("idle-state-drop")
    url = state.endpoints.ssh
    _brackets_the_drop(_controls(state, "ssh-keepalive", url, AROUND_S))
    _new_connection_works(state, _port(url))


def test_on_the_healthy_lab_both_are_answered_at_the_longest_step(
        shared_lab: LabFactory) -> None:
    state = shared_lab()
    longest = float(idle_ladder(9.0)[-1])
    for kind, url in (("h2-ping", state.endpoints.https_edge),
                      ("ssh-keepalive", state.endpoints.ssh)):
        answers = _controls(state, kind, url, (longest,))
        assert [a["answer"] for a in answers] == ["answered"], answers
        assert answers[0]["silence_s"] >= longest, answers
        assert answers[0]["round_trip_ms"] < 1000, answers
