"""The idle probe's answers (``native-idle.json``): is the path still there after N s of silence?

After a push whose pack went out whole and whose answer never came, the probe
(:mod:`gitnetdiag.probe.idleprobe`) opens connections of its own to the same
``host:port``, each held silent for its own idle time, and lets the kernel send one TCP
keepalive probe on each once its idle time is over. What the kernel says of each
(``TCP_INFO``: unanswered keepalive probes, backoff, unacked segments, time since the last
ACK) tells whether the far end still answers after that much silence; a new connection
opened at the end tells whether the server and the path are up at all::

    native-idle.json  schema gitnetdiag.native-idle/1
        target, protocols, trigger, silence_s, keepalive_interval_s, answer_wait_s
        connections[]   idle_s     the connection's TCP_KEEPIDLE: its silence before the probe
                        answer     answered | unanswered | closed | failed
                        probes, backoff, unacked, last_ack_recv_s, judged_at_s, detail
        new_connection  ok, connect_s, detail
        controls[]      kind       h2-ping | ssh-keepalive: the application's own keepalive
                        silence_s  the connection's silence when it was sent (TCP_INFO)
                        answer     answered | unanswered | closed | failed
                        round_trip_ms, wait_s, detail
        duration_s, notes

The controls (:mod:`gitnetdiag.probe.idlecontrols`) are positive controls on the tool's
own application connections to the same port, each held silent for its time: an HTTP/2
PING on a native HTTP/2 connection (its ACK comes from the HTTP/2 server itself), an
OpenSSH ``keepalive@openssh.com`` global request with want-reply on a native SSH
connection (sshd answers it, with a failure: any answer is alive). An answer after N s
says the path and the peer still knew the connection at N; none, while a new connection
works, says the path dropped that connection's state.

A path that forgets idle connections answers every keepalive sent before its timeout and
none after it: the timeout lies between the longest answered and the shortest unanswered
idle time (:meth:`IdleProbeRecord.bracket_s`). Nothing is written to the server beyond a TCP
handshake: no request, no ref.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from gitnetdiag.rundir.manifest import read_record

IDLE_SCHEMA = "gitnetdiag.native-idle/1"

KeepaliveAnswer = Literal["answered", "unanswered", "closed", "failed"]
"""What became of one connection's keepalive: ``answered`` (an ACK came back after the
probe: the far end still knew the connection), ``unanswered`` (the kernel counts the probe
unanswered: ``tcpi_probes`` >= 1), ``closed`` (the server closed or reset the connection
before the probe was due: the path was up then, the idle time says nothing), ``failed``
(the probe could not connect; see ``detail``)."""


@dataclass(frozen=True, kw_only=True)
class IdleConnection:
    """One connection of the idle probe and its keepalive's fate."""

    idle_s: float
    """Its silence before the kernel's keepalive probe (``TCP_KEEPIDLE``)."""
    answer: KeepaliveAnswer
    """What became of the probe (see :data:`KeepaliveAnswer`)."""
    probes: int = 0
    """``tcpi_probes`` when judged: keepalive probes sent and not answered."""
    backoff: int = 0
    """``tcpi_backoff`` when judged."""
    unacked: int = 0
    """``tcpi_unacked`` when judged: segments in flight (a keepalive is not one)."""
    last_ack_recv_s: float | None = None
    """``tcpi_last_ack_recv`` when judged: seconds since the last ACK arrived."""
    judged_at_s: float = 0.0
    """Seconds after its connect it was judged."""
    detail: str = ""
    """Why it failed or closed, else empty."""


ControlKind = Literal["h2-ping", "ssh-keepalive"]
"""An application-level keepalive: an HTTP/2 PING (RFC 9113 section 6.7), or OpenSSH's
``keepalive@openssh.com`` global request with want-reply (ssh_config
``ServerAliveInterval``)."""


@dataclass(frozen=True, kw_only=True)
class AppKeepalive:
    """One positive control: an application keepalive sent after a silence."""

    kind: ControlKind
    """Which keepalive (see :data:`ControlKind`)."""
    silence_s: float
    """Seconds the connection had been silent both ways when it was sent (``TCP_INFO``:
    the shortest of the times since the last data sent, data received and ACK received);
    the silence aimed at when it was never sent."""
    answer: KeepaliveAnswer
    """``answered`` (the PING ACK or the SSH reply came), ``unanswered`` (nothing within
    ``wait_s``), ``closed`` (the server closed the connection first), ``failed`` (the
    connection could not be made; see ``detail``)."""
    round_trip_ms: float | None = None
    """Milliseconds from the send to the answer; None when none came."""
    wait_s: float = 0.0
    """How long an answer was waited for."""
    detail: str = ""
    """Why it failed or closed, else empty."""


@dataclass(frozen=True, kw_only=True)
class NewConnection:
    """A fresh TCP connection to the same ``host:port`` after the silent ones."""

    ok: bool
    """The handshake completed."""
    connect_s: float | None = None
    """Seconds the handshake took; None when it did not complete."""
    detail: str = ""
    """Why it failed, else empty."""


@dataclass(frozen=True, kw_only=True)
class IdleProbeRecord:
    """``native-idle.json``: the idle probe of one ``host:port``."""

    schema: str = IDLE_SCHEMA
    """Always :data:`IDLE_SCHEMA`."""
    target: str
    """``host:port`` probed (no credentials)."""
    protocols: tuple[str, ...]
    """The run's protocols whose URL this endpoint is (their observations get it)."""
    trigger: str
    """Why it ran: the push that sent its pack and heard nothing."""
    silence_s: float
    """The silence seen on that push before it was given up."""
    keepalive_interval_s: float
    """``TCP_KEEPINTVL``: between two keepalive probes of one connection."""
    answer_wait_s: float
    """How long after a probe was due an answer was waited for."""
    connections: tuple[IdleConnection, ...]
    """Every silent connection, shortest idle time first."""
    new_connection: NewConnection | None
    """The fresh connection at the end; None when it was not tried."""
    duration_s: float
    """The whole probe, wall time."""
    controls: tuple[AppKeepalive, ...] = ()
    """The application keepalives on the tool's own connections, by kind then silence."""
    notes: tuple[str, ...] = ()
    """What could not be measured, one line each."""

    def idle_times(self, answer: KeepaliveAnswer) -> list[float]:
        """Idle times of the connections whose keepalive had that fate."""
        return [c.idle_s for c in self.connections if c.answer == answer]

    @property
    def bracket_s(self) -> tuple[float | None, float | None]:
        """(longest idle time answered, shortest unanswered): the path's idle timeout lies
        between; either is None when no connection had that fate."""
        answered, unanswered = self.idle_times("answered"), self.idle_times("unanswered")
        return max(answered, default=None), min(unanswered, default=None)


def control_bracket(controls: tuple[AppKeepalive, ...], kind: ControlKind
                    ) -> tuple[float | None, float | None]:
    """(longest silence answered, shortest unanswered) of one kind of control; either
    None when no control of that kind had that fate."""
    answered = [c.silence_s for c in controls if c.kind == kind and c.answer == "answered"]
    unanswered = [c.silence_s for c in controls
                  if c.kind == kind and c.answer == "unanswered"]
    return max(answered, default=None), min(unanswered, default=None)


def idle_probe_record(data: dict[str, Any], where: str) -> IdleProbeRecord:
    """A ``native-idle.json`` object, every type and number checked (``bad-run-dir``)."""
    return read_record(IdleProbeRecord, data, schema=IDLE_SCHEMA, where=where)
