"""A download's :class:`Observations`: its clones, each kept whole for the download
detectors (``transfers``) and push-shaped for the culprits of both directions, which
judge the download's evidence with the same detectors (reused, not copied).

Loss, a full link, latency, SYN drops, the backlog, resets and the path MTU are
the same physics whichever way the pack flows; only the roles swap: in a fetch
the server sends and the client receives. So each clone becomes a push-shaped
record of the transfer (:class:`PushObservation`: the bytes received over the
measured time, or how the clone failed), and the download connection's TCP
evidence becomes the :class:`CaptureMetrics` those detectors read, seen from
the *sender of the data* (the server):

- from the client's TCP_INFO (any user): the window the client advertised
  (``rcv_ssthresh``), the path's minimum RTT and the receiver's median RTT
  (``rcv_rtt``: a queue in front of a full link inflates it), the share of the
  data segments that arrived out of order (``rcv_ooopack``: the server's losses, or
  reordering, as the receiver sees them; ``packet-loss`` reads it without a capture), the
  MSS it advertised (``advmss``) and the largest segment it received (``rcv_mss``);
- from a capture of the clone (root), when there is one: the server's
  retransmissions (those that repaired a loss: a segment lost on the path is never
  seen at the receiver), the largest segment the client acknowledged, resets, SYN
  retransmissions, and the share of the transfer the server sent all the client's
  window allowed, from the bytes that arrived per round trip
  (``capture_metrics(..., receiver="a")`` in the pipeline);
- from the server's own socket, when it runs on this machine (the lab,
  ``--host-netns``): its receive-window-limited share (the kernel's
  ``tcpi_rwnd_limited`` over ``tcpi_busy_time``, or the sampled flight at the
  client's window), which replaces the capture's estimate, and its
  application-limited share (the bytes sent with every cap open: the server had
  nothing more to write);
- without the server's socket, the application-limited share is the share of the
  client's download socket's sampled life it carried no data (1 - its bytes over the
  clone's rate x the time sampled; 2 s of samples at least): a server producing the
  pack slower than the path carries leaves the path idle. ``bandwidth-limit`` reads it: a
  full link is never idle, and the receiver's RTT after an idle gap measures the gap,
  not a queue (the lab's CPU-starved ``slow-pack-generation``: HTTP/1.1 clones idle 91%
  and 93% of 20.6 and 22.8 s, their median ``rcv_rtt`` 2.1x and 9.9x the minimum; the
  ``bandwidth-limit`` clones: idle at most 11%, issue 26).

The receive-window-limited share is what ``path-latency`` needs: a clone whose rate is
the client's window over a long RTT.

A path-MTU black hole towards the client is seen from the receiver's side: the server's
full-size segments vanish before they reach the capture, so none of them is seen resent;
the clone stalls with nothing but small segments received, the largest well below the MSS
the client advertised (``max_received_segment_bytes``, read by ``path-mtu-blackhole``).

A short listen backlog is met by a clone only while many clients connect at once, which a
fetch's clones (one after another) never make: ``--burst N`` adds the push's burst after the
clones (N ls-remotes at once, the first step of every clone, then N raw connects), and its
results with the server's host evidence (``host.json``: ListenOverflows, SYN cookies, the
kernel log, the listeners' backlogs) are the push's (``Observations.bursts`` and ``host``),
read by ``listen-backlog-overflow`` as on a push. sshd's ``MaxStartups`` is met the same
way: only connections that wait for authentication at once count against it, so the SSH
burst's refusals (and sshd's log lines) are what ``ssh-maxstartups`` reads, as on a push.

The clones' trace2 time to the ref advertisement is the push's ``ref_advertisement_s``
(``slow-ref-advertisement``); the client's libcurl release is the push's, judged with the
download's known bugs (``client-http-stack``). The findings keep their ids, scores and fix
texts; their summaries and evidence speak of clones and the download (:func:`in_download_words`,
applied by the engine).
"""


from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace

from gitnetdiag.analysis.trace2 import finished_clone_rate
from gitnetdiag.diagnosis.model import Finding
from gitnetdiag.diagnosis.observations import (
    PROTOCOL_ORDER,
    BurstResult,
    CaptureMetrics,
    DeadPath,
    HostEvidence,
    IdlePathProbe,
    Observations,
    ProtocolObservation,
    PushObservation,
    RunInfo,
    RunProblem,
    Trace2Phases,
)
from gitnetdiag.diagnosis.transfers import TransferObservation
from gitnetdiag.outcomes import UNCLASSIFIED_KINDS, FailureKind


def as_push_result(obs: TransferObservation) -> PushObservation:
    """One clone as the push-shaped record the shared detectors read: a measured clone
    moved ``moved_bytes`` at its rate (the transfer, slow start excluded); one that
    finished without a rate (an older run's, its pack between two samples) is still one,
    timed by trace2 or its wall time (:func:`finished_clone_rate`); a failed one says how
    it failed."""
    if obs.measured and obs.rate_bytes_per_s:
        return PushObservation(duration_s=obs.moved_bytes / obs.rate_bytes_per_s,
                          bytes=obs.moved_bytes, projected=obs.stopped is not None,
                          moved_bytes=obs.moved_bytes)
    finished = (finished_clone_rate(obs.phases, obs.moved_bytes, obs.wall_s)
                if obs.outcome == "ok" else None)
    if finished is not None:
        return PushObservation(duration_s=finished[1], bytes=finished[0],
                          moved_bytes=obs.moved_bytes)
    kind = obs.failure_kind or UNCLASSIFIED_KINDS.get(obs.outcome, FailureKind.OTHER)
    return PushObservation(duration_s=obs.wall_s, bytes=obs.moved_bytes, ok=False, error_kind=kind,
                      error_message=obs.last_line or obs.outcome, moved_bytes=obs.moved_bytes)


def tcp_info_metrics(obs: TransferObservation) -> CaptureMetrics | None:
    """The client's TCP_INFO of the download socket as the sender's view of the path: the
    window the client advertised, the path's minimum RTT and the receiver's median RTT."""
    tcp = obs.tcp
    if tcp is None:
        return None
    return CaptureMetrics(
        source=f"TCP_INFO ({tcp.source}) fetch {obs.protocol} #{obs.repeat}",
        min_rtt_s=tcp.min_rtt_s, median_rtt_s=tcp.median_rtt_s, handshake_seen=False,
        advertised_window_max_bytes=tcp.advertised_window_max_bytes,
        out_of_order_share=tcp.out_of_order_share,
        mss_bytes=tcp.full_segment_bytes, max_received_segment_bytes=tcp.rcv_mss_max_bytes,
        self_limited_share=obs.idle_share)


def _evidence_of(obs: TransferObservation) -> CaptureMetrics | None:
    """The capture's metrics, else TCP_INFO's; the server's own receive-window-limited and
    application-limited shares over the estimates when the server was sampled. Without the
    server's, the sender's application-limited share is the share of its life the client's
    download socket sat idle (:attr:`TransferObservation.idle_share`)."""
    evidence = obs.capture if obs.capture is not None else tcp_info_metrics(obs)
    if evidence is None:
        return None
    if obs.sender is None:
        if evidence.self_limited_share is None and obs.idle_share is not None:
            return replace(evidence, self_limited_share=obs.idle_share)
        return evidence
    return replace(evidence, rwnd_limited_share=obs.sender.rwnd_limited_share,
                   self_limited_share=obs.sender.app_share,
                   source=f"{evidence.source}; window and application shares: "
                          f"{obs.sender.source}")


