"""Credentials, extra headers, CA, verification and proxy, looked up the way git does.

Every test runs real ``git config`` / ``git credential fill`` against its own
global config file (``GIT_CONFIG_GLOBAL``), never the user's.
"""

from __future__ import annotations

import base64
import contextlib
import os
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitnetdiag.errors import NetworkError, UsageError
from gitnetdiag.probe.credentials import (
    credential_fill,
    extra_headers,
    http_access,
    url_credential,
    url_specificity,
)
from gitnetdiag.probe.h2native import h2_push_probe
from gitnetdiag.probe.repo import generate_repo, pack_for_commit
from tests.probe.h2server import H2GitServer, start_h2_git_server

TOKEN = "tok-9f3b1c77e2d4"
"""A test secret that must never be printed."""
BASIC = "Basic " + base64.b64encode(f"probe:{TOKEN}".encode()).decode()


def git_env(tmp_path: Path, config: str = "") -> dict[str, str]:
    """An environment whose git reads only ``config`` (no system, no user file)."""
    cfg = tmp_path / "gitconfig"
    cfg.write_text(config)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(cfg),
    }


def store_helper(tmp_path: Path, url_with_secret: str) -> str:
    """A ``credential.helper = store --file=F`` config line holding one credential."""
    store = tmp_path / "store"
    store.write_text(url_with_secret + "\n")
    store.chmod(stat.S_IRUSR | stat.S_IWUSR)
    return f"[credential]\n\thelper = store --file={store}\n"


# ---------------------------------------------------------------- lookups


def test_url_userinfo_is_a_credential_only_with_a_password() -> None:
    cred = url_credential("https://al%40ice:p%2Fw@host.invalid/x.git")
    assert cred is not None
    assert (cred.username, cred.password, cred.source) == ("al@ice", "p/w", "url")
    assert url_credential("https://alice@host.invalid/x.git") is None
    assert "p/w" not in repr(cred)


def test_credential_helper_store_answers_for_its_host_only(tmp_path: Path) -> None:
    env = git_env(tmp_path, store_helper(tmp_path, f"https://probe:{TOKEN}@127.0.0.1%3a8443"))
    cred = credential_fill("https://127.0.0.1:8443/git/lab.git", env)
    assert cred is not None
    assert (cred.username, cred.password, cred.source) == ("probe", TOKEN, "credential-helper")
    assert credential_fill("https://127.0.0.1:9443/git/lab.git", env) is None


def test_nothing_configured_returns_none_without_prompting(tmp_path: Path) -> None:
    """No helper: git would prompt; the probe must neither prompt nor run an askpass."""
    marker = tmp_path / "askpass-ran"
    askpass = tmp_path / "askpass.sh"
    askpass.write_text(f"#!/bin/sh\ntouch {marker}\necho leaked\n")
    askpass.chmod(0o755)
    env = git_env(tmp_path, f"[core]\n\taskPass = {askpass}\n")
    env.update(GIT_ASKPASS=str(askpass), SSH_ASKPASS=str(askpass))
    # A controlling terminal would be the other way to prompt: run with none.
    result: list[object] = []
    thread = threading.Thread(
        target=lambda: result.append(credential_fill("https://127.0.0.1:1/x.git", env))
    )
    thread.start()
    thread.join(timeout=20)
    assert not thread.is_alive(), "git credential fill waited for input"
    assert result == [None]
    assert not marker.exists()


def test_extra_headers_follow_gits_urlmatch_order(tmp_path: Path) -> None:
    """Measured with git 2.39 (GIT_TRACE_CURL): X-A, X-B, X-E are sent, X-F is not
    (a general entry after a more specific one), X-C/X-D belong to other URLs."""
    env = git_env(tmp_path, (
        "[http]\n\textraHeader = X-A: 1\n\textraHeader = X-B: 2\n"
        '[http "https://other.invalid/"]\n\textraHeader = X-C: 3\n'
        '[http "https://127.0.0.1:8443/elsewhere"]\n\textraHeader = X-D: 4\n'
        '[http "https://127.0.0.1:8443/git"]\n\textraHeader = X-E: 5\n'
        "[http]\n\textraHeader = X-F: 6\n"
    ))
    assert extra_headers("https://127.0.0.1:8443/git/lab.git", env) == (
        "X-A: 1", "X-B: 2", "X-E: 5",
    )
    assert extra_headers("https://other.invalid/x.git", env) == (
        "X-A: 1", "X-B: 2", "X-C: 3", "X-F: 6",
    )


def test_an_empty_extra_header_clears_the_list(tmp_path: Path) -> None:
    env = git_env(tmp_path, "[http]\n\textraHeader = X-A: 1\n\textraHeader =\n"
                            "\textraHeader = X-B: 2\n")
    assert extra_headers("https://h.invalid/x.git", env) == ("X-B: 2",)


