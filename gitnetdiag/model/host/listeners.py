"""Listening TCP sockets: ``ss -ltnp`` text and inet_diag netlink replies, parsed.

For a LISTEN socket ``ss`` prints the configured backlog (already capped by
``net.core.somaxconn``) as Send-Q and the current accept queue as Recv-Q; the
netlink reply carries the same two numbers as ``idiag_wqueue`` / ``idiag_rqueue``.
"""

from __future__ import annotations

import ipaddress
import re
import struct
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from gitnetdiag.thresholds import SMALL_BACKLOG


@dataclass(frozen=True, kw_only=True)
class ListenerInfo:
    """One listening TCP socket."""

    address: str
    """Local address as printed by ``ss`` (``0.0.0.0``, ``::``, ``198.18.2.2``, ``*``)."""
    port: int
    """Local port."""
    backlog: int | None
    """Configured backlog (Send-Q of a LISTEN socket), ``None`` when it could not be read."""
    accept_queue: int = 0
    """Connections waiting to be accepted (Recv-Q) at the first sample."""
    accept_queue_max: int = 0
    """Largest accept queue seen over all samples taken during the interval."""
    process: str = ""
    """Owning process name (``git-daemon``), empty when not visible (not root)."""
    pid: int | None = None
    """Owning process id (the first one when several processes share the socket)."""

    @property
    def small_backlog(self) -> bool:
        """Whether the backlog is small enough to overflow under ordinary bursts."""
        return self.backlog is not None and self.backlog <= SMALL_BACKLOG

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["small_backlog"] = self.small_backlog
        return data


_USERS = re.compile(r'\(\("(?P<name>[^"]*)",pid=(?P<pid>\d+)')


def _split_endpoint(text: str) -> tuple[str, int]:
    """``[::ffff:1.2.3.4]:80``, ``127.0.0.53%lo:53``, ``*:22`` -> (address, port)."""
    address, _, port = text.rpartition(":")
    if address.startswith("[") and address.endswith("]"):
        address = address[1:-1]
    return address, int(port)


def parse_ss_listeners(text: str) -> list[ListenerInfo]:
    """Parse ``ss -ltnp`` (with or without ``-H``); lines that are not LISTEN rows are skipped."""
    found: list[ListenerInfo] = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 5 or fields[0] != "LISTEN":
            continue
        try:
            recv_q, send_q = int(fields[1]), int(fields[2])
            address, port = _split_endpoint(fields[3])
        except ValueError:
            continue
        users = _USERS.search(line)
        found.append(
            ListenerInfo(
                address=address,
                port=port,
                backlog=send_q,
                accept_queue=recv_q,
                accept_queue_max=recv_q,
                process=users.group("name") if users else "",
                pid=int(users.group("pid")) if users else None,
            )
        )
    return found


def merge_samples(
    first: list[ListenerInfo], later: Iterable[list[ListenerInfo]]
) -> list[ListenerInfo]:
    """Keep the first sample's listeners, raising ``accept_queue_max`` to the peak seen later."""
    peaks: dict[tuple[str, int], int] = {}
    for sample in later:
        for item in sample:
            key = (item.address, item.port)
            peaks[key] = max(peaks.get(key, 0), item.accept_queue)
    return [
        replace(
            item,
            accept_queue_max=max(item.accept_queue_max, peaks.get((item.address, item.port), 0)),
        )
        for item in first
    ]


# ---------------------------------------------------------------- inet_diag netlink

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 0x1
NLM_F_DUMP = 0x300
NLMSG_ERROR = 2
NLMSG_DONE = 3
TCP_LISTEN = 10
_NLMSGHDR = struct.Struct("=IHHII")
_SOCKID = "!HH16s16sI8s"
_REQ = struct.Struct("=BBBBI" + "48s")
_MSG = struct.Struct("=BBBB48sIIIII")
_SOCKID_STRUCT = struct.Struct(_SOCKID)


def inet_diag_listen_request(family: int, seq: int = 1) -> bytes:
    """A SOCK_DIAG_BY_FAMILY dump request for TCP sockets in LISTEN state of ``family``."""
    sockid = bytes(48)
    body = _REQ.pack(family, 6, 0, 0, 1 << TCP_LISTEN, sockid)
    header = _NLMSGHDR.pack(
        _NLMSGHDR.size + len(body), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, seq, 0
    )
    return header + body


@dataclass(frozen=True, kw_only=True)
class DiagListener:
    """One LISTEN socket from an inet_diag reply."""

    address: str
    """Local address."""
    port: int
    """Local port."""
    backlog: int
    """``idiag_wqueue``: the configured backlog."""
    accept_queue: int
    """``idiag_rqueue``: the current accept queue."""
    inode: int
    """Socket inode, to find the owning process in ``/proc/*/fd``."""


def _format_address(family: int, raw: bytes) -> str:
    if family == 2:
        return str(ipaddress.IPv4Address(raw[:4]))
    return str(ipaddress.IPv6Address(raw))


def parse_inet_diag(data: bytes) -> tuple[list[DiagListener], bool]:
    """Parse netlink replies; returns the listeners and whether NLMSG_DONE was reached.

    Raises ``ValueError`` on an NLMSG_ERROR reply or a truncated message.
    """
    found: list[DiagListener] = []
    offset = 0
    while offset + _NLMSGHDR.size <= len(data):
        length, kind, _flags, _seq, _pid = _NLMSGHDR.unpack_from(data, offset)
        if length < _NLMSGHDR.size or offset + length > len(data):
            raise ValueError(f"truncated netlink message at byte {offset}")
        body = data[offset + _NLMSGHDR.size : offset + length]
        if kind == NLMSG_DONE:
            return found, True
        if kind == NLMSG_ERROR:
            errno = -struct.unpack_from("=i", body)[0] if len(body) >= 4 else 0
            raise ValueError(f"netlink error {errno}")
        if kind == SOCK_DIAG_BY_FAMILY and len(body) >= _MSG.size:
            family, state, _t, _r, sockid, _exp, rqueue, wqueue, _uid, inode = _MSG.unpack_from(
                body
            )
            sport, _dport, src, _dst, _if, _cookie = _SOCKID_STRUCT.unpack(sockid)
            if state == TCP_LISTEN:
                found.append(
                    DiagListener(
                        address=_format_address(family, src),
                        port=sport,
                        backlog=wqueue,
                        accept_queue=rqueue,
                        inode=inode,
                    )
                )
        offset += (length + 3) & ~3
    return found, False


def owners_from_fd_links(links: Iterable[tuple[int, str, str]]) -> dict[int, tuple[int, str]]:
    """``(pid, comm, fd link target)`` triples -> socket inode -> (pid, comm); lowest pid wins."""
    owners: dict[int, tuple[int, str]] = {}
    for pid, comm, target in links:
        match = re.fullmatch(r"socket:\[(\d+)\]", target)
        if match is None:
            continue
        inode = int(match.group(1))
        if inode not in owners or pid < owners[inode][0]:
            owners[inode] = (pid, comm)
    return owners


def listeners_from_diag(
    diag: Iterable[DiagListener], owners: Mapping[int, tuple[int, str]]
) -> list[ListenerInfo]:
    """Join netlink listeners with their owning processes."""
    result = []
    for item in diag:
        pid, comm = owners.get(item.inode, (None, ""))
        result.append(
            ListenerInfo(
                address=item.address,
                port=item.port,
                backlog=item.backlog,
                accept_queue=item.accept_queue,
                accept_queue_max=item.accept_queue,
                process=comm,
                pid=pid,
            )
        )
    return result
