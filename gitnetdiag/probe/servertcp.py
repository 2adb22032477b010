"""The sending side of a download: TCP_INFO of the server's sockets of a clone.

In a fetch the server sends, so what holds its bytes in flight (its send
buffer, the client's window, its congestion window, or a server that has
nothing to send) is in the *server's* socket. When the server runs on this
machine (the lab's server namespace, ``--host-netns NS``; this host's own
namespace with ``--host-local``) the fetch reads it with ``ss -tinm`` there,
beside git's own sockets, while each clone runs:

- ``busy``, ``rwnd_limited``, ``sndbuf_limited``: the kernel's chronographs
  (``tcpi_busy_time``, ``tcpi_rwnd_limited``, ``tcpi_sndbuf_limited``),
- ``unacked`` x ``mss`` (bytes in flight), ``cwnd``, ``snd_wnd`` (the window
  the client advertised, as the sender holds it), ``notsent``,
- ``skmem`` ``tb`` (the send buffer) and ``w`` (what it holds).

The sockets kept are those whose peer is one of git's sockets (the client's
``ss`` samples name them); when none is (an address translated on the way),
every socket on the service port. Only raw counters are recorded here;
:func:`gitnetdiag.analysis.tcpinfo.summarize_sender` (``SERVER``) turns them into limit shares.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass

from gitnetdiag.probe.tcpinfo import TcpInfoSample, parse_ss_output

_SS_TIMEOUT_S = 2.0

ServerSampler = Callable[[int, Collection[str], float], list[TcpInfoSample]]
"""``(port, git's local addresses, t_s)`` -> the server's samples of those connections."""


@dataclass(frozen=True, kw_only=True)
class ServerVantage:
    """Where the server's sockets can be read: a network namespace, or this host's own."""

    netns: str | None
    """The server's network namespace (``ip netns exec``, root); None: this namespace."""

    @property
    def description(self) -> str:
        """Where, in words (recorded with each sample as its source)."""
        return f"netns {self.netns}" if self.netns else "this host"

    def argv(self, port: int) -> list[str]:
        """``ss`` of the established sockets whose local port is the service's."""
        ss = ["ss", "-tinmH", "sport", f"= :{port}"]
        return ["ip", "netns", "exec", self.netns, *ss] if self.netns else ss


def server_samples(text: str, peers: Collection[str], t_s: float,
                   where: str) -> list[TcpInfoSample]:
    """The samples of ``ss -tinmH`` output on the server that belong to the clone: those
    whose peer is one of ``peers`` (git's local addresses), else every one (see the module
    doc); none before git has a socket."""
    if not peers:
        return []
    sockets = parse_ss_output(text)
    mine = [s for s in sockets if s.peer in peers] or sockets
    return [TcpInfoSample(t_s=t_s, local=s.local, peer=s.peer,
                          source=f"ss -tin, server ({where})", counters=s.counters)
            for s in mine]


def sample_server(vantage: ServerVantage, port: int, peers: Collection[str],
                  t_s: float) -> list[TcpInfoSample]:
    """TCP_INFO of the server's sockets to git's ``peers`` on ``port``; none when ``ss`` (or
    entering the namespace) fails: the clone goes on without them."""
    if not peers:
        return []
    try:
        proc = subprocess.run(vantage.argv(port), capture_output=True, text=True,
                              timeout=_SS_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if proc.returncode != 0:
        return []
    return server_samples(proc.stdout, peers, t_s, vantage.description)


class SampleAhead:
    """One server sample taken in a thread beside the client's (each an ``ss`` of its own:
    taken one after the other, a starved loaded run got 2 server samples in a 3.4 s pack)."""

    def __init__(self, sampler: ServerSampler, port: int, peers: Collection[str],
                 t_s: float) -> None:
        self._found: list[TcpInfoSample] = []
        self._thread = threading.Thread(
            target=lambda: self._found.extend(sampler(port, peers, t_s)), daemon=True)
        self._thread.start()

    def result(self) -> list[TcpInfoSample]:
        """The samples, once the sampler returned (none if it raised)."""
        self._thread.join()
        return self._found
