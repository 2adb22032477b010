"""A recorded server: canned command outputs and files behind the HostAccess interface."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from gitnetdiag.host.access import EXIT_NOT_FOUND, CommandResult
from gitnetdiag.model.host.listeners import ListenerInfo

DATA = Path(__file__).parent / "data"

Output = CommandResult | Callable[[], CommandResult]


def ok(stdout: str) -> CommandResult:
    return CommandResult(returncode=0, stdout=stdout, stderr="")


class FakeAccess:
    """Commands keyed by their program name; files by path; a file may be a callable (changes)."""

    description = "fake"

    def __init__(
        self,
        *,
        commands: Mapping[str, Output],
        files: Mapping[str, str | Callable[[], str]],
        euid: int | None = 0,
        netlink: list[ListenerInfo] | None = None,
    ) -> None:
        self.commands = dict(commands)
        self.files = dict(files)
        self._euid = euid
        self._netlink = netlink
        self.calls: list[list[str]] = []

    def run(self, argv: Sequence[str], *, timeout_s: float = 20.0) -> CommandResult:
        self.calls.append(list(argv))
        output = self.commands.get(argv[0])
        if output is None:
            return CommandResult(returncode=EXIT_NOT_FOUND, stdout="", stderr="not found")
        return output() if callable(output) else output

    def read_text(self, path: str) -> str:
        content = self.files.get(path)
        if content is None:
            raise OSError(f"{path}: No such file or directory")
        return content() if callable(content) else content

    def list_files(self, root: str) -> list[str]:
        return sorted(p for p in self.files if p == root or p.startswith(root.rstrip("/") + "/"))

    def euid(self) -> int | None:
        return self._euid

    def netlink_listeners(self) -> list[ListenerInfo] | None:
        return self._netlink


def recorded(name: str) -> str:
    return (DATA / name).read_text()


def sysctl_files(**overrides: str) -> dict[str, str]:
    """The lab server's sysctls as /proc/sys files."""
    values = {
        "net.core.somaxconn": "4096",
        "net.ipv4.tcp_max_syn_backlog": "2048",
        "net.ipv4.tcp_syncookies": "1",
        "net.ipv4.tcp_rmem": "4096\t131072\t33554432",
        "net.ipv4.tcp_wmem": "4096\t16384\t4194304",
        "net.core.rmem_max": "4194304",
        "net.core.wmem_max": "4194304",
        "net.ipv4.tcp_window_scaling": "1",
        "net.ipv4.tcp_congestion_control": "cubic",
        "net.ipv4.tcp_adv_win_scale": "1",
    }
    values.update(overrides)
    return {"/proc/sys/" + k.replace(".", "/"): v + "\n" for k, v in values.items()}
