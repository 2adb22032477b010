"""Native SSH download ledger: git's upload-pack fetch over a paramiko channel.

Over SSH the download runs inside one channel, and the channel has a window of
its own: the server may send no more than the window the *client* granted
(``SSH_MSG_CHANNEL_OPEN``'s initial window), and waits for the client's
``SSH_MSG_CHANNEL_WINDOW_ADJUST`` to send more. OpenSSH's client hides it; this
probe speaks what ``git clone`` speaks over SSH, protocol v0:

    exec "git-upload-pack '<path>'"      the ref advertisement (refs and capabilities)
    want <tip> <caps> / want <tip> ...   every branch and tag tip (or the seed branch)
    flush, done                          no haves: a fresh clone's request
    read until EOF                       NAK, then the pack (side-band-64k) as it comes

and records, relative to the channel's open: when the request went, every read
of the answer (time, bytes), and every window adjust the client sent (paramiko
renews the grant once a tenth of the window was consumed), beside the window and
maximum packet the client granted.

Read-only: upload-pack reads and writes nothing on the server; only want/done
lines are sent. Bounded as git's clones are (the same
:class:`~gitnetdiag.probe.budget.RateMonitor`: a stable rate, the budget, a
stall, the timeout), then the channel is closed mid-pack; nothing is written on
this side either.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import paramiko

from gitnetdiag.errors import GitnetdiagError, NetworkError
from gitnetdiag.hops import FirstHop, followed_jump
from gitnetdiag.probe.budget import Progress, RateMonitor
from gitnetdiag.probe.receivepack import FLUSH_PKT, parse_advertisement, pkt_line
from gitnetdiag.probe.sshauth import SshTarget, load_ssh_config
from gitnetdiag.probe.sshnative import _Connection, _read_until_flush
from gitnetdiag.rundir.ledgers import SshCreditLedger

_POLL_S = 0.25
_READ_BYTES = 65_536
WANT_CAPABILITIES = ("multi_ack_detailed", "side-band-64k", "thin-pack", "ofs-delta")
"""What git asks of upload-pack in a clone, where the server offers it (without haves the
answer is a NAK, then the pack)."""


def clone_tips(refs: Mapping[str, str], branch: str | None) -> list[str]:
    """The objects a clone wants: every branch's and tag's tip, each once (a tag's peeled
    ``^{}`` line is the object it points at, reachable anyway); with ``branch`` that one."""
    if branch is not None:
        oid = refs.get(f"refs/heads/{branch}")
        return [oid] if oid else []
    tips: list[str] = []
    for name, oid in refs.items():
        if name.startswith(("refs/heads/", "refs/tags/")) and not name.endswith("^{}") \
                and oid not in tips:
            tips.append(oid)
    return tips


def upload_pack_request(tips: list[str], capabilities: frozenset[str]) -> bytes:
    """Protocol v0's clone request: the wants (capabilities on the first), flush, done."""
    caps = " ".join(cap for cap in WANT_CAPABILITIES if cap in capabilities)
    lines = [pkt_line(f"want {oid}{' ' + caps if index == 0 else ''}\n".encode())
             for index, oid in enumerate(tips)]
    return b"".join(lines) + FLUSH_PKT + pkt_line(b"done\n")


class _GrantLedger:
    """Each window adjust the client sends on one channel, with its time (paramiko's
    ``Channel._check_add_window`` returns the grant to send; wrapped on the instance)."""

    def __init__(self, channel: paramiko.Channel) -> None:
        self.grants: list[tuple[int, int]] = []
        original = channel._check_add_window

        def recording(n: int) -> int:
            out = int(original(n))
            if out > 0:
                self.grants.append((time.monotonic_ns(), out))
            return out

        channel._check_add_window = recording


def ssh_download(url: str, *, key_file: str | None, known_hosts: str | None,
                 branch: str | None, budget_s: float | None, stall_timeout_s: float | None,
                 timeout_s: float, first_hop: FirstHop | None = None) -> SshCreditLedger:
    """One bounded native fetch over SSH; failures end up in the record (see the module doc).
    Through git's single ``ProxyJump`` host when ``first_hop`` is one
    (:func:`~gitnetdiag.hops.followed_jump`)."""
    target = SshTarget.from_url(url, load_ssh_config())
    record = SshCreditLedger(target=f"{target.host}:{target.port}", outcome="failed")
    try:
        conn = _Connection(target, key_file=key_file, known_hosts=known_hosts,
                           timeout_s=min(timeout_s, 30.0), jump=followed_jump(first_hop))
    except GitnetdiagError as exc:
        return _failed(record, exc)
    try:
        return _fetch(conn, target, branch, budget_s=budget_s,
                      stall_timeout_s=stall_timeout_s, timeout_s=timeout_s)
    except GitnetdiagError as exc:
        return _failed(record, exc)
    except (paramiko.SSHException, OSError) as exc:
        return _failed(record, NetworkError(str(exc) or type(exc).__name__,
                                            reference="ssh-failed"))
    finally:
        conn.close()