@pytest.mark.parametrize(("pattern", "url", "expected"), [
    ("https://*.example.invalid", "https://git.example.invalid/x", (0, 0)),
    ("https://*.example.invalid", "https://example.invalid/x", None),
    ("https://h.invalid/a", "https://h.invalid/ab/x", None),
    ("https://h.invalid/a/", "https://h.invalid/a/b", (2, 0)),
    ("https://u@h.invalid", "https://u@h.invalid/x", (0, 1)),
    ("https://u@h.invalid", "https://h.invalid/x", None),
    ("https://h.invalid:443", "https://h.invalid/x", (0, 0)),
    ("http://h.invalid", "https://h.invalid/x", None),
])
def test_url_specificity(pattern: str, url: str, expected: tuple[int, int] | None) -> None:
    assert url_specificity(pattern, url) == expected


def test_ca_verify_and_proxy_precedence(tmp_path: Path) -> None:
    url = "https://127.0.0.1:8443/git/lab.git"
    env = git_env(tmp_path, (
        '[http "https://127.0.0.1:8443"]\n\tsslCAInfo = /from/config.pem\n'
        "\tproxy = http://pu:pp@127.0.0.1:3128\n"
        "[http]\n\tsslVerify = false\n"
    ))
    access = http_access(url, env=env)
    assert (access.ca_file, access.ca_source, access.verify) == (
        "/from/config.pem", "http.sslCAInfo", False,
    )
    assert access.proxy is not None and access.proxy.port == 3128
    assert access.proxy.display == "http://***@127.0.0.1:3128"
    assert "pp" not in repr(access.proxy)
    # The environment's GIT_SSL_CAINFO beats the config; an explicit file beats both.
    assert http_access(url, env={**env, "GIT_SSL_CAINFO": "/env.pem"}).ca_source == (
        "GIT_SSL_CAINFO")
    assert http_access(url, ca_file="/opt.pem", env={**env, "GIT_SSL_CAINFO": "/env.pem"}
                       ).ca_file == "/opt.pem"


def test_env_proxy_no_proxy_and_unsupported_proxy(tmp_path: Path) -> None:
    env = git_env(tmp_path)
    url = "https://git.example.invalid/x.git"
    assert http_access(url, env={**env, "https_proxy": "127.0.0.1:3128"}).proxy is not None
    skipped = http_access(url, env={**env, "https_proxy": "127.0.0.1:3128",
                                    "no_proxy": "example.invalid"})
    assert skipped.proxy is None
    socks = http_access(url, env={**env, "https_proxy": "socks5://127.0.0.1:1080"})
    assert socks.proxy is not None and socks.proxy.scheme == "socks5" and not socks.warnings
    tls = http_access(url, env={**env, "https_proxy": "https://127.0.0.1:3129"})
    assert tls.proxy is None  # TLS to the proxy: the native probes cannot, and say so
    assert tls.warnings and "cannot use the proxy https://127.0.0.1:3129" in tls.warnings[0]


# ---------------------------------------------------------------- against a server


@pytest.fixture(scope="module")
def small_pack(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, str]:
    repo = generate_repo(tmp_path_factory.mktemp("pack") / "repo", 60_000, seed=11)
    return pack_for_commit(repo.path, repo.head_oid), repo.head_oid


@pytest.fixture()
def auth_server(tmp_path: Path) -> Iterator[H2GitServer]:
    directory = tmp_path / "srv"
    directory.mkdir()
    server = start_h2_git_server(directory, window_bytes=65_535, update_delay_s=0.0,
                                 authorization=BASIC)
    yield server
    server.stop()


def test_probe_uses_the_credential_helper_after_a_401(
    tmp_path: Path, auth_server: H2GitServer, small_pack: tuple[bytes, str]
) -> None:
    pack, oid = small_pack
    port = auth_server.url.split(":")[2].split("/")[0]
    env = git_env(tmp_path, store_helper(tmp_path, f"https://probe:{TOKEN}@127.0.0.1%3a{port}"))
    access = http_access(auth_server.url, ca_file=auth_server.ca_file, env=env)
    ledger = h2_push_probe(auth_server.url, pack=pack, new_oid=oid, probe_id="a1",
                           access=access, timeout_s=30)
    assert ledger.report.ok_for("refs/heads/gitnetdiag/probe-a1")
    assert ledger.ref_deleted and "refs/heads/gitnetdiag/probe-a1" not in auth_server.refs()
    assert ledger.auth == "credential-helper"
    assert ledger.server_initial_window_bytes == 65_535
    # Like git: the first request goes without a credential, every later one with it.
    assert auth_server.seen_authorization[0] is None
    assert set(auth_server.seen_authorization[1:]) == {BASIC}
    assert TOKEN not in str(ledger.to_dict())


