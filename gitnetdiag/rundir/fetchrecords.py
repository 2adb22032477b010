"""What ``fetch.json`` holds: the download direction of a run (``probe --direction fetch``).

A fetch run clones what the URL serves over each protocol, bounded like a
push (stopped mid-pack once the rate is stable or the budget is spent), and
writes nothing on the server. The probe records raw facts only: how the
monitored clone ended, the bytes it moved, the files git and the monitor
wrote (trace2 events, stderr with the sideband progress, the packet trace of
the ref advertisement, ``ss -tin`` samples, the progress timeline). The
phases are derived from those files by :mod:`gitnetdiag.analysis.fetchphases`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from gitnetdiag.outcomes import MEASURED_OUTCOMES, FailureKind, PushOutcome
from gitnetdiag.rundir.manifest import (
    bad_run_dir,
    check_names,
    check_numbers,
    inside,
    read_json_object,
    write_json_atomically,
)
from gitnetdiag.rundir.records import (
    BurstRecord,
    PathMeasurement,
    RefCleanup,
    RunError,
    RunStatus,
    StopReason,
    ToolVersions,
)
from gitnetdiag.serial import Malformed, from_jsonable

FETCH_SCHEMA = "gitnetdiag.fetch/1"
"""Schema of ``fetch.json``."""
FETCH_FILE = "fetch.json"
"""The fetch run's record in the run directory."""

Direction = Literal["fetch", "push", "both"]
"""Which way a run measures: ``push`` uploads to a throwaway branch, ``fetch`` clones."""


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
class FetchRecord:
    """One bounded clone over one protocol, and the removal of its partial clone."""

    protocol: str
    """``h1``, ``h2``, ``ssh`` or ``git``."""
    repeat: int
    """1-based repeat number."""
    direction: Literal["fetch"]
    """Always ``fetch``: this record measured the download direction."""
    started_at: str
    """ISO 8601 UTC start time."""
    started_epoch_s: float
    """The same start as Unix seconds (aligns the timeline with trace2's clock)."""
    outcome: PushOutcome
    """``ok`` (the whole clone finished), ``bounded`` (stopped mid-pack at a stable rate or
    the time budget: rate from the bytes moved), ``stalled``, ``hung``, ``failed``,
    ``interrupted``."""
    failure_kind: FailureKind | None
    """Failure kind when not ok."""
    last_line: str
    """git's last stderr line (empty when ok)."""
    wall_s: float
    """Wall time of git clone until it ended or was stopped."""
    moved_bytes: int
    """Bytes received when it ended (the kernel's ``bytes_received`` when sampled)."""
    measured_s: float
    """Seconds the rate was measured over (from the first pack byte)."""
    rate_bytes_per_s: float | None
    """Download rate (slow start excluded), None when nothing moved."""
    stopped: StopReason | None
    """Why the monitor stopped git; None when git ended."""
    last_progress: str
    """git's last progress line."""
    tcpinfo_samples: int
    """``ss -tin`` samples of git's sockets recorded."""
    clone_removed: bool
    """The partial clone's directory was removed and checked gone."""
    artifacts: dict[str, str] = field(default_factory=dict)
    """Artifact kind (``trace2``, ``stderr``, ``packet_trace``, ``timeline``, ``tcpinfo``,
    ``server_tcpinfo``) -> path relative to the run directory."""
    server_tcpinfo_samples: int = 0
    """``ss -tin`` samples of the server's sockets of this clone (recorded only when the
    server runs on this machine: the lab, ``--host-netns``, ``--host-local``)."""
    full_warning: str = ""
    """``--full`` on an HTTP/2 clone: why its decrypted frames are missing, else empty
    (artifacts ``keylog``, ``capture``, ``http2_frames`` when written)."""


