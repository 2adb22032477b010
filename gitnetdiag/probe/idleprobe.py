"""The idle probe: after a push sent its pack and heard nothing, is the server still working,
or did the path forget the connection?

A stateful middlebox (NAT gateway, firewall, load balancer) that forgets a connection after
N s of silence drops whatever comes after, with no RST and no FIN: the server's answer to a
push whose server worked silently for longer never arrives, and git waits. A slow hook on a
healthy path looks the same from git's side. So this probe asks the path itself, on
connections of its own to the same ``host:port``, none of which sends a byte:

1. one connection per idle time of a ladder (:func:`idle_ladder`: up to the silence seen,
   at most :data:`MAX_IDLE_S`), opened together, each with TCP keepalive set to fire
   after its own idle time (``TCP_KEEPIDLE``; ``TCP_KEEPINTVL`` 1 s);
2. the kernel's ``TCP_INFO`` of each, read once its keepalive was due: ``tcpi_probes`` >= 1
   is a keepalive gone unanswered, an ACK after the keepalive's time an answered one
   (:func:`judge`). All idle times run at once, so the probe lasts about the path's timeout
   (it stops at the first unanswered one: every longer one would be unanswered too) or the
   ladder's top when every keepalive is answered;
3. a new connection to the same port at the end: it works while the silent ones are gone
   when the path, not the server, forgot them.

The answers go to ``native-idle-<n>.json`` (:mod:`gitnetdiag.rundir.idleprobe`), one per
endpoint; the pure side brackets the timeout.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gitnetdiag.probe.credentials import PROXY_ENV
from gitnetdiag.probe.options import Reporter
from gitnetdiag.rundir.files import NATIVE_IDLE_GLOB
from gitnetdiag.rundir.idleprobe import (
    IdleConnection,
    IdleProbeRecord,
    KeepaliveAnswer,
    NewConnection,
)
from gitnetdiag.rundir.manifest import write_json_once
from gitnetdiag.rundir.records import PushRecord

LADDER_S = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30)
"""Idle times tried (whole seconds: ``TCP_KEEPIDLE``'s unit)."""
MAX_IDLE_S = 30.0
"""The longest silence held: a path that forgets later than this is not bracketed."""
KEEPALIVE_INTERVAL_S = 1
"""``TCP_KEEPINTVL``: a second probe follows the first after this."""
KEEPALIVE_COUNT = 60
"""``TCP_KEEPCNT``: high, so the kernel does not close a connection within the probe."""
ANSWER_WAIT_S = 1.5
"""How long after its keepalive was due a connection is judged (an answer takes one RTT)."""
CONNECT_TIMEOUT_S = 5.0
POLL_S = 0.1
IDLE_FILE_PATTERN = NATIVE_IDLE_GLOB.replace("*", "{n}")
"""One file per endpoint probed (counted from 1)."""

# struct tcp_info (include/uapi/linux/tcp.h): 8 bytes, then u32 fields from tcpi_rto.
_HEAD = struct.Struct("=8B")
TCP_ESTABLISHED = 1
"""``tcpi_state`` of an open connection (include/net/tcp_states.h)."""
_U32 = struct.Struct("=I")
_UNACKED_OFFSET = 8 + 4 * 4
_LAST_ACK_RECV_OFFSET = 8 + 4 * 12


@dataclass(frozen=True, kw_only=True)
class KeepaliveState:
    """What ``TCP_INFO`` says of one silent connection."""

    probes: int
    """``tcpi_probes``: keepalive probes sent and not answered."""
    tcp_state: int = TCP_ESTABLISHED
    """``tcpi_state`` (``TCP_ESTABLISHED`` 1; ``TCP_CLOSE_WAIT`` 8 once the server closed)."""
    backoff: int
    """``tcpi_backoff``."""
    unacked: int
    """``tcpi_unacked``."""
    last_ack_recv_s: float
    """``tcpi_last_ack_recv``, in seconds."""


def read_keepalive_state(sock: socket.socket) -> KeepaliveState | None:
    """The keepalive counters of ``sock``; None when the kernel refuses ``TCP_INFO``."""
    try:
        raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    except OSError:
        return None
    if len(raw) < _LAST_ACK_RECV_OFFSET + 4:
        return None
    head = _HEAD.unpack_from(raw)
    return KeepaliveState(
        probes=head[3], tcp_state=head[0], backoff=head[4],
        unacked=_U32.unpack_from(raw, _UNACKED_OFFSET)[0],
        last_ack_recv_s=_U32.unpack_from(raw, _LAST_ACK_RECV_OFFSET)[0] / 1000.0)


def idle_ladder(silence_s: float) -> tuple[int, ...]:
    """Idle times to try after a push was silent ``silence_s``: up to the first rung at or
    above it (a connection still answered after that much silence rules the path out), at
    most :data:`MAX_IDLE_S`, at least the first two rungs."""
    top = next((t for t in LADDER_S if t >= min(silence_s, MAX_IDLE_S)), LADDER_S[-1])
    return tuple(t for t in LADDER_S if t <= max(top, LADDER_S[1]))


def judge(state: KeepaliveState, *, idle_s: float, elapsed_s: float,
          answer_wait_s: float = ANSWER_WAIT_S) -> KeepaliveAnswer | None:
    """A connection's keepalive fate ``elapsed_s`` after its connect, None while undecided:
    ``answered`` once an ACK came after the keepalive's time (the connection was silent
    before it), ``unanswered`` when the kernel still counts a probe unanswered
    ``answer_wait_s`` after it was due, ``failed`` when no keepalive showed at all."""
    if state.probes == 0 and elapsed_s - state.last_ack_recv_s >= idle_s - POLL_S:
        return "answered"
    if elapsed_s < idle_s + answer_wait_s:
        return None
    if state.probes >= 1:
        return "unanswered"
    return "failed" if elapsed_s >= idle_s + answer_wait_s + 2 * KEEPALIVE_INTERVAL_S else None


@dataclass
class _Silent:
    idle_s: int
    sock: socket.socket | None
    opened_at: float
    result: IdleConnection | None = None


def _open(host: str, port: int, idle_s: int, clock: Callable[[], float]) -> _Silent:
    try:
        sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
    except OSError as exc:
        silent = _Silent(idle_s=idle_s, sock=None, opened_at=clock())
        silent.result = IdleConnection(idle_s=idle_s, answer="failed",
                                       detail=f"connect: {exc.strerror or exc}")
        return silent
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, idle_s)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, KEEPALIVE_INTERVAL_S)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, KEEPALIVE_COUNT)
    sock.setblocking(False)
    return _Silent(idle_s=idle_s, sock=sock, opened_at=clock())