def test_probe_sends_an_extra_header_and_url_userinfo(
    tmp_path: Path, auth_server: H2GitServer, small_pack: tuple[bytes, str]
) -> None:
    pack, oid = small_pack
    env = git_env(tmp_path, f"[http]\n\textraHeader = Authorization: {BASIC}\n")
    access = http_access(auth_server.url, ca_file=auth_server.ca_file, env=env)
    ledger = h2_push_probe(auth_server.url, pack=pack, new_oid=oid, probe_id="a2",
                           access=access, timeout_s=30)
    assert ledger.auth == "extra-header" and ledger.ref_deleted
    assert set(auth_server.seen_authorization) == {BASIC}

    with_userinfo = auth_server.url.replace("https://", f"https://probe:{TOKEN}@")
    access = http_access(with_userinfo, ca_file=auth_server.ca_file, env=git_env(tmp_path))
    ledger = h2_push_probe(with_userinfo, pack=pack, new_oid=oid, probe_id="a3",
                           access=access, timeout_s=30)
    assert ledger.auth == "url" and ledger.ref_deleted


@pytest.mark.parametrize("secret", ["", "wrong-secret-5c1"])
def test_a_refused_or_missing_credential_is_one_line_without_the_secret(
    tmp_path: Path, auth_server: H2GitServer, small_pack: tuple[bytes, str], secret: str
) -> None:
    pack, oid = small_pack
    port = auth_server.url.split(":")[2].split("/")[0]
    config = store_helper(tmp_path, f"https://probe:{secret}@127.0.0.1%3a{port}") if secret else ""
    access = http_access(auth_server.url, ca_file=auth_server.ca_file,
                         env=git_env(tmp_path, config))
    before = auth_server.refs()
    with pytest.raises(NetworkError) as info:
        h2_push_probe(auth_server.url, pack=pack, new_oid=oid, probe_id="a4", access=access,
                      timeout_s=30)
    line = info.value.one_line()
    assert info.value.reference == "auth-failed"
    assert "\n" not in line
    url = f"https://127.0.0.1:{port}/git/served.git"
    assert f"check the credential helper / token for {url}" in line
    expected = "refused the credential from credential-helper" if secret else "has no credential"
    assert expected in line
    if secret:
        assert secret not in line
    assert auth_server.refs() == before


def test_probe_tunnels_through_an_http_proxy(
    tmp_path: Path, auth_server: H2GitServer, small_pack: tuple[bytes, str]
) -> None:
    proxy_port, requests = _start_connect_proxy()
    env = git_env(tmp_path, f"[http]\n\tproxy = http://127.0.0.1:{proxy_port}\n"
                            f"\textraHeader = Authorization: {BASIC}\n")
    access = http_access(auth_server.url, ca_file=auth_server.ca_file, env=env)
    pack, oid = small_pack
    ledger = h2_push_probe(auth_server.url, pack=pack, new_oid=oid, probe_id="a5",
                           access=access, timeout_s=30)
    port = auth_server.url.split(":")[2].split("/")[0]
    assert ledger.proxy == f"http://127.0.0.1:{proxy_port}" and ledger.ref_deleted
    assert requests[0].startswith(f"CONNECT 127.0.0.1:{port} HTTP/1.1")


def _start_connect_proxy() -> tuple[int, list[str]]:
    """A one-purpose CONNECT proxy on loopback; returns its port and the requests seen."""
    listener = socket.create_server(("127.0.0.1", 0))
    requests: list[str] = []

    def pipe(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65_536):
                dst.sendall(data)
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def serve() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            head = b""
            while b"\r\n\r\n" not in head:
                head += client.recv(4096)
            requests.append(head.decode())
            host, port = head.split()[1].decode().rsplit(":", 1)
            upstream = socket.create_connection((host, int(port)))
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
            threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return int(listener.getsockname()[1]), requests


def test_push_only_auth_asks_before_sending_the_pack(
    tmp_path: Path, small_pack: tuple[bytes, str]
) -> None:
    """git-http-backend's documented setup guards only the POST: the advertisement comes
    without credentials, an empty POST draws the 401, and the pack is sent once, authorized."""
    directory = tmp_path / "srv"
    directory.mkdir()
    server = start_h2_git_server(directory, window_bytes=65_535, update_delay_s=0.0,
                                 authorization=BASIC, push_only=True)
    try:
        port = server.url.split(":")[2].split("/")[0]
        env = git_env(tmp_path, store_helper(tmp_path, f"https://probe:{TOKEN}@127.0.0.1:{port}"))
        access = http_access(server.url, ca_file=server.ca_file, env=env)
        pack, oid = small_pack
        ledger = h2_push_probe(server.url, pack=pack, new_oid=oid, probe_id="p1",
                               access=access, timeout_s=30)
    finally:
        server.stop()
    assert ledger.auth == "credential-helper" and ledger.ref_deleted
    # GET, empty POST (401), the push, then the delete's GET and POST.
    assert server.seen_authorization == [None, None, BASIC, BASIC, BASIC]


def test_a_wrong_scheme_error_does_not_echo_the_secret() -> None:
    with pytest.raises(UsageError) as info:
        h2_push_probe(f"http://probe:{TOKEN}@127.0.0.1:1/x.git", ca_file=None, pack=b"",
                      new_oid="a" * 40, probe_id="s")
    assert TOKEN not in info.value.one_line()
