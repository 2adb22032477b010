"""Native SSH push probe (paramiko): records the SSH channel-window events of a push.

    connect, verify the host key against known_hosts, key exchange (timed),
    public-key auth, open a session channel: the server's window and maximum
    packet size are the channel's ``out_window_size`` / ``out_max_packet_size``
    exec "git-receive-pack '<path>'"   ref advertisement
    send command + flush + pack        every SSH_MSG_CHANNEL_WINDOW_ADJUST timestamped
    EOF, read report-status            "unpack ok", "ok <probe ref>"
    a second exec deletes the branch   (always, in finally; compare-and-swap on our oid)

Window adjusts are timestamped by a Transport subclass whose channel handler
table maps MSG_CHANNEL_WINDOW_ADJUST to a recording wrapper around paramiko's
own handler; nothing else in paramiko is changed.
"""

from __future__ import annotations

import socket
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import paramiko
from paramiko.common import MSG_CHANNEL_WINDOW_ADJUST

from gitnetdiag.errors import GitnetdiagError, NetworkError, UsageError
from gitnetdiag.hops import FirstHop, JumpHost, endpoint_text, followed_jump
from gitnetdiag.probe.nativecleanup import BranchCleanup, end_branch
from gitnetdiag.probe.receivepack import (
    ZERO_OID,
    ReportStatus,
    parse_advertisement,
    parse_report_status,
    ref_update_request,
    split_pkt_lines,
)
from gitnetdiag.probe.repo import check_safe_ref, probe_branch_name
from gitnetdiag.probe.sshauth import (
    SshTarget,
    authenticate,
    candidate_keys,
    known_hosts_files,
    load_ssh_config,
    verify_host_key,
)
from gitnetdiag.probe.tcpinfo import SocketSampler, TcpInfoSample
from gitnetdiag.rundir.native import SshAdjustReceived, SshDataSent, SshNativeRecord

__all__ = ["LedgerTransport", "SshPush", "SshTarget", "ssh_push_probe"]


def _recording_window_adjust(channel: paramiko.Channel, message: paramiko.Message) -> None:
    """Timestamp the adjust, then let paramiko apply it."""
    packet = message.packet
    position = packet.tell()
    (increment,) = struct.unpack("!I", packet.read(4))
    packet.seek(position)
    transport = channel.get_transport()
    if isinstance(transport, LedgerTransport):
        transport.window_adjusts.setdefault(channel.get_id(), []).append(
            (time.monotonic_ns(), increment)
        )
    paramiko.Channel._window_adjust(channel, message)


class LedgerTransport(paramiko.Transport):  # type: ignore[misc]
    """A paramiko Transport that records each channel window adjust with its time."""

    _channel_handler_table: ClassVar[dict[int, Callable[..., None]]] = {
        **paramiko.Transport._channel_handler_table,
        MSG_CHANNEL_WINDOW_ADJUST: _recording_window_adjust,
    }

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(sock)
        self.window_adjusts: dict[int, list[tuple[int, int]]] = {}
        """channel id -> [(monotonic ns, increment bytes)]."""


@dataclass(frozen=True, kw_only=True)
class SshPush:
    """One native SSH push as the probe saw it: the raw channel events (``native-ssh.json``)
    and receive-pack's answer. The channel ledger is derived on the pure side
    (:func:`gitnetdiag.pipeline.ssh_push_ledger`)."""

    events: SshNativeRecord
    """What the probe saw, as written to ``native-ssh.json``."""
    report: ReportStatus
    """receive-pack's answer."""

    @property
    def server_window_bytes(self) -> int:
        return self.events.window_bytes

    @property
    def window_adjusts(self) -> int:
        """SSH_MSG_CHANNEL_WINDOW_ADJUST messages received during the push."""
        return len(self.events.window_adjusts)

    @property
    def ref_deleted(self) -> bool:
        return self.events.ref_deleted