def _failed(record: SshCreditLedger, exc: GitnetdiagError) -> SshCreditLedger:
    return SshCreditLedger(target=record.target, outcome="failed",
                             error=f"{exc.reference}: {exc.message}")


def _fetch(conn: _Connection, target: SshTarget, branch: str | None, *,
           budget_s: float | None, stall_timeout_s: float | None,
           timeout_s: float) -> SshCreditLedger:
    channel = conn.transport.open_session()
    opened_ns = time.monotonic_ns()
    grants = _GrantLedger(channel)
    granted, packet = int(channel.in_window_size), int(channel.in_max_packet_size)
    channel.settimeout(_POLL_S)
    quoted = target.path.replace("'", "'\\''")
    channel.exec_command(f"git-upload-pack '{quoted}'")
    advertised = parse_advertisement(_read_until_flush(channel, time.monotonic() + timeout_s))
    tips = clone_tips(advertised.refs, branch)
    if not tips:
        channel.sendall(FLUSH_PKT)  # nothing wanted: upload-pack ends at once
        raise NetworkError(f"{target.host} lists no {'branch ' + branch if branch else 'ref'}",
                           reference="no-ref",
                           hint="an empty repository has nothing to fetch: add --fetch-seed")
    request_ns = time.monotonic_ns()
    channel.sendall(upload_pack_request(tips, advertised.capabilities))
    reads, stopped, monitor = _read_answer(channel, request_ns, budget_s=budget_s,
                                           stall_timeout_s=stall_timeout_s,
                                           timeout_s=timeout_s)
    channel.close()

    def rel(t_ns: int) -> float:
        return (t_ns - opened_ns) / 1e9

    return SshCreditLedger(
        target=f"{target.host}:{target.port}",
        outcome="ok" if stopped is None else ("bounded" if stopped in ("stable", "budget")
                                              else "stalled"),
        stopped=stopped, server_banner=conn.banner, via=conn.via, connect_s=conn.connect_s,
        kex_s=conn.kex_s, auth_s=conn.auth_s, client_window_bytes=granted,
        client_max_packet_bytes=packet, server_window_bytes=int(channel.out_window_size),
        wants=len(tips), request_t_s=rel(request_ns),
        read_t_s=tuple(rel(t) for t, _ in reads), read_bytes=tuple(n for _, n in reads),
        adjust_t_s=tuple(rel(t) for t, _ in grants.grants),
        adjust_bytes=tuple(n for _, n in grants.grants),
        received_bytes=sum(n for _, n in reads), rate_bytes_per_s=monitor.rate_bytes_per_s())


def _read_answer(channel: paramiko.Channel, request_ns: int, *, budget_s: float | None,
                 stall_timeout_s: float | None,
                 timeout_s: float) -> tuple[list[tuple[int, int]], str | None, RateMonitor]:
    """Read upload-pack's answer until EOF or the monitor stops it: each read's (ns, bytes),
    why it stopped (None: the whole answer), the monitor."""
    monitor = RateMonitor(budget_s=budget_s, stall_timeout_s=stall_timeout_s)
    reads: list[tuple[int, int]] = []
    received = 0
    next_check = _POLL_S
    while True:
        try:
            chunk = channel.recv(_READ_BYTES)
        except TimeoutError:  # socket.timeout, what paramiko raises, is its alias
            chunk = None
        now_ns = time.monotonic_ns()
        if chunk == b"":
            monitor.add(Progress(t_s=(now_ns - request_ns) / 1e9, moved_bytes=received))
            return reads, None, monitor
        if chunk:
            reads.append((now_ns, len(chunk)))
            received += len(chunk)
        now = (now_ns - request_ns) / 1e9
        if now < next_check:
            continue
        next_check = now + _POLL_S
        monitor.add(Progress(t_s=now, moved_bytes=received))
        stop = monitor.stop_reason(now, pack_finished=False)
        if stop is not None:
            return reads, stop.value, monitor
        if now >= timeout_s:
            return reads, "timeout", monitor


