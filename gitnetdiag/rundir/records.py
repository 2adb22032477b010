"""What a run directory's records hold: frozen dataclasses, one per record of a run.

One :class:`TransferRecord` per push or clone (``direction`` says which), and what a run
meets around them (paths, bursts, errors, versions); the manifests that list them are in
:mod:`gitnetdiag.rundir.manifest`. The probes fill them (``gitnetdiag.probe``); the
pipeline reads them back. They live here, below both, so the offline side never imports
a probe.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar, Literal

from gitnetdiag.outcomes import FailureKind, PathReach, TransferOutcome
from gitnetdiag.rundir.cgroupcpu import CgroupCpuRecord

RunStatus = Literal["running", "complete", "stalled", "failed", "interrupted"]
"""Where a run is: ``running``, ``complete``, ``stalled`` (a push hung: an error
``push-stalled`` names it), ``failed`` (some step failed) or ``interrupted``."""

RunStage = Literal["setup", "path", "push", "cleanup", "burst", "capture", "native",
                   "h2-sweep", "fetch", "seed"]
"""The step of a run an error belongs to."""

EndedBy = Literal["SIGINT", "SIGTERM", "SIGHUP"]
"""The signal that stopped an interrupted run: ``SIGINT`` (Ctrl-C), ``SIGTERM``, or
``SIGHUP`` (a closed terminal or dropped SSH session)."""

ENDED_BY: dict[str, EndedBy] = {"SIGINT": "SIGINT", "SIGTERM": "SIGTERM", "SIGHUP": "SIGHUP"}
"""A signal's name -> its :data:`EndedBy` value."""


class RefCleanup(StrEnum):
    """What became of a throwaway branch (``PushRecord.cleanup``)."""

    DELETED = "deleted"
    """It was created and deleted under the lease: receive-pack reported the delete
    (``- [deleted]``), or ls-remote shows it gone."""
    NEVER_CREATED = "never-created"
    """ls-remote shows no such branch and the push can no longer create it (or the push
    never reached the server)."""
    LEFTOVER = "leftover"
    """It is on the server (seen there, or created by a successful push) and the delete
    failed (after a delete whose answer was lost: ls-remote still shows it), or it points
    at another object: ``cleanup_command`` removes it."""
    UNCONFIRMED = "unconfirmed"
    """Not known either way: absent when the wait ran out while a hook could still create
    it, or the refs could not be listed (also after a delete whose answer was lost: it may
    have landed). A warning with ``check_command``."""
    NOT_RUN = "not-run"
    """No clean-up ran (the record was made without one)."""
    FAILED = "failed"
    """Written by versions before the clean-up was verified: the delete failed. Read, never
    written."""


class StopReason(StrEnum):
    """Why the monitor ended a push (or a clone) before git did."""

    STABLE = "stable"
    """The rate was stable for :data:`~gitnetdiag.probe.budget.STABLE_WINDOWS` windows."""
    BUDGET = "budget"
    """The time budget ran out."""
    STALL = "stall"
    """No progress for the stall timeout."""
    SERVER_STALL = "server-stall"
    """The whole pack was sent, then nothing for the stall timeout: no status from the
    server. On a clone: the server spoke (its ``remote:`` progress), then sent no pack byte
    and nothing new for the stall timeout: a stall of its pack phase."""


@dataclass(frozen=True, kw_only=True)
class CaptureResult:
    """What tcpdump reported when it stopped."""

    path: str
    """Capture file (relative to the run directory when stored in a manifest)."""
    filter: str
    """BPF filter used."""
    snaplen: int
    """Bytes kept per packet (0 = whole packets)."""
    packets_captured: int | None
    """tcpdump's own count."""
    packets_dropped: int | None
    """Packets the kernel dropped before tcpdump read them."""


