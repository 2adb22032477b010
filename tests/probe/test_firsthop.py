"""First hops: git's proxy settings read as git does, the proxy's own words, ``ssh -G``."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitnetdiag.hops import parse_proxy_answer, ssh_proxy_of
from gitnetdiag.probe.firsthop import ask_proxy, first_hop

SQUID_400 = (b"HTTP/1.1 400 Bad Request\r\nServer: squid/5.7\r\nMime-Version: 1.0\r\n"
             b"Via: 1.1 gate (squid/5.7)\r\nContent-Type: text/html\r\n\r\n"
             b"<html><head><title>ERROR: The requested URL could not be retrieved</title>"
             b"</head><body><h1>ERROR</h1><p>Invalid URL</p></body></html>")


@pytest.fixture
def fake_proxy() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback listener answering each connection with Squid's 400 page."""
    server = socket.create_server(("127.0.0.1", 0))
    requests: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                requests.append(conn.recv(4096))
                conn.sendall(SQUID_400)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], requests
    server.close()


def test_the_proxy_names_itself_in_its_answer_to_a_plain_request(
        fake_proxy: tuple[int, list[bytes]]) -> None:
    """A plain GET in origin form (nothing is forwarded, no CONNECT): status, Server, Via
    and the error page's words come back."""
    port, requests = fake_proxy
    answer = ask_proxy("127.0.0.1", port)
    assert (answer.status, answer.server, answer.via) == (400, "squid/5.7", "1.1 gate (squid/5.7)")
    assert answer.body.startswith("ERROR: The requested URL could not be retrieved")
    assert requests[0].startswith(b"GET / HTTP/1.1\r\n")


def test_https_proxy_is_the_first_hop_unless_no_proxy(
        fake_proxy: tuple[int, list[bytes]]) -> None:
    port, _ = fake_proxy
    env = {"https_proxy": f"http://127.0.0.1:{port}", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/nonexistent"}
    hop = first_hop("h2", "https://git.example/repo.git", env=env)
    assert (hop.kind, hop.proxy, hop.source) == ("http-proxy", f"127.0.0.1:{port}",
                                                 "https_proxy")
    assert hop.answer is not None and hop.answer.server == "squid/5.7"
    direct = first_hop("h2", "https://git.example/repo.git",
                       env={**env, "no_proxy": "example"})
    assert (direct.kind, direct.answer) == ("direct", None)


def test_http_proxy_config_wins_over_the_environment(
        tmp_path: Path, fake_proxy: tuple[int, list[bytes]]) -> None:
    port, _ = fake_proxy
    config = tmp_path / "gitconfig"
    config.write_text(f"[http]\n\tproxy = 127.0.0.1:{port}\n")
    env = {"https_proxy": "http://192.0.2.1:3128", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": str(config), "HOME": str(tmp_path)}
    hop = first_hop("h1", "https://git.example/repo.git", env=env)
    assert (hop.proxy, hop.source) == (f"127.0.0.1:{port}", "http.proxy")


def test_an_unreachable_proxy_is_still_the_hop_and_says_why() -> None:
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    answer = ask_proxy("127.0.0.1", port, timeout_s=1.0)
    assert answer.status is None and "refused" in answer.error.lower()


def test_ssh_proxyjump_from_ssh_g_with_the_ssh_command_options() -> None:
    """``core.sshCommand``/``GIT_SSH_COMMAND`` options reach ``ssh -G``: ``-J`` is a hop."""
    hop = first_hop("ssh", "ssh://git@git.example:2222/repo.git",
                    ssh_command="ssh -F /dev/null -J jump@bastion.example")
    assert (hop.kind, hop.proxy, hop.source) == ("ssh-proxy", "jump@bastion.example",
                                                 "core.sshCommand")
    assert (hop.leg, hop.proxy_type) == ("bastion.example:22", "ssh")
    direct = first_hop("ssh", "git@git.example:repo.git", ssh_command="ssh -F /dev/null")
    assert direct.kind == "direct"


def test_ssh_g_output_none_is_no_proxy() -> None:
    assert ssh_proxy_of("hostname x\nproxycommand none\nport 22\n") is None
    assert ssh_proxy_of("proxycommand nc -X connect -x gate:3128 %h %p\n") == (
        "nc -X connect -x gate:3128 %h %p", "proxycommand")


def test_an_answer_that_is_not_http_is_said_as_such() -> None:
    assert parse_proxy_answer(b"SSH-2.0-OpenSSH_9.2\r\n").error == "the proxy's answer is not HTTP"
    assert parse_proxy_answer(b"").error == "no answer"
