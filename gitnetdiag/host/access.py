"""How the collector reaches a server: this machine, or another one over SSH.

    HostAccess (protocol)        run a command, read a file, list a tree, euid
    ├── LocalAccess              subprocess + the local file system (+ netlink)
    ├── SshAccess                paramiko exec channel; installs nothing remotely
    └── (tests) FakeAccess       recorded outputs, see tests/host/fakes.py

A missing program is not an exception here: ``run`` returns exit code 127
and the collector records what it could not read.
"""

from __future__ import annotations

import os
import shlex
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gitnetdiag.errors import GitnetdiagError, NetworkError, UsageError
from gitnetdiag.model.host.listeners import (
    DiagListener,
    ListenerInfo,
    inet_diag_listen_request,
    listeners_from_diag,
    owners_from_fd_links,
    parse_inet_diag,
)
from gitnetdiag.proc import run

EXIT_NOT_FOUND = 127
EXIT_TIMEOUT = 124
EXIT_CANNOT_RUN = 126
_SHELL_EXIT = {"missing-program": EXIT_NOT_FOUND, "command-timeout": EXIT_TIMEOUT}
"""Exit code a shell gives for what :func:`gitnetdiag.proc.map_process_errors` raised."""
MAX_CONFIG_BYTES = 1 << 20
"""Configuration files larger than this are skipped (nobody writes a 1 MB proxy config)."""


@dataclass(frozen=True, kw_only=True)
class CommandResult:
    """What a command printed and how it ended."""

    returncode: int
    """Exit code; 127 when the program is missing, 124 on our timeout."""
    stdout: str
    """Standard output."""
    stderr: str
    """Standard error (or our reason when it did not run)."""

    def reason(self) -> str:
        """The last line of stderr, or the exit code."""
        lines = self.stderr.strip().splitlines()
        return lines[-1] if lines else f"exit code {self.returncode}"


class HostAccess(Protocol):
    """What the collector needs from a server."""

    description: str
    """``local`` or ``ssh user@host``, for the report."""

    def run(self, argv: Sequence[str], *, timeout_s: float = 20.0) -> CommandResult:
        """Run a program; 127 when it is not installed."""
        ...

    def read_text(self, path: str) -> str:
        """A text file's contents; raises ``OSError`` with the reason."""
        ...

    def list_files(self, root: str) -> list[str]:
        """Regular files (and links to them) below ``root``; ``[]`` when it does not exist."""
        ...

    def euid(self) -> int | None:
        """Effective user id the collection runs as, ``None`` when unknown."""
        ...

    def netlink_listeners(self) -> list[ListenerInfo] | None:
        """Listening sockets straight from the kernel, ``None`` where not possible."""
        ...


class LocalAccess:
    """This machine (or the network namespace the process runs in)."""

    description = "local"

    def run(self, argv: Sequence[str], *, timeout_s: float = 20.0) -> CommandResult:
        try:
            proc = run(argv, timeout_s=timeout_s, check=False, env={**os.environ, "LC_ALL": "C"})
        except GitnetdiagError as exc:
            # The shell's exit codes, so that local and SSH results read the same way.
            code = _SHELL_EXIT.get(exc.reference, EXIT_CANNOT_RUN)
            return CommandResult(returncode=code, stdout="", stderr=exc.message)
        return CommandResult(returncode=proc.returncode, stdout=proc.stdout, stderr=proc.stderr)

    def read_text(self, path: str) -> str:
        file = Path(path)
        if file.is_file() and file.stat().st_size > MAX_CONFIG_BYTES:
            raise OSError(f"larger than {MAX_CONFIG_BYTES} bytes")
        return file.read_text(errors="replace")

    def list_files(self, root: str) -> list[str]:
        if os.path.isfile(root):
            return [root]
        found: list[str] = []
        for directory, _dirs, files in os.walk(root):
            found.extend(os.path.join(directory, name) for name in files)
        return sorted(found)

    def euid(self) -> int | None:
        return os.geteuid()

    def netlink_listeners(self) -> list[ListenerInfo] | None:
        diag: list[DiagListener] = []
        for family in (socket.AF_INET, socket.AF_INET6):
            with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4) as sock:
                sock.settimeout(5.0)
                sock.sendall(inet_diag_listen_request(family))
                done = False
                while not done:
                    found, done = parse_inet_diag(sock.recv(1 << 16))
                    diag.extend(found)
        links = []
        for pid_dir in Path("/proc").iterdir():
            if not pid_dir.name.isdigit():
                continue
            try:
                comm = (pid_dir / "comm").read_text().strip()
                for fd in (pid_dir / "fd").iterdir():
                    links.append((int(pid_dir.name), comm, os.readlink(fd)))
            except OSError:
                continue  # gone meanwhile, or not ours to read
        return listeners_from_diag(diag, owners_from_fd_links(links))


