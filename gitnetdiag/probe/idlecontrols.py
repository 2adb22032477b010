"""The idle probe's positive controls on the tool's own application connections.

TCP keepalives (:mod:`gitnetdiag.probe.idleprobe`) ask the far end's kernel. These ask the
application behind the port, on connections made as the native probes make them, each
held silent for its own time and then asked once:

- ``h2-ping``: a native HTTP/2 connection (:class:`~gitnetdiag.probe.h2client.H2Client`:
  TLS, ALPN h2, the SETTINGS exchange), then a PING (RFC 9113 section 6.7); the HTTP/2
  server answers it with a PING ACK carrying the same 8 bytes.
- ``ssh-keepalive``: a native SSH connection (:mod:`gitnetdiag.probe.sshnative`: key
  exchange, host key check, public-key auth), then OpenSSH's ``keepalive@openssh.com``
  global request with want-reply, what ``ssh -o ServerAliveInterval`` sends; sshd answers
  (with a failure: the request is unknown to it), and any answer means alive. paramiko's
  ``Transport.global_request(..., wait=True)`` blocks until an answer or the transport's
  end, so it runs in a thread joined with a timeout, and the transport is closed after.

The silence is the kernel's: the connection is asked once ``TCP_INFO`` says nothing was
sent or received on it (data or ACK) for the time held (:func:`quiet_s`), so a late TLS
session ticket or an sshd host-key notice restarts it. An answer after N s: the path and
the peer still knew the connection at N. None, while a new connection works: the path
dropped that connection's state. The answers go to the idle probe's record
(:class:`~gitnetdiag.rundir.idleprobe.AppKeepalive`).
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.hops import FirstHop, followed_jump
from gitnetdiag.rundir.idleprobe import AppKeepalive, ControlKind, IdleProbeRecord, control_bracket

CONTROL_WAIT_S = 1.5
"""How long an answer to a control is waited for: many round trips, and TCP's first
retransmissions of it."""
SETUP_TIMEOUT_S = 10.0
"""The longest a control connection's handshakes (TCP, TLS or SSH, auth) may take."""
QUIET_POLL_S = 0.05
"""How often a held connection's silence is read back."""
MIN_CONTROL_S = 0.5
"""No control is held shorter than this."""

# struct tcp_info (include/uapi/linux/tcp.h): 8 bytes, then u32 fields from tcpi_rto.
_U32 = struct.Struct("=I")
_LAST_DATA_SENT = 8 + 4 * 9
_LAST_DATA_RECV = 8 + 4 * 11
_LAST_ACK_RECV = 8 + 4 * 12


def quiet_s(sock: socket.socket) -> float | None:
    """Seconds since anything was sent or received on ``sock`` (``tcpi_last_data_sent``,
    ``tcpi_last_data_recv``, ``tcpi_last_ack_recv``: the shortest); None without
    ``TCP_INFO``."""
    try:
        raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    except OSError:
        return None
    if len(raw) < _LAST_ACK_RECV + 4:
        return None
    times: list[int] = [_U32.unpack_from(raw, at)[0]
                        for at in (_LAST_DATA_SENT, _LAST_DATA_RECV, _LAST_ACK_RECV)]
    return min(times) / 1000.0


def control_rungs(low_s: float | None, high_s: float | None,
                  top_s: float | None) -> tuple[float, ...]:
    """Silences to hold the controls for. With the keepalives' first bracket (answered up
    to ``low_s``, unanswered from ``high_s``): a quarter of it below and above each end,
    so the controls bracket the timeout within a quarter step whichever end it is near
    (held beside the keepalives' finer round). Without one: ``top_s``, the longest
    silence the keepalives held (an answer then says the path keeps a connection that
    long)."""
    if high_s is None:
        return (top_s,) if top_s is not None and top_s >= MIN_CONTROL_S else ()
    low = low_s or 0.0
    step = (high_s - low) / 4
    rungs = (low - step, low + step, high_s - step, high_s + step)
    return tuple(sorted({round(r, 3) for r in rungs if r >= MIN_CONTROL_S}))