@dataclass(frozen=True, kw_only=True)
class PathMeasurement:
    """What a few raw connections to ``host:port`` showed."""

    endpoint: str
    """``host:port`` (no credentials)."""
    connect_rtt_samples_s: tuple[float, ...]
    """Duration of each successful TCP connect (SYN to SYN-ACK, about one RTT)."""
    connect_rtt_min_s: float | None
    """Smallest connect time: the best estimate of the path RTT."""
    connect_rtt_median_s: float | None
    """Median connect time."""
    mss_bytes: int | None
    """TCP_MAXSEG after connect: the segment size the path allows."""
    tls_handshake_s: float | None
    """TLS handshake duration (after connect), None for plain TCP endpoints."""
    alpn: str | None
    """Protocol the server picked from ALPN ``h2, http/1.1``."""
    tls_version: str | None
    """Negotiated TLS version."""
    error: str | None
    """Why a step failed (``refused``, ``unreachable``, ``tls: ...``), None if all worked."""
    reach: PathReach | None = None
    """What the first, bounded connect (and TLS handshake) found; None in runs recorded
    before it was checked."""
    syns_sent: int | None = None
    """SYNs the kernel sent on a connect that got no answer (1 + its retransmissions, from
    TCP_INFO before the socket was closed); None when answered or not read."""
    check_connects: int | None = None
    """Connects the check made at once (``syns_sent`` is their sum); None in older runs."""
    waited_s: float | None = None
    """Seconds the check waited for the port before it said ``reach`` (the connect, and for
    ``tls-stalled`` the handshake); None for an open port."""
    first_hop_of: tuple[str, ...] = ()
    """The protocols whose first hop this endpoint is (a forward proxy's ``host:port``, a
    ``ProxyJump`` host's): the leg client -> proxy, checked and timed with plain TCP
    connects (no TLS: the proxy speaks HTTP, the tunnel's TLS is the server's); empty for
    the remote's own endpoint (measured directly, also when a protocol is proxied)."""


def reached_through(protocol: str, endpoint: str, paths: Iterable[PathMeasurement]) -> str:
    """The endpoint whose check speaks for ``protocol``'s connections: its first hop's
    (a measurement whose :attr:`PathMeasurement.first_hop_of` names it), else ``endpoint``
    (the server's, direct)."""
    return next((path.endpoint for path in paths if protocol in path.first_hop_of), endpoint)


@dataclass(frozen=True, kw_only=True)
class Trace2Record:
    """Where the time of one push went, according to trace2 (seconds; None when not seen)."""

    total_s: float | None
    """git push from start to exit."""
    ref_advertisement_s: float | None
    """Start to the end of the ref advertisement (first response of the server)."""
    pack_prepare_s: float | None
    """pack-objects counting and preparing objects (client CPU before any byte is sent)."""
    pack_write_s: float | None
    """pack-objects writing the pack into the transport (the upload, for a large pack)."""
    server_wait_s: float | None
    """pack-objects exit to the server's status report being read."""
    objects_written: int | None
    """Objects pack-objects wrote (0 means the remote already had everything)."""
    exit_code: int | None
    """Exit code of git push as recorded by trace2 (None when the run was cut short)."""
    events: int
    """Number of events parsed."""


@dataclass(frozen=True, kw_only=True)
class ToolVersions:
    """Versions found on the probing host; None when a program is missing."""

    git: str | None
    """``git version`` number, e.g. ``2.39.5``."""
    libcurl: str | None
    """libcurl version (from ``curl-config``/``curl --version``), e.g. ``7.88.1``."""
    git_libcurl_package: str | None
    """Debian package version of the libcurl git's remote-https links (libcurl3-gnutls)."""
    nghttp2: str | None
    """Debian package version of libnghttp2-14 (HTTP/2 in libcurl)."""
    openssh: str | None
    """``ssh -V`` first word, e.g. ``OpenSSH_9.2p1``."""
    openssl: str | None
    """OpenSSL version libcurl reports."""
    tcpdump: str | None
    """tcpdump version."""
    kernel: str
    """Running kernel release."""
    python: str
    """Python version running gitnetdiag."""


@dataclass(frozen=True, kw_only=True)
class BurstOp:
    """One operation of a burst."""

    index: int
    """Position in the burst (0-based)."""
    wall_s: float
    """Start to end (or to the timeout)."""
    ok: bool
    """True when it succeeded."""
    failure_kind: FailureKind | None
    """Why it failed, None on success."""
    last_line: str
    """git's last stderr line (empty on success)."""


@dataclass(frozen=True, kw_only=True)
class ConnectOp:
    """One raw TCP connect of a burst."""

    index: int
    """Position in the burst."""
    connect_s: float | None
    """Connect duration (a retransmitted SYN shows as about 1 s or more), None on failure."""
    error: str | None
    """``refused``, ``timeout``, ``reset`` or another short reason."""


@dataclass(frozen=True, kw_only=True)
class BurstRecord:
    """A burst against one protocol's endpoint."""

    protocol: str
    """Protocol id (``h1``, ``h2``, ``ssh``, ``git``)."""
    concurrency: int
    """Operations started at once."""
    timeout_s: float
    """Per-operation timeout."""
    ops: tuple[BurstOp, ...]
    """git ls-remote runs."""
    connects: tuple[ConnectOp, ...]
    """Raw TCP connects run at the same concurrency."""
    capture: str | None
    """Capture file relative to the run directory, when captured."""

    @property
    def failures_by_kind(self) -> dict[FailureKind, int]:
        return dict(Counter(op.failure_kind for op in self.ops if op.failure_kind))

    @property
    def ok_count(self) -> int:
        return sum(op.ok for op in self.ops)


