"""One transfer as its measuring end saw it: the TCP metrics of a connection
(:class:`CaptureMetrics`) and the per-transfer observation of a download
(:class:`TransferObservation`: one clone, the input of the download detectors).

:class:`~gitnetdiag.diagnosis.observations.Observations` holds both: a protocol's
``capture`` and, for a download, every transfer in ``transfers``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from gitnetdiag.analysis.h2ledger import GitH2Window
from gitnetdiag.analysis.plateau import FlightPlateau
from gitnetdiag.analysis.tcpinfo import ReceiverTcpSummary, SenderTcpSummary
from gitnetdiag.analysis.trace2 import ReceiverPhases
from gitnetdiag.outcomes import MEASURED_OUTCOMES, FailureKind, TransferOutcome
from gitnetdiag.thresholds import MIN_RATE_BYTES

Direction = Literal["upload", "download"]
"""Which way a transfer moved the pack: ``upload`` (a push: the client sends) or
``download`` (a clone: the server sends)."""

UNSCALED_MAX_WINDOW_BYTES = 65535
"""The largest TCP receive window without the window scale option (a 16-bit field,
RFC 7323 section 2)."""


@dataclass(frozen=True, kw_only=True)
class CaptureMetrics:
    """TCP metrics of the bulk upload connection of one protocol's push."""

    source: str = "capture"
    """Where the numbers come from, cited as evidence (``capture h2 conn 3 frames 120-4410``)."""
    handshake_rtt_s: float | None = None
    """SYN to SYN-ACK to ACK round trip measured on the handshake."""
    min_rtt_s: float | None = None
    """Smallest data-to-ACK RTT sample."""
    median_rtt_s: float | None = None
    """Median data-to-ACK RTT sample."""
    mss_bytes: int | None = None
    """Maximum segment size negotiated."""
    handshake_seen: bool = True
    """Whether the SYN/SYN-ACK were captured (else ``window_scale`` is unknown)."""
    window_scale: int | None = None
    """Receiver's window scale shift; ``None`` when the option was absent."""
    advertised_window_median_bytes: int | None = None
    """Median receive window the receiver advertised (scaled), bytes."""
    advertised_window_max_bytes: int | None = None
    """Largest receive window the receiver advertised (scaled), bytes."""
    bytes_in_flight_median: int | None = None
    """Median unacknowledged bytes during the upload."""
    bytes_in_flight_p95: int | None = None
    """95th percentile of unacknowledged bytes."""
    rwnd_limited_share: float | None = None
    """Share of upload time with bytes in flight at the advertised window."""
    network_limited_share: float | None = None
    """Share of upload time limited by the network (cwnd, losses), window open."""
    self_limited_share: float | None = None
    """Share of upload time the sender had nothing more to send (application limited)."""
    retransmitted_bytes: int | None = None
    """Bytes sent again."""
    retransmission_rate: float | None = None
    """Retransmitted bytes / payload bytes, 0..1."""
    out_of_order_share: float | None = None
    """Share of the data segments the receiver got out of order, 0..1, when only the
    receiver's counters are known (a clone without a capture: the client's TCP_INFO
    ``rcv_ooopack`` / ``data_segs_in``). Loss or reordering on the path: a lost segment
    makes the ones behind it arrive out of order until its retransmission, so one loss
    counts up to a round trip's segments."""
    timeout_retransmissions: int | None = None
    """Retransmissions after an RTO."""
    fast_retransmissions: int | None = None
    """Retransmissions after duplicate ACKs / SACK."""
    zero_window_count: int | None = None
    """Zero-window advertisements by the receiver."""
    zero_window_s: float | None = None
    """Seconds the receiver advertised a zero window."""
    resets_from_client: int | None = None
    """RST segments sent by the client side."""
    resets_from_server: int | None = None
    """RST segments that arrived from the server side (server or a middle box)."""
    syn_retransmissions: int | None = None
    """Retransmitted SYNs of this connection."""
    synack_retransmissions: int | None = None
    """Retransmitted SYN-ACKs of this connection."""
    max_acked_segment_bytes: int | None = None
    """Largest upload segment (payload) the receiver acknowledged: what gets through."""
    unacked_retransmissions: int | None = None
    """Upload segments resent and still never acknowledged when the capture ended."""
    min_unacked_retransmitted_bytes: int | None = None
    """Smallest of those resent, never acknowledged segments (payload)."""
    max_received_segment_bytes: int | None = None
    """The receiver's view (a clone's client, where the sender's lost segments are never
    seen): the largest data segment (payload) that arrived, from a capture at the receiver
    (the largest its cumulative ACK covered) or its TCP_INFO ``rcv_mss``."""
    refused_after_s: float | None = None
    """A connection the server's side answered with a reset instead of a SYN-ACK (a refused
    connect): seconds from its SYN to that reset. Sooner than one round trip, a hop before
    the server answered: a filter."""
    plateau: FlightPlateau | None = None
    """The level the sender's bytes in flight held over the bulk of its data, against the
    receiver's window (:func:`~gitnetdiag.analysis.plateau.flight_plateau`): only from a
    capture at the sender (a clone's server), None otherwise."""

    # The window arithmetic every culprit and the cost model share, each rule once.

    @property
    def largest_window_bytes(self) -> int | None:
        """The receive window the sender could use: the largest advertised, else the
        median; ``None`` when neither was measured (0 reads as not measured)."""
        return self.advertised_window_max_bytes or self.advertised_window_median_bytes

    @property
    def network_bound(self) -> bool:
        """TCP was held by the network (cwnd, losses) more than it waited on the
        application above it: the sender's own window or frames are then not the limit."""
        return (self.network_limited_share or 0.0) > (self.self_limited_share or 0.0)

    @property
    def window_scaling_off(self) -> bool:
        """The handshake was seen without the window scale option, and the window stayed
        at or below what an unscaled window can hold."""
        window = self.largest_window_bytes
        return (self.handshake_seen and self.window_scale is None and window is not None
                and window <= UNSCALED_MAX_WINDOW_BYTES)


