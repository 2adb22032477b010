"""The only input of the diagnosis engine: a flat summary of one measured run.

Adapters (run directory, capture analysis, host collectors) fill these frozen
dataclasses; the engine never sees packets, files or sockets. Everything that
may be missing is optional and defaults to ``None`` (or an empty tuple/dict),
and every culprit copes with its absence by simply not firing.

Units are in the names: ``_s`` seconds, ``_bytes`` bytes, ``_bytes_per_s`` bytes per
second, ``_share`` a fraction 0..1 of the measured time. ``to_dict`` and
``from_dict`` round-trip through plain JSON types.

    Observations
    ├── run: RunInfo                      when, what, versions, RTT, path rate
    ├── protocols: {h1|h2|ssh|git: ProtocolObservation}
    │     ├── pushes: (PushObservation, ...)
    │     ├── trace2: Trace2Phases | None
    │     ├── capture: CaptureMetrics | None     bulk upload TCP connection
    │     ├── h2_ledger: H2Ledger | None         HTTP/2 flow-control credit
    │     ├── ssh_ledger: SshLedger | None       SSH channel window
    │     ├── h2_client_stall: H2ClientStall | None   hung push, client had credit
    │     ├── h2_spoiled_body: H2SpoiledBody | None   failed push, its pack not git's
    │     └── flight: FlightSeries | None        in flight vs advertised window
    ├── bursts: (BurstResult, ...)        many concurrent connections
    ├── host: HostEvidence | None         server-side kernel and config evidence
    ├── storage: StorageResult | None     fio on the git data path
    ├── problems: (RunProblem, ...)       steps that did not deliver their measurement
    ├── dead_paths: (DeadPath, ...)       ports the path check found dead or refused
    └── transfers: (TransferObservation, ...)  a download's clones, one each
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from gitnetdiag.diagnosis.transfers import UNSCALED_MAX_WINDOW_BYTES as UNSCALED_MAX_WINDOW_BYTES
from gitnetdiag.diagnosis.transfers import CaptureMetrics as CaptureMetrics
from gitnetdiag.diagnosis.transfers import HttpExchange as HttpExchange
from gitnetdiag.diagnosis.transfers import TransferObservation
from gitnetdiag.errors import InputError
from gitnetdiag.hops import FirstHop
from gitnetdiag.outcomes import FailureKind, PathReach
from gitnetdiag.serial import from_jsonable, to_jsonable

ProtocolName = Literal["h1", "h2", "ssh", "git"]
"""``h1`` HTTP/1.1, ``h2`` HTTP/2, ``ssh`` git over SSH, ``git`` the git:// daemon."""

PROTOCOL_ORDER: tuple[ProtocolName, ...] = ("h1", "h2", "ssh", "git")

PROTOCOL_LABELS: dict[str, str] = {
    "h1": "HTTP/1.1",
    "h2": "HTTP/2",
    "ssh": "SSH",
    "git": "git://",
}

MAX_SERIES_POINTS = 2000
"""Longest time series accepted; adapters downsample before filling."""