@dataclass(frozen=True, kw_only=True)
class RunError:
    """An error met during the run; the run goes on where it can."""

    stage: RunStage
    """The step it happened in."""
    protocol: str | None
    """Protocol concerned, None for the whole run."""
    reference: str
    """Stable kebab-case reference of the error (as in gitnetdiag.errors)."""
    kind: FailureKind | None
    """Failure kind of a git run (``refused``, ``tls``, ``auth``, ...), when one."""
    message: str
    """One line, URLs redacted."""
    page: str = ""
    """An error status's page as gitnetdiag's own request got it: its text, tags stripped,
    at most 512 characters, redacted ('' for none, or a request of git's)."""


@dataclass(frozen=True, kw_only=True)
class RepoInfo:
    """The repository pushed."""

    generated: bool
    """True for a generated repository of random data."""
    seed: int | None
    """Seed of the generated data (same seed and size give the same commit)."""
    size_bytes: int | None
    """Bytes of generated data; None for a given repository."""
    head_oid: str
    """Commit pushed."""
    pack_bytes: int
    """Size of the pack a push of a new branch at ``head_oid`` sends."""
    source_oid: str | None = None
    """For ``--repo``: the repository's HEAD whose tree, every blob salted, became
    ``head_oid`` (new objects, same sizes and compressibility); None when generated."""


@dataclass(frozen=True, kw_only=True)
class HttpRequestRecord:
    """One HTTP request of a git push, as git's curl trace shows it."""

    method: str
    """``GET`` or ``POST``."""
    path: str
    """Request path, query removed."""
    status: int | None
    """Final response status (after any ``100 Continue``); None when none arrived."""
    server: str | None = None
    """The response's ``server`` header; None when it sent none."""
    content_length_bytes: int | None = None
    """The request's ``Content-Length``; None when it sent none or in older runs."""
    streamed: bool = False
    """A POST sent without a ``Content-Length`` (chunked, or HTTP/2 without a length)."""
    silence_before_close_s: float | None = None
    """Seconds from the request's last header line to curl's word that the transfer ended
    badly (:attr:`ending`); None when it ended well."""
    ending: str = ""
    """curl's words for a bad ending (``transfer closed with outstanding read data
    remaining``), else empty."""
    silence_before_status_s: float | None = None
    """Seconds from the request's last line sent to its final status line (the wait for
    the answer: an edge's 504 comes at its timeout); recorded for a clone's requests, None
    in a push's and in older runs."""


Direction = Literal["push", "fetch"]
"""Which way a transfer moved the pack: ``push`` uploads a throwaway branch, ``fetch``
clones what the URL serves (the discriminator of :class:`TransferRecord`)."""


@dataclass(frozen=True, kw_only=True)
class TransferRecord:
    """One bounded git transfer over one protocol, whichever way it moved the pack.

    Subclassed only where the shapes differ: :class:`PushRecord` (a branch pushed and
    deleted: pack, HTTP requests, capture) and :class:`CloneRecord` (a clone into a
    scratch copy, with the monitor's samples). ``direction`` says which; it is written to
    the record (read with its default from records older than it)."""

    measured_fields: ClassVar[tuple[str, ...]] = ("wall_s",)
    """Fields that must be above 0 when the outcome is a measurement (a rate was taken)."""
    noun: ClassVar[str] = "transfer"
    """What one transfer is called in a message (``push``, ``clone``)."""

    protocol: str
    """``h1``, ``h2``, ``ssh`` or ``git``."""
    repeat: int
    """1-based repeat number."""
    direction: Direction
    """Which way the pack moved."""
    started_at: str
    """ISO 8601 UTC start time."""
    outcome: TransferOutcome
    """How git ended (see :data:`~gitnetdiag.outcomes.TransferOutcome`): ``ok`` (the whole pack
    moved), ``bounded`` (stopped mid-pack at a stable rate or the time budget: rate from the
    bytes moved), ``stalled``, ``hung``, ``failed``, ``interrupted``, ..."""
    failure_kind: FailureKind | None
    """Failure kind when not ok."""
    last_line: str
    """git's last stderr line (empty when ok)."""
    wall_s: float
    """Wall time of git until it ended or was stopped."""
    rate_bytes_per_s: float | None
    """The transfer's rate (slow start excluded for a bounded one), None when nothing was
    measured."""
    moved_bytes: int | None = None
    """Bytes moved as the monitor saw them (the kernel's ``bytes_acked`` of a push's
    sockets, ``bytes_received`` of a clone's, else git's progress); None for runs without
    the monitor."""
    measured_s: float | None = None
    """Seconds the rate was measured over (from the first pack byte moved to the end)."""
    stopped: StopReason | None = None
    """Why the monitor stopped git; None when git ended by itself."""
    last_progress: str | None = None
    """git's last progress line (where a stalled transfer stopped)."""
    artifacts: dict[str, str] = field(default_factory=dict)
    """Artifact kind -> path relative to the run directory (kinds in the subclasses)."""

    def files(self) -> dict[str, str]:
        """Every file the record names (relative to the run directory), by its field."""
        return {f"artifacts.{kind}": path for kind, path in self.artifacts.items()}