def _handshakes(best: CaptureMetrics | None, clones: Sequence[TransferObservation]
                ) -> CaptureMetrics | None:
    """The best clone's evidence with the SYN and SYN-ACK retransmissions of every clone's
    capture summed: each clone opens its own download connection, and a dropped SYN costs
    the clone that met it (``syn-drop``), whichever clone measured most."""
    captured = [obs.capture for obs in clones if obs.capture is not None]
    if best is None or not captured:
        return best
    syn = sum(c.syn_retransmissions or 0 for c in captured)
    synack = sum(c.synack_retransmissions or 0 for c in captured)
    if not syn and not synack:
        return best
    return replace(best, syn_retransmissions=syn, synack_retransmissions=synack)


def _phases(clones: Sequence[TransferObservation]) -> Trace2Phases | None:
    """The clones' trace2 phases the push detectors read, median over clones as for pushes:
    the time to the ref advertisement (connect, TLS/SSH, authentication, the refs)."""
    seen = [obs.phases.ref_advertisement_s for obs in clones
            if obs.phases.ref_advertisement_s is not None]
    return Trace2Phases(ref_advertisement_s=statistics.median(seen)) if seen else None


def download_observations(clones: Sequence[TransferObservation], *,
                          bursts: Sequence[BurstResult] = (),
                          host: HostEvidence | None = None,
                          requested: Sequence[str] = (),
                          problems: Sequence[RunProblem] = (),
                          started: str = "", target_url: str = "",
                          dead_paths: Sequence[DeadPath] = (),
                          idle_paths: Mapping[str, IdlePathProbe] = {}) -> Observations:
    """A fetch's clones as one :class:`Observations`: each clone whole in ``transfers``
    (the download detectors' input) and push-shaped per protocol (what the culprits of both
    directions read), with the fetch's bursts (``--burst``), the idle probe of each
    protocol's endpoint (``idle_paths``, after a clone that heard nothing) and the server's
    host evidence, when there are; ``started`` and ``target_url`` as the push's run info has
    them (empty for a bare capture)."""
    protocols: dict[str, ProtocolObservation] = {}
    for name in PROTOCOL_ORDER:
        mine = [obs for obs in clones if obs.protocol == name]
        if not mine:
            continue
        # The TCP evidence of the clone that measured most (else the first one's).
        best = max(mine, key=lambda obs: (obs.measured, obs.moved_bytes))
        protocols[name] = ProtocolObservation(
            pushes=tuple(as_push_result(obs) for obs in mine),
            capture=_handshakes(_evidence_of(best), mine),
            trace2=_phases(mine),
            http_requests=tuple(r for obs in mine for r in obs.http_requests),
            idle_path=idle_paths.get(name))
    rtts = [obs.path_rtt_s for obs in clones if obs.path_rtt_s]
    libcurl = next((obs.libcurl for obs in clones if obs.libcurl), None)
    return Observations(
        run=RunInfo(started=started, target_url=target_url,
                    rtt_s=min(rtts) if rtts else None, libcurl_version=libcurl, transfer="download",
                    requested_protocols=tuple(requested) or tuple(protocols),
                    measured_by="fetch"),
        protocols=protocols, bursts=tuple(bursts), host=host, transfers=tuple(clones),
        problems=tuple(problems), dead_paths=tuple(dead_paths))


# git's own names keep their words (``git-upload-pack`` serves a clone).
_WORDS = tuple((re.compile(rf"\b{word}\b(?!-pack)"), new) for word, new in (
    ("pushes", "clones"), ("pushed", "cloned"), ("push", "clone"), ("uploaded", "downloaded"),
    ("uploads", "downloads"), ("upload", "download"), ("Upload", "Download"), ("Push", "Clone")))


def _reworded(text: str) -> str:
    for pattern, word in _WORDS:
        text = pattern.sub(word, text)
    return text


def in_download_words(finding: Finding) -> Finding:
    """A shared culprit's finding told of clones: its summary and evidence say clone and
    download where the push detector says push and upload; id, score, cost and fix stay."""
    evidence = tuple(replace(e, what=_reworded(e.what), source=_reworded(e.source))
                     for e in finding.evidence)
    return replace(finding, summary=_reworded(finding.summary), evidence=evidence)