def _closed_by_server(sock: socket.socket) -> str | None:
    """Why the server ended the connection (FIN or RST), None while it is open."""
    try:
        if sock.recv(1, socket.MSG_PEEK) == b"":
            return "closed by the server (FIN)"
    except BlockingIOError:
        return None
    except OSError as exc:
        return "reset by the server" if exc.errno == errno.ECONNRESET else str(exc)
    return None


def _poll(silent: _Silent, now: float) -> None:
    """Judge one connection if its keepalive is due (sets ``silent.result``)."""
    assert silent.sock is not None
    elapsed = now - silent.opened_at
    closed = _closed_by_server(silent.sock)
    if closed is not None:
        silent.result = IdleConnection(idle_s=silent.idle_s, answer="closed",
                                       judged_at_s=elapsed, detail=closed)
        return
    if elapsed < silent.idle_s:
        return
    state = read_keepalive_state(silent.sock)
    if state is None:
        silent.result = IdleConnection(idle_s=silent.idle_s, answer="failed",
                                       judged_at_s=elapsed, detail="TCP_INFO refused")
        return
    if state.tcp_state != TCP_ESTABLISHED:  # the server closed it (after sending data)
        silent.result = IdleConnection(idle_s=silent.idle_s, answer="closed",
                                       judged_at_s=elapsed,
                                       detail=f"TCP state {state.tcp_state}, not established")
        return
    answer = judge(state, idle_s=silent.idle_s, elapsed_s=elapsed)
    if answer is not None:
        silent.result = IdleConnection(
            idle_s=silent.idle_s, answer=answer, probes=state.probes, backoff=state.backoff,
            unacked=state.unacked, last_ack_recv_s=state.last_ack_recv_s, judged_at_s=elapsed,
            detail="no keepalive seen" if answer == "failed" else "")