@dataclass(frozen=True, kw_only=True)
class HttpExchange:
    """One HTTP request of a git push or clone and the status it got (from git's curl trace)."""

    method: str
    """``GET`` or ``POST``."""
    path: str
    """Request path without the query (``/git/lab.git/info/refs``)."""
    status: int | None
    """Final response status; None when no response arrived."""
    server: str | None = None
    """The response's ``server`` header, None when it had none."""
    push: int = 0
    """Which push (or clone) of the protocol (1-based repeat; 0 when unknown)."""
    content_length_bytes: int | None = None
    """The request's ``Content-Length``; None when it sent none (a streamed body: chunked
    on HTTP/1.1, a body of unknown length on HTTP/2) or the trace does not show it."""
    streamed: bool = False
    """The request sent a body without a ``Content-Length`` (git streams every pack above
    ``http.postBuffer``)."""
    silence_before_close_s: float | None = None
    """Seconds from the last byte sent or received on this request to the end of the
    transfer when the server side closed it early (curl's "transfer closed with
    outstanding read data", an HTTP/2 stream reset, a connection died); None otherwise."""
    ending: str = ""
    """curl's own words for how the request ended when it did not end cleanly
    (``transfer closed with outstanding read data remaining``), else empty."""
    silence_before_status_s: float | None = None
    """Seconds from the request's last line sent to its final status line: the wait for the
    answer (an edge's 504 comes at its timeout); None when not recorded (a push's)."""

    @property
    def kind(self) -> str:
        """What the request is for, whatever the repository's path: method and git service
        (``POST git-receive-pack``), else method and path."""
        for service in ("info/refs", "git-receive-pack", "git-upload-pack"):
            if self.path.endswith("/" + service):
                return f"{self.method} {service}"
        return f"{self.method} {self.path}"


PREPARING = re.compile(r"(Enumerating|Counting) objects:\s+\d+%(?!.*done)")
"""The server's last progress line while it was still counting the objects to send: the
pack was not ready, so a stall there is the server's (``server-pack-generation``), not
segments lost on the way (the counting progress itself got through)."""
PACK_READY = re.compile(r"Compressing objects:.*done|^Total \d+")
"""The server's words once its pack is ready to flow: the delta search done (or the pack
written)."""


@dataclass(frozen=True, kw_only=True)
class PackWait:
    """A clone stopped in the server's pack phase: the server had spoken, no pack byte had
    come (the record's ``pack_wait``, ``server-stall``)."""

    wait_s: float
    """Seconds the clone had waited for its first pack byte when it was stopped (from the
    answer to its fetch request): the server's preparation took at least this long."""
    server_words: str
    """The server's last words (``Compressing objects:  90% (1803/2003)``)."""
    words_only: bool
    """Stopped by the words-only bound: the server's words advanced to the end."""
    bound_s: float
    """The bound that stopped it (the words-only limit, or the stall timeout of silence)."""

    @property
    def preparing(self) -> bool:
        """The server was still preparing the pack when the clone was stopped: it talked on
        (the words-only bound) with no word that its pack was ready, or it fell silent while
        still counting (:data:`PREPARING`). A silence after the delta search (or amid it:
        progress that stops coming may be lost on the path) is no evidence of it."""
        if PACK_READY.search(self.server_words):
            return False
        return self.words_only or PREPARING.search(self.server_words) is not None


