"""A bare capture (no run directory) -> Observations -> Diagnosis.

A support engineer often holds only a pcap from the customer's laptop or
server. This finds the git transfers in it (ports 443/22/9418, and on any
port by content: a TLS ClientHello with its ALPN and SNI, the ``SSH-2.0-``
banner, a ``git://`` request), orients each client -> server (the side that sent the SYN or
the request, else the side away from the well-known port, so a server-side capture
works the same) and tells which way its pack flowed (the request's git service, else
the bytes each way: :mod:`~gitnetdiag.pipeline._capture_flow`). A capture whose biggest
pack went up is read as pushes, one :class:`ProtocolObservation` per transport found;
one whose biggest pack came down is read as clones, in the download direction of the
one engine (a push or clone beside it is said, not diagnosed). There is no A/B
reference, no trace2 and no host; the culprits' capture-only rules use what remains
and say what could not be seen. Nothing git-like in the capture is a named
``capture`` problem, never healthy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from gitnetdiag.analysis import h2ledger
from gitnetdiag.analysis.capture_analysis import CaptureAnalysis, analyze_capture
from gitnetdiag.analysis.h1responses import H1Response
from gitnetdiag.analysis.tcp import ConnectionAnalysis
from gitnetdiag.analysis.window import forward_filled
from gitnetdiag.capture.sniff import Sniffed, sniff_connections
from gitnetdiag.diagnosis import observations as obs
from gitnetdiag.diagnosis.engine import diagnose
from gitnetdiag.diagnosis.model import Diagnosis
from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.outcomes import FailureKind
from gitnetdiag.pipeline._capture_flow import (
    MIN_PACK_BYTES,
    UNSEEN,
    Transfer,
    at_receiver,
    capture_of_clones,
    pack_direction,
    swapped,
)
from gitnetdiag.pipeline._connections import count_by_kind, handshake_tally
from gitnetdiag.pipeline._metrics import capture_metrics, flight_series

WELL_KNOWN: dict[int, obs.ProtocolName] = {443: "h2", 22: "ssh", 9418: "git"}
"""Ports that name a git transport when the payload is not captured (443: HTTP/2 or
HTTP/1.1 over TLS, taken as HTTPS with HTTP/2 possible)."""


def _classify(conn: ConnectionAnalysis, s: Sniffed | None
              ) -> tuple[obs.ProtocolName, int, str] | None:
    """The transport and the server port of one connection (``s``: what its payload showed),
    or None when not git-like."""
    c = conn.connection
    server = c.b_port
    if s is not None and s.client_port is not None:
        server = c.b_port if s.client_port == c.a_port else c.a_port
    elif not c.syn_seen and c.a_port in WELL_KNOWN and c.b_port not in WELL_KNOWN:
        server = c.a_port
    if s is not None and s.git_service:
        return "git", server, f"git:// request {s.git_service}"
    if s is not None and s.http_service:
        return "h1", server, f"HTTP request {s.http_service}"
    if s is not None and s.ssh_banner:
        if c.a_port == 22 or c.b_port == 22:
            server = 22
        return "ssh", server, f"SSH banner {s.ssh_banner!r}"
    if s is not None and s.tls:
        sni = f", SNI {s.sni}" if s.sni else ""
        if s.alpn:
            proto: obs.ProtocolName = "h2" if "h2" in s.alpn else "h1"
            return proto, server, f"TLS ClientHello, ALPN {','.join(s.alpn)}{sni}"
        return "h2", server, f"TLS ClientHello (ALPN not captured{sni})"
    for port in (c.b_port, c.a_port):
        if port in WELL_KNOWN:
            return WELL_KNOWN[port], port, f"port {port}"
    return None


def _directed(conn: ConnectionAnalysis, server_port: int) -> ConnectionAnalysis:
    """The connection with ``a`` the client: swapped when the capture began after the SYN
    and the server spoke first."""
    c = conn.connection
    if c.b_port == server_port or c.a_port != server_port:
        return conn
    return swapped(conn)


def handshake_rtt_s(transfers: list[Transfer]) -> float | None:
    """The path's RTT: the handshake of the transfer that uploaded most among those whose
    handshake was captured (SYN -> SYN-ACK -> ACK, a whole round trip from either end)."""
    rtts = (t.conn.handshake.rtt_s for t in transfers)
    return next((rtt for rtt in rtts if rtt is not None and rtt > 0), None)


def find_transfers(analysis: CaptureAnalysis, sniffed: dict[tuple[int, int], Sniffed]
                   ) -> list[Transfer]:
    """Every git-like connection, client first, largest upload first."""
    found = []
    for conn in analysis.connections:
        c = conn.connection
        sniff = sniffed.get((min(c.a_port, c.b_port), max(c.a_port, c.b_port)))
        kind = _classify(conn, sniff)
        if kind is None:
            continue
        proto, server, why = kind
        directed = _directed(conn, server)
        found.append(Transfer(protocol=proto, conn=directed, server_port=server, why=why,
                              upload_bytes=directed.a_to_b.payload_bytes,
                              download_bytes=directed.b_to_a.payload_bytes,
                              service=sniff.service if sniff is not None else None,
                              wire=sniff))
    return sorted(found, key=lambda t: -t.upload_bytes)


def _answered(conn: ConnectionAnalysis) -> bool:
    """Whether the server sent data after the client's last data (the push's status)."""
    up, down = conn.a_to_b, conn.b_to_a
    return (up.last_data_ts_ns is not None and down.last_data_ts_ns is not None
            and down.last_data_ts_ns > up.last_data_ts_ns)


def _reset_cut(conn: ConnectionAnalysis) -> str | None:
    """How an RST cut the transfer short, or None (no RST, or a teardown).

    An RST after the server answered, with the upload acknowledged, is a teardown
    (curl and proxies close that way). One before the answer, or one that leaves upload
    bytes unacknowledged, cut the push: SSH's server sends channel-window adjustments
    all through an upload, so "answered" alone does not tell a finished push from one
    a firewall cut mid-way (seen from both sides of the lab's ``--reset-after``)."""
    up, down = conn.a_to_b, conn.b_to_a
    if not (up.resets_sent or down.resets_sent):
        return None
    stranded = up.unacked_bytes >= MIN_PACK_BYTES
    if _answered(conn) and not stranded:
        return None
    firsts = [(f, who) for f, who in ((down.first_reset_frame, "the server side"),
                                      (up.first_reset_frame, "the client side")) if f is not None]
    who = min(firsts)[1] if firsts else "the server side"
    if stranded:
        return (f"connection reset by {who} with {up.unacked_bytes} B of the upload "
                "unacknowledged (capture)")
    return f"connection reset by {who} before the server answered (capture)"


def _push(t: Transfer) -> obs.PushObservation:
    """The transfer as a push; failed when an RST cut it short (:func:`_reset_cut`)."""
    conn = t.conn
    up, down = conn.a_to_b, conn.b_to_a
    # Until the last data either way: an idle connection kept open is no push time.
    last = max((ts for ts in (up.last_data_ts_ns, down.last_data_ts_ns) if ts is not None),
               default=conn.last_ts_ns)
    seconds = max(0.0, (last - conn.first_ts_ns) / 1e9)
    cut = _reset_cut(conn)
    if cut is not None:
        return obs.PushObservation(duration_s=seconds, bytes=up.payload_bytes, ok=False,
                              error_kind=FailureKind.RESET, error_message=cut,
                              moved_bytes=up.payload_bytes)
    return obs.PushObservation(duration_s=seconds, bytes=up.payload_bytes,
                          moved_bytes=up.payload_bytes)


def _server_wait_s(conn: ConnectionAnalysis) -> float | None:
    """Server think time: after the client's last data until the server's last data."""
    up, down = conn.a_to_b, conn.b_to_a
    if up.last_data_ts_ns is None or down.last_data_ts_ns is None:
        return None
    gap = (down.last_data_ts_ns - up.last_data_ts_ns) / 1e9
    return gap if gap > 0 else None


def ledger_observation(ledger: h2ledger.H2WireLedger) -> obs.H2Ledger:
    """The engine's HTTP/2 ledger from a decrypted capture's (tshark) ledger."""
    stream = max(ledger.uploads, key=lambda u: u.ledger.stalled_s).ledger if ledger.uploads \
        else None
    return obs.H2Ledger(
        source=f"capture {ledger.client} -> {ledger.server} frames "
        f"{ledger.first_frame}-{ledger.last_frame} (decrypted)",
        server_initial_window_bytes=ledger.server_initial_window_bytes,
        connection_window_bytes=ledger.connection.peak_credit_bytes,
        max_frame_size_bytes=ledger.server_max_frame_bytes,
        stream_zero_credit_s=stream.stalled_s if stream is not None else None,
        connection_zero_credit_s=ledger.connection.stalled_s,
        window_updates=ledger.window_updates_from_server,
    )


def receiver_view(conn: ConnectionAnalysis, metrics: obs.CaptureMetrics) -> obs.CaptureMetrics:
    """The TCP picture of a capture taken at the receiver: what the sender had in flight is
    not visible there, so it is estimated per bin as the arrival rate x the handshake RTT
    (the SYN-ACK -> ACK leg, measured at the server, is the whole round trip), and the
    limit of each bin follows from that estimate against the advertised window."""
    rtt = metrics.handshake_rtt_s
    series = conn.series
    if not rtt or not series.sent_bytes or not series.min_window_bytes:
        return metrics
    sent = np.asarray(series.sent_bytes[0], dtype=np.float64)
    window = np.asarray(series.min_window_bytes[1], dtype=np.float64)
    n = min(sent.size, window.size)  # each direction's series ends with its last segment
    sent, filled = sent[:n], forward_filled(window[:n])
    if filled is None:  # no bins, or none with an advertised window
        return metrics
    window = filled
    active = sent > 0
    if not active.any():
        return metrics
    flight = sent[active] / series.bin_s * min(rtt, series.bin_s)
    win = window[active]
    rwnd = float(np.mean(flight >= 0.8 * win))
    self_limited = float(np.mean(flight < 0.5 * win))
    return replace(
        metrics,
        source=metrics.source + " (server side: in flight = arrival rate x handshake RTT)",
        min_rtt_s=rtt, median_rtt_s=rtt,
        bytes_in_flight_median=int(np.median(flight)),
        bytes_in_flight_p95=int(np.percentile(flight, 95)),
        rwnd_limited_share=rwnd, self_limited_share=self_limited,
        network_limited_share=max(0.0, 1.0 - rwnd - self_limited),
    )


BURST_CONNECTIONS = 3
"""This many connections of one transport in a capture are read as a burst too (SYN
drops, resets and unanswered connections across all of them, not only the push)."""


def capture_bursts(transfers: list[Transfer]) -> list[obs.BurstResult]:
    """A burst of each transport with :data:`BURST_CONNECTIONS` connections or more."""
    mine = {proto: [t for t in transfers if t.protocol == proto] for proto in obs.PROTOCOL_ORDER}
    return [capture_burst(proto, mine[proto]) for proto in obs.PROTOCOL_ORDER
            if len(mine[proto]) >= BURST_CONNECTIONS]


def capture_burst(proto: obs.ProtocolName, transfers: list[Transfer]) -> obs.BurstResult:
    """Many connections of one transport as a burst: what ``syn-drop``, ``firewall-reset``
    and ``listen-backlog-overflow`` read across connections."""
    answered = [bool(t.conn.b_to_a.payload_bytes) and _reset_cut(t.conn) is None
                for t in transfers]
    failed = count_by_kind(
        FailureKind.RESET if t.conn.a_to_b.resets_sent or t.conn.b_to_a.resets_sent
        else FailureKind.HUNG
        for t, ok in zip(transfers, answered, strict=True) if not ok)
    tally = handshake_tally(t.conn for t in transfers)
    waits = sorted((t.conn.last_ts_ns - t.conn.first_ts_ns) / 1e9 for t in transfers)
    return obs.BurstResult(
        protocol=proto, concurrency=len(transfers), ok=sum(answered),
        port=transfers[0].server_port, failed_by_kind=failed,
        duration_p50_s=waits[len(waits) // 2] if waits else None,
        syn_retransmissions=tally.syn_retransmissions,
        synack_retransmissions=tally.synack_retransmissions, resets=tally.resets)


def _nothing_to_measure(path: Path, connections: int, transfers: list[Transfer],
                        bursts: list[obs.BurstResult], *, found: bool) -> list[obs.RunProblem]:
    """The capture problem when no transfer was found, or none uploaded a pack (and no
    burst shows connection trouble either); none otherwise."""
    if not found:
        return [obs.RunProblem(
            stage="capture", reference="no-git-transfer",
            message=f"{path.name}: no git transfer found among {connections} TCP "
            "connection(s) (none on ports 443/22/9418, no TLS ClientHello, SSH banner or "
            "git:// request in the payload)",
            hint="capture the push itself (tcpdump -i any -s 128 -w push.pcap 'port 443 or "
            "port 22'), or give the server's port with a run directory")]
    if all(t.upload_bytes < MIN_PACK_BYTES for t in transfers) and not any(
            b.syn_retransmissions or b.synack_retransmissions or b.failed for b in bursts):
        return [obs.RunProblem(
            stage="capture", reference="no-upload",
            message=f"{path.name}: git-like connections found, but none uploaded "
            f"{MIN_PACK_BYTES} B or more: no push to measure",
            hint="capture during the slow push itself")]
    return []


def _clones(path: Path, analysis: CaptureAnalysis, transfers: list[Transfer],
            downloads: list[Transfer], pushed: int) -> tuple[obs.Observations, list[str]]:
    """The capture's clones, the bigger transfer: diagnosed in the download direction, with
    a push beside them said (:mod:`~gitnetdiag.pipeline._capture_flow`)."""
    bursts = capture_bursts(transfers)
    other, warnings = "", []
    if pushed:
        other = (f"; a push too ({pushed} B up), not diagnosed: the clone moved more (one "
                 "direction per capture; capture the push alone)")
        warnings.append(f"{path.name} holds a push ({pushed} B up) and a clone "
                        f"({downloads[0].download_bytes} B down): the clone is diagnosed")
    warnings.append(f"a bare capture of a clone cannot show {UNSEEN}: none is guessed")
    end = max(c.last_ts_ns for c in analysis.connections)
    observations, notes = capture_of_clones(path, len(analysis.connections), downloads, bursts,
                                            capture_end_ns=end, other=other)
    return observations, warnings + notes


def _seeded(responses: Sequence[H1Response]) -> dict[tuple[int, int], Sniffed]:
    """The decrypted response heads as what the sniff knows of their connections (the last
    head of each connection: the pack's answer follows the ref advertisement's)."""
    seeded: dict[tuple[int, int], Sniffed] = {}
    for r in responses:
        seeded[(min(r.server_port, r.client_port), max(r.server_port, r.client_port))] = Sniffed(
            client_port=r.client_port, http_status=r.status, content_length=r.content_length,
            body_start_seq=r.segment_seq, decrypted=True)
    return seeded


def observations_from_capture(path: Path, *, h2_ledgers: list[h2ledger.H2WireLedger] | None = None,
                              h1_responses: Sequence[H1Response] = ()
                              ) -> tuple[obs.Observations, list[str]]:
    """The engine's input from a bare capture file; with the analysis warnings.

    ``h2_ledgers`` are the decrypted HTTP/2 ledgers and ``h1_responses`` the decrypted
    HTTP/1.1 response heads (``--keylog`` or secrets in the pcapng), read by the command
    through :mod:`gitnetdiag.tools.tshark`.
    """
    analysis = analyze_capture(path)
    warnings = list(analysis.warnings)
    try:
        sniffed = sniff_connections(path, _seeded(h1_responses))
    except GitnetdiagError as exc:  # the reader already said what is wrong with the file
        warnings.append(f"payload not inspected: {exc.message}")
        sniffed = {}
    transfers = find_transfers(analysis, sniffed)
    flows = {id(t): pack_direction(t) for t in transfers}
    downloads = sorted((t for t in transfers if flows[id(t)] == "download"),
                       key=lambda t: -t.download_bytes)
    pushed = max((t.upload_bytes for t in transfers if flows[id(t)] == "upload"), default=0)
    if downloads and downloads[0].download_bytes > pushed:
        clones, said = _clones(path, analysis, transfers, downloads, pushed)
        return clones, warnings + said
    protocols: dict[str, obs.ProtocolObservation] = {}
    bursts = capture_bursts(transfers)
    seen: list[str] = []
    for proto in obs.PROTOCOL_ORDER:
        mine = [t for t in transfers if t.protocol == proto]
        pushes = [t for t in mine if t.upload_bytes >= MIN_PACK_BYTES]
        chosen = pushes[0] if pushes else (mine[0] if mine else None)
        if chosen is None:
            continue
        direction = "" if chosen.conn.connection.syn_seen else ", SYN not captured"
        label = f"{proto} ({chosen.why}{direction})"
        seen.append(f"{obs.PROTOCOL_LABELS[proto]} by {chosen.why}")
        metrics = capture_metrics(chosen.conn, label)
        if not metrics.handshake_seen:
            # Without the SYN / SYN-ACK the window scale is unknown: the raw windows
            # say nothing about a clamp, and must not explain away a loss.
            up = chosen.conn.a_to_b
            mss = metrics.mss_bytes or (up.payload_bytes // up.packets if up.packets else None)
            metrics = replace(metrics, advertised_window_median_bytes=None, mss_bytes=mss or None,
                              advertised_window_max_bytes=None, rwnd_limited_share=None,
                              source=metrics.source + " (handshake not captured: window "
                              "scale unknown, advertised windows not used, MSS = mean segment)")
        if at_receiver(metrics):  # captured next to the upload's receiver (server side)
            metrics = receiver_view(chosen.conn, metrics)
            seen[-1] += " (captured at the server)"
        wait = _server_wait_s(chosen.conn)
        ledger = None
        if proto == "h2" and h2_ledgers:
            ledger = ledger_observation(max(h2_ledgers, key=lambda g: g.data_bytes_to_server))
        protocols[proto] = obs.ProtocolObservation(
            # A connection that uploaded no pack and ended normally (ls-remote of a
            # burst) is no push: the burst and the capture are its evidence, not a rate.
            pushes=tuple(push for push in map(_push, pushes or [chosen])
                         if push.bytes >= MIN_PACK_BYTES or not push.ok),
            trace2=obs.Trace2Phases(server_wait_s=wait) if wait is not None else None,
            capture=metrics,
            h2_ledger=ledger,
            flight=flight_series(chosen.conn),
        )
    problems = _nothing_to_measure(path, len(analysis.connections), transfers, bursts,
                                   found=bool(protocols))
    if downloads:
        seen.append(f"a clone too ({downloads[0].download_bytes} B down), not diagnosed: "
                    "the push moved more (one direction per capture; capture the clone alone)")
    kinds = ", ".join(seen) or "nothing git-like"
    run = obs.RunInfo(
        requested_protocols=tuple(protocols),
        target_url=str(path.name),
        rtt_s=handshake_rtt_s(transfers),
        measured_by=(f"bare capture {path.name}: {len(analysis.connections)} TCP "
                     f"connection(s), {kinds}; no A/B reference between transports, no "
                     "trace2 phases, no server view (confidence lowered accordingly)"),
    )
    return obs.Observations(run=run, protocols=protocols, bursts=tuple(bursts),
                            problems=tuple(problems)), warnings


def diagnose_capture(path: Path, *, h2_ledgers: list[h2ledger.H2WireLedger] | None = None,
                     h1_responses: Sequence[H1Response] = ()) -> tuple[Diagnosis, list[str]]:
    """Diagnose a bare capture; with the analysis warnings."""
    observations, warnings = observations_from_capture(path, h2_ledgers=h2_ledgers,
                                                       h1_responses=h1_responses)
    diagnosis = diagnose(observations)
    if observations.run.transfer == "download":
        diagnosis = replace(diagnosis, direction="fetch")
    return diagnosis, warnings
