"""Reaching an ssh:// remote as OpenSSH would: config, agent, known_hosts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest

from gitnetdiag.errors import NetworkError
from gitnetdiag.probe.sshauth import (
    SshTarget,
    candidate_keys,
    known_hosts_files,
    verify_host_key,
)
from tests.conftest import LabFactory


def keygen(path: Path) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f", str(path)],
                   check=True, timeout=30)
    return path


@pytest.fixture()
def ssh_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private ssh-agent for this test only (SSH_AUTH_SOCK set for the test's duration)."""
    sock = tmp_path / "agent.sock"
    proc = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    for _ in range(100):
        if sock.exists():
            break
        subprocess.run(["sleep", "0.05"], check=True)
    monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
    yield sock
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=10)


def config(tmp_path: Path, text: str) -> paramiko.SSHConfig:
    path = tmp_path / "ssh_config"
    path.write_text(text)
    return paramiko.SSHConfig.from_path(str(path))


def test_host_alias_resolves_hostname_port_user_identity_and_known_hosts(tmp_path: Path) -> None:
    cfg = config(tmp_path, (
        "Host lab\n  HostName 198.18.2.2\n  Port 2222\n  User gnd-git\n"
        "  IdentityFile ~/keys/lab_ed25519\n  UserKnownHostsFile /tmp/kh1 /tmp/kh2\n"
        "  IdentitiesOnly yes\n"
        "Host *\n  User fallback\n"
    ))
    target = SshTarget.from_url("ssh://lab/srv/lab.git", cfg)
    assert (target.host, target.port, target.user, target.path, target.alias) == (
        "198.18.2.2", 2222, "gnd-git", "/srv/lab.git", "lab",
    )
    assert target.identity_files == (os.path.expanduser("~/keys/lab_ed25519"),)
    assert target.known_hosts_files == ("/tmp/kh1", "/tmp/kh2")
    assert target.identities_only
    assert target.known_hosts_name == "[lab]:2222"
    # What the URL says wins over the config, as with ssh.
    explicit = SshTarget.from_url("ssh://me@lab:22/x.git", cfg)
    assert (explicit.user, explicit.port) == ("me", 22)
    other = SshTarget.from_url("ssh://elsewhere.invalid/x.git", cfg)
    assert (other.host, other.user, other.port) == ("elsewhere.invalid", "fallback", 22)


def test_known_hosts_explicit_file_wins(tmp_path: Path) -> None:
    target = SshTarget.from_url("ssh://git@h.invalid/x", config(
        tmp_path, "Host h.invalid\n  UserKnownHostsFile /cfg/kh\n"))
    assert known_hosts_files(target, "/explicit/kh") == ["/explicit/kh"]
    assert known_hosts_files(target, None) == ["/cfg/kh"]
    plain = SshTarget.from_url("ssh://git@h.invalid/x")
    assert known_hosts_files(plain, None)[0] == os.path.expanduser("~/.ssh/known_hosts")


def test_host_key_unknown_and_changed_are_named(tmp_path: Path) -> None:
    server = paramiko.Ed25519Key.from_private_key_file(str(keygen(tmp_path / "server")))
    impostor = paramiko.Ed25519Key.from_private_key_file(str(keygen(tmp_path / "impostor")))
    target = SshTarget.from_url("ssh://git@lab/x", config(
        tmp_path, "Host lab\n  HostName 198.18.2.2\n  Port 2222\n"))
    known = tmp_path / "known_hosts"
    known.write_text(f"[lab]:2222 {server.get_name()} {server.get_base64()}\n")
    verify_host_key(target, server, [str(known)])
    with pytest.raises(NetworkError) as changed:
        verify_host_key(target, impostor, [str(known)])
    assert changed.value.reference == "ssh-host-key-changed"
    with pytest.raises(NetworkError) as unknown:
        verify_host_key(target, server, [str(tmp_path / "empty")])
    assert unknown.value.reference == "ssh-host-key-unknown"
    assert "ssh-keyscan -p 2222 198.18.2.2" in unknown.value.one_line()


def test_public_key_file_without_agent_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    key = keygen(tmp_path / "k")
    pub = tmp_path / "only.pub"
    pub.write_text((tmp_path / "k.pub").read_text())
    target = SshTarget.from_url("ssh://git@h.invalid/x")
    with pytest.raises(NetworkError) as info:
        candidate_keys(target, str(pub))
    assert info.value.reference == "ssh-key-not-in-agent"
    assert "SSH_AUTH_SOCK is not set" in info.value.message
    # A .pub next to its private key: the private key is used, as ssh -i does.
    (keys,) = [candidate_keys(target, str(key) + ".pub")]
    assert [k.asbytes() for k in keys] == [
        paramiko.PKey.from_path(str(key)).asbytes()
    ]


