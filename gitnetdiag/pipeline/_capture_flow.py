"""Which way the pack flowed in a bare capture, and a capture's clones as the engine's input.

A capture someone else took may hold a push or a clone (or fetch), seen from the client or
from the server. The direction comes first from the request, where it is readable: a
``git://`` request line or a plain-HTTP request names ``git-upload-pack`` (the server sends
the pack: a clone) or ``git-receive-pack`` (the client sends it: a push). Over TLS or SSH
nothing above TCP is readable, so the bytes each way decide: the big side is the pack's
sender. Either way a transfer whose pack side moved less than :data:`MIN_PACK_BYTES` is
no pack (``ls-remote``, a refused attempt).

The capture is diagnosed in one direction, the one engine's (``Observations.run.transfer``):
the direction of the biggest pack in it. A capture that holds both a push and a clone says
so in its ``measured_by`` and in a warning, and the other direction is left to a capture of
its own (the engine judges one direction per run).

A clone's connection becomes one :class:`TransferObservation` per download connection:

- its rate is the server's data bytes over the time from its first to its last data byte;
- its ``tcp`` is what the capture shows of the receiving socket: the largest window the
  client advertised (scaled: only when the handshake was captured, else unknown) and the
  handshake's round trip. The client's receive buffer, its ``tcp_rmem`` and its socket's
  samples are never in a capture: they stay unknown;
- its ``capture`` is the sender's view the shared detectors read. Taken at the client (the
  receiver: the server's data is ACKed at once there), it is the receiver's view of the
  download (:func:`~gitnetdiag.pipeline._metrics.capture_metrics`, ``receiver="a"``); taken at the
  server (the sender), it is the server's own: its bytes in flight against the client's
  window, its retransmissions, its limits, as a push captured at its client, and the level
  its flight held over the bulk of the pack (:mod:`~gitnetdiag.analysis.plateau`: flat
  below the client's window when its send buffer is the limit).

What a capture cannot show is said, never filled in: trace2's phases (the negotiation, the
server's pack generation, index-pack and checkout), the client's TCP_INFO (its receive
buffer against ``tcp_rmem``) and the server's socket (its send buffer, the time it had
nothing to send).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path

from gitnetdiag.analysis.plateau import flight_plateau
from gitnetdiag.analysis.tcp import ConnectionAnalysis
from gitnetdiag.analysis.tcpinfo import ReceiverTcpSummary
from gitnetdiag.analysis.trace2 import ReceiverPhases
from gitnetdiag.capture.sniff import Sniffed
from gitnetdiag.diagnosis import observations as obs
from gitnetdiag.diagnosis.assembly import download_observations
from gitnetdiag.diagnosis.transfers import Direction, TransferObservation
from gitnetdiag.pipeline._clone_end import CloneEnd, ServerSide, clone_end
from gitnetdiag.pipeline._metrics import capture_metrics

MIN_PACK_BYTES = 4096
"""A transfer whose pack side moved less is no pack (``ls-remote``, a failed attempt)."""

SERVICE_DIRECTIONS: dict[str, Direction] = {"git-upload-pack": "download",
                                            "git-receive-pack": "upload"}
"""The git service a client asks for, and which way its pack flows."""

UNSEEN = ("trace2 phases (negotiation, the server's pack generation, index-pack), the "
          "client's TCP_INFO (its receive buffer against tcp_rmem), the server's socket (its "
          "send buffer, time it had nothing to send)")
"""What a bare capture of a clone cannot show, said in the report's ``measured_by`` and in a
warning."""


@dataclass(frozen=True, kw_only=True)
class Transfer:
    """One git transfer found in the capture."""

    protocol: obs.ProtocolName
    conn: ConnectionAnalysis
    server_port: int
    why: str
    """How it was recognised (content or port), for the evidence."""
    upload_bytes: int
    download_bytes: int = 0
    """Bytes the server sent (the pack of a clone, the refs and status of a push)."""
    service: str | None = None
    """The git service the client asked for, when the request was seen (git://, plain HTTP)."""
    wire: Sniffed | None = None
    """What its payload said (requests, responses, sideband bands), when captured."""


def pack_direction(t: Transfer) -> Direction | None:
    """Which way the transfer's pack flowed: from the request when it was seen, else the
    big side of the bytes; None when the pack side moved less than :data:`MIN_PACK_BYTES`."""
    named = SERVICE_DIRECTIONS.get(t.service or "")
    if named is not None:
        moved = t.download_bytes if named == "download" else t.upload_bytes
        return named if moved >= MIN_PACK_BYTES else None
    if max(t.upload_bytes, t.download_bytes) < MIN_PACK_BYTES:
        return None
    return "download" if t.download_bytes > t.upload_bytes else "upload"


def how_directed(t: Transfer) -> str:
    """How the direction was told, for ``measured_by``."""
    if t.service in SERVICE_DIRECTIONS:
        return f"the request names {t.service}"
    return (f"bytes each way: {t.download_bytes} B from the server, {t.upload_bytes} B "
            "from the client")


def swapped(conn: ConnectionAnalysis) -> ConnectionAnalysis:
    """The connection with its ends swapped: ``a`` becomes ``b`` (the server of a clone, the
    sender of its pack, as ``a``; a capture begun after the SYN turned client first). The
    per-bin series swap with them (index 0 is ``a`` as sender): left as they were, a clone's
    server-side view read the client's requests and ACKs as the server's flight (a median
    of 38 B in flight on a 6 MB clone under the lab's ``server-sndbuf-clamp``)."""
    c, s = conn.connection, conn.series
    series = replace(s, sent_bytes=s.sent_bytes[::-1], goodput_bytes=s.goodput_bytes[::-1],
                     retransmitted_bytes=s.retransmitted_bytes[::-1],
                     max_in_flight_bytes=s.max_in_flight_bytes[::-1],
                     min_window_bytes=s.min_window_bytes[::-1])
    return replace(conn, a_to_b=conn.b_to_a, b_to_a=conn.a_to_b, series=series,
                   connection=replace(c, a_addr=c.b_addr, a_port=c.b_port,
                                      b_addr=c.a_addr, b_port=c.a_port))


RECEIVER_RTT_RATIO = 0.2
"""Data-to-ACK samples below this share of the handshake RTT: the capture was taken next to
the receiver of the data (the server of a push, the client of a clone), where an ACK leaves
right after the data arrives."""


def at_receiver(sent: obs.CaptureMetrics) -> bool:
    """Whether the sender's data was ACKed at once where the capture was taken: the capture
    point was next to the data's receiver (``sent`` is the sender's view)."""
    hs, med = sent.handshake_rtt_s, sent.median_rtt_s
    return bool(hs and med is not None and med < RECEIVER_RTT_RATIO * hs)


def _no_phases() -> ReceiverPhases:
    """trace2's phases of a clone a capture cannot see: every one unknown."""
    return ReceiverPhases(**{f.name: None for f in fields(ReceiverPhases)})


def ended(t: Transfer, capture_end_ns: int) -> CloneEnd:
    """How the clone on ``t`` ended (:mod:`~gitnetdiag.pipeline._clone_end`)."""
    client, server = t.conn.a_to_b, t.conn.b_to_a
    tls = t.wire is not None and t.wire.tls
    return clone_end(ServerSide(
        moved_bytes=server.payload_bytes, first_data_ns=server.first_data_ts_ns,
        last_data_ns=server.last_data_ts_ns, last_large_ns=server.last_large_segment_ts_ns,
        small_tail_bytes=server.small_tail_bytes,
        unacked_bytes=server.unacked_bytes, reset_ns=server.first_reset_ts_ns,
        fin_ns=server.first_fin_ts_ns, client_reset_ns=client.first_reset_ts_ns,
        client_fin_ns=client.first_fin_ts_ns,
        encrypted=tls or t.protocol in ("h2", "ssh"), client_closes=t.protocol in ("h1", "h2")),
        t.wire, capture_end_ns, server_port=t.conn.connection.b_port)


def clone_observation(t: Transfer, repeat: int, capture_end_ns: int
                      ) -> tuple[TransferObservation, bool, str]:
    """One download connection as the engine's clone; with whether it was captured at the
    client (the receiver), and what the capture could not tell of its end ("" if nothing)."""
    conn = t.conn
    client, server = conn.a_to_b, conn.b_to_a
    hs = conn.handshake
    rtt = hs.rtt_s if hs.rtt_s and hs.rtt_s > 0 else None
    first, last = server.first_data_ts_ns, server.last_data_ts_ns
    measured_s = (last - first) / 1e9 if first is not None and last is not None else 0.0
    label = f"{t.protocol} ({t.why})"
    tcp = ReceiverTcpSummary(
        source=f"capture {label}: the client's ACKs", samples=0, span_s=0.0,
        received_bytes=server.payload_bytes,
        advertised_window_max_bytes=(client.max_window_bytes or None)
        if hs.window_scale_known else None,
        receive_buffer_max_bytes=None, rcv_space_max_bytes=None,
        min_rtt_s=rtt, median_rtt_s=None)
    server_first = swapped(conn)
    sent = capture_metrics(server_first, label)
    receiver = at_receiver(sent)
    metrics = capture_metrics(conn, label, receiver="a", tcp=tcp) if receiver else replace(
        sent, source=sent.source + " (download, at the server)",
        plateau=flight_plateau(server_first.series, 0))
    end = ended(t, capture_end_ns)
    clone = TransferObservation(
        protocol=t.protocol, repeat=repeat, outcome=end.outcome,
        moved_bytes=server.payload_bytes, measured_s=measured_s,
        rate_bytes_per_s=server.payload_bytes / measured_s if measured_s > 0 else None,
        wall_s=max(0.0, (conn.last_ts_ns - conn.first_ts_ns) / 1e9), phases=_no_phases(),
        tcp=tcp, path_rtt_s=rtt, capture=metrics,
        failure_kind=end.kind, last_line=end.line)
    return clone, receiver, end.note


def capture_of_clones(path: Path, connections: int, downloads: list[Transfer],
                      bursts: list[obs.BurstResult], *, capture_end_ns: int, other: str = ""
                      ) -> tuple[obs.Observations, list[str]]:
    """A bare capture's clones (``downloads``, largest first) as the engine's download
    :class:`Observations`, with what the capture could not tell of their ends; ``other``
    says what else the capture held (a push); ``capture_end_ns``: its last packet."""
    clones: list[TransferObservation] = []
    seen: list[str] = []
    notes: list[str] = []
    for proto in obs.PROTOCOL_ORDER:
        mine = [t for t in downloads if t.protocol == proto]
        for repeat, t in enumerate(mine, start=1):
            clone, receiver, note = clone_observation(t, repeat, capture_end_ns)
            clones.append(clone)
            if note:
                notes.append(f"{obs.PROTOCOL_LABELS[proto]} clone #{repeat}: {note}")
            if repeat == 1:
                side = "at the client" if receiver else "at the server"
                seen.append(f"{obs.PROTOCOL_LABELS[proto]} clone by {t.why} (direction: "
                            f"{how_directed(t)}; captured {side})")
    observations = download_observations(clones, bursts=bursts)
    rtts = [t.conn.handshake.rtt_s for t in downloads if t.conn.handshake.rtt_s]
    run = replace(
        observations.run, target_url=path.name, rtt_s=rtts[0] if rtts else None,
        measured_by=(f"bare capture {path.name}: {connections} TCP connection(s), "
                     f"{', '.join(seen)}{other}; no A/B reference between transports; "
                     f"not in a capture: {UNSEEN}"))
    return replace(observations, run=run), notes