@dataclass(frozen=True, kw_only=True)
class RunInfo:
    """Metadata of the run."""

    started: str = ""
    """Start time, ISO 8601 with time zone (``2026-11-22T00:45:00+00:00``)."""
    target_url: str = ""
    """The remote pushed to, credentials already redacted (renderers redact again)."""
    remote_name: str = ""
    """The checkout's remote the URLs came from (``diagnose origin``), "" when URLs were
    given."""
    remote_notes: tuple[str, ...] = ()
    """How the remote's URLs were found: its URL, each transport derived from it (and
    probed, or left out because its port did not answer)."""
    rtt_s: float | None = None
    """Round-trip time of the path (ping or TCP handshake), seconds."""
    path_rate_bytes_per_s: float | None = None
    """Measured capacity of the path (iperf3 or similar), bytes per second (observations
    written before report version 4 call it ``path_rate_bps``, in bits: read alike)."""
    git_version: str | None = None
    """``git --version`` number, e.g. ``2.39.5``."""
    libcurl_version: str | None = None
    """libcurl git is linked against, e.g. ``7.88.1``."""
    nghttp2_version: str | None = None
    """nghttp2 libcurl is linked against, e.g. ``1.52.0``."""
    openssh_version: str | None = None
    """OpenSSH client version, e.g. ``9.2p1``."""
    repo_bytes: int | None = None
    """Size of the pushed pack (when known independently of the pushes)."""
    measured_by: str = ""
    """One line on how the run was measured (command, probe set), for the report."""
    requested_protocols: tuple[str, ...] = ()
    """Protocols the user asked to measure; empty when unknown (then: those observed)."""
    server_headers: tuple[str, ...] = ()
    """``server`` response headers the native HTTP/2 probe received, in order."""
    identity_headers: tuple[str, ...] = ()
    """Response headers in which the server and the hops in front of it show themselves
    (``server``, ``via``, CDN headers) as ``name: value`` lines: the native HTTP/2 probe's,
    else the first response in git's curl trace."""
    h2_server_settings: dict[str, int] = field(default_factory=dict)
    """The HTTP/2 server's SETTINGS as the native probe last knew them (names as RFC 9113)."""
    h2_connection_window_before_data_bytes: int | None = None
    """The connection window the HTTP/2 server had granted before the native probe's first
    DATA frame: 65535 plus the connection WINDOW_UPDATEs of its first frames (Apache raises
    it to 2^31-1 there, HAProxy only once DATA arrives); None when not recorded."""
    ssh_banner: str = ""
    """The SSH server's identification string (native SSH probe)."""
    first_hops: tuple[FirstHop, ...] = ()
    """Each probed protocol's first hop (a forward proxy, or direct) as the probe resolved it
    the way git does; empty for runs that did not record it (then: unknown, shown as the
    URLs alone)."""
    transfer: str = "upload"
    """The direction the transfers moved the pack: ``upload`` (pushes) or ``download``
    (a fetch's clones, each in ``Observations.transfers`` and push-shaped in ``protocols``,
    :mod:`~gitnetdiag.diagnosis.assembly`); each culprit judges the directions it declares."""


@dataclass(frozen=True, kw_only=True)
class PushObservation:
    """One measured push."""

    duration_s: float
    """Wall time of the whole ``git push`` (or until it was given up)."""
    bytes: int
    """Bytes of pack data the push had to send."""
    ok: bool = True
    """Whether the push completed."""
    error_kind: FailureKind | None = None
    """How it failed, as the probe recorded it (``None`` when ``ok``)."""
    error_message: str = ""
    """The last meaningful line of git's stderr or the probe's reason."""
    projected: bool = False
    """A bounded push: ``duration_s`` is the whole pack at the rate its moved bytes went,
    not a wall time (the push was stopped mid-pack on purpose)."""
    body_spoiled: bool = False
    """The request body the client sent whole is not the pack git built (its SHA-1 trailer
    does not match, :mod:`gitnetdiag.analysis.packbody`): the failure is the client's."""
    moved_bytes: int | None = None
    """Bytes the push had moved when it ended, as the probe's monitor saw them (the kernel's
    ``bytes_acked`` of git's sockets: handshake and request headers included, else git's
    ``Writing objects`` count), or a capture's client payload; for a hung push how far it
    got before it stopped (959 B of a 4 MiB pack behind an HTTP/2 window never granted,
    0.3 MiB of 8.4 MB behind nginx's 64 KiB window granted again and again). None when not
    known (observations written before this field, runs without the monitor)."""


