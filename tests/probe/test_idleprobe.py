"""The idle probe: its pure parts (the ladder, the judgement of TCP_INFO, when it runs), and
the probe itself against listeners on loopback (every keepalive answered; a server that
closes; a port nobody listens on)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from gitnetdiag.outcomes import FailureKind
from gitnetdiag.pipeline._native import idle_path
from gitnetdiag.probe.idleprobe import (
    IDLE_FILE_PATTERN,
    KeepaliveState,
    clone_probe_targets,
    fine_ladder,
    idle_ladder,
    idle_probe,
    idle_probe_targets,
    judge,
    proxy_note,
    run_idle_probes,
    silent_clone,
    silent_push,
)
from gitnetdiag.rundir.idleprobe import idle_probe_record
from gitnetdiag.rundir.records import CloneRecord, PushRecord
from gitnetdiag.serial import to_jsonable


def _state(probes: int = 0, last_ack_recv_s: float = 0.0) -> KeepaliveState:
    return KeepaliveState(probes=probes, backoff=0, unacked=0, last_ack_recv_s=last_ack_recv_s)


def test_the_ladder_goes_up_to_the_silence_and_stops_at_30_s() -> None:
    assert idle_ladder(3.0) == (1, 2, 3)
    assert idle_ladder(9.0) == (1, 2, 3, 4, 5, 6, 8, 10)
    assert idle_ladder(0.2) == (1, 2)
    assert idle_ladder(600.0)[-1] == 30


def test_judging_a_keepalive() -> None:
    # 4 s idle, 4.5 s after the connect: the ACK to the keepalive came 0.45 s ago.
    assert judge(_state(last_ack_recv_s=0.45), idle_s=4, elapsed_s=4.5) == "answered"
    # The keepalive just went out and its answer is still on the way: undecided.
    assert judge(_state(probes=1, last_ack_recv_s=4.5), idle_s=4, elapsed_s=4.5) is None
    # 1.5 s after it was due the kernel still counts it unanswered.
    assert judge(_state(probes=2, last_ack_recv_s=5.5), idle_s=4, elapsed_s=5.5) == "unanswered"
    # Only the handshake's ACK, no probe counted long after it was due: nothing seen.
    assert judge(_state(last_ack_recv_s=7.6), idle_s=4, elapsed_s=7.6) == "failed"


def _push(**kw: object) -> PushRecord:
    base: dict[str, object] = dict(
        protocol="h1", repeat=1, started_at="2026-12-01T00:00:00Z", outcome="hung",
        failure_kind=FailureKind.HUNG, last_line="", wall_s=12.0, rate_bytes_per_s=None,
        branch="gitnetdiag/probe-x", pack_bytes=1 << 20, http_version="HTTP/1.1", alpn=None,
        post_s=None, curl_last_info=None, phases=None, capture=None, pack_objects=4)
    base.update(kw)
    return PushRecord(**base)  # type: ignore[arg-type]


def test_it_runs_after_a_push_that_sent_its_pack_and_heard_nothing() -> None:
    assert silent_push(_push())
    assert silent_push(_push(outcome="failed", failure_kind=FailureKind.TIMEOUT))
    assert not silent_push(_push(pack_objects=None))  # cut mid-pack: not a silence
    assert not silent_push(_push(outcome="failed", failure_kind=FailureKind.RESET))
    assert not silent_push(_push(outcome="ok", failure_kind=None))


class _Run:
    def __init__(self, protocol: str, url: str, pushes: tuple[PushRecord, ...]) -> None:
        self.protocol, self.url, self.pushes = protocol, url, pushes


class _Options:
    stall_timeout_s: float | None = 6.0
    timeout_s: float = 12.0
    cleanup_until: float | None = None


def test_one_target_per_endpoint_with_every_protocol_on_it() -> None:
    runs = [_Run("h1", "https://h:8443/r", (_push(),)),
            _Run("h2", "https://h:8443/r", (_push(protocol="h2", outcome="stalled"),)),
            _Run("ssh", "ssh://u@h/r", (_push(protocol="ssh", outcome="ok",
                                              failure_kind=None),))]
    endpoint = {"https://h:8443/r": ("h", 8443), "ssh://u@h/r": ("h", 22)}.__getitem__
    targets = idle_probe_targets(runs, _Options(), endpoint)
    assert list(targets) == [("h", 8443)]
    protocols, trigger, silence = targets[("h", 8443)]
    assert protocols == ["h1", "h2"] and "h1 push #1" in trigger and silence == 12.0


@pytest.fixture
def listener() -> Iterator[tuple[str, int, list[socket.socket]]]:
    """A loopback server that accepts and keeps every connection open, silent."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield "127.0.0.1", server.getsockname()[1], accepted
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def test_on_loopback_every_keepalive_is_answered(
        listener: tuple[str, int, list[socket.socket]], tmp_path: Path) -> None:
    host, port, _ = listener
    record = idle_probe(host, port, silence_s=1.0, protocols=["h1"], trigger="test")
    assert [c.idle_s for c in record.connections] == [1, 2]
    assert [c.answer for c in record.connections] == ["answered", "answered"]
    assert all(c.probes == 0 for c in record.connections)
    assert record.bracket_s == (2, None)
    assert record.new_connection is not None and record.new_connection.ok
    assert record.duration_s < 5.0
    # The file round-trips into the pipeline's observation.
    (tmp_path / IDLE_FILE_PATTERN.format(n=1)).write_text(json.dumps(to_jsonable(record)))
    probe = idle_path(tmp_path, "h1").value
    assert probe is not None and probe.answered_up_to_s == 2 and probe.unanswered_from_s is None
    assert probe.new_connection_ok is True
    assert idle_path(tmp_path, "ssh").value is None


