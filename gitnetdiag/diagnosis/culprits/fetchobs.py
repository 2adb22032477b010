"""The download direction's observation of one clone (the input of every download detector)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gitnetdiag.analysis.fetchphases import FetchPhases
from gitnetdiag.analysis.fetchsender import SenderTcpSummary
from gitnetdiag.analysis.fetchtcp import DownloadTcpSummary
from gitnetdiag.analysis.fetchwire import GitH2Window
from gitnetdiag.diagnosis.culprits._common import Hit
from gitnetdiag.diagnosis.observations import CaptureMetrics
from gitnetdiag.outcomes import MEASURED_OUTCOMES, FailureKind, PushOutcome

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
class FetchObservation:
    """One clone as the fetch pipeline saw it (the detectors' input)."""

    protocol: str
    """``h1``, ``h2``, ``ssh`` or ``git``."""
    repeat: int
    """1-based repeat number."""
    outcome: PushOutcome
    """The record's outcome (``ok``, ``bounded``, ``stalled``, ...)."""
    moved_bytes: int
    """Bytes received when it ended."""
    measured_s: float
    """Seconds the rate was measured over."""
    rate_bytes_per_s: float | None
    """Download rate, None when nothing was measured."""
    wall_s: float
    """Wall time of the clone."""
    phases: FetchPhases
    """Its phases."""
    tcp: DownloadTcpSummary | None
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

    @property
    def rtt_s(self) -> float | None:
        """Best RTT known: the path's connect time, else the socket's minimum."""
        if self.path_rtt_s:
            return self.path_rtt_s
        return self.tcp.min_rtt_s if self.tcp is not None else None

    @property
    def measured(self) -> bool:
        return self.outcome in MEASURED_OUTCOMES and bool(self.rate_bytes_per_s)

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


def costliest(observations: Iterable[FetchObservation],
              detect: Callable[[FetchObservation], Hit | None]) -> Hit | None:
    """The costliest hit of a per-clone detector over every clone, None when none fired."""
    hits = [hit for obs in observations if (hit := detect(obs)) is not None]
    return max(hits, key=lambda hit: hit.cost_s) if hits else None
