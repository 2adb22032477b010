"""Proxy commands and SOCKS as hops (issue 43): ssh's ProxyCommand read for its first hop
(data/proxy_commands.toml), an unrecognised one said so and never captured at the server's
address, core.gitProxy as git matches it, SOCKS proxies from http.proxy / all_proxy."""

from __future__ import annotations

import socket
import stat
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitnetdiag.data import KnowledgeBaseError
from gitnetdiag.errors import NetworkError
from gitnetdiag.hops import (
    PROGRAMS,
    FirstHop,
    PathHop,
    expand_tokens,
    git_proxy_command,
    leg_endpoint,
    load_programs,
    parse_proxy_command,
    parse_proxy_script,
)
from gitnetdiag.probe.credentials import proxy_for
from gitnetdiag.probe.firsthop import first_hop
from gitnetdiag.probe.socks import socks_connect

SERVER = "git.example"


@pytest.mark.parametrize(("command", "program", "kind", "host", "port"), [
    ("nc -X connect -x proxy:3128 git.example 22", "openbsd-nc", "http", "proxy", 3128),
    ("/usr/bin/nc -X connect -x proxy git.example 22", "openbsd-nc", "http", "proxy", 3128),
    ("nc -x 127.0.0.1:1081 git.example 22", "openbsd-nc", "socks5", "127.0.0.1", 1081),
    ("nc -X 4 -x [::1]:9050 git.example 22", "openbsd-nc", "socks4", "::1", 9050),
    ("exec nc -Xconnect -xgate:8080 git.example 22", "openbsd-nc", "http", "gate", 8080),
    ("nc git.example 22", "openbsd-nc", "relay", SERVER, 22),
    ("ncat --proxy gate --proxy-type socks5 git.example 22", "ncat", "socks5", "gate", 1080),
    ("ncat --proxy=gate:3129 git.example 22", "ncat", "http", "gate", 3129),
    ("corkscrew proxy.corp 8080 git.example 22", "corkscrew", "http", "proxy.corp", 8080),
    ("corkscrew proxy.corp 8080 git.example 22 ~/.auth", "corkscrew", "http", "proxy.corp",
     8080),
    ("connect-proxy -H proxy:3128 git.example 22", "connect-proxy", "http", "proxy", 3128),
    ("connect -S user@socks git.example 22", "connect-proxy", "socks5", "socks", 1080),
    ("ssh -W git.example:22 jump", "ssh-w", "ssh", "jump", 22),
    ("ssh -q -p 2222 -W git.example:22 u@bastion", "ssh-w", "ssh", "bastion", 2222),
    ("ssh -o Port=2200 -W git.example:22 bastion", "ssh-w", "ssh", "bastion", 2200),
    ("ssh -J a@first:2201 -W git.example:22 second", "ssh-w", "ssh", "first", 2201),
])
def test_each_common_proxy_command_names_its_first_hop(
        command: str, program: str, kind: str, host: str, port: int) -> None:
    found = parse_proxy_command(command)
    assert found.placed, found
    assert (found.program, found.proxy_type, found.host, found.port) == (
        PROGRAMS[program].name, kind, host, port)


@pytest.mark.parametrize(("command", "why"), [
    ("socat - PROXY:gate:git.example:22,proxyport=3128", "unrecognised program 'socat'"),
    ("my-tunnel git.example 22", "unrecognised program 'my-tunnel'"),
    ("nc -X weird -x gate git.example 22", "proxy type not known"),
    ("connect -H gate git.example 22", "has no port and its manual gives no default"),
    ("ssh jump nc git.example 22", "not a stdio forward"),
    ("corkscrew gate git.example 22", "no proxy host and port"),
    ("nc 'unbalanced", "cannot be read"),
    ("", "no command"),
])
def test_a_command_whose_first_hop_is_not_read_says_why(command: str, why: str) -> None:
    found = parse_proxy_command(command)
    assert not found.placed and why in found.why, found


