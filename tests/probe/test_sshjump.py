"""The native SSH connection through a ProxyJump host, against two in-process paramiko
servers on loopback: a jump host that forwards ``direct-tcpip`` channels, and the server."""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import paramiko
import pytest

from gitnetdiag.errors import NetworkError
from gitnetdiag.hops import JumpHost
from gitnetdiag.probe.sshauth import SshTarget
from gitnetdiag.probe.sshnative import _Connection

HOST_KEY = paramiko.RSAKey.generate(2048)
CLIENT_KEY = paramiko.RSAKey.generate(2048)


@dataclass
class _Server(paramiko.ServerInterface):  # type: ignore[misc]
    """Public-key auth with the client's key; forwards only when ``forwards``."""

    forwards: bool = True
    destinations: list[tuple[str, int]] = field(default_factory=list)
    users: list[str] = field(default_factory=list)

    def get_allowed_auths(self, username: str) -> str:
        return "publickey"

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        self.users.append(username)
        return paramiko.AUTH_SUCCESSFUL if key == CLIENT_KEY else paramiko.AUTH_FAILED

    def check_channel_direct_tcpip_request(self, chanid: int, origin: tuple[str, int],
                                           destination: tuple[str, int]) -> int:
        if not self.forwards:
            return paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED
        self.destinations.append(destination)
        return paramiko.OPEN_SUCCEEDED


def _pipe(channel: paramiko.Channel, sock: socket.socket) -> None:
    # The channel's close after its transport went (the client hung up first) raises
    # EOFError in paramiko: nothing is left to tell the other end (seen once in a
    # fresh-clone run as an unhandled thread exception).
    with sock, contextlib.suppress(EOFError, OSError, paramiko.SSHException), channel:
        while True:
            ready, _, _ = select.select([channel, sock], [], [], 0.5)
            if channel.closed:
                return
            for source, sink in ((channel, sock), (sock, channel)):
                if source in ready:
                    data = source.recv(65_536)
                    if not data:
                        return
                    sink.sendall(data)


def _serve(listener: socket.socket, server: _Server, stop: threading.Event) -> None:
    """Accept SSH connections until ``stop``; forward each ``direct-tcpip`` channel."""
    listener.settimeout(0.2)
    transports: list[paramiko.Transport] = []
    while not stop.is_set():
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        transport = paramiko.Transport(conn)
        transport.add_server_key(HOST_KEY)
        transport.start_server(server=server)
        transports.append(transport)
        channel = transport.accept(2)
        if channel is not None and server.destinations:
            out = socket.create_connection(server.destinations[-1], timeout=5)
            threading.Thread(target=_pipe, args=(channel, out), daemon=True).start()
    for transport in transports:
        transport.close()


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[tuple[int, _Server, int, _Server, Path]]:
    """(jump port, jump, server port, server, a known_hosts listing both)."""
    stop = threading.Event()
    ports, servers, threads = [], [_Server(), _Server(forwards=False)], []
    for server in servers:
        listener = socket.create_server(("127.0.0.1", 0))
        ports.append(listener.getsockname()[1])
        threads.append(threading.Thread(target=_serve, args=(listener, server, stop),
                                        daemon=True))
        threads[-1].start()
    known = tmp_path / "known_hosts"
    known.write_text("".join(f"[127.0.0.1]:{port} {HOST_KEY.get_name()} {HOST_KEY.get_base64()}\n"
                             for port in ports))
    try:
        yield ports[0], servers[0], ports[1], servers[1], known
    finally:
        stop.set()
        for thread in threads:
            thread.join(5)


@pytest.fixture
def key_file(tmp_path: Path) -> str:
    path = tmp_path / "id_rsa"
    CLIENT_KEY.write_private_key_file(str(path))
    return str(path)


def test_the_connection_goes_through_the_jump_host_and_its_leg_is_the_socket(
        hosts: tuple[int, _Server, int, _Server, Path], key_file: str) -> None:
    jump_port, jump, server_port, server, known = hosts
    target = SshTarget.from_url(f"ssh://git@127.0.0.1:{server_port}/r.git", None)
    conn = _Connection(target, key_file=key_file, known_hosts=str(known), timeout_s=5,
                       jump=JumpHost(host="127.0.0.1", port=jump_port, user="hop"))
    try:
        assert conn.transport.is_authenticated() and conn.banner.startswith("SSH-2.0-")
        assert conn.sock.getpeername()[1] == jump_port  # the leg: TCP_INFO samples it
        assert conn.via == f"hop@127.0.0.1:{jump_port}"
        assert jump.destinations == [("127.0.0.1", server_port)]
        assert (jump.users, server.users) == (["hop"], ["git"])
    finally:
        conn.close()
    assert conn.jump_transport is not None and not conn.jump_transport.is_active()


def test_a_jump_host_that_will_not_forward_is_one_error_naming_it(
        hosts: tuple[int, _Server, int, _Server, Path], key_file: str) -> None:
    _, _, server_port, _, known = hosts  # the server's own sshd forwards nothing
    target = SshTarget.from_url("ssh://git@127.0.0.1:1/r.git", None)
    with pytest.raises(NetworkError) as raised:
        _Connection(target, key_file=key_file, known_hosts=str(known), timeout_s=5,
                    jump=JumpHost(host="127.0.0.1", port=server_port))
    assert raised.value.message.startswith(
        f"the SSH jump host git@127.0.0.1:{server_port} refused to forward to 127.0.0.1:1")
    assert "AllowTcpForwarding" in (raised.value.hint or "")


def test_a_jump_host_whose_key_is_not_known_is_one_error_naming_it(
        hosts: tuple[int, _Server, int, _Server, Path], key_file: str, tmp_path: Path) -> None:
    jump_port, _, server_port, _, known = hosts
    only_server = tmp_path / "server_only"
    only_server.write_text("".join(line + "\n" for line in known.read_text().splitlines()
                                   if line.startswith(f"[127.0.0.1]:{server_port} ")))
    target = SshTarget.from_url(f"ssh://git@127.0.0.1:{server_port}/r.git", None)
    with pytest.raises(NetworkError) as raised:
        _Connection(target, key_file=key_file, known_hosts=str(only_server), timeout_s=5,
                    jump=JumpHost(host="127.0.0.1", port=jump_port))
    assert raised.value.message.startswith(
        f"through the SSH jump host git@127.0.0.1:{jump_port}: the host key of "
        f"[127.0.0.1]:{jump_port}")
    assert raised.value.reference == "ssh-host-key-unknown"