@dataclass(frozen=True, kw_only=True)
class Trace2Phases:
    """Phases of one typical push from git's trace2 (median over pushes)."""

    pack_objects_s: float | None = None
    """Client time in pack-objects (counting, compressing)."""
    upload_s: float | None = None
    """Time sending the pack (first to last byte of the request body)."""
    server_wait_s: float | None = None
    """After the upload until the server's status report arrived."""
    ref_advertisement_s: float | None = None
    """From the start until the first response (ref advertisement, auth)."""


@dataclass(frozen=True, kw_only=True)
class TimeSeries:
    """A short sampled series (at most :data:`MAX_SERIES_POINTS` points)."""

    t_s: tuple[float, ...] = ()
    """Sample times, seconds since the start of the push."""
    values: tuple[float, ...] = ()
    """Sampled values (unit given by the owning field)."""

    def __post_init__(self) -> None:
        if len(self.t_s) != len(self.values):
            raise ValueError(f"t_s has {len(self.t_s)} points but values {len(self.values)}")
        if len(self.t_s) > MAX_SERIES_POINTS:
            raise ValueError(f"{len(self.t_s)} points, at most {MAX_SERIES_POINTS}")


@dataclass(frozen=True, kw_only=True)
class FlightSeries:
    """Bytes in flight and the advertised window over the push (for the flat-lining plot)."""

    t_s: tuple[float, ...] = ()
    """Sample times, seconds since the start of the push."""
    bytes_in_flight: tuple[float, ...] = ()
    """Unacknowledged bytes at each sample."""
    advertised_window: tuple[float, ...] = ()
    """Receiver's advertised window (scaled, bytes) at each sample."""
    bytes_sent: tuple[float, ...] = ()
    """New payload bytes sent up to each sample: the sequence number relative to the
    first byte (a time-sequence graph's y). Empty in observations recorded before
    it was added."""

    def __post_init__(self) -> None:
        n = len(self.t_s)
        if len(self.bytes_in_flight) != n or len(self.advertised_window) != n:
            raise ValueError("t_s, bytes_in_flight and advertised_window differ in length")
        if self.bytes_sent and len(self.bytes_sent) != n:
            raise ValueError("bytes_sent and t_s differ in length")
        if n > MAX_SERIES_POINTS:
            raise ValueError(f"{n} points, at most {MAX_SERIES_POINTS}")


@dataclass(frozen=True, kw_only=True)
class H2Ledger:
    """Summary of HTTP/2 flow-control credit for the upload (client's send credit)."""

    source: str = "http2 ledger"
    """Where it comes from, e.g. ``capture h2 conn 3 frames 120-4410 (decrypted)``."""
    server_initial_window_bytes: int | None = None
    """Server's SETTINGS_INITIAL_WINDOW_SIZE (stream window), 65535 if never sent."""
    connection_window_bytes: int | None = None
    """Connection window granted by the server (65535 + its connection WINDOW_UPDATEs)."""
    max_frame_size_bytes: int | None = None
    """Server's SETTINGS_MAX_FRAME_SIZE."""
    stream_zero_credit_s: float | None = None
    """Seconds the upload stream had no send credit."""
    connection_zero_credit_s: float | None = None
    """Seconds the connection had no send credit."""
    window_updates: int | None = None
    """WINDOW_UPDATE frames received from the server."""
    credit: TimeSeries | None = None
    """Stream send credit over time, bytes."""
    request_bytes: int | None = None
    """Bytes of the native probe's receive-pack POST body (its pack is smaller than git's)."""
    server_wait_s: float | None = None
    """From the probe's last DATA frame until the response was complete (the server's wait
    after the upload, as trace2's ``server_wait_s`` for git's pushes)."""

    @property
    def granted_window_bytes(self) -> int | None:
        """The smallest window the server granted (stream or connection): what one round
        trip can carry. ``None`` when neither is known (0 reads as not known)."""
        granted = [w for w in (self.server_initial_window_bytes, self.connection_window_bytes)
                   if w is not None and w > 0]
        return min(granted) if granted else None

    @property
    def zero_credit_s(self) -> float:
        """Seconds the upload could not send for want of credit: the longer of the stream's
        and the connection's time at zero (0 when neither was measured)."""
        return max(self.stream_zero_credit_s or 0.0, self.connection_zero_credit_s or 0.0)