def test_tokens_and_a_git_proxy_script_are_expanded_as_ssh_and_git_do() -> None:
    assert expand_tokens("nc -x p %h %p # %r %% %z", "h", 22, "u") == "nc -x p h 22 # u % %z"
    script = "#!/bin/sh\n# comment\nset -e\nexec nc -X 5 -x 127.0.0.1:1080 \"$@\"\n"
    found = parse_proxy_script(script, SERVER, 9418)
    assert (found.proxy_type, found.host, found.port) == ("socks5", "127.0.0.1", 1080)
    found = parse_proxy_script("corkscrew gate 8080 $1 ${2}\n", SERVER, 9418)
    assert (found.host, found.port) == ("gate", 8080)
    assert not parse_proxy_script("proxytunnel -p gate:8080 -d $1:$2\n", SERVER, 9418).program


def test_core_git_proxy_is_matched_as_git_config_documents() -> None:
    values = ["none for internal.example", "ssh-tunnel for corp.example", "default-proxy"]
    assert git_proxy_command("git.internal.example", values, None) is None
    assert git_proxy_command("git.corp.example", values, None) == ("ssh-tunnel",
                                                                   "core.gitProxy")
    assert git_proxy_command("notcorp.example", values, None) == ("default-proxy",
                                                                  "core.gitProxy")
    assert git_proxy_command("corp.example", values, "env-proxy") == ("env-proxy",
                                                                     "GIT_PROXY_COMMAND")
    assert git_proxy_command("x", [], None) is None


def test_the_program_table_refuses_a_broken_entry() -> None:
    with pytest.raises(KnowledgeBaseError, match="style must be one of"):
        load_programs('[[command]]\nid = "x"\nname = "x"\nstyle = "guess"\n')


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": str(tmp_path / "gitconfig"), **extra}


def test_ssh_proxy_commands_from_ssh_g_are_read_for_their_first_hop(tmp_path: Path) -> None:
    """ssh -G expands the command's tokens' host; ssh -W's jump host is resolved by ssh -G
    too (its HostName and Port); an unrecognised command is recorded as unplaced."""
    config = tmp_path / "ssh_config"
    config.write_text("Host a.example\n    ProxyCommand nc -X connect -x gate:3128 %h %p\n"
                      "Host b.example\n    ProxyCommand ssh -F " + str(config)
                      + " -W %h:%p jump\n"
                      "Host jump\n    HostName 10.0.0.9\n    Port 2222\n"
                      "Host c.example\n    ProxyCommand /opt/bin/my-tunnel %h %p\n")
    env = _env(tmp_path)
    hop = first_hop("ssh", "ssh://git@a.example/r.git", f"ssh -F {config}", env)
    assert (hop.kind, hop.source, hop.leg, hop.proxy_type, hop.unplaced) == (
        "ssh-proxy", "ssh -G proxycommand", "gate:3128", "http", "")
    assert leg_endpoint(hop, ("a.example", 22)) == ("gate", 3128)
    jump = first_hop("ssh", "git@b.example:r.git", f"ssh -F {config}", env)
    assert (jump.leg, jump.proxy_type) == ("10.0.0.9:2222", "ssh"), jump
    unknown = first_hop("ssh", "ssh://c.example/r.git", f"ssh -F {config}", env)
    assert unknown.kind == "ssh-proxy" and unknown.leg == "" and "not a proxy command" in \
        unknown.unplaced
    assert leg_endpoint(unknown, ("c.example", 22)) is None  # never the server's address
    shown = PathHop(protocol="ssh", kind=unknown.kind, proxy=unknown.proxy,
                    source=unknown.source, unplaced=unknown.unplaced)
    assert shown.text == ("client -> SSH ProxyCommand `/opt/bin/my-tunnel %h %p` (not a proxy "
                          "command gitnetdiag recognises: first hop unknown, not captured) "
                          "-> server")


