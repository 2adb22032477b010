"""What ``gitnetdiag probe`` was asked to do, and where it reports progress.

Apart from the runner so that the modules the runner calls (:mod:`.pushonce`,
:mod:`.safety`) can take these types without importing the runner back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from typing import Protocol as TypingProtocol

from gitnetdiag.probe.budget import CONFIRM_STALL_S, DEFAULT_BUDGET_S, DEFAULT_STALL_TIMEOUT_S
from gitnetdiag.probe.cleanup import DEFAULT_CLEANUP_WAIT_S
from gitnetdiag.probe.gitpush import Transport
from gitnetdiag.redaction import redact_url
from gitnetdiag.rundir.native import H2NativeRecord, NativeRecord, SshNativeRecord
from gitnetdiag.vocabulary import TransportKind

MAX_REPEAT = 100
"""The most pushes (or clones) per protocol a run makes (``--repeat``): a push takes up to
its budget and its clean-up, so 100 of each over four protocols already run for hours."""

CLEANUP_LOOK_MIN_S = 3.0
CLEANUP_LOOK_RTTS = 20
"""Once a black hole is known, each git run of a clean-up gets the longer of
:data:`CLEANUP_LOOK_MIN_S` and this many round trips (an ls-remote over HTTPS took 0.35 s
at 50 ms RTT in the lab's black hole; over SSH it never got past the key exchange)."""


@dataclass(frozen=True, kw_only=True)
class ProbeOptions:
    """Everything ``gitnetdiag probe`` was asked to do."""

    urls: dict[TransportKind, str]
    """Remote URL per protocol (h1 and h2 share the HTTPS URL)."""
    protocols: tuple[TransportKind, ...]
    """Protocols to probe, in order."""
    size_bytes: int
    """Size of the generated repository."""
    seed: int
    """Seed of the generated data."""
    repo: Path | None
    """Push this repository's HEAD instead of a generated one."""
    repeat: int
    """Pushes per protocol."""
    ca_file: str | None
    """CA bundle for HTTPS."""
    insecure: bool
    """Skip HTTPS certificate verification."""
    ssh_command: str | None
    """GIT_SSH_COMMAND."""
    out_dir: Path
    """Run directory to create."""
    full: bool
    """Whole packets plus TLS keylog and a pcapng with the secrets injected."""
    burst: int
    """Concurrent ls-remote operations per protocol (0 = no burst)."""
    timeout_s: float
    """Timeout of each git run."""
    capture: bool
    """Capture packets (when root and tcpdump allow)."""
    data: str = "random"
    """What the generated repository holds: ``random`` (incompressible, packed) or ``text``
    (source-like, loose: the push runs the client's delta search and compression)."""
    extra_options: dict[str, Any] = field(default_factory=dict)
    """More options to record in the manifest (e.g. the lab instance)."""
    native: bool = False
    """After the git pushes, push the same pack with the native HTTP/2 (h2) and SSH
    (paramiko) probes to record the flow-control ledgers (``native-h2.json``,
    ``native-ssh.json``)."""
    ssh_key: str | None = None
    """SSH private key file (the native SSH probe needs it)."""
    ssh_known_hosts: str | None = None
    """known_hosts file (the native SSH probe verifies the host key with it)."""
    h2_sweep: bool = False
    """Repeat the native HTTP/2 upload while advertising different client SETTINGS
    (``native-h2-sweep.json``): shows the rate follows the server's window."""
    budget_s: float | None = DEFAULT_BUDGET_S
    """Time budget of each measured git push: stopped mid-pack once its rate is stable or
    the budget is spent (nothing is created); None for complete pushes (``--complete``)."""
    stall_timeout_s: float | None = DEFAULT_STALL_TIMEOUT_S
    """A push that moves no byte for this long ends as ``stalled``; None: only the timeout."""
    cleanup_wait_s: float = DEFAULT_CLEANUP_WAIT_S
    """How long the clean-up of a push that ended unanswered after sending its whole pack
    waits for the server (a slow pre-receive hook) to create the branch it must delete."""
    fetch_seed_bytes: int | None = None
    """``--direction fetch --fetch-seed SIZE``: push a generated repository of this size to
    a throwaway branch, fetch that branch, delete it (``probe.fetchseed``); None: a fetch
    writes nothing on the server."""
    server_netns: str | None = None
    """The server runs in this network namespace of this machine (the lab's, or
    ``--host-netns``): a fetch samples the server's sockets there (``probe.servertcp``)."""
    server_local: bool = False
    """The server runs in this host's own namespace (``--host-local``): the same, here."""
    cleanup_until: float | None = None
    """No clean-up step runs past this moment (``time.monotonic()``): what is not confirmed
    by then is reported as it stands (``unconfirmed``, ``leftover``), not waited for.
    ``watch`` sets it to its cycle's deadline; None: each clean-up's own bound."""
    cleanup_git_timeout_s: float | None = None
    """Bound on each git run of a push's clean-up (ls-remote, delete); None: the clean-up's
    own. Set by the runner, not asked: once the path is known to swallow full-size
    segments (a path-MTU black hole), the clean-up must not wait on it."""

    def confirming(self, rtt_s: float) -> ProbeOptions:
        """The options of a push that only confirms a known path-MTU black hole: a short
        stall (:data:`~gitnetdiag.probe.budget.CONFIRM_STALL_S`), and a clean-up that
        does not wait on the path."""
        look = max(CLEANUP_LOOK_MIN_S, CLEANUP_LOOK_RTTS * rtt_s)
        return replace(self, stall_timeout_s=min(self.stall_timeout_s or CONFIRM_STALL_S,
                                                 CONFIRM_STALL_S),
                       cleanup_git_timeout_s=look, cleanup_wait_s=min(self.cleanup_wait_s, look))

    def transport(self, protocol: TransportKind) -> Transport:
        return Transport(
            protocol=protocol, url=self.urls[protocol], ca_file=self.ca_file,
            insecure=self.insecure, ssh_command=self.ssh_command,
        )

    def manifest_options(self) -> dict[str, Any]:
        return {
            "protocols": [p.value for p in self.protocols],
            "urls": {p.value: redact_url(u) for p, u in self.urls.items()},
            "size_bytes": self.size_bytes, "seed": self.seed, "data": self.data,
            "repo": str(self.repo) if self.repo else None, "repeat": self.repeat,
            "ca_file": self.ca_file, "insecure": self.insecure, "full": self.full,
            "burst": self.burst, "timeout_s": self.timeout_s, "capture": self.capture,
            "native": self.native, "h2_sweep": self.h2_sweep,
            "cleanup_wait_s": self.cleanup_wait_s, "budget_s": self.budget_s,
            "stall_timeout_s": self.stall_timeout_s,
            **({"fetch_seed_bytes": self.fetch_seed_bytes} if self.fetch_seed_bytes else {}),
            **self.extra_options,
        }


class Reporter(TypingProtocol):
    """Where the runner reports progress (the command renders it with rich)."""

    def begin(self, label: str) -> None: ...
    def done(self, label: str, detail: str, *, ok: bool) -> None: ...
    def warn(self, message: str) -> None: ...
    def moved(self, label: str, moved_bytes: int, rate_bytes_per_s: float | None) -> None: ...
    def phase(self, label: str, text: str) -> None: ...


class SilentReporter:
    """A Reporter that shows nothing (library use, tests)."""

    def begin(self, label: str) -> None:
        return None

    def done(self, label: str, detail: str, *, ok: bool) -> None:
        return None

    def warn(self, message: str) -> None:
        return None

    def moved(self, label: str, moved_bytes: int, rate_bytes_per_s: float | None) -> None:
        return None

    def phase(self, label: str, text: str) -> None:
        return None


class NativeSummary(TypingProtocol):
    """How the progress line sums up a native push, or the sweep, from the raw events.

    The probe records and derives nothing; the probe command passes the pure
    side's replay (:class:`gitnetdiag.pipeline.NativeProgress`, stalls
    included). Without it the line shows what the events say as they are.
    """

    def push(self, record: NativeRecord) -> str: ...
    def sweep(self, records: Sequence[H2NativeRecord]) -> str: ...


class RawSummary:
    """A NativeSummary from the raw events alone: windows and counts, no replay."""

    def push(self, record: NativeRecord) -> str:
        if isinstance(record, SshNativeRecord):
            return f"channel window {record.window_bytes}, {len(record.window_adjusts)} adjusts"
        window = record.server_settings().get("INITIAL_WINDOW_SIZE", "default")
        return f"server window {window}, {len(record.window_updates)} window updates"

    def sweep(self, records: Sequence[H2NativeRecord]) -> str:
        return f"{len(records)} variants"