def _read_until_flush(channel: paramiko.Channel, deadline: float) -> list[bytes | None]:
    buffer = b""
    collected: list[bytes | None] = []
    while True:
        lines, buffer = split_pkt_lines(buffer)
        for index, line in enumerate(lines):
            if line is None:
                return collected + lines[: index + 1]
        collected += lines
        if time.monotonic() > deadline:
            raise NetworkError("timed out reading from git-receive-pack", reference="ssh-timeout")
        chunk = channel.recv(65_536)
        if not chunk:
            stderr = channel.recv_stderr(4096).decode(errors="replace").strip()
            raise NetworkError(
                f"git-receive-pack closed the channel early{': ' + stderr if stderr else ''}",
                hint="check the repository path and the user's git-shell access",
                reference="ssh-channel-closed",
            )
        buffer += chunk


def _exec_receive_pack(transport: paramiko.Transport, path: str) -> paramiko.Channel:
    channel = transport.open_session()
    channel.settimeout(60.0)
    quoted = path.replace("'", "'\\''")
    channel.exec_command(f"git-receive-pack '{quoted}'")
    return channel


def _tcp_connect(host: str, port: int, timeout_s: float, *, jump: str = "") -> socket.socket:
    try:
        return socket.create_connection((host, port), timeout=timeout_s)
    except OSError as exc:
        if jump:
            raise NetworkError(
                f"cannot connect to the SSH jump host {jump} ({host}:{port}): {exc}",
                hint="check the ProxyJump host and port git's ssh uses (ssh -G <host>)",
                reference="connect-failed") from exc
        raise NetworkError(
            f"cannot connect to {host}:{port}: {exc}",
            hint="check the host and port (and HostName/Port in ~/.ssh/config)",
            reference="connect-failed",
        ) from exc


def _start_ssh(transport: paramiko.Transport, target: SshTarget, *, key_file: str | None,
               known_hosts: str | None, timeout_s: float) -> tuple[float, float]:
    """Key exchange, host key checked in known_hosts, public-key auth: their times."""
    started = time.monotonic()
    transport.start_client(timeout=timeout_s)
    verify_host_key(target, transport.get_remote_server_key(),
                    known_hosts_files(target, known_hosts))
    kex_s = time.monotonic() - started
    started = time.monotonic()
    authenticate(transport, target, candidate_keys(target, key_file))
    return kex_s, time.monotonic() - started


def _through_jump(jump: SshTarget, spec: str, target: SshTarget, *, key_file: str | None,
                  known_hosts: str | None, timeout_s: float
                  ) -> tuple[paramiko.Transport, paramiko.Channel]:
    """An authenticated transport to the jump host on ``jump``'s socket, and its
    ``direct-tcpip`` channel to the server (what ``ssh -J`` does); a failure is one
    NetworkError naming the jump host, the transport closed."""
    sock = _tcp_connect(jump.host, jump.port, timeout_s, jump=spec)
    transport = paramiko.Transport(sock)
    try:
        _start_ssh(transport, jump, key_file=key_file, known_hosts=known_hosts,
                   timeout_s=timeout_s)
        channel = transport.open_channel("direct-tcpip", (target.host, target.port),
                                         sock.getsockname()[:2], timeout=timeout_s)
    except paramiko.ChannelException as exc:
        transport.close()
        raise NetworkError(
            f"the SSH jump host {spec} refused to forward to {target.host}:{target.port}: "
            f"{exc.text or exc}",
            hint="the jump host's sshd must allow it (AllowTcpForwarding, PermitOpen)",
            reference="ssh-jump-failed") from exc
    except NetworkError as exc:
        transport.close()
        raise NetworkError(f"through the SSH jump host {spec}: {exc.message}", hint=exc.hint,
                           reference=exc.reference) from exc
    except (paramiko.SSHException, OSError) as exc:
        transport.close()
        raise NetworkError(f"SSH to the jump host {spec} failed: {exc or type(exc).__name__}",
                           hint="check that the ProxyJump host runs sshd on that port",
                           reference="ssh-jump-failed") from exc
    except BaseException:
        transport.close()
        raise
    return transport, channel