@dataclass(frozen=True, kw_only=True)
class PushRecord(TransferRecord):
    """One push of the throwaway branch and its clean-up. ``artifacts``: ``capture``,
    ``capture_decrypted``, ``trace2``, ``curl_trace``, ``stderr``, ``keylog``,
    ``cleanup_stderr``; ``rate_bytes_per_s``: pack_bytes / wall_s for ``ok`` (never for
    ``no-data``), the rate of the bytes moved for ``bounded``."""

    measured_fields: ClassVar[tuple[str, ...]] = ("wall_s", "pack_bytes")
    noun: ClassVar[str] = "push"

    direction: Literal["push"] = "push"
    branch: str
    """Throwaway branch pushed (``gitnetdiag/probe-<id>``)."""
    pack_bytes: int
    """Bytes of the pack pushed."""
    http_version: str | None
    """Negotiated HTTP version of the receive-pack POST (``HTTP/2``, ``HTTP/1.1``)."""
    alpn: str | None
    """ALPN protocol libcurl reported."""
    post_s: float | None
    """receive-pack POST: request header sent to response status (curl trace)."""
    curl_last_info: str | None
    """Last ``== Info:`` line of the curl trace: where a hung push stopped."""
    phases: Trace2Record | None
    """Phases from trace2."""
    capture: CaptureResult | None
    """Packet capture, when captured (path relative to the run directory)."""
    cleanup: RefCleanup = RefCleanup.NOT_RUN
    """What became of the branch (``unconfirmed``: ``cleanup_check_command`` checks)."""
    cleanup_detail: str = ""
    """Why, for anything but a plain ``deleted``/``never-created`` (URLs redacted)."""
    cleanup_s: float | None = None
    """Time the clean-up took: waiting for the server, deleting, verifying."""
    cleanup_command: str | None = None
    """For ``leftover``/``unconfirmed``: the exact command that removes the branch
    (URL redacted)."""
    cleanup_check_command: str | None = None
    """For ``unconfirmed``: the command that shows whether the branch is on the server."""
    pack_objects: int | None = None
    """Objects git said it sent (``Total N``); None when the pack was not finished."""
    pack_written_bytes: int | None = None
    """Pack bytes git said it wrote (``Writing objects: ..., X MiB``, rounded by git)."""
    http_requests: tuple[HttpRequestRecord, ...] = ()
    """The push's HTTP requests in order, with their statuses (HTTP pushes with a curl
    trace; empty otherwise and in runs recorded before it was added)."""

    def files(self) -> dict[str, str]:
        named = super().files()
        return {"capture.path": self.capture.path, **named} if self.capture else named


@dataclass(frozen=True, kw_only=True)
class TimelinePoint:
    """One sample of the monitor while a clone ran (a line of ``<stem>.timeline.jsonl``)."""

    t_s: float
    """Seconds since git was started."""
    stderr_bytes: int
    """Bytes git had written to stderr by then (maps progress lines to times)."""
    received_bytes: int
    """Bytes received so far on git's sockets (``ss`` ``bytes_received``), else git's
    ``Receiving objects`` count."""


@dataclass(frozen=True, kw_only=True)
class PackWaitRecord:
    """A clone the monitor stopped in the server's pack phase (``stopped`` is
    ``server-stall``: the server had spoken, no pack byte had come): how long it waited for
    its pack, and what the server said last."""

    wait_s: float
    """Seconds from the last bytes beyond the server's words (the answer to the fetch
    request) to the stop: the wait for the first pack byte, so far."""
    server_words: str
    """The server's last words, without ``remote:`` (``Counting objects: 45% (450/1000)``)."""
    words_only: bool
    """The words-only bound stopped it (the server's words advanced to the end: a server
    still at work), not a silence of the stall timeout."""
    bound_s: float
    """The bound that stopped it: the words-only limit (stall timeout plus budget) or, for
    a silence, the stall timeout."""