def _new_connection(host: str, port: int, clock: Callable[[], float]) -> NewConnection:
    started = clock()
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            return NewConnection(ok=True, connect_s=clock() - started)
    except OSError as exc:
        return NewConnection(ok=False, detail=f"connect: {exc.strerror or exc}")


def proxy_note(protocols: Sequence[str], env: Mapping[str, str]) -> tuple[str, ...]:
    """A note when git's HTTPS connections may have gone through a forward proxy: the idle
    probe connects directly, so it judges the direct path, not the proxy's leg."""
    name = next((n for n in PROXY_ENV if env.get(n)), None)
    if name is None or not any(p in ("h1", "h2") for p in protocols):
        return ()
    return (f"{name} is set: the idle probe connected directly, while git's HTTPS may have "
            "gone through that proxy (its first hop then is the proxy's leg)",)


def idle_probe(host: str, port: int, *, silence_s: float, protocols: Sequence[str],
               trigger: str, ladder: Sequence[int] | None = None,
               notes: tuple[str, ...] = (),
               clock: Callable[[], float] = time.monotonic,
               sleep: Callable[[float], None] = time.sleep) -> IdleProbeRecord:
    """Hold silent connections to ``host:port`` and see which keepalives are answered."""
    started = clock()
    rungs = tuple(ladder) if ladder is not None else idle_ladder(silence_s)
    silent = [_open(host, port, idle, clock) for idle in rungs]
    try:
        while True:
            pending = [s for s in silent if s.result is None]
            if not pending or any(s.result is not None and s.result.answer == "unanswered"
                                  for s in silent):
                break
            now = clock()
            for s in pending:
                _poll(s, now)
            sleep(POLL_S)
    finally:
        for s in silent:
            if s.sock is not None:
                s.sock.close()
    # Longer idle times than the first unanswered one are left unjudged: they would only
    # be unanswered too.
    judged = tuple(s.result for s in silent if s.result is not None)
    return IdleProbeRecord(
        target=f"{host}:{port}", protocols=tuple(protocols), trigger=trigger,
        silence_s=silence_s, keepalive_interval_s=float(KEEPALIVE_INTERVAL_S),
        answer_wait_s=ANSWER_WAIT_S, connections=judged,
        new_connection=_new_connection(host, port, clock), duration_s=clock() - started,
        notes=notes)


# --------------------------------------------------------------------------
# When it runs (after the pushes)
# --------------------------------------------------------------------------


class _Options(Protocol):
    @property
    def stall_timeout_s(self) -> float | None: ...

    @property
    def timeout_s(self) -> float: ...

    @property
    def cleanup_until(self) -> float | None: ...


class _ProtocolRun(Protocol):
    @property
    def protocol(self) -> str: ...

    @property
    def url(self) -> str: ...

    @property
    def pushes(self) -> Sequence[PushRecord]: ...


def silent_push(push: PushRecord) -> bool:
    """The push handed over its whole pack (git said ``Total``) and was given up waiting for
    the server's answer: hung, stalled or timed out, with no status or close."""
    return (push.pack_objects is not None and push.outcome in ("hung", "stalled", "failed")
            and (push.outcome != "failed" or (push.failure_kind is not None
                 and push.failure_kind.value in ("hung", "timeout"))))