def test_a_server_that_closes_its_idle_connections_is_not_a_forgetful_path() -> None:
    server = socket.create_server(("127.0.0.1", 0))

    def close_each() -> None:
        for _ in range(3):
            conn, _addr = server.accept()
            conn.close()

    thread = threading.Thread(target=close_each, daemon=True)
    thread.start()
    record = idle_probe("127.0.0.1", server.getsockname()[1], silence_s=1.0,
                        protocols=["ssh"], trigger="test")
    thread.join(5)
    server.close()
    assert [c.answer for c in record.connections] == ["closed", "closed"]
    assert record.bracket_s == (None, None)


def test_a_port_nobody_listens_on_fails_every_connection() -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe_port:
        port = probe_port.getsockname()[1]
    record = idle_probe("127.0.0.1", port, silence_s=1.0, protocols=["h1"], trigger="test")
    assert {c.answer for c in record.connections} == {"failed"}
    assert record.new_connection is not None and not record.new_connection.ok


def test_the_records_are_written_one_per_endpoint(
        listener: tuple[str, int, list[socket.socket]], tmp_path: Path) -> None:
    host, port, _ = listener
    records = run_idle_probes({(host, port): (["h1", "h2"], "test", 0.5)}, tmp_path)
    assert len(records) == 1
    data = json.loads((tmp_path / "native-idle-1.json").read_text())
    again = idle_probe_record(data, "native-idle-1.json")
    assert again == replace(records[0])
    assert again.protocols == ("h1", "h2")


def test_a_forward_proxy_in_the_environment_is_noted() -> None:
    assert proxy_note(["h1"], {"https_proxy": "http://proxy:3128"})[0].startswith(
        "https_proxy is set: the idle probe connected directly")
    assert proxy_note(["ssh"], {"https_proxy": "http://proxy:3128"}) == ()
    assert proxy_note(["h2"], {}) == ()


def test_a_watch_cycles_deadline_bounds_the_silence_held() -> None:
    runs = [_Run("h1", "https://h:8443/r", (_push(),))]
    options = _Options()
    options.cleanup_until = time.monotonic() + 8.0
    targets = idle_probe_targets(runs, options, lambda url: ("h", 8443))
    assert targets[("h", 8443)][2] <= 8.0 - 1.5 - 2
    options.cleanup_until = time.monotonic() + 3.0
    assert idle_probe_targets(runs, options, lambda url: ("h", 8443)) == {}


def test_a_server_that_greets_then_closes_is_closed_not_unanswered() -> None:
    """Unread data (an SSH banner) hides the FIN from a peek: the TCP state tells."""
    server = socket.create_server(("127.0.0.1", 0))

    def greet_and_close() -> None:
        for _ in range(3):
            conn, _addr = server.accept()
            conn.sendall(b"SSH-2.0-test\r\n")
            conn.close()

    thread = threading.Thread(target=greet_and_close, daemon=True)
    thread.start()
    record = idle_probe("127.0.0.1", server.getsockname()[1], silence_s=1.0,
                        protocols=["ssh"], trigger="test")
    thread.join(5)
    server.close()
    assert [c.answer for c in record.connections] == ["closed", "closed"], record.connections


