"""Culprits of the download direction (clone/fetch), from the clones a fetch run measured.

In a fetch the roles swap: the client receives, so *its* receive window caps
the rate at ``window / RTT``, and the server works before the first byte
(counting and compressing the objects of the pack). Each detector reads the
:class:`FetchObservation` of every clone and returns a :class:`Hit` (score,
cost in seconds on the measured clone, evidence, fix) or None; they are
registered in :data:`DOWNLOAD_CULPRITS` and ranked by cost x score. A finding's
score is the detector's raw score calibrated on the download direction's fault
matrix (:data:`~gitnetdiag.diagnosis.culprits.fetchfitted.FETCH_FITTED`, written by
``benchmarks/fault_matrix.py --direction fetch --fit``) where the table has the id,
else the raw score itself, as for the push culprits.

- ``client-tcp-receive-window-clamp``: the rate sits at the advertised
  window's ``window / RTT`` while the client's receive buffer stopped at the
  ceiling ``tcp_rmem`` (or ``SO_RCVBUF``) sets;
- ``server-pack-generation``: the wait from the fetch request to the first
  pack byte (the server counting and compressing) dominates the clone;
- ``server-send-buffer`` (:mod:`.fetchsender`): the server's bytes in flight sit
  well below the client's window with no queue on the path;
- ``client-index-pack-cpu`` and ``client-http2-window`` (:mod:`.fetchclient`):
  the client's index-pack dominates; the client's libcurl advertises a small
  HTTP/2 window for its version.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from gitnetdiag.diagnosis.calibration import Calibration
from gitnetdiag.diagnosis.culprits._common import Hit
from gitnetdiag.diagnosis.culprits.edgeresponse import edge_response_buffering
from gitnetdiag.diagnosis.culprits.fetchclient import client_http2_window, client_index_pack_cpu
from gitnetdiag.diagnosis.culprits.fetchfitted import FETCH_FITTED
from gitnetdiag.diagnosis.culprits.fetchobs import FetchObservation as FetchObservation
from gitnetdiag.diagnosis.culprits.fetchobs import costliest
from gitnetdiag.diagnosis.culprits.fetchsender import server_send_buffer
from gitnetdiag.diagnosis.culprits.fetchshared import shared_findings
from gitnetdiag.diagnosis.culprits.weights import weight
from gitnetdiag.diagnosis.model import Evidence, Finding, Quantity
from gitnetdiag.diagnosis.observations import BurstResult, HostEvidence

WINDOW_BOUND_SHARE = 0.5
"""A rate at least this share of ``window / RTT`` is held by the window (the rest is the
receiver's ACK pacing and slow start)."""
BUFFER_AT_CEILING = 0.9
"""A receive buffer this close to ``tcp_rmem``'s maximum has no room left to grow."""
SMALL_WINDOW_BYTES = 256 * 1024
"""Without the client's ``tcp_rmem``: an advertised window cap below this is clamped
(Linux autotuning grows it to megabytes on any path with more than a few ms of RTT)."""
UNCLAMPED_WINDOW_BYTES = 3 * 1024 * 1024
"""The window Linux's default ``tcp_rmem`` maximum (6 MiB) lets the client advertise
(half the buffer with ``tcp_adv_win_scale`` 1): the rate an unclamped client could reach."""
PACK_GENERATION_MIN_S = 1.0
"""Seconds before the first pack byte that count as the server's work, not noise."""
PACK_GENERATION_SHARE = 0.3
"""The wait for the first pack byte is this share of the clone's time up to its end."""


def client_receive_window(observations: Sequence[FetchObservation]) -> Hit | None:
    """The client's advertised window caps the download (``tcp_rmem`` clamp)."""
    return costliest(observations, _window_hit)


def _window_hit(obs: FetchObservation) -> Hit | None:
    tcp, rtt = obs.tcp, obs.rtt_s
    if not obs.measured or tcp is None or not rtt or tcp.advertised_window_max_bytes is None:
        return None
    window = tcp.advertised_window_max_bytes
    limit = window / rtt
    rate = obs.rate_bytes_per_s or 0.0
    if rate < WINDOW_BOUND_SHARE * limit:
        return None
    ceiling = obs.client_rmem_max_bytes
    buffer = tcp.receive_buffer_max_bytes
    # With the client's tcp_rmem and its socket's buffer known, the buffer at the ceiling is
    # the clamp; a small window below an unreached ceiling is autotuning still growing.
    known = ceiling is not None and buffer is not None
    at_ceiling = known and buffer >= BUFFER_AT_CEILING * ceiling  # type: ignore[operator]
    if (known and not at_ceiling) or (not known and window >= SMALL_WINDOW_BYTES):
        return None
    unclamped = UNCLAMPED_WINDOW_BYTES / rtt
    cost = obs.measured_s - obs.moved_bytes / unclamped if unclamped > rate else 0.0
    evidence = [
        Evidence(what="client's advertised receive window (largest rcv_ssthresh)",
                 value=float(window), unit="B", source=f"{tcp.source}, fetch {obs.protocol}"),
        Evidence(what="download rate", value=rate, unit="B/s", threshold=WINDOW_BOUND_SHARE * limit,
                 comparison=">=", basis="half of {} / RTT {}",
                 basis_terms=(Quantity(value=float(window), unit="B"),
                              Quantity(value=rtt, unit="s")),
                 source=f"fetch {obs.protocol} #{obs.repeat}"),
    ]
    if buffer is not None:
        evidence.append(Evidence(
            what="client's receive buffer (skmem rb)", value=float(buffer), unit="B",
            threshold=BUFFER_AT_CEILING * ceiling if ceiling else None,
            comparison=">=" if ceiling else None,
            basis="90% of the tcp_rmem maximum {}" if ceiling else "",
            basis_terms=(Quantity(value=float(ceiling), unit="B"),) if ceiling else (),
            source=f"{tcp.source}; client sysctl net.ipv4.tcp_rmem"))
    return Hit(
        score=weight("client-tcp-receive-window-clamp",
                     "buffer-at-ceiling" if at_ceiling else "window-bound"),
        cost_s=max(0.0, cost),
        summary=(f"the client advertised at most {window} B, so the download ran at "
                 f"window / RTT ({rate:.0f} B/s): its receive buffer is clamped"),
        evidence=tuple(evidence),
        fix=("raise the client's receive buffer: the third value of sysctl net.ipv4.tcp_rmem "
             "(Linux's default is 6291456) to at least twice the path's bandwidth-delay "
             "product, and net.core.rmem_max when an application sets SO_RCVBUF"),
        cost_protocol=obs.protocol,
    )


def server_pack_generation(observations: Sequence[FetchObservation]) -> Hit | None:
    """The server's counting and compressing before the first pack byte dominate."""
    best: Hit | None = None
    for obs in observations:
        wait = obs.phases.server_pack_generation_s
        if wait is None:
            continue
        work = wait - (obs.rtt_s or 0.0)
        end = obs.phases.total_s or obs.wall_s
        if work < PACK_GENERATION_MIN_S or work < PACK_GENERATION_SHARE * end:
            continue
        evidence = [Evidence(
            what="fetch request to first pack byte", value=wait, unit="s",
            threshold=PACK_GENERATION_SHARE * end, comparison=">=",
            basis="30% of the clone's {}", basis_terms=(Quantity(value=end, unit="s"),),
            source=f"trace2 negotiation + git progress, fetch {obs.protocol} #{obs.repeat}")]
        if obs.phases.server_objects_counted is not None:
            evidence.append(Evidence(what="objects the server counted",
                                     value=float(obs.phases.server_objects_counted),
                                     unit="count", source="sideband 'remote: Counting objects'"))
        if obs.phases.server_objects_compressed is not None:
            evidence.append(Evidence(what="objects the server compressed (delta search)",
                                     value=float(obs.phases.server_objects_compressed),
                                     unit="count",
                                     source="sideband 'remote: Compressing objects'"))
        hit = Hit(
            score=min(weight("server-pack-generation", "cap"),
                      weight("server-pack-generation", "base") + work / end),
            cost_s=work,
            summary=(f"the server worked {work:.1f} s counting and compressing objects "
                     f"before the first pack byte of a {end:.1f} s clone"),
            evidence=tuple(evidence),
            fix=("on the server: 'git repack -adb' (one pack with a reachability bitmap), "
                 "repack.writeBitmaps=true so later repacks keep it, pack.useBitmaps=true "
                 "(the default); for the user: 'git clone --filter=blob:none' (or a shallow "
                 "clone) asks for less"),
            cost_protocol=obs.protocol,
        )
        if best is None or hit.cost_s > best.cost_s:
            best = hit
    return best


DownloadDetector = Callable[[Sequence[FetchObservation]], Hit | None]

DOWNLOAD_CULPRITS: tuple[tuple[str, str, DownloadDetector], ...] = (
    ("client-tcp-receive-window-clamp", "Client TCP receive window clamped",
     client_receive_window),
    ("server-pack-generation", "Server pack generation before the first byte",
     server_pack_generation),
    ("server-send-buffer", "Server or edge send buffer caps the download", server_send_buffer),
    ("client-index-pack-cpu", "Client CPU resolving deltas (index-pack)", client_index_pack_cpu),
    ("client-http2-window", "Client libcurl's HTTP/2 download window", client_http2_window),
    ("edge-response-buffering", "Edge buffers the pack to a slow disk", edge_response_buffering),
)
"""Download culprits: id (stable; direction-specific ids say so), title, detector."""

MIN_COST_S = 0.5
"""A culprit costing less than this on the measured clone is not ranked."""
MIN_SCORE = 0.25
"""A finding less confident than this is not ranked (the push engine's ``MIN_SCORE``)."""


def confidence(culprit_id: str, raw_score: float,
               calibrations: Mapping[str, Calibration] | None = None) -> float:
    """A download finding's score: the raw score calibrated by ``calibrations`` (default: the
    shipped :data:`FETCH_FITTED`; ``{}``: the hand-set weights) where it has the id."""
    table = FETCH_FITTED if calibrations is None else calibrations
    calibration = table.get(culprit_id)
    if calibration is None:
        return min(1.0, max(0.0, raw_score))
    return calibration.confidence(raw_score)


def rank_download(observations: Sequence[FetchObservation],
                  culprits: Sequence[tuple[str, str, DownloadDetector]] = DOWNLOAD_CULPRITS,
                  *, shared: bool = True,
                  calibrations: Mapping[str, Calibration] | None = None,
                  bursts: Sequence[BurstResult] = (), host: HostEvidence | None = None,
                  ) -> tuple[Finding, ...]:
    """Every download culprit that fired, scores calibrated as :func:`confidence` says, and
    (``shared``) every direction-independent push culprit on the same clones
    (:mod:`.fetchshared`, scored by the push culprits' own calibration; they also read the
    fetch's ``bursts`` and the server's ``host`` evidence), costliest (x score) first."""
    findings = shared_findings(observations, MIN_COST_S, bursts=bursts, host=host) \
        if shared else []
    for culprit_id, title, detect in culprits:
        hit = detect(observations)
        if hit is None or hit.cost_s < MIN_COST_S:
            continue
        score = round(confidence(culprit_id, hit.score, calibrations), 3)
        if score < MIN_SCORE:
            continue
        findings.append(Finding(id=culprit_id, title=title, score=score, cost_s=hit.cost_s,
                                summary=hit.summary, evidence=hit.evidence, fix=hit.fix,
                                cost_protocol=hit.cost_protocol))
    return tuple(sorted(findings, key=lambda f: f.cost_s * f.score, reverse=True))
