"""The idle probe: after a push sent its pack (or a clone asked for its pack) and heard
nothing, is the server still working, or did the path forget the connection?

A stateful middlebox (NAT gateway, firewall, load balancer) that forgets a connection after
N s of silence drops whatever comes after, with no RST and no FIN: the server's answer to a
push whose server worked silently for longer never arrives, nor the pack of a clone whose
server prepared it silently for longer, and git waits. A slow hook or a slow pack
preparation on a healthy path looks the same from git's side. So this probe asks the path
itself, on connections of its own to the same ``host:port``, none of which sends a byte:

1. one connection per idle time of a ladder (:func:`idle_ladder`: up to the silence seen,
   at most :data:`MAX_IDLE_S`), opened together, each with one TCP keepalive due after its
   own idle time: ``TCP_KEEPIDLE`` 1 s and ``SO_KEEPALIVE`` turned on one second before
   the idle time is over (the kernel arms the keepalive timer then, and sends the probe
   when the timer fires with the connection silent that long: a 1 s timer fires within a
   few ms, where one of several seconds may fire up to half a second late; an idle time
   need not be whole seconds);
2. the kernel's ``TCP_INFO`` of each, read once its keepalive was due: ``tcpi_probes`` >= 1
   is a keepalive gone unanswered, an ACK after the keepalive's time an answered one
   (:func:`judge`). All idle times run at once, so the probe lasts about the path's timeout
   (it stops at the first unanswered one: every longer one would be unanswered too) or the
   ladder's top when every keepalive is answered;
3. when the ladder bracketed the timeout (answered at one idle time, unanswered at the
   next), a second, finer round between the two (:func:`fine_ladder`: quarters of the gap),
   so N is known to a quarter of the ladder's step (0.25 s for a 4 s path);
4. positive controls on the tool's own application connections
   (:mod:`gitnetdiag.probe.idlecontrols`: an HTTP/2 PING on the HTTPS port, OpenSSH's
   keepalive request on the SSH port): at the ladder's top beside its first round, and,
   once the keepalives bracketed the timeout, around that bracket after them
   (:func:`~gitnetdiag.probe.idlecontrols.control_rungs`);
5. a new connection to the same port at the end: it works while the silent ones are gone
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

from gitnetdiag.hops import FirstHop
from gitnetdiag.probe.credentials import PROXY_ENV
from gitnetdiag.probe.idlecontrols import (
    CONTROL_WAIT_S,
    SETUP_TIMEOUT_S,
    Control,
    ControlAccess,
    ControlRound,
    Controls,
    control_rungs,
    controls_text,
    endpoint_controls,
)
from gitnetdiag.probe.options import Reporter
from gitnetdiag.rundir.files import NATIVE_IDLE_GLOB
from gitnetdiag.rundir.idleprobe import (
    AppKeepalive,
    IdleConnection,
    IdleProbeRecord,
    KeepaliveAnswer,
    NewConnection,
)
from gitnetdiag.rundir.manifest import write_json_once
from gitnetdiag.rundir.records import CloneRecord, PushRecord

LADDER_S = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30)
"""Idle times tried (whole seconds: ``TCP_KEEPIDLE``'s unit)."""
MAX_IDLE_S = 30.0
"""The longest silence held: a path that forgets later than this is not bracketed."""
MAX_PROBE_S = 3 * (MAX_IDLE_S + 10.0) + 10.0
"""The longest an idle probe takes: both rounds and the controls' at the ladder's top (and
a step above), and the new connection."""
KEEPALIVE_INTERVAL_S = 1
"""``TCP_KEEPINTVL``: a second probe follows the first after this."""
KEEPALIVE_COUNT = 60
"""``TCP_KEEPCNT``: high, so the kernel does not close a connection within the probe."""
ARM_S = 1
"""``TCP_KEEPIDLE`` of every connection: ``SO_KEEPALIVE`` goes on this long before its idle
time is over (a short timer: the kernel's timer wheel rounds a long one up by as much as
1/8 of it)."""
FINE_PARTS = 4
"""The finer round splits the ladder's bracket into this many parts."""
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


def fine_ladder(low_s: float | None, high_s: float | None,
                parts: int = FINE_PARTS) -> tuple[float, ...]:
    """Idle times between the ladder's last answered one and its first unanswered one
    (``parts`` - 1 of them, evenly spaced); none when the ladder did not bracket."""
    if low_s is None or high_s is None or high_s <= low_s:
        return ()
    step = (high_s - low_s) / parts
    return tuple(round(low_s + k * step, 3) for k in range(1, parts))


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
    idle_s: float
    sock: socket.socket | None
    opened_at: float
    result: IdleConnection | None = None
    armed: bool = False
    """``SO_KEEPALIVE`` is on (:data:`ARM_S` before the idle time is over)."""

    @property
    def arm_at(self) -> float:
        return self.opened_at + max(0.0, self.idle_s - ARM_S)

    def arm(self, now: float) -> None:
        if not self.armed and self.sock is not None and now >= self.arm_at:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            self.armed = True


def _open(host: str, port: int, idle_s: float, clock: Callable[[], float]) -> _Silent:
    try:
        sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
    except OSError as exc:
        silent = _Silent(idle_s=idle_s, sock=None, opened_at=clock())
        silent.result = IdleConnection(idle_s=idle_s, answer="failed",
                                       detail=f"connect: {exc.strerror or exc}")
        return silent
    # SO_KEEPALIVE stays off until ARM_S before the idle time (_Silent.arm).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, ARM_S)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, KEEPALIVE_INTERVAL_S)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, KEEPALIVE_COUNT)
    sock.setblocking(False)
    silent = _Silent(idle_s=idle_s, sock=sock, opened_at=clock())
    silent.arm(silent.opened_at)
    return silent


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


def _hold(host: str, port: int, rungs: Sequence[float], clock: Callable[[], float],
          sleep: Callable[[float], None]) -> list[IdleConnection]:
    """One round: a silent connection per idle time, held until each is judged or one
    keepalive went unanswered (longer idle times would only be unanswered too: they are
    left unjudged)."""
    silent = [_open(host, port, idle, clock) for idle in rungs]
    try:
        while True:
            pending = [s for s in silent if s.result is None]
            if not pending or any(s.result is not None and s.result.answer == "unanswered"
                                  for s in silent):
                break
            now = clock()
            for s in pending:
                s.arm(now)
                _poll(s, now)
            arms = [s.arm_at for s in pending if not s.armed]
            sleep(max(0.0, min([POLL_S, *(at - clock() for at in arms)])))
    finally:
        for s in silent:
            if s.sock is not None:
                s.sock.close()
    return [s.result for s in silent if s.result is not None]


def _bracket(connections: Sequence[IdleConnection]) -> tuple[float | None, float | None]:
    answered = [c.idle_s for c in connections if c.answer == "answered"]
    unanswered = [c.idle_s for c in connections if c.answer == "unanswered"]
    return (max(answered) if answered else None, min(unanswered) if unanswered else None)


def idle_probe(host: str, port: int, *, silence_s: float, protocols: Sequence[str],
               trigger: str, notes: tuple[str, ...] = (), until: float | None = None,
               controls: Sequence[Control] = (),
               clock: Callable[[], float] = time.monotonic,
               sleep: Callable[[float], None] = time.sleep) -> IdleProbeRecord:
    """Hold silent connections to ``host:port`` and see which keepalives are answered: the
    ladder, then the finer round inside its bracket unless that would end after ``until``
    (a monotonic deadline); the ``controls`` at the ladder's top beside the first round,
    and around the bracket after the second (:func:`_controls`)."""
    started = clock()
    rungs = idle_ladder(silence_s)
    beside = ControlRound(controls, control_rungs(None, None, max(rungs))) if controls else None
    judged = _hold(host, port, rungs, clock, sleep)
    low, high = _bracket(judged)
    around = _controls_around(controls, beside, (low, high), until, clock)
    fine = fine_ladder(low if low is not None else (0.0 if high else None), high)
    fine = tuple(f for f in fine if f >= 1.0)
    if fine and high is not None and (
            until is None or clock() + high + ANSWER_WAIT_S + 2 * KEEPALIVE_INTERVAL_S < until):
        judged += _hold(host, port, fine, clock, sleep)
    answers = around() if high is not None or beside is None else beside.join(
        max(rungs) + CONTROL_WAIT_S + SETUP_TIMEOUT_S)
    return IdleProbeRecord(
        target=f"{host}:{port}", protocols=tuple(protocols), trigger=trigger,
        silence_s=silence_s, keepalive_interval_s=float(KEEPALIVE_INTERVAL_S),
        answer_wait_s=ANSWER_WAIT_S,
        connections=tuple(sorted(judged, key=lambda c: c.idle_s)),
        new_connection=_new_connection(host, port, clock), duration_s=clock() - started,
        controls=tuple(answers), notes=notes)


def _controls_around(controls: Sequence[Control], beside: ControlRound | None,
                     bracket: tuple[float | None, float | None], until: float | None,
                     clock: Callable[[], float]) -> Callable[[], list[AppKeepalive]]:
    """Once the keepalives' first round bracketed the timeout: the controls held at the
    ladder's top are cancelled (their silence would only go unanswered) and a round
    around the bracket starts (:func:`control_rungs`), unless it would end after
    ``until``; the returned call waits for its answers."""
    low, high = bracket
    if beside is None or high is None:
        return list
    beside.stop()
    kept = [a for a in beside.join(SETUP_TIMEOUT_S) if a.answer != "failed"]
    rungs = control_rungs(low, high, None)
    longest = max(rungs, default=0.0) + CONTROL_WAIT_S
    if not rungs or (until is not None and clock() + longest + 1.0 >= until):
        return lambda: kept
    around = ControlRound(controls, rungs)
    return lambda: sorted(kept + around.join(longest + SETUP_TIMEOUT_S),
                          key=lambda a: (a.kind, a.silence_s))


# --------------------------------------------------------------------------
# When it runs (after the pushes, after the clones)
# --------------------------------------------------------------------------


class _Options(ControlAccess, Protocol):
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
    def first_hop(self) -> FirstHop | None: ...

    @property
    def pushes(self) -> Sequence[PushRecord]: ...


def silent_push(push: PushRecord) -> bool:
    """The push handed over its whole pack (git said ``Total``) and was given up waiting for
    the server's answer: hung, stalled or timed out, with no status or close."""
    return (push.pack_objects is not None and push.outcome in ("hung", "stalled", "failed")
            and (push.outcome != "failed" or (push.failure_kind is not None
                 and push.failure_kind.value in ("hung", "timeout"))))


class _CloneRun(Protocol):
    @property
    def protocol(self) -> str: ...

    @property
    def url(self) -> str: ...

    @property
    def first_hop(self) -> FirstHop | None: ...

    @property
    def fetches(self) -> Sequence[CloneRecord]: ...


PACK_PROGRESS = "Receiving objects"
"""git's progress once pack bytes arrive (``index-pack``)."""


def silent_clone(clone: CloneRecord) -> bool:
    """The clone reached the server (bytes came: the connect, the ref advertisement) and was
    given up waiting for its pack: stalled or hung before git counted a pack byte."""
    return (clone.outcome in ("hung", "stalled") and clone.moved_bytes > 0
            and PACK_PROGRESS not in clone.last_progress)


Targets = dict[tuple[str, int], tuple[list[str], str, float]]
"""Endpoint -> (its protocols, the trigger, the silence seen)."""


def _add_target(targets: Targets, key: tuple[str, int], protocol: str, trigger: str,
                silence: float, options: _Options) -> None:
    if options.cleanup_until is not None:  # a watch cycle's deadline bounds it too
        silence = min(silence, options.cleanup_until - time.monotonic()
                      - ANSWER_WAIT_S - 2 * KEEPALIVE_INTERVAL_S)
        if silence < LADDER_S[1]:
            return
    if key in targets:
        targets[key][0].append(protocol)
        return
    targets[key] = ([protocol], trigger, silence)


def _waited(outcome: str, wall_s: float, options: _Options) -> float:
    """The silence a transfer given up as ``outcome`` after ``wall_s`` was held."""
    waited = options.stall_timeout_s if outcome == "stalled" else options.timeout_s
    return min(wall_s, waited or wall_s)


def idle_probe_targets(runs: Sequence[_ProtocolRun], options: _Options,
                       endpoint: Callable[[str], tuple[str, int]]) -> Targets:
    """The endpoint of every protocol with a silent push (:func:`silent_push`)."""
    targets: Targets = {}
    for run in runs:
        push = next((p for p in run.pushes if silent_push(p)), None)
        if push is not None:
            _add_target(targets, endpoint(run.url), run.protocol,
                        f"{run.protocol} push #{push.repeat}: the pack went out and no "
                        f"answer came ({push.outcome})",
                        _waited(push.outcome, push.wall_s, options), options)
    return targets


def clone_probe_targets(runs: Sequence[_CloneRun], options: _Options,
                        endpoint: Callable[[str], tuple[str, int]]) -> Targets:
    """The endpoint of every protocol with a silent clone (:func:`silent_clone`)."""
    targets: Targets = {}
    for run in runs:
        clone = next((c for c in run.fetches if silent_clone(c)), None)
        if clone is not None:
            _add_target(targets, endpoint(run.url), run.protocol,
                        f"{run.protocol} clone #{clone.repeat}: the pack was asked for and "
                        f"did not come ({clone.outcome})",
                        _waited(clone.outcome, clone.wall_s, options), options)
    return targets


def run_idle_probes(targets: Targets, run_dir: Path, *, until: float | None = None,
                    controls: Controls | None = None) -> list[IdleProbeRecord]:
    """The idle probe of every target at once (threads: each mostly waits); files written.
    ``until``: a monotonic deadline the finer round must end before; ``controls``: the
    application keepalives of each endpoint."""
    records: dict[int, IdleProbeRecord] = {}

    def one(n: int, host: str, port: int, protocols: list[str], trigger: str,
            silence: float) -> None:
        records[n] = idle_probe(host, port, silence_s=silence, protocols=protocols,
                                trigger=trigger, notes=proxy_note(protocols, os.environ),
                                until=until, controls=(controls or {}).get((host, port), []))

    threads = [threading.Thread(target=one, args=(n, host, port, *value), daemon=True)
               for n, ((host, port), value) in enumerate(targets.items(), start=1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(MAX_PROBE_S)
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
                f"unanswered from {high:g} s{controls_text(record)}; {fresh}")
    if low is not None:
        return (f"{record.target}: keepalives answered after {low:g} s of silence"
                f"{controls_text(record)}; {fresh}")
    return f"{record.target}: no keepalive judged{controls_text(record)}; {fresh}"


def start_idle_probes(runs: Sequence[_ProtocolRun], options: _Options, run_dir: Path,
                      endpoint: Callable[[str], tuple[str, int]]
                      ) -> Callable[[Reporter], None]:
    """Start the idle probe in the background when a push sent its pack and heard nothing
    (its connections mostly wait: the run's other probes go on meanwhile); the returned
    call waits for it and reports, from the caller's thread."""
    return _start(idle_probe_targets(runs, options, endpoint), options, run_dir,
                  endpoint_controls(runs, options, endpoint))


def start_clone_idle_probes(runs: Sequence[_CloneRun], options: _Options, run_dir: Path,
                            endpoint: Callable[[str], tuple[str, int]]
                            ) -> Callable[[Reporter], None]:
    """:func:`start_idle_probes` after the clones: when a clone asked for its pack and heard
    nothing (:func:`silent_clone`)."""
    return _start(clone_probe_targets(runs, options, endpoint), options, run_dir,
                  endpoint_controls(runs, options, endpoint))


def _start(targets: Targets, options: _Options, run_dir: Path,
           controls: Controls) -> Callable[[Reporter], None]:
    if not targets:
        return lambda reporter: None
    done: list[IdleProbeRecord] = []
    thread = threading.Thread(target=lambda: done.extend(
        run_idle_probes(targets, run_dir, until=options.cleanup_until, controls=controls)),
        daemon=True)
    thread.start()

    def finish(reporter: Reporter) -> None:
        label = "idle probe (keepalives on silent connections)"
        reporter.begin(label)
        thread.join(MAX_PROBE_S + 10.0)
        for record in done:
            reporter.done(label, progress_line(record),
                          ok=bool(record.connections) and record.bracket_s[1] is None
                          and all(c.answer != "unanswered" for c in record.controls))
        if not done:
            reporter.done(label, "no answer from the idle probe", ok=False)
    return finish