def idle_probe_targets(runs: Sequence[_ProtocolRun], options: _Options,
                       endpoint: Callable[[str], tuple[str, int]]
                       ) -> dict[tuple[str, int], tuple[list[str], str, float]]:
    """Endpoint -> (its protocols, the trigger, the silence seen) for every protocol with a
    silent push (:func:`silent_push`)."""
    targets: dict[tuple[str, int], tuple[list[str], str, float]] = {}
    for run in runs:
        push = next((p for p in run.pushes if silent_push(p)), None)
        if push is None:
            continue
        waited = options.stall_timeout_s if push.outcome == "stalled" else options.timeout_s
        silence = min(push.wall_s, waited or push.wall_s)
        if options.cleanup_until is not None:  # a watch cycle's deadline bounds it too
            silence = min(silence, options.cleanup_until - time.monotonic()
                          - ANSWER_WAIT_S - 2 * KEEPALIVE_INTERVAL_S)
            if silence < LADDER_S[1]:
                continue
        key = endpoint(run.url)
        if key in targets:
            targets[key][0].append(run.protocol)
            continue
        targets[key] = ([run.protocol], f"{run.protocol} push #{push.repeat}: the pack went "
                        f"out and no answer came ({push.outcome})", silence)
    return targets


def run_idle_probes(targets: dict[tuple[str, int], tuple[list[str], str, float]],
                    run_dir: Path) -> list[IdleProbeRecord]:
    """The idle probe of every target at once (threads: each mostly waits); files written."""
    records: dict[int, IdleProbeRecord] = {}

    def one(n: int, host: str, port: int, protocols: list[str], trigger: str,
            silence: float) -> None:
        records[n] = idle_probe(host, port, silence_s=silence, protocols=protocols,
                                trigger=trigger, notes=proxy_note(protocols, os.environ))

    threads = [threading.Thread(target=one, args=(n, host, port, *value), daemon=True)
               for n, ((host, port), value) in enumerate(targets.items(), start=1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(MAX_IDLE_S + 20.0)
    for n in sorted(records):
        write_json_once(run_dir / IDLE_FILE_PATTERN.format(n=n), records[n])
    return [records[n] for n in sorted(records)]


def progress_line(record: IdleProbeRecord) -> str:
    """One line for the run's progress."""
    low, high = record.bracket_s
    new = record.new_connection
    fresh = "a new connection worked" if new and new.ok else "a new connection failed"
    if high is not None:
        return (f"{record.target}: keepalives answered up to {low or 0:g} s of silence, "
                f"unanswered from {high:g} s; {fresh}")
    if low is not None:
        return f"{record.target}: keepalives answered after {low:g} s of silence; {fresh}"
    return f"{record.target}: no keepalive judged; {fresh}"


def start_idle_probes(runs: Sequence[_ProtocolRun], options: _Options, run_dir: Path,
                      endpoint: Callable[[str], tuple[str, int]]
                      ) -> Callable[[Reporter], None]:
    """Start the idle probe in the background when a push sent its pack and heard nothing
    (its connections mostly wait: the run's other probes go on meanwhile); the returned
    call waits for it and reports, from the caller's thread."""
    targets = idle_probe_targets(runs, options, endpoint)
    if not targets:
        return lambda reporter: None
    done: list[IdleProbeRecord] = []
    thread = threading.Thread(target=lambda: done.extend(run_idle_probes(targets, run_dir)),
                              daemon=True)
    thread.start()

    def finish(reporter: Reporter) -> None:
        label = "idle probe (keepalives on silent connections)"
        reporter.begin(label)
        thread.join(MAX_IDLE_S + 30.0)
        for record in done:
            reporter.done(label, progress_line(record),
                          ok=bool(record.connections) and record.bracket_s[1] is None)
        if not done:
            reporter.done(label, "no answer from the idle probe", ok=False)
    return finish