def test_the_finer_round_splits_the_ladders_bracket_in_quarters() -> None:
    assert fine_ladder(3, 4) == (3.25, 3.5, 3.75)
    assert fine_ladder(25, 30) == (26.25, 27.5, 28.75)
    assert fine_ladder(None, 4) == () and fine_ladder(4, None) == ()
    assert fine_ladder(4, 4) == ()


def _clone(**kw: object) -> CloneRecord:
    base: dict[str, object] = dict(
        protocol="h1", repeat=1, started_at="2026-12-01T00:00:00Z", outcome="stalled",
        failure_kind=None, last_line="stalled waiting for the server: nothing for 10.3 s",
        wall_s=10.8, rate_bytes_per_s=None, started_epoch_s=0.0, moved_bytes=3123,
        measured_s=10.5, last_progress="Cloning into 'clone'...", tcpinfo_samples=3,
        clone_removed=True)
    base.update(kw)
    return CloneRecord(**base)  # type: ignore[arg-type]


def test_it_runs_after_a_clone_that_asked_for_its_pack_and_heard_nothing() -> None:
    assert silent_clone(_clone())
    assert silent_clone(_clone(outcome="hung"))
    assert not silent_clone(_clone(moved_bytes=0))  # never reached the server
    assert not silent_clone(_clone(last_progress="Receiving objects:  40% (4/10)"))  # mid-pack
    assert not silent_clone(_clone(outcome="failed"))
    assert not silent_clone(_clone(outcome="ok"))


class _CloneRun:
    def __init__(self, protocol: str, url: str, fetches: tuple[CloneRecord, ...]) -> None:
        self.protocol, self.url, self.fetches = protocol, url, fetches


def test_a_silent_clone_targets_its_endpoint_with_the_stall_it_waited() -> None:
    runs = [_CloneRun("h1", "https://h:8443/r", (_clone(),)),
            _CloneRun("ssh", "ssh://u@h/r", (_clone(protocol="ssh", outcome="ok"),))]
    endpoint = {"https://h:8443/r": ("h", 8443), "ssh://u@h/r": ("h", 22)}.__getitem__
    targets = clone_probe_targets(runs, _Options(), endpoint)
    assert list(targets) == [("h", 8443)]
    protocols, trigger, silence = targets[("h", 8443)]
    # Stalled: it waited the stall timeout (6 s), not its whole wall time.
    assert protocols == ["h1"] and "h1 clone #1" in trigger and silence == 6.0


def _fake_rounds(monkeypatch: pytest.MonkeyPatch, first: dict[float, str]) -> list[tuple]:
    """``_hold`` answering the ladder as ``first`` says and every later round 'answered';
    the rounds asked for are recorded."""
    from gitnetdiag.probe import idleprobe
    from gitnetdiag.rundir.idleprobe import IdleConnection

    asked: list[tuple] = []

    def hold(host: str, port: int, rungs: tuple, clock: object, sleep: object) -> list:
        asked.append(tuple(rungs))
        fate = first if len(asked) == 1 else {}
        return [IdleConnection(idle_s=r, answer=fate.get(r, "answered"))  # type: ignore[arg-type]
                for r in rungs if fate.get(r, "answered") != "skip"]

    monkeypatch.setattr(idleprobe, "_hold", hold)
    monkeypatch.setattr(idleprobe, "_new_connection", lambda *a: None)
    return asked


def test_a_bracket_gets_a_finer_round_inside_it(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _fake_rounds(monkeypatch, {4: "unanswered", 5: "skip", 6: "skip"})
    record = idle_probe("h", 1, silence_s=6.0, protocols=["h1"], trigger="t")
    assert asked == [(1, 2, 3, 4, 5, 6), (3.25, 3.5, 3.75)]
    assert record.bracket_s == (3.75, 4)
    assert [c.idle_s for c in record.connections] == [1, 2, 3, 3.25, 3.5, 3.75, 4]


def test_no_finer_round_without_a_bracket_or_past_the_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _fake_rounds(monkeypatch, {})
    idle_probe("h", 1, silence_s=3.0, protocols=["h1"], trigger="t")
    assert asked == [(1, 2, 3)]  # every keepalive answered: nothing to bracket
    asked = _fake_rounds(monkeypatch, {4: "unanswered"})
    idle_probe("h", 1, silence_s=4.0, protocols=["h1"], trigger="t",
               until=time.monotonic() + 5.0)
    assert asked == [(1, 2, 3, 4)]  # a watch cycle's deadline: no time for another 4 s
