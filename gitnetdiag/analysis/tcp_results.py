"""Results of the TCP analysis: frozen dataclasses, JSON-ready.

:mod:`gitnetdiag.analysis.tcp` fills them; renderers and the diagnosis read
them.  Units are in the field names.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from gitnetdiag.capture.flows import Connection
from gitnetdiag.serial import to_jsonable

NS = 1_000_000_000
SMALL_SEGMENT_BYTES = 300
"""A segment this size or smaller carries no bulk data: a sideband progress line or a
keepalive is 5-80 B (with TLS or SSH framing under 200); a pack fills segments to the MSS
as soon as it flows (:attr:`DirectionAnalysis.last_large_segment_ts_ns`)."""


class _JsonMixin:
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (nested dataclasses and arrays become dicts and lists)."""
        result = to_jsonable(self)
        assert isinstance(result, dict)
        return result


@dataclass(frozen=True, kw_only=True)
class Thresholds:
    """Tunable thresholds of the classification (defaults documented in docs/analysis.md)."""

    bin_s: float = 0.1
    """Width of the time-series bins."""
    min_rto_s: float = 0.2
    """Linux's minimum RTO; a retransmission after >= 0.9 * (RTT + this) of silence is a timeout."""
    dupack_threshold: int = 3
    """Duplicate ACKs that trigger a fast retransmission."""


class LimitKind(enum.IntEnum):
    """What held the bulk sender back during one interval."""

    RWND = 0
    """In flight within one MSS of the peer's advertised window (receive window)."""
    CWND = 1
    """Data outstanding, window open, the sender ACK-clocked: congestion window / path."""
    LOSS = 2
    """Recovering from a retransmission (network loss)."""
    SELF = 3
    """Window open and the sender not sending: application or flow control above TCP."""


@dataclass(frozen=True, kw_only=True)
class RttStats(_JsonMixin):
    """RTT samples: data segment -> first ACK covering it, retransmitted ones excluded (Karn)."""

    samples: int
    """Number of samples (one per ACK that advanced, using the last segment it covered)."""
    min_s: float | None
    """Smallest sample."""
    median_s: float | None
    """Median (from a log histogram, about 3 % resolution)."""
    p90_s: float | None
    """90th percentile (same histogram)."""
    max_s: float | None
    """Largest sample."""
    mean_s: float | None
    """Mean."""


@dataclass(frozen=True, kw_only=True)
class LimitShares(_JsonMixin):
    """Time the sender spent in each limit while its transfer was active."""

    rwnd_s: float
    """Limited by the peer's receive window."""
    cwnd_s: float
    """Limited by the congestion window / path (ACK-clocked, no loss)."""
    loss_s: float
    """In loss recovery after retransmissions."""
    self_s: float
    """Window open, nothing sent: the application or HTTP/2 / SSH flow control."""

    @property
    def active_s(self) -> float:
        """Total classified time."""
        return self.rwnd_s + self.cwnd_s + self.loss_s + self.self_s

    def share(self, kind: LimitKind) -> float:
        """Share (0..1) of the active time spent in ``kind``."""
        total = self.active_s
        if total <= 0:
            return 0.0
        return float(getattr(self, f"{kind.name.lower()}_s")) / total

    def dominant(self) -> LimitKind | None:
        """The limit with the largest share, or None when nothing was classified."""
        if self.active_s <= 0:
            return None
        return max(LimitKind, key=self.share)


@dataclass(frozen=True, kw_only=True)
class ZeroWindowEvent(_JsonMixin):
    """A receiver advertising a zero window until it opens again."""

    start_ts_ns: int
    """Time of the first zero-window advertisement."""
    frame: int
    """Its frame number."""
    duration_s: float | None
    """Until the next non-zero window from the same side; None if it never opened."""


@dataclass(frozen=True, kw_only=True)
class DirectionAnalysis(_JsonMixin):
    """One direction of a connection: this side as a sender and as a receiver."""

    packets: int
    """Segments sent by this side."""
    payload_bytes: int
    """Payload bytes sent, retransmissions included."""
    unique_bytes: int
    """New payload bytes (goodput): highest sequence reached minus the first."""
    first_data_ts_ns: int | None
    """Time of the first payload-carrying segment."""
    last_data_ts_ns: int | None
    """Time of the last payload-carrying segment."""
    mss_bytes: int | None
    """MSS this side announced in its SYN."""
    window_scale: int | None
    """Shift applied to this side's windows; None when the handshake is not in the capture."""
    sack_permitted: bool
    """SACK-permitted in this side's SYN."""
    max_window_bytes: int
    """Largest window this side advertised (scaled; a SYN's window as sent, never scaled)."""
    min_window_bytes: int | None
    """Smallest (scaled) window this side advertised after the handshake."""
    max_in_flight_bytes: int
    """Largest amount of this side's data outstanding (unacknowledged)."""
    retransmissions: int
    """Segments resending already-sent sequence space."""
    retransmitted_bytes: int
    """Payload bytes of those segments."""
    fast_retransmissions: int
    """Retransmissions after duplicate ACKs / SACK."""
    timeout_retransmissions: int
    """Retransmissions after a silence as long as an RTO."""
    spurious_retransmissions: int
    """Retransmissions of data the peer had already acknowledged."""
    max_acked_segment_bytes: int
    """Largest payload of a segment the peer's cumulative ACK covered (what got through)."""
    unacked_retransmissions: int
    """Retransmitted segments the peer never acknowledged by the end of the capture."""
    min_unacked_retransmitted_bytes: int | None
    """Smallest payload among the retransmitted segments never acknowledged; None if none."""
    dsack_blocks: int
    """D-SACK blocks this side received (the peer got something twice)."""
    loss_rate: float
    """retransmitted_bytes / payload_bytes."""
    zero_window_count: int
    """Zero-window advertisements by this side (as receiver)."""
    zero_window_s: float
    """Total time this side's window stayed at zero."""
    zero_window_events: list[ZeroWindowEvent]
    """The first zero-window events (at most 200 are kept)."""
    zero_window_probes: int
    """One-byte probes this side sent into the peer's zero window (not retransmissions)."""
    resets_sent: int
    """RST segments this side sent."""
    first_reset_frame: int | None
    """Frame number of the first of them."""
    rtt: RttStats
    """RTT of this side's data (time to the peer's ACK)."""
    limits: LimitShares
    """What limited this side as a sender."""
    unacked_bytes: int = 0
    """This side's bytes the peer had not acknowledged when the capture ends (highest
    sequence sent minus the peer's highest ACK; all of them when no ACK was seen): a
    connection cut mid-transfer leaves them, a finished one does not."""
    first_reset_ts_ns: int | None = None
    """Time of this side's first RST; None when it sent none."""
    first_fin_ts_ns: int | None = None
    """Time of this side's first FIN (its end of the stream closed); None when the capture
    holds none: the connection was still open from this side when the capture ended."""
    max_segment_bytes: int = 0
    """Largest payload of one segment this side sent (0: none)."""
    last_large_segment_ts_ns: int | None = None
    """Time of this side's last segment above :data:`SMALL_SEGMENT_BYTES`; None when it
    sent none that large."""
    small_tail_bytes: int = 0
    """Payload bytes this side sent after that segment (all of them when none was that
    large): a server that talks on in progress lines and sends no pack."""