def test_git_protocol_through_core_git_proxy_and_its_script(tmp_path: Path) -> None:
    script = tmp_path / "gitproxy.sh"
    script.write_text("#!/bin/sh\nexec nc -X connect -x 192.0.2.7:3128 \"$1\" \"$2\"\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "gitconfig").write_text(
        f"[core]\n\tgitProxy = none for internal.example\n\tgitProxy = {script}\n")
    env = _env(tmp_path)
    hop = first_hop("git", "git://git.example/r.git", env=env)
    assert (hop.kind, hop.source, hop.leg, hop.proxy_type, hop.program) == (
        "git-proxy", "core.gitProxy", "192.0.2.7:3128", "http", "OpenBSD netcat")
    assert first_hop("git", "git://git.internal.example/r.git", env=env).kind == "direct"
    shown = PathHop(protocol="git", kind=hop.kind, proxy=hop.proxy, source=hop.source,
                    leg=hop.leg, proxy_type=hop.proxy_type, program=hop.program)
    assert shown.text == ("client -> HTTP proxy 192.0.2.7:3128 (core.gitProxy: OpenBSD "
                          "netcat) -> server")
    opaque = tmp_path / "opaque"
    opaque.write_text("#!/bin/sh\nexec /opt/vendor/tunnel \"$@\"\n")
    unknown = first_hop("git", "git://x.example/r.git",
                        env={**env, "GIT_PROXY_COMMAND": str(opaque)})
    assert unknown.source == "GIT_PROXY_COMMAND" and unknown.unplaced and not unknown.leg
    assert first_hop("git", "git://x.example/r.git", env=_env(tmp_path / "none")).kind == \
        "direct"


def test_socks_proxies_are_hops_and_the_native_probes_tunnel_through_them(
        tmp_path: Path) -> None:
    env = _env(tmp_path, all_proxy="socks5h://user:pw@127.0.0.1:1")
    hop = first_hop("h2", "https://git.example/r.git", env=env)
    assert (hop.kind, hop.proxy, hop.source, hop.proxy_type, hop.answer) == (
        "socks-proxy", "127.0.0.1:1", "all_proxy", "socks5h", None)
    assert leg_endpoint(hop, ("git.example", 443)) == ("127.0.0.1", 1)
    shown = PathHop(protocol="h2", kind=hop.kind, proxy=hop.proxy, source=hop.source,
                    proxy_type=hop.proxy_type)
    assert shown.text == "client -> SOCKS5 proxy 127.0.0.1:1 (socks5h, all_proxy) -> server"
    warnings: list[str] = []
    proxy = proxy_for("https://git.example/r.git", env, warnings)
    assert proxy is not None and (proxy.scheme, proxy.username, proxy.password) == (
        "socks5h", "user", "pw") and not warnings
    assert proxy_for("https://git.example/r.git", {"https_proxy": "https://gate:443"},
                     warnings) is None
    assert "connected directly, not through it as git did" in warnings[0]
    https_hop = first_hop("h2", "https://git.example/r.git",
                          env=_env(tmp_path, https_proxy="https://127.0.0.1:1"))
    assert (https_hop.kind, https_hop.proxy_type, https_hop.answer) == (
        "http-proxy", "https", None)