class _Connection:
    """An authenticated SSH connection to ``target``, straight or (``jump``) through a
    ProxyJump host as OpenSSH goes: ``sock`` is the TCP socket this client owns either
    way (to the server, or the leg to the jump host), ``transport`` the server's."""

    def __init__(self, target: SshTarget, *, key_file: str | None, known_hosts: str | None,
                 timeout_s: float, jump: JumpHost | None = None):
        self.jump_transport: paramiko.Transport | None = None
        self.via = ""
        """The jump host gone through (``user@host:port``), "" when straight."""
        started = time.monotonic()
        if jump is None:
            self.sock = _tcp_connect(target.host, target.port, timeout_s)
            stream: socket.socket | paramiko.Channel = self.sock
        else:
            hop = target.via(jump, load_ssh_config())
            self.via = f"{hop.user}@{endpoint_text(hop.host, hop.port)}"
            self.jump_transport, stream = _through_jump(
                hop, self.via, target, key_file=key_file, known_hosts=known_hosts,
                timeout_s=timeout_s)
            self.sock = self.jump_transport.sock
        self.connect_s = time.monotonic() - started
        self.transport = LedgerTransport(stream)
        try:
            self.kex_s, self.auth_s = _start_ssh(self.transport, target, key_file=key_file,
                                                 known_hosts=known_hosts, timeout_s=timeout_s)
        except paramiko.SSHException as exc:
            self.close()
            raise NetworkError(
                f"SSH to {target.host}:{target.port}"
                f"{' through ' + self.via if self.via else ''} failed: {exc}",
                hint="check that the server runs sshd on that port",
                reference="ssh-failed",
            ) from exc
        except BaseException:
            self.close()
            raise
        self.banner = str(self.transport.remote_version)

    def close(self) -> None:
        self.transport.close()
        if self.jump_transport is not None:
            self.jump_transport.close()


def delete_probe_branch_ssh(conn: _Connection, target: SshTarget, ref: str, oid: str) -> bool:
    """Delete ``ref`` if it still points at ``oid`` (compare-and-swap); True when gone."""
    check_safe_ref(ref)
    channel = _exec_receive_pack(conn.transport, target.path)
    try:
        deadline = time.monotonic() + 60
        advertised = parse_advertisement(_read_until_flush(channel, deadline))
        current = advertised.refs.get(ref)
        if current != oid:
            channel.sendall(b"0000")
            return current is None
        caps = [c for c in ("report-status", "delete-refs") if c in advertised.capabilities]
        channel.sendall(ref_update_request(oid, ZERO_OID, ref, caps))
        channel.shutdown_write()
        return parse_report_status(_read_until_flush(channel, deadline)).ok_for(ref)
    finally:
        channel.close()


def _send_all(channel: paramiko.Channel, body: bytes, packet_bytes: int,
              sampler: SocketSampler) -> list[tuple[int, int]]:
    """Send ``body`` in channel packets of at most ``packet_bytes``; each send's
    (monotonic ns, bytes), the socket sampled before each."""
    sent: list[tuple[int, int]] = []
    view = memoryview(body)
    offset = 0
    while offset < len(body):
        sampler.poll()
        count = channel.send(bytes(view[offset : offset + packet_bytes]))
        if count <= 0:
            raise NetworkError("the SSH channel closed during the push", reference="ssh-send")
        sent.append((time.monotonic_ns(), count))
        offset += count
    return sent


def _delete_on_connection(conn: _Connection, target: SshTarget, ref: str,
                          new_oid: str) -> bool:
    """Compare-and-swap delete of the probe branch on the push's own connection; a
    failure is a warning (the caller records the branch as not deleted)."""
    try:
        return delete_probe_branch_ssh(conn, target, ref, new_oid)
    except GitnetdiagError as exc:
        print(f"warning: could not delete {ref}: {exc.one_line()}", file=sys.stderr)
    except (paramiko.SSHException, OSError) as exc:
        print(f"warning: could not delete {ref}: {exc}", file=sys.stderr)
    return False