@dataclass(frozen=True, kw_only=True)
class Handshake(_JsonMixin):
    """The three-way handshake as seen in the capture."""

    syn_count: int
    """SYNs sent by the initiator (same ISN)."""
    syn_retransmissions: int
    """syn_count - 1 when more than one was seen."""
    synack_count: int
    """SYN-ACKs sent by the responder."""
    synack_retransmissions: int
    """synack_count - 1 when more than one was seen."""
    synack_after_ack: int
    """SYN-ACKs resent after the initiator's ACK was already seen: the responder
    dropped that ACK (accept queue full, the listen backlog signature)."""
    syn_to_synack_s: float | None
    """From the last SYN to the first SYN-ACK."""
    synack_to_ack_s: float | None
    """From the first SYN-ACK to the initiator's ACK."""
    rtt_s: float | None
    """SYN -> SYN-ACK -> ACK, the handshake round trip seen at the capture point."""
    window_scale_known: bool
    """True when the handshake in the capture tells whether windows are scaled: SYN and
    SYN-ACK, a SYN-ACK alone (it may carry the option only if the SYN did), or a SYN
    without the option."""
    window_scaling: bool
    """True when both sides offered window scaling (windows may exceed 64 KiB)."""


@dataclass(frozen=True, kw_only=True)
class ConnectionSeries(_JsonMixin):
    """Per-bin series of a connection; index 0 is the initiator as sender."""

    bin_s: float
    """Bin width."""
    start_ts_ns: int
    """Start of bin 0 (the connection's first packet)."""
    sent_bytes: list[list[int]]
    """Payload bytes sent per bin, per direction (throughput)."""
    goodput_bytes: list[list[int]]
    """New payload bytes per bin, per direction."""
    retransmitted_bytes: list[list[int]]
    """Retransmitted payload bytes per bin, per direction."""
    max_in_flight_bytes: list[list[int]]
    """Largest in-flight amount per bin, per direction as sender."""
    min_window_bytes: list[list[int]]
    """Smallest window advertised per bin, per direction (-1 when none)."""


@dataclass(frozen=True, kw_only=True)
class ConnectionAnalysis(_JsonMixin):
    """Everything measured about one TCP connection."""

    connection: Connection
    """Endpoints; ``a`` initiated."""
    protocol: str
    """Guess from the ports: https, ssh, git, http or tcp."""
    packets: int
    """Segments in both directions."""
    first_ts_ns: int
    """First packet."""
    last_ts_ns: int
    """Last packet."""
    handshake: Handshake
    """The three-way handshake."""
    a_to_b: DirectionAnalysis
    """The initiator as sender (a git push's upload direction)."""
    b_to_a: DirectionAnalysis
    """The responder as sender."""
    series: ConnectionSeries
    """Throughput, goodput, in flight and windows over time."""

    @property
    def duration_s(self) -> float:
        """First to last packet."""
        return (self.last_ts_ns - self.first_ts_ns) / NS

    @property
    def bulk_direction(self) -> int:
        """0 when the initiator sent more payload, else 1."""
        return 0 if self.a_to_b.payload_bytes >= self.b_to_a.payload_bytes else 1

    @property
    def bulk(self) -> DirectionAnalysis:
        """The direction that sent more payload."""
        return self.a_to_b if self.bulk_direction == 0 else self.b_to_a

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with the derived figures."""
        result = super().to_dict()
        result["duration_s"] = self.duration_s
        result["bulk_direction"] = "a_to_b" if self.bulk_direction == 0 else "b_to_a"
        return result


def guess_protocol(port_a: int, port_b: int) -> str:
    """Protocol guessed from the responder's (then the initiator's) port."""
    names = {443: "https", 8443: "https", 22: "ssh", 9418: "git", 80: "http", 8080: "http"}
    return names.get(port_b) or names.get(port_a) or "tcp"