@dataclass(frozen=True, kw_only=True)
class Control:
    """One kind of control on one endpoint, and how to reach it as the native probes do."""

    kind: ControlKind
    url: str
    """The protocol's URL (https:// for ``h2-ping``, ssh:// for ``ssh-keepalive``)."""
    ca_file: str | None = None
    insecure: bool = False
    ssh_key: str | None = None
    ssh_known_hosts: str | None = None
    first_hop: FirstHop | None = None
    """The protocol's first hop as git resolves it: ``ssh-keepalive`` goes through a single
    ``ProxyJump`` host as the native SSH probes do (:func:`~gitnetdiag.hops.followed_jump`)."""


def _hold(sock: socket.socket, silence_s: float, cancel: threading.Event,
          drain: Callable[[float], object]) -> float | None:
    """Until ``sock`` was silent ``silence_s`` (``drain`` takes in what arrives meanwhile):
    the silence reached, None when cancelled or unreadable."""
    while not cancel.is_set():
        quiet = quiet_s(sock)
        if quiet is None:
            return None
        if quiet >= silence_s:
            return quiet
        drain(min(QUIET_POLL_S, silence_s - quiet))
    return None


def _result(control: Control, silence_s: float, *, answer: str, rtt_s: float | None = None,
            detail: str = "") -> AppKeepalive:
    return AppKeepalive(kind=control.kind, silence_s=round(silence_s, 3),
                        answer=answer,  # type: ignore[arg-type]
                        round_trip_ms=None if rtt_s is None else round(rtt_s * 1000.0, 3),
                        wait_s=CONTROL_WAIT_S, detail=detail)


def h2_ping(control: Control, silence_s: float, cancel: threading.Event) -> AppKeepalive | None:
    """An HTTP/2 PING after ``silence_s`` on a native HTTP/2 connection (None: cancelled)."""
    from gitnetdiag.probe.credentials import http_access
    from gitnetdiag.probe.h2client import H2Client, H2Remote

    try:
        access = http_access(control.url, ca_file=control.ca_file,
                             verify=False if control.insecure else None)
        client = H2Client(H2Remote.from_url(control.url), access=access,
                          timeout_s=SETUP_TIMEOUT_S)
    except GitnetdiagError as exc:
        return _result(control, silence_s, answer="failed", detail=str(exc))
    try:
        quiet = _hold(client.sock, silence_s, cancel, client.pump)
        if quiet is None:
            return None
        rtt = client.ping(os.urandom(8), CONTROL_WAIT_S)
        return _result(control, quiet, answer="unanswered" if rtt is None else "answered",
                       rtt_s=rtt, detail="" if rtt is not None else
                       f"no PING ACK within {CONTROL_WAIT_S:g} s")
    except GitnetdiagError as exc:  # GOAWAY or a close: the server ended it
        return _result(control, silence_s, answer="closed", detail=str(exc))
    finally:
        client.close()


def ssh_keepalive(control: Control, silence_s: float,
                  cancel: threading.Event) -> AppKeepalive | None:
    """``keepalive@openssh.com`` with want-reply after ``silence_s`` on a native SSH
    connection (None: cancelled)."""
    from gitnetdiag.probe.sshauth import SshTarget, load_ssh_config
    from gitnetdiag.probe.sshnative import _Connection

    try:
        target = SshTarget.from_url(control.url, load_ssh_config())
        conn = _Connection(target, key_file=control.ssh_key,
                           known_hosts=control.ssh_known_hosts, timeout_s=SETUP_TIMEOUT_S,
                           jump=followed_jump(control.first_hop))
    except GitnetdiagError as exc:
        return _result(control, silence_s, answer="failed", detail=str(exc))
    try:
        quiet = _hold(conn.sock, silence_s, cancel, time.sleep)
        if quiet is None:
            return None
        if not conn.transport.is_active():
            return _result(control, silence_s, answer="closed",
                           detail="the server closed the SSH connection")
        asked = threading.Thread(target=conn.transport.global_request,
                                 args=("keepalive@openssh.com",), kwargs={"wait": True},
                                 daemon=True)
        sent = time.monotonic()
        asked.start()
        asked.join(CONTROL_WAIT_S)
        rtt = time.monotonic() - sent
        if asked.is_alive():
            return _result(control, quiet, answer="unanswered",
                           detail=f"no reply within {CONTROL_WAIT_S:g} s")
        if not conn.transport.is_active():
            return _result(control, quiet, answer="closed",
                           detail="the SSH connection ended instead of a reply")
        return _result(control, quiet, answer="answered", rtt_s=rtt)
    finally:
        conn.close()  # ends a global_request still waiting