@dataclass(frozen=True, kw_only=True)
class H2ClientStall:
    """A git HTTP/2 push that hung with send credit left: its decrypted capture shows the
    client stopped short of the request body's end (no END_STREAM) while the server's
    stream and connection windows still had room: the client's HTTP/2 stack stalled."""

    source: str
    """Where it was read (``capture h2-4.pcapng stream 5 (decrypted)``)."""
    push: int
    """Which push (1-based repeat)."""
    stream_id: int
    """The request's HTTP/2 stream."""
    sent_bytes: int
    """DATA bytes the client sent on it."""
    stream_credit_left_bytes: int
    """Send credit the stream still had when the client stopped."""
    connection_credit_left_bytes: int
    """Send credit the connection still had."""
    idle_s: float | None = None
    """From the client's last DATA frame until the push was given up."""


@dataclass(frozen=True, kw_only=True)
class H2SpoiledBody:
    """A failed git HTTP/2 push whose decrypted request body ended (END_STREAM) with a pack
    that fails its own SHA-1 trailer: git's HTTP stack changed the bytes git wrote."""

    source: str
    """Where it was read (``h2-2.packcheck.json stream 3 (decrypted capture)``)."""
    push: int
    """Which push (1-based repeat)."""
    body_bytes: int
    """DATA bytes the client sent on the request's stream."""
    pack_bytes: int
    """Of those, from ``PACK`` to the end."""
    objects: int | None = None
    """The object count the pack's header states."""
    built_pack_bytes: int | None = None
    """The pack the probe built for the push (git builds the same from the same objects)."""


@dataclass(frozen=True, kw_only=True)
class SshLedger:
    """Summary of the SSH channel window for the upload."""

    source: str = "ssh ledger"
    """Where it comes from (probe log, decrypted session)."""
    initial_window_bytes: int | None = None
    """Server's channel initial window (SSH_MSG_CHANNEL_OPEN_CONFIRMATION)."""
    max_packet_bytes: int | None = None
    """Server's channel maximum packet size."""
    zero_window_s: float | None = None
    """Seconds the client had no channel window."""
    window_adjusts: int | None = None
    """SSH_MSG_CHANNEL_WINDOW_ADJUST messages received."""


@dataclass(frozen=True, kw_only=True)
class BodyLimitProbe:
    """What the server (or its edge) answered to POSTs of the pack's kind (same path) of
    chosen sizes and framings, from the native probe: the request-body limit bracketed
    with ``Expect: 100-continue`` (headers only, no body beyond a few bytes sent), and a
    streamed body beside one with a ``Content-Length``. Never creates a ref."""

    source: str
    """Where it comes from (``native body probe of HOST:PORT``)."""
    requests: int = 0
    """Requests made."""
    largest_accepted_bytes: int | None = None
    """Largest ``Content-Length`` the server accepted (``100 Continue`` or no refusal);
    None when none was."""
    smallest_refused_bytes: int | None = None
    """Smallest ``Content-Length`` the server refused for its size; None when none was."""
    refused_status: int | None = None
    """The status of those refusals (413); None when they were closes without a status."""
    sized_status: int | None = None
    """Status to a small POST with a ``Content-Length``; None when no answer came."""
    streamed_status: int | None = None
    """Status to the same small POST streamed without a ``Content-Length``; None when no
    answer came (see :attr:`streamed_reset`)."""
    streamed_reset: bool = False
    """The streamed POST was reset or closed right after its headers, with no status."""
    server: str | None = None
    """The ``server`` header of the refusals, None when they had none."""