@dataclass(frozen=True, kw_only=True)
class CloneRecord(TransferRecord):
    """One bounded clone into a scratch copy, with the monitor's samples (the progress
    timeline, ``ss -tin`` of both ends), and the removal of that copy. ``artifacts``:
    ``trace2``, ``stderr``, ``packet_trace``, ``timeline``, ``tcpinfo``,
    ``server_tcpinfo``, ``cgroup_cpu`` (the counters of git's cgroup at each sample: one
    :class:`~gitnetdiag.rundir.cgroupcpu.CpuStatSample` a line, when they could be read;
    ``keylog``, ``capture``, ``http2_frames`` with ``--full``)."""

    noun: ClassVar[str] = "clone"

    direction: Literal["fetch"] = "fetch"
    started_epoch_s: float
    """The start as Unix seconds (aligns the timeline with trace2's clock)."""
    # ``field()``: required, not the None of TransferRecord's class attributes (a clone
    # record without them is a damaged fetch.json, said as one).
    moved_bytes: int = field()
    """Bytes received when it ended (the kernel's ``bytes_received`` when sampled)."""
    measured_s: float = field()
    last_progress: str = field()
    tcpinfo_samples: int
    """``ss -tin`` samples of git's sockets recorded."""
    clone_removed: bool
    """The scratch copy's directory was removed and checked gone."""
    server_tcpinfo_samples: int = 0
    """``ss -tin`` samples of the server's sockets of this clone (recorded only when the
    server runs on this machine: the lab, ``--host-netns``, ``--host-local``)."""
    full_warning: str = ""
    """``--full`` on an HTTP/2 clone: why its decrypted frames are missing, else empty."""
    http_requests: tuple[HttpRequestRecord, ...] = ()
    """An HTTPS clone's HTTP requests, from git's curl trace (``curl_trace``); empty over
    SSH and git:// and in older runs."""
    pack_wait: PackWaitRecord | None = None
    """A clone stopped in the server's pack phase: its wait for the pack; None otherwise
    and in older runs."""
    cgroup_cpu: CgroupCpuRecord | None = None
    """The CPU quota and counters of the cgroup git ran in, before and after the clone
    (:mod:`gitnetdiag.rundir.cgroupcpu`); None in older runs."""


@dataclass(frozen=True, kw_only=True)
class SeedBranch:
    """``--fetch-seed``: the generated repository pushed to a throwaway branch, fetched by
    every clone of the run, then deleted (the one write a fetch run may make)."""

    branch: str
    """The throwaway branch, ``gitnetdiag/probe-<id>`` as the push probes name theirs."""
    oid: str
    """The generated commit pushed (the delete's lease)."""
    size_bytes: int
    """Bytes of random data in the generated repository."""
    protocol: str | None = None
    """Protocol of the push that created it (the last one tried when none did)."""
    pushed: bool = False
    """The push succeeded: the branch was created."""
    push_wall_s: float | None = None
    """Wall time of that push."""
    push_error: str = ""
    """git's last line when no push succeeded."""
    push_aftermath: str = "not-started"
    """What the push could still do to the server (``cleanup.Aftermath``)."""
    cleanup: RefCleanup = RefCleanup.NOT_RUN
    """What became of the branch, as :attr:`PushRecord.cleanup`."""
    cleanup_detail: str = ""
    """Why, in one line."""
    cleanup_s: float | None = None
    """Time the clean-up took."""
    remove_command: str | None = None
    """The command that removes it (URL redacted), when it may be left."""
    check_command: str | None = None
    """The ``ls-remote`` that shows whether it is there (URL redacted)."""
    gone_on_server: bool | None = None
    """The ``ls-remote`` after the clean-up listed no such branch (None: not listed)."""


@dataclass(frozen=True, kw_only=True)
class SweepRow:
    """One push of ``--h2-sweep`` (a row of ``native-h2-sweep.json``)."""

    client_window_bytes: int
    """Client SETTINGS_INITIAL_WINDOW_SIZE advertised (server -> client direction)."""
    client_max_frame_bytes: int
    """Client SETTINGS_MAX_FRAME_SIZE advertised."""
    server_initial_window_bytes: int
    """Server's stream window: what bounds the upload."""
    upload_rate_bytes_per_s: float | None
    """Rate of the native upload, None when it failed."""
    stall_count: int
    """Times the sender ran out of HTTP/2 credit."""
    stalled_s: float
    """Seconds spent at zero credit."""
    push_ok: bool
    """Whether the server accepted the pack."""