RUNNERS: dict[ControlKind, Callable[[Control, float, threading.Event], AppKeepalive | None]] = {
    "h2-ping": h2_ping, "ssh-keepalive": ssh_keepalive}


class ControlRound:
    """Every control at every silence at once, each in a thread (each mostly waits)."""

    def __init__(self, controls: Sequence[Control], rungs: Sequence[float]) -> None:
        self.cancel = threading.Event()
        self.results: list[AppKeepalive] = []
        self._threads = [threading.Thread(target=self._one, args=(c, r), daemon=True)
                         for c in controls for r in rungs]
        for thread in self._threads:
            thread.start()

    def _one(self, control: Control, silence_s: float) -> None:
        try:
            result = RUNNERS[control.kind](control, silence_s, self.cancel)
        except (OSError, GitnetdiagError) as exc:
            result = _result(control, silence_s, answer="failed", detail=str(exc))
        if result is not None:
            self.results.append(result)

    def join(self, timeout_s: float) -> list[AppKeepalive]:
        """The answers once every control ended (or ``timeout_s`` passed)."""
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return sorted(self.results, key=lambda a: (a.kind, a.silence_s))

    def stop(self) -> None:
        """Cancel the controls still holding their silence (their answers are dropped)."""
        self.cancel.set()


class _EndpointRun(Protocol):
    @property
    def protocol(self) -> str: ...

    @property
    def url(self) -> str: ...

    @property
    def first_hop(self) -> FirstHop | None: ...


class ControlAccess(Protocol):
    """What a control needs of the run's options to reach the server (TLS, SSH key)."""

    @property
    def ca_file(self) -> str | None: ...

    @property
    def insecure(self) -> bool: ...

    @property
    def ssh_key(self) -> str | None: ...

    @property
    def ssh_known_hosts(self) -> str | None: ...


Controls = dict[tuple[str, int], list[Control]]
"""Endpoint -> the application keepalives to try on it (one per kind)."""

CONTROL_KINDS = {"h1": "h2-ping", "h2": "h2-ping", "ssh": "ssh-keepalive"}
"""The control each protocol's port gets (HTTPS: HTTP/2 PING; its h1 port offers h2 or
the control says it failed); git:// has none."""


def endpoint_controls(runs: Sequence[_EndpointRun], options: ControlAccess,
                      endpoint: Callable[[str], tuple[str, int]]) -> Controls:
    """The controls of every protocol's endpoint, reached as the native probes reach it."""
    controls: Controls = {}
    for run in runs:
        kind = CONTROL_KINDS.get(run.protocol)
        listed = controls.setdefault(endpoint(run.url), [])
        if kind is None or any(c.kind == kind for c in listed):
            continue
        listed.append(Control(kind=kind,  # type: ignore[arg-type]
                              url=run.url, ca_file=options.ca_file,
                              insecure=options.insecure, ssh_key=options.ssh_key,
                              ssh_known_hosts=options.ssh_known_hosts,
                              first_hop=run.first_hop))
    return controls


CONTROL_NAMES = {"h2-ping": "HTTP/2 PING", "ssh-keepalive": "SSH keepalive"}


def controls_text(record: IdleProbeRecord) -> str:
    """The controls' brackets, one clause per kind ("" without controls)."""
    parts = []
    for kind in sorted({c.kind for c in record.controls}):
        low, high = control_bracket(record.controls, kind)
        name = CONTROL_NAMES[kind]
        if low is None and high is None:
            parts.append(f"{name} not judged")
        else:
            parts.append(f"{name} answered up to {low or 0:g} s" + (
                f", unanswered from {high:g} s" if high is not None else ""))
    return "".join(f"; {p}" for p in parts)