@dataclass(frozen=True, kw_only=True)
class ControlAnswer:
    """One application keepalive of the idle probe on a connection of the tool's own: an
    HTTP/2 PING (``h2-ping``) or OpenSSH's ``keepalive@openssh.com`` (``ssh-keepalive``)."""

    kind: str
    """``h2-ping`` or ``ssh-keepalive``."""
    silence_s: float
    """The connection's silence when it was sent (both ways, TCP_INFO)."""
    answered: bool
    """The peer's answer came within ``wait_s``."""
    round_trip_ms: float | None = None
    """Milliseconds from the send to the answer; None when none came."""
    wait_s: float = 0.0
    """How long an answer was waited for."""


@dataclass(frozen=True, kw_only=True)
class IdlePathProbe:
    """Positive controls after a push went silent (pack sent, no answer): TCP keepalives on
    connections of the tool's own to the same ``host:port``, each held silent for its own
    time, and a new connection at the end (:mod:`gitnetdiag.rundir.idleprobe`)."""

    source: str
    """Where it comes from (``idle probe of HOST:PORT``)."""
    silence_s: float
    """The push's silence before it was given up."""
    answered_up_to_s: float | None = None
    """The longest silence after which a keepalive was still answered; None when none was."""
    unanswered_from_s: float | None = None
    """The shortest silence after which a keepalive went unanswered; None when none did."""
    unanswered_probes: int = 0
    """Keepalive probes the kernel counted unanswered on that connection (``tcpi_probes``)."""
    closed_by_server: int = 0
    """Silent connections the server closed (FIN or RST) before their keepalive was due."""
    new_connection_ok: bool | None = None
    """A new connection to the same port completed its handshake; None when not tried."""
    new_connection_s: float | None = None
    """Seconds that handshake took."""
    controls: tuple[ControlAnswer, ...] = ()
    """Application keepalives after a silence on connections of the tool's own (answered
    or not; those whose connection failed or was closed are left out), by kind and
    silence."""


@dataclass(frozen=True, kw_only=True)
class ProtocolObservation:
    """Everything measured for one transport."""

    pushes: tuple[PushObservation, ...] = ()
    """Every push attempted over this protocol, in order."""
    trace2: Trace2Phases | None = None
    """Phase timings of a typical push."""
    capture: CaptureMetrics | None = None
    """TCP metrics of the bulk upload connection."""
    h2_ledger: H2Ledger | None = None
    """HTTP/2 flow-control summary (``h2`` only, needs decryption)."""
    ssh_ledger: SshLedger | None = None
    """SSH channel-window summary (``ssh`` only)."""
    h2_client_stall: H2ClientStall | None = None
    h2_spoiled_body: H2SpoiledBody | None = None
    """The first failed HTTP/2 push whose client sent a pack that fails its own trailer."""
    """A hung git HTTP/2 push whose client stopped with credit left (``h2``, needs the
    push's TLS keys: ``probe --full``)."""
    flight: FlightSeries | None = None
    """Bytes in flight vs advertised window over time."""
    http_requests: tuple[HttpExchange, ...] = ()
    """Every HTTP request git's pushes made, in order, with its status (``h1``/``h2``)."""
    body_limit: BodyLimitProbe | None = None
    """The native probe's answers to POSTs of the pack's kind by size and framing
    (``h1``/``h2``; None when it did not run)."""
    idle_path: IdlePathProbe | None = None
    """Keepalives on silent connections to the protocol's port after a push went silent
    (None when the idle probe did not run)."""


