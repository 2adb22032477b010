"""The idle probe's positive controls: their pure parts (the silences held, the record's
round trip into the observation), the kernel's silence read back on loopback, and an
HTTP/2 PING answered by a loopback HTTP/2 server."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

from gitnetdiag.pipeline._native import idle_path
from gitnetdiag.probe.idlecontrols import (
    CONTROL_WAIT_S,
    Control,
    ControlRound,
    control_rungs,
    quiet_s,
)
from gitnetdiag.probe.idleprobe import IDLE_FILE_PATTERN, endpoint_controls
from gitnetdiag.rundir.idleprobe import (
    AppKeepalive,
    IdleConnection,
    IdleProbeRecord,
    NewConnection,
    control_bracket,
    idle_probe_record,
)
from gitnetdiag.serial import to_jsonable
from tests.probe.h2server import start_h2_git_server


def test_the_controls_bracket_the_keepalives_first_bracket_within_a_quarter_step() -> None:
    # Answered at 3 s, unanswered at 4 s: a quarter below and above each end.
    assert control_rungs(3, 4, 10) == (2.75, 3.25, 3.75, 4.25)
    # Answered at 4 s (a late timer), unanswered at 5 s: 3.75 s and 4.25 s are still there.
    assert control_rungs(4, 5, 10) == (3.75, 4.25, 4.75, 5.25)
    # Unanswered from the first rung: none held below half a second.
    assert control_rungs(None, 1, 10) == (0.75, 1.25)
    # No bracket: the ladder's top, once.
    assert control_rungs(10, None, 10) == (10,)
    assert control_rungs(None, None, 0.2) == ()


def _record(controls: tuple[AppKeepalive, ...]) -> IdleProbeRecord:
    return IdleProbeRecord(
        target="198.18.2.2:8443", protocols=("h1",), trigger="t", silence_s=8.0,
        keepalive_interval_s=1.0, answer_wait_s=1.5,
        connections=(IdleConnection(idle_s=3.75, answer="answered"),
                     IdleConnection(idle_s=4.0, answer="unanswered", probes=2)),
        new_connection=NewConnection(ok=True, connect_s=0.05), duration_s=12.0,
        controls=controls)


PING_OK = AppKeepalive(kind="h2-ping", silence_s=3.752, answer="answered",
                       round_trip_ms=51.1, wait_s=CONTROL_WAIT_S)
PING_LOST = AppKeepalive(kind="h2-ping", silence_s=4.252, answer="unanswered",
                         wait_s=CONTROL_WAIT_S, detail="no PING ACK within 1.5 s")
PING_FAILED = AppKeepalive(kind="h2-ping", silence_s=10.0, answer="failed",
                           detail="did not negotiate HTTP/2")


def test_the_controls_go_through_the_file_into_the_observation(tmp_path: Path) -> None:
    record = _record((PING_OK, PING_LOST, PING_FAILED))
    assert control_bracket(record.controls, "h2-ping") == (3.752, 4.252)
    assert control_bracket(record.controls, "ssh-keepalive") == (None, None)
    data = json.loads(json.dumps(to_jsonable(record)))
    assert idle_probe_record(data, "native-idle-1.json") == record
    (tmp_path / IDLE_FILE_PATTERN.format(n=1)).write_text(json.dumps(data))
    probe = idle_path(tmp_path, "h1").value
    assert probe is not None
    # The failed one (its connection never made) is left out: it says nothing of a silence.
    assert [(c.kind, c.silence_s, c.answered, c.round_trip_ms) for c in probe.controls] == [
        ("h2-ping", 3.752, True, 51.1), ("h2-ping", 4.252, False, None)]


def test_a_record_of_before_the_controls_still_reads() -> None:
    data = to_jsonable(_record(()))
    assert isinstance(data, dict)
    del data["controls"]
    assert idle_probe_record(data, "native-idle-1.json").controls == ()


class _Run:
    def __init__(self, protocol: str, url: str) -> None:
        self.protocol, self.url, self.pushes = protocol, url, ()
        self.first_hop = None


class _Options:
    stall_timeout_s = 6.0
    timeout_s = 12.0
    cleanup_until = None
    ca_file = "/lab/ca.pem"
    insecure = False
    ssh_key = "/lab/id"
    ssh_known_hosts = "/lab/known_hosts"


def test_each_endpoint_gets_the_control_of_its_protocols() -> None:
    runs = [_Run("h1", "https://h:8443/r"), _Run("h2", "https://h:8443/r"),
            _Run("ssh", "ssh://u@h:2222/r"), _Run("git", "git://h/r")]
    endpoint = {"https://h:8443/r": ("h", 8443), "ssh://u@h:2222/r": ("h", 2222),
                "git://h/r": ("h", 9418)}.__getitem__
    controls = endpoint_controls(runs, _Options(), endpoint)  # type: ignore[arg-type]
    assert [c.kind for c in controls[("h", 8443)]] == ["h2-ping"]  # one for h1 and h2
    assert controls[("h", 8443)][0].ca_file == "/lab/ca.pem"
    ssh = controls[("h", 2222)][0]
    assert (ssh.kind, ssh.ssh_key, ssh.ssh_known_hosts) == (
        "ssh-keepalive", "/lab/id", "/lab/known_hosts")
    assert controls[("h", 9418)] == []


def test_the_kernel_says_how_long_a_connection_was_silent() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        peer, _ = server.accept()
        try:
            peer.sendall(b"x")
            client.recv(1)
            threading.Event().wait(0.3)
            quiet = quiet_s(client)
            assert quiet is not None and 0.25 <= quiet < 1.0, quiet
            client.sendall(b"y")
            again = quiet_s(client)
            assert again is not None and again < 0.1, again
        finally:
            client.close()
            peer.close()


def test_a_loopback_http2_server_answers_the_ping_after_the_silence(tmp_path: Path) -> None:
    server = start_h2_git_server(tmp_path, window_bytes=65_535, update_delay_s=0.0)
    try:
        control = Control(kind="h2-ping", url=server.url, ca_file=server.ca_file)
        answers = ControlRound([control], [0.6]).join(10.0)
    finally:
        server.stop()
    assert len(answers) == 1, answers
    ping = answers[0]
    assert ping.answer == "answered", ping
    assert ping.silence_s >= 0.6 and ping.round_trip_ms is not None
    assert 0 <= ping.round_trip_ms < 500


def test_a_port_with_nobody_behind_it_fails_the_control() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    answers = ControlRound([Control(kind="h2-ping", url=f"https://127.0.0.1:{port}/r"),
                            Control(kind="ssh-keepalive", url=f"ssh://u@127.0.0.1:{port}/r")],
                           [0.6]).join(15.0)
    assert sorted(a.answer for a in answers) == ["failed", "failed"], answers


def test_a_cancelled_control_is_left_out(tmp_path: Path) -> None:
    server = start_h2_git_server(tmp_path, window_bytes=65_535, update_delay_s=0.0)
    try:
        held = ControlRound([Control(kind="h2-ping", url=server.url, ca_file=server.ca_file)],
                            [30.0])
        threading.Event().wait(0.5)
        held.stop()
        assert held.join(5.0) == []
    finally:
        server.stop()