@dataclass(frozen=True, kw_only=True)
class FetchSeed:
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
    """What became of the branch: ``deleted``, ``never-created``, ``leftover``,
    ``unconfirmed`` (``cleanup.RefCleanup``), ``not-run`` before the clean-up."""
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
class H2DownloadRecord:
    """One native HTTP/2 upload-pack fetch under a chosen window (``probe.fetchh2``): the
    server's DATA frames as they arrived, and the credit it had left after each."""

    label: str
    """Which window: ``HTTP/2 default`` (65,535 B) or ``large``."""
    window_bytes: int
    """The window the client advertised (stream ``SETTINGS_INITIAL_WINDOW_SIZE``; the
    connection window raised to it when larger than the default)."""
    outcome: str
    """``ok`` (whole pack), ``bounded`` (cancelled at a stable rate or the budget),
    ``stalled``, ``failed``."""
    error: str = ""
    """``reference: message`` when failed."""
    stopped: str | None = None
    """Why the pack stream was cancelled (``stable``, ``budget``, ``stall``, ``timeout``)."""
    server_settings: dict[str, int] = field(default_factory=dict)
    """The server's SETTINGS."""
    request_t_s: float | None = None
    """When the fetch request was sent, seconds since the connection opened."""
    data_t_s: tuple[float, ...] = ()
    """Arrival of each DATA frame of the pack stream, seconds since the connection opened."""
    data_bytes: tuple[int, ...] = ()
    """Flow-controlled bytes of each of those frames."""
    credit_left_bytes: tuple[int, ...] = ()
    """The stream credit the server had left after each frame (after h2's refills)."""
    received_bytes: int = 0
    """Pack-stream bytes received."""
    rate_bytes_per_s: float | None = None
    """Rate of the pack stream (slow start excluded, as for git's clones)."""


@dataclass(frozen=True, kw_only=True)
class SshDownloadRecord:
    """One native SSH upload-pack fetch (``probe.sshfetch``): the channel window this client
    granted the server, each read of the pack as it arrived, each window adjust it sent."""

    target: str
    """``host:port``."""
    outcome: str
    """``ok`` (whole pack), ``bounded`` (closed at a stable rate or the budget), ``stalled``,
    ``failed``."""
    error: str = ""
    """``reference: message`` when failed."""
    stopped: str | None = None
    """Why the channel was closed early (``stable``, ``budget``, ``stall``, ``timeout``)."""
    server_banner: str = ""
    """The server's SSH version string."""
    connect_s: float | None = None
    """TCP connect time."""
    kex_s: float | None = None
    """Key exchange and host-key check."""
    auth_s: float | None = None
    """Public-key authentication."""
    client_window_bytes: int = 0
    """The channel window this client granted the server at the channel's open (what the
    server may send before the client's first SSH_MSG_CHANNEL_WINDOW_ADJUST)."""
    client_max_packet_bytes: int = 0
    """The largest channel packet this client accepts."""
    server_window_bytes: int = 0
    """The window the server granted this client (the request's side)."""
    wants: int = 0
    """Ref tips asked for (``want`` lines)."""
    request_t_s: float | None = None
    """When the want/done request was sent, seconds since the channel opened."""
    read_t_s: tuple[float, ...] = ()
    """Each read of the pack stream, seconds since the channel opened."""
    read_bytes: tuple[int, ...] = ()
    """Bytes of each of those reads."""
    adjust_t_s: tuple[float, ...] = ()
    """Each window adjust this client sent (its grant renewed), seconds since the channel
    opened."""
    adjust_bytes: tuple[int, ...] = ()
    """Bytes each of those adjusts granted."""
    received_bytes: int = 0
    """Bytes of the upload-pack answer received (pack, progress, NAK)."""
    rate_bytes_per_s: float | None = None
    """Rate of the answer (slow start excluded, as for git's clones)."""


@dataclass(frozen=True, kw_only=True)
class FetchProtocolRun:
    """Every fetch over one protocol."""

    protocol: str
    """``h1``, ``h2``, ``ssh`` or ``git``."""
    url: str
    """Remote URL, redacted."""
    endpoint: str
    """``host:port`` the clones connect to."""
    fetches: tuple[FetchRecord, ...] = ()
    """Fetches in order."""
    burst: BurstRecord | None = None
    """``--burst N``: N ls-remotes at once then N raw connects, after the clones (read-only;
    None without ``--burst`` and in fetch.json files written before it was added)."""