@dataclass(frozen=True, kw_only=True)
class BurstResult:
    """Many concurrent connections (clones, ls-remote) against one service."""

    protocol: ProtocolName
    """Which service was hit."""
    concurrency: int
    """How many connections were opened at once."""
    ok: int
    """Connections that completed."""
    port: int | None = None
    """Server port, to match the host's listeners."""
    failed_by_kind: dict[FailureKind, int] = field(default_factory=dict)
    """Failures by kind."""
    connect_p50_s: float | None = None
    """Median TCP connect time."""
    connect_p99_s: float | None = None
    """99th percentile TCP connect time."""
    connect_max_s: float | None = None
    """Slowest TCP connect."""
    duration_p50_s: float | None = None
    """Median duration of one whole operation (what a failure costs to redo)."""
    syn_retransmissions: int = 0
    """SYNs retransmitted by clients."""
    synack_retransmissions: int = 0
    """SYN-ACKs retransmitted by the server."""
    resets: int = 0
    """RSTs seen on the burst's connections."""
    handshakes_counted: bool = True
    """Whether a capture of the burst was analysed. Without one (not root, no capture, an
    unreadable one) the three counts above are unknown: left 0, so they are never evidence,
    and reports say "not counted", never 0."""

    @property
    def failed(self) -> int:
        """All failed connections."""
        return sum(self.failed_by_kind.values())


@dataclass(frozen=True, kw_only=True)
class Listener:
    """A listening socket on the server (``ss -ltnp``)."""

    port: int
    """Local port."""
    backlog: int
    """Configured backlog (Send-Q of a LISTEN socket)."""
    accept_queue: int = 0
    """Connections waiting in the accept queue (Recv-Q) when sampled."""
    process: str = ""
    """Owning process, e.g. ``git-daemon``."""
    address: str = ""
    """Local address it listens on (``198.18.2.3``), "" when not recorded (any)."""


@dataclass(frozen=True, kw_only=True)
class ConfigFinding:
    """One relevant line of a server-side configuration file."""

    setting: str
    """The directive, e.g. ``tune.h2.initial-window-size`` or ``MaxStartups``."""
    value: str
    """Its value as written (or the default when the file does not set it)."""
    file: str
    """The file path."""
    line: int | None = None
    """1-based line number, ``None`` when the value is a default."""


@dataclass(frozen=True, kw_only=True)
class HostEvidence:
    """Server-side evidence gathered during the run."""

    listeners: tuple[Listener, ...] = ()
    """Listening sockets."""
    counter_deltas: dict[str, int] = field(default_factory=dict)
    """Kernel counter deltas over the run, kernel names (``ListenOverflows``, ``ListenDrops``,
    ``TCPReqQFullDoCookies``, ``TCPReqQFullDrop``, ``SyncookiesSent``, ...)."""
    sysctls: dict[str, str] = field(default_factory=dict)
    """Relevant sysctls, e.g. ``net.core.somaxconn`` -> ``4096``."""
    kernel_log: tuple[str, ...] = ()
    """Kernel or service log lines from the run (``Possible SYN flooding ...``)."""
    config_findings: tuple[ConfigFinding, ...] = ()
    """Relevant configuration lines."""


@dataclass(frozen=True, kw_only=True)
class StorageResult:
    """fio result for the git data filesystem."""

    read_iops: float | None = None
    """4 KiB random read IOPS."""
    write_iops: float | None = None
    """4 KiB random write IOPS."""
    reference_iops: float = 1000.0
    """IOPS below which the storage is called slow (an ordinary SSD does far more)."""
    path: str = ""
    """Filesystem path benchmarked."""


@dataclass(frozen=True, kw_only=True)
class RunProblem:
    """A step of the run that did not deliver its measurement (an error of the run)."""

    stage: str
    """Where it happened: ``push``, ``setup``, ``native``, ``capture``, ``burst``, ..."""
    protocol: str | None = None
    """Protocol concerned, ``None`` for the whole run."""
    reference: str
    """Stable kebab-case reference of the error (``auth-failed``, ``refused``, ...)."""
    kind: FailureKind | None = None
    """Failure kind of a git run (``auth``, ``tls``, ``refused``, ...), when one."""
    message: str = ""
    """One line, URLs redacted."""
    hint: str = ""
    """What to do about it."""
    page: str = ""
    """The page of an error status a native request got (:attr:`RunError.page`: text, tags
    stripped, at most 512 characters); '' for none."""