def parse_ssh_target(target: str) -> tuple[str | None, str, int | None]:
    """``user@host``, ``host``, ``user@host:2222``, ``user@[::1]:22`` -> (user, host, port)."""
    user, _, rest = target.rpartition("@")
    port: int | None = None
    host = rest
    if rest.startswith("["):
        host, _, tail = rest[1:].partition("]")
        if tail.startswith(":"):
            port = _port(tail[1:], target)
    elif rest.count(":") == 1:
        host, _, text = rest.partition(":")
        port = _port(text, target)
    if not host:
        raise UsageError(f"--ssh '{target}' names no host", hint="use --ssh user@host[:port]")
    return user or None, host, port


def _port(text: str, target: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise UsageError(f"--ssh '{target}': '{text}' is not a port", hint="use user@host:2222")
    return int(text)


class SshAccess:
    """A remote server over SSH (paramiko); every command is one exec channel."""

    def __init__(
        self,
        target: str,
        *,
        port: int = 22,
        key_file: str | None = None,
        known_hosts: str | None = None,
        connect_timeout_s: float = 15.0,
    ) -> None:
        import paramiko

        user, host, target_port = parse_ssh_target(target)
        self.description = f"ssh {target}"
        self._client = paramiko.SSHClient()
        try:
            self._client.load_system_host_keys()
            if known_hosts:
                self._client.load_host_keys(known_hosts)
        except OSError as exc:
            raise UsageError(
                f"cannot read known_hosts: {exc}", hint="pass a readable --ssh-known-hosts FILE"
            ) from exc
        self._client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            self._client.connect(
                host,
                port=target_port or port,
                username=user,
                key_filename=key_file,
                timeout=connect_timeout_s,
                banner_timeout=connect_timeout_s,
                auth_timeout=connect_timeout_s,
            )
        except paramiko.BadHostKeyException as exc:
            raise NetworkError(
                f"the host key of {host} does not match known_hosts",
                hint="check you reach the right server; update known_hosts if the key changed",
                reference="ssh-host-key",
            ) from exc
        except paramiko.AuthenticationException as exc:
            raise NetworkError(
                f"SSH authentication to {target} failed: {exc}",
                hint="load the key into ssh-agent or pass --ssh-key FILE",
                reference="ssh-auth",
            ) from exc
        except paramiko.SSHException as exc:
            raise NetworkError(
                f"SSH to {target} failed: {exc}",
                hint="an unknown host key is rejected: ssh to it once by hand or pass "
                "--ssh-known-hosts FILE",
                reference="ssh",
            ) from exc
        except OSError as exc:
            raise NetworkError(
                f"cannot reach {host}:{target_port or port}: {exc}",
                hint="check the host name, the port and that sshd runs there",
            ) from exc

    def close(self) -> None:
        """Close the SSH connection."""
        self._client.close()

    def _exec(self, argv: Sequence[str], timeout_s: float) -> CommandResult:
        command = "LC_ALL=C " + shlex.join(argv)
        try:
            _stdin, stdout, stderr = self._client.exec_command(command, timeout=timeout_s)
            out = stdout.read().decode(errors="replace")
            err = stderr.read().decode(errors="replace")
            code = stdout.channel.recv_exit_status()
        except TimeoutError:
            return CommandResult(
                returncode=EXIT_TIMEOUT, stdout="", stderr=f"no answer within {timeout_s:.0f} s"
            )
        return CommandResult(returncode=code, stdout=out, stderr=err)

    def run(self, argv: Sequence[str], *, timeout_s: float = 20.0) -> CommandResult:
        result = self._exec(argv, timeout_s)
        if result.returncode == EXIT_NOT_FOUND and "/" not in argv[0]:
            # A non-login shell's PATH often lacks the sbin directories (ss, haproxy).
            for directory in ("/usr/sbin", "/sbin"):
                again = self._exec([f"{directory}/{argv[0]}", *argv[1:]], timeout_s)
                if again.returncode != EXIT_NOT_FOUND:
                    return again
        return result

    def read_text(self, path: str) -> str:
        result = self._exec(["head", "-c", str(MAX_CONFIG_BYTES), "--", path], 20.0)
        if result.returncode != 0:
            raise OSError(result.reason())
        return result.stdout

    def list_files(self, root: str) -> list[str]:
        result = self._exec(["find", root, "(", "-type", "f", "-o", "-type", "l", ")"], 20.0)
        return sorted(line for line in result.stdout.splitlines() if line.strip())

    def euid(self) -> int | None:
        result = self._exec(["id", "-u"], 10.0)
        text = result.stdout.strip()
        return int(text) if result.returncode == 0 and text.isdigit() else None

    def netlink_listeners(self) -> list[ListenerInfo] | None:
        return None