@dataclass(frozen=True, kw_only=True)
class FetchManifest:
    """``fetch.json``: the download direction of a run directory."""

    schema: str
    """Always :data:`FETCH_SCHEMA`."""
    direction: Literal["fetch"]
    """Always ``fetch``."""
    tool_version: str
    """gitnetdiag version that wrote it."""
    run_id: str
    """Random id of the run."""
    started_at: str
    """ISO 8601 UTC."""
    finished_at: str | None
    """ISO 8601 UTC, None while running or after a crash."""
    status: RunStatus
    """``running``, ``complete``, ``failed`` or ``interrupted``."""
    options: dict[str, Any]
    """Options of the run (URLs redacted)."""
    environment: ToolVersions | None
    """Versions of git, libcurl, OpenSSH, ..."""
    protocols: tuple[FetchProtocolRun, ...]
    """One entry per protocol fetched, in order."""
    paths: tuple[PathMeasurement, ...]
    """Path measurements, one per endpoint."""
    errors: tuple[RunError, ...]
    """Errors met (the run went on where it could)."""
    warnings: tuple[str, ...]
    """Warnings."""
    client_tcp_rmem: tuple[int, ...] | None = None
    """The probing host's ``net.ipv4.tcp_rmem`` (min, default, max receive buffer): the
    ceiling of the window a download can get; None when unreadable."""
    h2_downloads: tuple[H2DownloadRecord, ...] = ()
    """Native HTTP/2 download ledgers, one per window, side by side (``--native`` with
    HTTP/2 among the protocols)."""
    seed: FetchSeed | None = None
    """``--fetch-seed``: the throwaway branch the clones fetched; None: they fetched what
    the URL serves and nothing was written on the server."""
    ssh_downloads: tuple[SshDownloadRecord, ...] = ()
    """The native SSH download ledger (``--native`` with SSH among the protocols)."""


def write_fetch_manifest(run_dir: Path, manifest: FetchManifest) -> Path:
    """Write ``fetch.json`` atomically."""
    return write_json_atomically(run_dir / FETCH_FILE, manifest)


def check_fetch_values(run_dir: Path, manifest: FetchManifest) -> None:
    """Raise ``Malformed`` for what the types allow but a fetch run cannot have, as
    :func:`~gitnetdiag.rundir.manifest.check_values` does for ``manifest.json``: an unknown
    protocol, an endpoint without a port, an artifact path leaving ``run_dir``, a number
    that is negative (the native ledgers' credit aside), NaN, infinite or absurdly large,
    a measured clone of no time."""
    check_numbers(replace(manifest, h2_downloads=()), "fetch")
    for index, ledger in enumerate(manifest.h2_downloads):
        where = f"fetch.h2_downloads[{index}]"
        check_numbers(replace(ledger, credit_left_bytes=()), where)
        check_numbers(ledger.credit_left_bytes, f"{where}.credit_left_bytes", negative=True)
    for index, run in enumerate(manifest.protocols):
        names = [run.protocol, *(record.protocol for record in run.fetches)]
        if run.burst is not None:
            names.append(run.burst.protocol)
        check_names(names, run.endpoint, f"fetch.{run.protocol}")
        for number, record in enumerate(run.fetches):
            if record.outcome in MEASURED_OUTCOMES and record.wall_s <= 0:
                raise Malformed(f"fetch.protocols[{index}].fetches[{number}].wall_s must be "
                                f"above 0 for a clone with outcome {record.outcome!r}, got "
                                f"{record.wall_s!r}")
            for kind, relative in record.artifacts.items():
                inside(run_dir, relative, f"fetch.{run.protocol}[{record.repeat}].{kind}")
        if run.burst is not None and run.burst.capture is not None:
            inside(run_dir, run.burst.capture, f"fetch.{run.protocol}.burst.capture")


def load_fetch_manifest(run_dir: Path) -> FetchManifest | None:
    """``fetch.json`` of a run directory, None when the run fetched nothing; ``bad-run-dir``
    when it is not one (wrong schema, wrong types, values :func:`check_fetch_values`
    refuses)."""
    data = read_json_object(run_dir / FETCH_FILE)
    if data is None:
        return None
    if data.get("schema") != FETCH_SCHEMA:
        raise bad_run_dir(f"{FETCH_FILE}: schema {data.get('schema')!r}, expected {FETCH_SCHEMA!r}")
    try:
        manifest = from_jsonable(FetchManifest, data, where="fetch", unknown="ignore")
        check_fetch_values(run_dir, manifest)
    except Malformed as exc:
        raise bad_run_dir(f"{run_dir / FETCH_FILE}: {exc}") from exc
    return manifest
