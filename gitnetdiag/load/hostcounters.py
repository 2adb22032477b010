"""Kernel counter snapshots of the server, taken before and after each load step, and its
listening sockets (``ss -ltnp``: backlog and accept queue), sampled while a step runs.

Two sources: this machine's own ``/proc/net/netstat`` (the server is local),
or a network namespace on this machine (the lab's server namespace), read
with ``ip netns exec``. Parsing is :func:`gitnetdiag.host.netstat.parse_proc_counters`,
the parser of ``gitnetdiag host``, so both name the counters alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from gitnetdiag.errors import EnvironmentProblem, InputError
from gitnetdiag.host.netstat import CounterFormatError, parse_proc_counters
from gitnetdiag.model.host.listeners import ListenerInfo, parse_ss_listeners
from gitnetdiag.proc import run

NETSTAT_TIMEOUT_S = 10.0


def parse_netstat(text: str, source: str) -> dict[str, int]:
    """Counters of one snapshot; a text in another layout is an error, not a crash."""
    try:
        return parse_proc_counters(text)
    except CounterFormatError as exc:
        raise InputError(f"{source}: {exc}", reference="bad-counters",
                         hint="read the file by hand: is it /proc/net/netstat?") from exc


class CounterSource(Protocol):
    """Anything that can snapshot the server's kernel counters."""

    description: str

    def snapshot(self) -> dict[str, int]: ...

    def listeners(self) -> list[ListenerInfo]: ...


SS_LISTENERS = ("ss", "-ltnpH")
"""Listening TCP sockets, no header: Send-Q is the backlog, Recv-Q the accept queue."""


class LocalNetstat:
    """``/proc/net/netstat`` of this process's own network namespace."""

    def __init__(self, path: Path = Path("/proc/net/netstat")) -> None:
        self.path = path
        self.description = f"local {path}"

    def snapshot(self) -> dict[str, int]:
        try:
            text = self.path.read_text()
        except OSError as exc:
            raise EnvironmentProblem(
                f"cannot read {self.path}: {exc.strerror}", hint="run on Linux with /proc",
            ) from exc
        return parse_netstat(text, self.description)

    def listeners(self) -> list[ListenerInfo]:
        return parse_ss_listeners(run(list(SS_LISTENERS), timeout_s=NETSTAT_TIMEOUT_S).stdout)


class NamespaceNetstat:
    """``/proc/net/netstat`` of a named network namespace (needs root)."""

    def __init__(self, netns: str) -> None:
        self.netns = netns
        self.description = f"netns {netns} /proc/net/netstat"

    def snapshot(self) -> dict[str, int]:
        proc = run(["ip", "netns", "exec", self.netns, "cat", "/proc/net/netstat"],
                   timeout_s=NETSTAT_TIMEOUT_S)
        return parse_netstat(proc.stdout, self.description)

    def listeners(self) -> list[ListenerInfo]:
        proc = run(["ip", "netns", "exec", self.netns, *SS_LISTENERS],
                   timeout_s=NETSTAT_TIMEOUT_S)
        return parse_ss_listeners(proc.stdout)