MIN_IDLE_SPAN_S = 2.0
"""A download socket sampled for less than this (0.25 s apart, slow start included) says too
little to tell how much of its life it sat idle."""
IDLE_SHARE = 0.5
"""A download socket idle (no data at the clone's rate) for at least this share of its sampled
life had a sender with nothing to send: the lab's CPU-starved upload-pack (5% of a core) left
its clones' sockets idle 87-93% of 18-23 s (issue 26); every clone on a full link or behind a
send-buffer clamp of the bundle sampled for 2 s or more was idle at most 28% of it.

In those slow-pack-generation clones the idle time was the wait for the first pack byte
(17.0-21.7 s of 18.0-23.5 s); from the first pack byte on the socket carried data at the
clone's rate. A limit, named: the receiver's RTT samples are summarized over the socket's
whole life, so a full link behind a long pack generation is not told from the wait's
inflated samples, and ``bandwidth-limit`` stays silent there (``server-pack-generation``
names the wait)."""


@dataclass(frozen=True, kw_only=True)
class CpuQuota:
    """What the CPU quota of the cgroup git ran in did over one clone: the differences of its
    ``cpu.stat`` counters from before git started to the start of its checkout (what
    ``compare`` times of a clone), or to its end without a checkout
    (:mod:`gitnetdiag.rundir.cgroupcpu`, :mod:`gitnetdiag.pipeline._cpuquota`)."""

    source: str
    """The file read and the cgroup (``/sys/fs/cgroup/ci/cpu.stat, cgroup v2 /ci``)."""
    quota_us: int | None
    """CPU time allowed per period; None: no quota set, or not readable."""
    period_us: int | None
    """The quota's period."""
    periods: float | None
    """Periods that elapsed with the cgroup runnable; None when not counted (interpolated
    between two readings at the checkout's start: a fraction)."""
    throttled_periods: float | None
    """Periods in which it ran out of quota and was throttled."""
    throttled_s: float | None
    """Time its run queues were throttled, summed over CPUs (two threads held at once count
    twice); None when not counted."""
    usage_s: float | None = None
    """CPU time its processes used over the clone; None when not counted."""
    from_git_start: bool = True
    """``before`` was read before git started; False: when git was first seen in its cgroup
    (up to a few milliseconds later)."""
    until_s: float | None = None
    """Where the span ends, seconds from git's start: the checkout's start; None: the
    clone's end (no checkout)."""
    checkout_throttled_s: float | None = None
    """The run queues' throttled time from the checkout's start to git's exit (outside the
    span); None without a checkout or the counts."""
    readings: int = 2
    """Readings of the counters over the clone (before, the samples, after)."""
    waiting_throttled_periods: float | None = None
    """Of :attr:`throttled_periods`, those in the server's wait (the fetch request sent to
    the first pack byte): the clone waits on the server there whatever its CPU, so the fix
    gains nothing of them (1-3 periods a clone in the lab's quota runs, 0.5-0.8 s waits
    before and after the fix alike); None when the wait is not known."""

    @property
    def quota_cores(self) -> float | None:
        """The quota in cores (quota / period: 0.05 is 5% of one core)."""
        if self.quota_us is None or not self.period_us:
            return None
        return self.quota_us / self.period_us

    @property
    def throttled_wall_s(self) -> float | None:
        """Wall seconds the quota held the clone: ``throttled periods x (period - quota)``,
        the periods in the server's wait left out (:attr:`priced_periods`).
        A throttled period is one whose quota ran out with work left; the work waits to the
        period's end, and the next period starts with it runnable, so a run of throttled
        periods holds the cgroup all but the quota's CPU time of each (one thread; two run
        it out in half the time: up to ``quota / 2`` more a period). The run queues'
        throttled time is not that wall time: it leaves out the wait for a busy CPU after
        each unthrottle (1.4 s of 14 s on a loaded machine) and counts two held threads
        twice. Over-counted: the first period of each run of them, when the work came in
        mid-period (at most one period a run). None without the counts, or with a quota of
        a core or more (held threads on several CPUs: the wall time is not told apart)."""
        cores = self.quota_cores
        if (self.throttled_periods is None or cores is None or self.period_us is None
                or cores >= 1.0):
            return None
        return self.priced_periods * self.period_us * (1.0 - cores) / 1e6

    @property
    def priced_periods(self) -> float:
        """The throttled periods outside the server's wait (all of them when it is not
        known): the ones the fix gives back."""
        held = self.throttled_periods or 0.0
        return max(0.0, held - (self.waiting_throttled_periods or 0.0))