@dataclass(frozen=True, kw_only=True)
class DeadPath:
    """A protocol's port that the probe's bounded path check found dead before any
    transfer: filtered or TLS stalled (no transfer was tried on it: its one transfer is
    recorded failed, not started), no route (git's transfers failed at once), or refused
    (every connect answered with a TCP reset: ``firewall-reset`` reads it, not
    ``path-unreachable``)."""

    protocol: ProtocolName
    """The protocol whose port it is."""
    endpoint: str
    """``host:port`` checked."""
    reach: PathReach
    """What the check found (``filtered``, ``no-route``, ``tls-stalled``, ``refused``)."""
    syns_sent: int | None = None
    """SYNs sent and never answered (``filtered``), on all of the check's connects; None
    when not read."""
    connects: int | None = None
    """Connects the check made at once; None when not recorded."""
    waited_s: float | None = None
    """Seconds the check waited for an answer (or for the TLS handshake)."""
    error: str = ""
    """The check's own words (``timeout``, ``unreachable``, ``tls: handshake not completed``)."""


@dataclass(frozen=True, kw_only=True)
class Observations:
    """One measured run, flat and JSON-serialisable: the engine's only input."""

    run: RunInfo = field(default_factory=RunInfo)
    """Run metadata."""
    protocols: dict[str, ProtocolObservation] = field(default_factory=dict)
    """Per transport, keyed ``h1``, ``h2``, ``ssh``, ``git``."""
    bursts: tuple[BurstResult, ...] = ()
    """Concurrency bursts."""
    host: HostEvidence | None = None
    """Server-side evidence, when the server could be inspected."""
    storage: StorageResult | None = None
    """Storage benchmark, when run."""
    problems: tuple[RunProblem, ...] = ()
    """Errors of the run's steps (a push that could not be made, a probe that failed)."""
    transfers: tuple[TransferObservation, ...] = ()
    """A download's transfers (``run.transfer == "download"``), one per clone, as the
    download detectors read them; ``protocols`` holds the same clones push-shaped
    (:mod:`~gitnetdiag.diagnosis.assembly`). Empty for pushes (not written then)."""
    dead_paths: tuple[DeadPath, ...] = ()
    """Ports the path check found dead or refused, one per protocol (not written when
    empty)."""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.protocols) - set(PROTOCOL_ORDER))
        if unknown:
            raise ValueError(f"unknown protocol key(s) {', '.join(unknown)}; use h1, h2, ssh, git")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types (dicts, lists, numbers, strings, null)."""
        result: dict[str, Any] = to_jsonable(self)
        for name in ("transfers", "dead_paths"):
            if not getattr(self, name):
                del result[name]
        return result

    @classmethod
    def from_dict(cls, data: Any) -> Observations:
        """Read back what :meth:`to_dict` wrote; raises ``InputError`` naming a bad field."""
        return from_jsonable(cls, _upgraded(data), where="observations",
                             error=_bad_observations)


def _upgraded(data: Any) -> Any:
    """Observations written before report version 4: ``run.path_rate_bps``, bits per second,
    becomes ``run.path_rate_bytes_per_s``."""
    run = data.get("run") if isinstance(data, dict) else None
    if not isinstance(run, dict) or "path_rate_bps" not in run:
        return data
    run = dict(run)
    bits = run.pop("path_rate_bps")
    is_number = isinstance(bits, int | float) and not isinstance(bits, bool)
    run.setdefault("path_rate_bytes_per_s", bits / 8 if is_number else bits)
    return {**data, "run": run}


def _bad_observations(message: str) -> InputError:
    return InputError(f"observations field {message}", reference="bad-observations",
                      hint="compare it with the fields documented in "
                      "gitnetdiag/diagnosis/observations.py")