def _end_push(conn: _Connection, target: SshTarget, ref: str, new_oid: str,
              cleanup: BranchCleanup | None, *, pushed: bool, sent_all: bool,
              report: ReportStatus | None) -> bool:
    """The push's last step, however it went: the probe branch ended (as a git push's
    with ``cleanup``, else by a compare-and-swap delete on this connection), the
    connection closed; True when the branch is gone."""
    deleted = False
    if cleanup is not None:
        conn.close()  # git's delete brings its own connection
        deleted = end_branch(cleanup, ref, new_oid, started=pushed, sent_all=sent_all,
                             report=report)
    elif pushed:
        deleted = _delete_on_connection(conn, target, ref, new_oid)
    conn.close()
    return deleted


def ssh_push_probe(
    url: str,
    *,
    key_file: str | None = None,
    known_hosts: str | None = None,
    pack: bytes,
    new_oid: str,
    probe_id: str,
    timeout_s: float = 120.0,
    tcpinfo_sink: list[TcpInfoSample] | None = None,
    cleanup: BranchCleanup | None = None,
    first_hop: FirstHop | None = None,
) -> SshPush:
    """Push ``pack`` over SSH to a fresh probe branch, recording the channel window.

    With ``cleanup`` the branch ends as a git push's does (waiting for a slow
    hook); without, a compare-and-swap delete on the same connection.

    The server is reached as ``ssh`` would (:mod:`gitnetdiag.probe.sshauth`):
    ``~/.ssh/config``, ssh-agent, known_hosts; ``key_file`` and ``known_hosts``,
    when given, win over them. When git's SSH goes through a single ``ProxyJump`` host
    (``first_hop``), the push goes through it too (:func:`~gitnetdiag.hops.followed_jump`):
    the TCP_INFO samples are then of the leg to the jump host.
    """
    target = SshTarget.from_url(url, load_ssh_config())
    ref = f"refs/heads/{probe_branch_name(probe_id)}"
    check_safe_ref(ref)
    conn = _Connection(target, key_file=key_file or None, known_hosts=known_hosts or None,
                       timeout_s=timeout_s, jump=followed_jump(first_hop))
    pushed = sent_all = False
    answer: ReportStatus | None = None
    try:
        channel = _exec_receive_pack(conn.transport, target.path)
        opened_ns = time.monotonic_ns()
        server_window = int(channel.out_window_size)
        server_packet = int(channel.out_max_packet_size)
        deadline = time.monotonic() + timeout_s
        advertised = parse_advertisement(_read_until_flush(channel, deadline))
        if ref in advertised.refs:
            channel.sendall(b"0000")
            raise UsageError(f"{ref} already exists on the server", hint="use a new probe id")
        caps = [c for c in ("report-status",) if c in advertised.capabilities]
        body = ref_update_request(ZERO_OID, new_oid, ref, caps, pack)
        pushed = True
        first_ns = time.monotonic_ns()
        sent = _send_all(channel, body, server_packet, SocketSampler(conn.sock, tcpinfo_sink))
        sent_all = True
        channel.shutdown_write()
        report = answer = parse_report_status(_read_until_flush(channel, deadline))
        ended_ns = time.monotonic_ns()
        adjusts = list(conn.transport.window_adjusts.get(channel.get_id(), []))
        channel.close()
    finally:
        deleted = _end_push(conn, target, ref, new_oid, cleanup, pushed=pushed,
                            sent_all=sent_all, report=answer)

    def rel(t_ns: int) -> int:
        return t_ns - opened_ns

    events = SshNativeRecord(
        target=f"{target.host}:{target.port}",
        server_banner=conn.banner,
        via=conn.via,
        connect_s=conn.connect_s,
        kex_s=conn.kex_s,
        auth_s=conn.auth_s,
        window_bytes=server_window,
        max_packet_bytes=server_packet,
        request_bytes=len(body),
        first_data_t_ns=rel(first_ns),
        ended_t_ns=rel(ended_ns),
        window_adjusts=tuple(SshAdjustReceived(t_ns=rel(t), increment_bytes=n)
                             for t, n in adjusts),
        data_sent=tuple(SshDataSent(t_ns=rel(t), size_bytes=n) for t, n in sent),
        advertisement=advertised.to_dict(),
        report=report.to_dict(),
        ref=ref,
        ref_deleted=deleted,
    )
    return SshPush(events=events, report=report)