@dataclass(frozen=True, kw_only=True)
class TransferObservation:
    """One transfer of a download (a clone) as the fetch pipeline saw it: the download
    detectors' input, one per clone in :attr:`Observations.transfers`."""

    protocol: str
    """``h1``, ``h2``, ``ssh`` or ``git``."""
    repeat: int
    """1-based repeat number."""
    outcome: TransferOutcome
    """The record's outcome (``ok``, ``bounded``, ``stalled``, ...)."""
    moved_bytes: int
    """Bytes received when it ended."""
    measured_s: float
    """Seconds the rate was measured over."""
    rate_bytes_per_s: float | None
    """Download rate, None when nothing was measured."""
    wall_s: float
    """Wall time of the clone."""
    phases: ReceiverPhases
    """Its phases."""
    tcp: ReceiverTcpSummary | None
    """The receiver's TCP evidence, None without samples."""
    path_rtt_s: float | None
    """The path's RTT (connect time), None when not measured."""
    client_rmem_max_bytes: int | None = None
    """The client's ``net.ipv4.tcp_rmem`` maximum, None when unknown."""
    stopped: str | None = None
    """Why the monitor stopped git (``stable``, ``budget``, ``stall``), None when git ended."""
    libcurl: str | None = None
    """The client's libcurl version (the HTTPS transports), None when unknown."""
    failure_kind: FailureKind | None = None
    """How the clone failed (``reset``, ``refused``, ...), None when it did not."""
    last_line: str = ""
    """git's last stderr line of a failed clone."""
    capture: CaptureMetrics | None = None
    """The download connection seen from the server, the sender of the data (a capture of
    the clone, root only): its retransmissions, resets, unacknowledged segments."""
    sender: SenderTcpSummary | None = None
    """The server's TCP evidence (its own sockets, a local server only), None without."""
    git_h2_window: GitH2Window | None = None
    """The windows git really advertised (its decrypted HTTP/2 frames, ``--full``)."""
    libcurl_window_bytes: int | None = None
    """The HTTP/2 stream window the client's libcurl release is documented to advertise
    once the response flows (``data/libcurl_h2_windows.toml``), None when unknown."""
    http_requests: tuple[HttpExchange, ...] = ()
    """An HTTPS clone's requests (git's curl trace), each with its ``push`` the clone's
    repeat; empty over SSH and git:// and without a trace."""
    git_said: tuple[str, ...] = ()
    """git's own error lines of a failed clone (``error:`` and ``fatal:``), in order: what
    the failure catalogue reads (one line, :attr:`last_line`, may carry only the last)."""
    pack_wait: PackWait | None = None
    """A clone stopped in the server's pack phase: its wait for the pack; None otherwise."""
    cpu_quota: CpuQuota | None = None
    """The CPU quota of the cgroup git ran in over this clone; None when its counters were
    not read (older runs, no cgroup, an unreadable ``cpu.stat``)."""

    @property
    def cut_while_preparing(self) -> bool:
        """Stopped while the server was still preparing its pack (:attr:`PackWait.preparing`):
        the wait was the server's, whatever the path."""
        return self.pack_wait is not None and self.pack_wait.preparing

    @property
    def rtt_s(self) -> float | None:
        """Best RTT known: the path's connect time, else the socket's minimum."""
        if self.path_rtt_s:
            return self.path_rtt_s
        return self.tcp.min_rtt_s if self.tcp is not None else None

    @property
    def measured(self) -> bool:
        """A clone that gave a rate: finished or bounded, with a rate over at least
        :data:`~gitnetdiag.thresholds.MIN_RATE_BYTES` (below it the time is round trips:
        189 B of a tiny repository "at 0.75 kB/s" is no rate, the verdict's ``too-small``)."""
        return (self.outcome in MEASURED_OUTCOMES and bool(self.rate_bytes_per_s)
                and self.moved_bytes >= MIN_RATE_BYTES)

    @property
    def idle_share(self) -> float | None:
        """Share of the download socket's sampled life it carried no data, as the receiver
        sees it: 1 - its bytes over (the clone's rate x the time it was sampled), 0..1.

        A sender with nothing to send (a server still producing the pack, or producing it
        slower than the path carries) leaves the socket idle between bursts; a full link
        or a sender held by its buffer keeps it busy at the clone's rate. None without a
        rate or when the socket was sampled for less than :data:`MIN_IDLE_SPAN_S`."""
        tcp, rate = self.tcp, self.rate_bytes_per_s
        if tcp is None or not rate or tcp.span_s < MIN_IDLE_SPAN_S:
            return None
        return max(0.0, 1.0 - tcp.received_bytes / (rate * tcp.span_s))