@pytest.fixture
def socks_server() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback SOCKS5/4 server: answers the handshake (refusing host 'refused.example'),
    records what it read; then echoes one message."""
    server = socket.create_server(("127.0.0.1", 0))
    seen: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                first = conn.recv(1)
                if first == b"\x05":
                    count = conn.recv(1)[0]
                    methods = conn.recv(count)
                    if 2 in methods:
                        conn.sendall(b"\x05\x02")
                        auth = conn.recv(512)
                        seen.append(auth)
                        conn.sendall(b"\x01\x00")
                    else:
                        conn.sendall(b"\x05\x00")
                    request = conn.recv(512)
                    seen.append(request)
                    code = 5 if b"refused" in request else 0
                    conn.sendall(bytes([5, code, 0, 1]) + b"\x7f\x00\x00\x01" + b"\x00\x00")
                else:
                    request = first + conn.recv(512)
                    seen.append(request)
                    conn.sendall(b"\x00\x5a" + b"\x00" * 6)
                try:
                    data = conn.recv(64)
                    if data:
                        conn.sendall(data)
                except OSError:  # the client closed without a message
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], seen
    server.close()


def test_the_socks_handshakes_reach_the_server_through_the_proxy(
        socks_server: tuple[int, list[bytes]]) -> None:
    port, seen = socks_server
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        socks_connect(sock, "socks5h", "git.example", 443, display="p")
        sock.sendall(b"ping")
        assert sock.recv(4) == b"ping"
    assert seen[-1] == b"\x05\x01\x00\x03\x0bgit.example" + struct.pack("!H", 443)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        socks_connect(sock, "socks5", "127.0.0.1", 8443, display="p", username="u",
                      password="pw")
    assert seen[-2] == b"\x01\x01u\x02pw"
    assert seen[-1] == b"\x05\x01\x00\x01\x7f\x00\x00\x01" + struct.pack("!H", 8443)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        socks_connect(sock, "socks4a", "git.example", 9418, display="p")
    assert seen[-1] == struct.pack("!BBH", 4, 1, 9418) + b"\x00\x00\x00\x01\x00git.example\x00"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock, \
            pytest.raises(NetworkError, match=r"refused: CONNECT to refused\.example:22: "
                          "connection refused"):
        socks_connect(sock, "socks5h", "refused.example", 22, display="p")


def test_an_unplaced_hop_from_an_older_record_is_not_captured_at_the_server() -> None:
    old = FirstHop(protocol="ssh", kind="ssh-proxy", proxy="nc -x p %h %p",
                   source="ssh -G proxycommand")
    assert leg_endpoint(old, ("git.example", 22)) is None


def test_a_native_ssh_probe_says_it_went_direct_where_it_does_not_follow_git() -> None:
    from gitnetdiag.hops import native_ssh_note

    assert native_ssh_note(None, "native SSH probe") == ""
    assert native_ssh_note(FirstHop(protocol="ssh"), "native SSH probe") == ""
    chain = FirstHop(protocol="ssh", kind="ssh-proxy", proxy="u@a,b:2222",
                     source="ssh -G proxyjump", proxy_type="ssh")
    note = native_ssh_note(chain, "native SSH probe")
    assert note.startswith("the native SSH probe connected directly to the server: it "
                           "follows a single ProxyJump host, not a chain")
    assert "ssh -G proxyjump: u@a,b:2222" in note and "not of the path git's SSH" in note
    command = FirstHop(protocol="ssh", kind="ssh-proxy", proxy="ssh -W %h:%p jump",
                       source="ssh -G proxycommand", leg="jump:22", proxy_type="ssh",
                       program="OpenSSH (-W stdio forwarding)")
    assert "it does not follow a ProxyCommand" in native_ssh_note(command, "native SSH download")
    unplaced = FirstHop(protocol="ssh", kind="ssh-proxy", proxy="plink -batch",
                        source="core.sshCommand", unplaced="core.sshCommand is not ssh")
    assert native_ssh_note(unplaced, "native SSH probe").startswith(
        "the native SSH probe connected directly")


def test_a_single_proxyjump_host_is_followed_and_not_warned_of() -> None:
    from gitnetdiag.hops import JumpHost, followed_jump, native_ssh_note

    for source in ("ssh -G proxyjump", "core.sshCommand"):
        hop = FirstHop(protocol="ssh", kind="ssh-proxy", proxy="gnd-git@[198.18.2.4]:22",
                       source=source, proxy_type="ssh", leg="198.18.2.4:22")
        assert followed_jump(hop) == JumpHost(host="198.18.2.4", port=22, user="gnd-git")
        assert native_ssh_note(hop, "native SSH probe") == ""
    older = FirstHop(protocol="ssh", kind="ssh-proxy", proxy="jump", source="ssh -G proxyjump")
    assert followed_jump(older) == JumpHost(host="jump")  # recorded before proxy_type
    for direct in (None, FirstHop(protocol="ssh")):
        assert followed_jump(direct) is None
    http = FirstHop(protocol="h2", kind="http-proxy", proxy="p:3128", source="https_proxy")
    assert followed_jump(http) is None


def test_proxyjump_values_read_as_one_jump_host_or_none() -> None:
    from gitnetdiag.hops import JumpHost, jump_spec

    assert jump_spec("jump") == JumpHost(host="jump")
    assert jump_spec("u@jump:2222") == JumpHost(host="jump", port=2222, user="u")
    assert jump_spec("ssh://u@jump:2222") == JumpHost(host="jump", port=2222, user="u")
    assert jump_spec("me@corp@jump") == JumpHost(host="jump", user="me@corp")
    assert jump_spec("u@[2001:db8::1]:22") == JumpHost(host="2001:db8::1", port=22, user="u")
    assert jump_spec("u@[2001:db8::1]:22").text == "u@[2001:db8::1]:22"  # type: ignore[union-attr]
    assert jump_spec("jump").text == "jump"  # type: ignore[union-attr]
    for unread in ("", "none", "a,b", "u@a:22,v@b", "@jump", "jump:port", "a b"):
        assert jump_spec(unread) is None, unread


def test_the_jump_host_target_takes_its_user_from_the_spec_else_config_else_the_target(
        tmp_path: Path) -> None:
    import paramiko

    from gitnetdiag.hops import JumpHost
    from gitnetdiag.probe.sshauth import SshTarget

    config = paramiko.SSHConfig.from_text(
        "Host gate\n    HostName 10.0.0.9\n    Port 2200\n    User gateuser\n"
        "    IdentityFile /keys/gate\n    UserKnownHostsFile /kh/gate\n")
    target = SshTarget.from_url("ssh://git@server.example/r.git", config)
    hop = target.via(JumpHost(host="gate"), config)
    assert (hop.host, hop.port, hop.user, hop.alias) == ("10.0.0.9", 2200, "gateuser", "gate")
    assert hop.identity_files == ("/keys/gate",) and hop.known_hosts_files == ("/kh/gate",)
    assert target.via(JumpHost(host="gate", port=22, user="me"), config).port == 22
    assert target.via(JumpHost(host="gate", user="me"), config).user == "me"
    other = target.via(JumpHost(host="198.18.2.4"), None)
    assert (other.host, other.port, other.user) == ("198.18.2.4", 22, "git")
    assert other.known_hosts_name == "198.18.2.4"


def test_an_unreachable_jump_host_is_one_network_error_naming_it() -> None:
    from gitnetdiag.hops import JumpHost
    from gitnetdiag.probe.sshauth import SshTarget
    from gitnetdiag.probe.sshnative import _Connection

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    target = SshTarget.from_url("ssh://git@127.0.0.1:1/r.git", None)
    with pytest.raises(NetworkError) as raised:
        _Connection(target, key_file=None, known_hosts=None, timeout_s=2,
                    jump=JumpHost(host="127.0.0.1", port=port, user="hop"))
    assert raised.value.message.startswith(
        f"cannot connect to the SSH jump host hop@127.0.0.1:{port} (127.0.0.1:{port})")
    assert "ProxyJump" in (raised.value.hint or "")


def test_a_jump_host_that_is_not_sshd_is_one_network_error_naming_it() -> None:
    from gitnetdiag.hops import JumpHost
    from gitnetdiag.probe.sshauth import SshTarget
    from gitnetdiag.probe.sshnative import _Connection

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def answer() -> None:
        conn, _ = listener.accept()
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
        conn.close()

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    target = SshTarget.from_url("ssh://git@127.0.0.1:1/r.git", None)
    try:
        with pytest.raises(NetworkError) as raised:
            _Connection(target, key_file=None, known_hosts=None, timeout_s=5,
                        jump=JumpHost(host="127.0.0.1", port=port))
    finally:
        thread.join(5)
        listener.close()
    assert raised.value.message.startswith(f"SSH to the jump host git@127.0.0.1:{port} failed")
    assert raised.value.reference == "ssh-jump-failed"


def test_an_ssh_command_that_is_not_ssh_is_unplaced_not_read_as_a_jump_host() -> None:
    hop = first_hop("ssh", "ssh://git.example/r.git", ssh_command="plink -batch",
                    env={"PATH": "/usr/bin:/bin"})
    assert (hop.kind, hop.source, hop.leg) == ("ssh-proxy", "core.sshCommand", "")
    assert leg_endpoint(hop, ("git.example", 22)) is None
    shown = PathHop(protocol="ssh", kind=hop.kind, proxy=hop.proxy, source=hop.source,
                    unplaced=hop.unplaced)
    assert shown.proxy_text == ("core.sshCommand `plink -batch` (core.sshCommand is not ssh: "
                                "first hop unknown, not captured)")
