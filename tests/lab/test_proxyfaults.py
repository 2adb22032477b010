"""The forward-proxy and jump-host faults' settings (pure): what the client is given, what
tinyproxy and the jump sshd are configured with, and where a proxied leg's capture looks."""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.hops import FirstHop, leg_endpoint
from gitnetdiag.lab import proxyfaults
from gitnetdiag.lab.spec import FAULT_PROBE_ARGS, FAULTS, build_spec
from gitnetdiag.probe.labremote import ssh_command


def test_the_faults_are_lab_faults_with_their_probe_arguments() -> None:
    for fault in proxyfaults.PROXY_FAULTS:
        assert fault in FAULTS and fault in FAULT_PROBE_ARGS
    buffered = build_spec(instance="t1", faults=["forward-proxy-buffer"])
    assert proxyfaults.proxy_kind(buffered) == "buffered"
    assert buffered.fetch_history == "random"  # a clone has something to measure
    plain = build_spec(instance="t1", faults=["forward-proxy"])
    assert proxyfaults.proxy_kind(plain) == "plain"
    assert proxyfaults.client_env(plain)["https_proxy"] == "http://198.18.2.3:8888"
    jump = build_spec(instance="t1", faults=["ssh-jump-host"])
    assert proxyfaults.client_env(jump) == {} and proxyfaults.extra_addresses(jump) == [
        proxyfaults.JUMP_IP]
    assert proxyfaults.proxy_kind(build_spec(instance="t1", faults=["healthy"])) is None


def test_tinyproxy_allows_connect_to_the_https_ports_only() -> None:
    conf = proxyfaults.tinyproxy_conf(Path("/run/x"))
    assert "Listen 198.18.2.3" in conf and "Port 8888" in conf
    assert "ConnectPort 8443" in conf and "ConnectPort 443" in conf
    assert "ConnectPort 22" not in conf


def test_the_jump_sshd_forwards_and_the_client_config_jumps() -> None:
    base = "Port 22\nListenAddress 198.18.2.2\nPidFile /r/sshd.pid\nAllowTcpForwarding no\n"
    jump = proxyfaults.jump_sshd_config(base, Path("/r"))
    assert "ListenAddress 198.18.2.4" in jump and "AllowTcpForwarding yes" in jump
    assert "198.18.2.2" not in jump and "PidFile /r/jump-sshd.pid" in jump
    client = proxyfaults.ssh_client_config(Path("/k"), "gnd-git", Path("/kh"))
    assert "Host 198.18.2.2\n    ProxyJump gnd-git@198.18.2.4:22" in client
    assert "IdentityFile /k" in client and "UserKnownHostsFile /kh" in client
    assert ssh_command("/k", "/kh", "/cfg").startswith("ssh -F /cfg ")
    assert "-F" not in ssh_command("/k", "/kh")


def test_a_proxied_leg_is_captured_at_its_first_hop() -> None:
    server = ("198.18.2.2", 8443)
    assert leg_endpoint(None, server) == server
    assert leg_endpoint(FirstHop(protocol="h2"), server) == server
    proxy = FirstHop(protocol="h2", kind="http-proxy", proxy="198.18.2.3:8888",
                     source="https_proxy")
    assert leg_endpoint(proxy, server) == ("198.18.2.3", 8888)
    for value, expected in (("gnd-git@[198.18.2.4]:22", ("198.18.2.4", 22)),
                            ("jump.example", ("jump.example", 22)),
                            ("u@a:2222,b", ("a", 2222)),
                            ("ssh://u@[::1]:2200", ("::1", 2200))):
        hop = FirstHop(protocol="ssh", kind="ssh-proxy", proxy=value,
                       source="ssh -G proxyjump")
        assert leg_endpoint(hop, ("198.18.2.2", 22)) == expected, value
    # A ProxyCommand is a program: its first hop is the one its words name (recorded as the
    # hop's leg), and never the server's address when they name none.
    command = FirstHop(protocol="ssh", kind="ssh-proxy", proxy="nc -X connect -x gate:3128 %h %p",
                       source="ssh -G proxycommand", leg="gate:3128", proxy_type="http")
    assert leg_endpoint(command, ("198.18.2.2", 22)) == ("gate", 3128)
    unknown = FirstHop(protocol="ssh", kind="ssh-proxy", proxy="my-tunnel %h %p",
                       source="ssh -G proxycommand", unplaced="not recognised")
    assert leg_endpoint(unknown, ("198.18.2.2", 22)) is None
    legacy = FirstHop(protocol="ssh", kind="ssh-proxy", proxy="nc -X connect %h %p",
                      source="ssh -G proxycommand")  # recorded before the command was read
    assert leg_endpoint(legacy, ("198.18.2.2", 22)) is None