def test_public_key_file_picks_the_matching_agent_key(tmp_path: Path, ssh_agent: Path) -> None:
    wanted, other = keygen(tmp_path / "wanted"), keygen(tmp_path / "other")
    for key in (other, wanted):
        subprocess.run(["ssh-add", "-q", str(key)], check=True, timeout=30,
                       env={**os.environ, "SSH_AUTH_SOCK": str(ssh_agent)})
    pub = tmp_path / "copy.pub"  # no private key beside it: only the agent can help
    pub.write_text((tmp_path / "wanted.pub").read_text())
    target = SshTarget.from_url("ssh://git@h.invalid/x")
    keys = candidate_keys(target, str(pub))
    assert len(keys) == 1 and isinstance(keys[0], paramiko.AgentKey)
    assert keys[0].asbytes() == paramiko.PKey.from_path(str(wanted)).asbytes()
    # No --ssh-key: every agent key is offered, before any file.
    assert len(candidate_keys(target, None)) >= 2


# ---------------------------------------------------------------- lab


def _sshnative(state_ns: str, env: dict[str, str], *args: str) -> tuple[dict[str, object], str]:
    proc = subprocess.run(
        ["ip", "netns", "exec", state_ns, sys.executable, "-m", "gitnetdiag.commands.native",
         "ssh", "--size-bytes", "300000", "--no-series", *args],
        capture_output=True, text=True, timeout=300, env=env,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1]), proc.stderr


@pytest.mark.lab
@pytest.mark.lab_lane("idle")  # who may log in and the failures' lines: no rate
def test_lab_alias_agent_key_and_clear_failures(
    shared_lab: LabFactory, tmp_path: Path, ssh_agent: Path
) -> None:
    """As a user would: a Host alias in ~/.ssh/config, the key only in ssh-agent."""
    state = shared_lab("h2-small-window")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text(
        f"Host labgit\n  HostName {state.server_ip}\n  User {state.ssh_user}\n"
        f"  UserKnownHostsFile {state.ssh_known_hosts}\n"
    )
    env = {**os.environ, "HOME": str(home), "SSH_AUTH_SOCK": str(ssh_agent)}
    url = f"ssh://labgit{state.repo_path}"
    # Neither key nor known_hosts given: nothing to offer yet.
    failed, stderr = _sshnative(state.client_ns, env, "--url", url)
    assert failed["error"] == "ssh-auth-failed", failed
    assert stderr.strip().count("\n") == 0 and stderr.startswith("ssh-auth-failed: ")

    subprocess.run(["ssh-add", "-q", state.ssh_key], check=True, timeout=30, env=env)
    ledger, _ = _sshnative(state.client_ns, env, "--url", url)
    assert "error" not in ledger, ledger
    assert ledger["ref_deleted"] is True and ledger["target"] == f"{state.server_ip}:22"

    pub = tmp_path / "lab.pub"  # the public half alone: the agent holds the private one
    pub.write_text(paramiko.PKey.from_path(state.ssh_key).get_name() + " "
                   + paramiko.PKey.from_path(state.ssh_key).get_base64() + " lab\n")
    ledger, _ = _sshnative(state.client_ns, env, "--url", url, "--key", str(pub))
    assert "error" not in ledger and ledger["ref_deleted"] is True, ledger

    (home / ".ssh" / "config").write_text(f"Host labgit\n  HostName {state.server_ip}\n"
                                          f"  User {state.ssh_user}\n")
    unknown, stderr = _sshnative(state.client_ns, env, "--url", url)
    assert unknown["error"] == "ssh-host-key-unknown", unknown
    assert "ssh-keyscan" in stderr

    subprocess.run(["ssh-add", "-D", "-q"], check=True, timeout=30, env=env)
    stranger = keygen(tmp_path / "stranger")
    subprocess.run(["ssh-add", "-q", str(stranger)], check=True, timeout=30, env=env)
    refused, stderr = _sshnative(state.client_ns, env, "--url", url,
                                 "--known-hosts", state.ssh_known_hosts)
    assert refused["error"] == "ssh-auth-failed", refused
    assert f"{state.ssh_user}@labgit refused the SSH key" in stderr


def test_locked_private_key_is_taken_from_the_agent(tmp_path: Path, ssh_agent: Path) -> None:
    locked = tmp_path / "locked"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "pass phrase", "-f", str(locked)],
                   check=True, timeout=30)
    target = SshTarget.from_url("ssh://git@h.invalid/x")
    with pytest.raises(NetworkError) as info:
        candidate_keys(target, str(locked))
    assert info.value.reference == "ssh-key-locked" and "ssh-add" in info.value.hint
    askpass = tmp_path / "askpass.sh"  # ssh-add without a terminal: the test's own askpass
    askpass.write_text("#!/bin/sh\necho 'pass phrase'\n")
    askpass.chmod(0o755)
    subprocess.run(["ssh-add", "-q", str(locked)], check=True, timeout=30,
                   stdin=subprocess.DEVNULL,
                   env={**os.environ, "SSH_AUTH_SOCK": str(ssh_agent), "DISPLAY": ":0",
                        "SSH_ASKPASS": str(askpass), "SSH_ASKPASS_REQUIRE": "force"})
    (key,) = candidate_keys(target, str(locked))
    assert isinstance(key, paramiko.AgentKey)
