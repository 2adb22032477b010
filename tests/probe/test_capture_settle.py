"""The pause before tcpdump stops: until the sockets to the remote closed, bounded."""

from __future__ import annotations

import socket

import pytest

from gitnetdiag.probe import capture
from gitnetdiag.probe.capture import DRAIN_S, open_sockets, settle

SS_LINES = (
    "ESTAB      0 0 10.0.0.1:40000 198.18.2.2:8443\n"
    "FIN-WAIT-2 0 0 10.0.0.1:40002 198.18.2.2:8443\n"
    "ESTAB      0 0 10.0.0.1:40004 198.18.2.9:8443\n"
    "LAST-ACK   0 0 [::ffff:10.0.0.1]:40006 [::ffff:198.18.2.2]:8443\n"
    "ESTAB      0 0 10.0.0.1:40008 198.18.2.2:22\n"
)


def test_only_the_remotes_sockets_are_counted() -> None:
    assert open_sockets(SS_LINES, "198.18.2.2", 8443) == 3  # the mapped IPv6 one too
    assert open_sockets(SS_LINES, "198.18.2.9", 8443) == 1
    assert open_sockets(SS_LINES, "198.18.2.2", 22) == 1
    assert open_sockets("", "198.18.2.2", 8443) == 0


def test_a_host_name_counts_every_peer_on_the_port() -> None:
    assert open_sockets(SS_LINES, "git.example", 8443) == 4


def test_a_line_not_understood_is_no_answer() -> None:
    assert open_sockets("ESTAB 0 0 nonsense\n", "198.18.2.2", 8443) is None


def _pair() -> tuple[socket.socket, socket.socket, socket.socket]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    client = socket.create_connection(listener.getsockname())
    accepted, _ = listener.accept()
    return listener, client, accepted


def test_closed_sockets_end_the_pause_after_the_drain() -> None:
    listener, client, accepted = _pair()
    port = listener.getsockname()[1]
    client.close()
    accepted.close()
    listener.close()
    waited = settle("127.0.0.1", port, longest_s=2.0)
    assert DRAIN_S <= waited < 1.0


def test_a_socket_still_open_waits_the_whole_pause() -> None:
    listener, client, accepted = _pair()
    try:
        waited = settle("127.0.0.1", listener.getsockname()[1], longest_s=0.5)
        assert waited >= 0.5
    finally:
        for sock in (client, accepted, listener):
            sock.close()


def test_without_ss_the_whole_pause_is_waited(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(*_args: object, **_kwargs: object) -> None:
        raise FileNotFoundError("ss")

    monkeypatch.setattr(capture.subprocess, "run", missing)
    assert settle("127.0.0.1", 9, longest_s=0.3) >= 0.3
