"""One transfer's TCP evidence as the engine's sender view (:class:`CaptureMetrics`), whichever
end sends: from a capture of its connection, or from the kernel's TCP_INFO when there is none.

A probe captures at the client, the connection's initiator ``a``. On a push the client
sends and the capture sees the sender's flight, its RTT samples and the server's window
(``receiver="b"``); on a clone the server sends and the capture, taken at the receiver,
sees what arrived and the ACKs the client sent at once (``receiver="a"``): the RTTs then
come from the receiver's TCP_INFO and the window-bound share from what arrived per round
trip. The rest (retransmissions, resets, zero windows, the SYN) is read alike, from the
sending and the receiving direction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from gitnetdiag.analysis.tcp import ConnectionAnalysis, LimitKind
from gitnetdiag.analysis.tcpinfo import CLIENT, ReceiverTcpSummary, summarize_sender
from gitnetdiag.analysis.window import forward_filled, receiver_window_limited_share
from gitnetdiag.diagnosis import observations as obs
from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.inputfile import MAX_JSON_BYTES, loads_bounded, read_text_input
from gitnetdiag.pipeline._connections import analysis_order
from gitnetdiag.pipeline._native import downsample
from gitnetdiag.pipeline._noted import Noted
from gitnetdiag.rundir import NATIVE_FILES, PushRecord

End = Literal["a", "b"]
"""An end of a captured connection as the analyser names them: ``a`` the initiator (the
client, where a probe captures), ``b`` its peer."""


def flight_series(conn: ConnectionAnalysis) -> obs.FlightSeries | None:
    """Per-bin bytes in flight of the uploader against the receiver's advertised window."""
    series = conn.series
    if not series.max_in_flight_bytes or not series.max_in_flight_bytes[0]:
        return None
    flight = np.asarray(series.max_in_flight_bytes[0], dtype=np.float64)
    window = forward_filled(np.asarray(series.min_window_bytes[1], dtype=np.float64))
    if window is None:
        return None
    # Each direction's series ends with its own last segment: the receiver may fall
    # silent before the sender does (an RST cut it, a server-side capture); carry its
    # last window to the sender's end.
    if window.size < flight.size:
        window = np.concatenate((window, np.full(flight.size - window.size, window[-1])))
    window = window[:flight.size]
    keep = downsample(flight.size)
    t = keep.astype(np.float64) * series.bin_s
    sent = np.cumsum(np.asarray(series.goodput_bytes[0], dtype=np.float64))
    return obs.FlightSeries(
        t_s=tuple(float(x) for x in t),
        bytes_in_flight=tuple(float(x) for x in flight[keep]),
        advertised_window=tuple(float(x) for x in window[keep]),
        bytes_sent=tuple(float(x) for x in sent[keep]) if sent.size == flight.size else (),
    )


def capture_metrics(conn: ConnectionAnalysis, label: str, *, receiver: End = "b",
                    tcp: ReceiverTcpSummary | None = None) -> obs.CaptureMetrics:
    """The engine's sender view of a captured connection whose data ``receiver`` received:
    ``b`` when the capturing end ``a`` sent (a push at its client), ``a`` when it received
    (a clone at its client, ``tcp`` its TCP_INFO: see the module doc)."""
    hs = conn.handshake
    sender, received = ((conn.a_to_b, conn.b_to_a) if receiver == "b"
                        else (conn.b_to_a, conn.a_to_b))
    mss = [m for m in (conn.a_to_b.mss_bytes, conn.b_to_a.mss_bytes) if m]
    seen = obs.CaptureMetrics(
        handshake_rtt_s=hs.rtt_s, mss_bytes=min(mss) if mss else None,
        handshake_seen=hs.window_scale_known,
        window_scale=received.window_scale if hs.window_scaling else None,
        retransmitted_bytes=sender.retransmitted_bytes, retransmission_rate=sender.loss_rate,
        timeout_retransmissions=sender.timeout_retransmissions,
        fast_retransmissions=sender.fast_retransmissions,
        zero_window_count=received.zero_window_count, zero_window_s=received.zero_window_s,
        resets_from_client=conn.a_to_b.resets_sent, resets_from_server=conn.b_to_a.resets_sent,
        syn_retransmissions=hs.syn_retransmissions,
        synack_retransmissions=hs.synack_retransmissions)
    if receiver == "b":
        return _at_sender(conn, seen, label)
    return _at_receiver(conn, seen, label, tcp)


def _at_sender(conn: ConnectionAnalysis, seen: obs.CaptureMetrics,
               label: str) -> obs.CaptureMetrics:
    """Captured where the data left (``a`` sends): its flight, RTT samples and limits."""
    up, down = conn.a_to_b, conn.b_to_a
    flight = np.asarray(conn.series.max_in_flight_bytes[0] if conn.series.max_in_flight_bytes
                        else [], dtype=np.float64)
    sending = np.asarray(conn.series.sent_bytes[0] if conn.series.sent_bytes else [],
                         dtype=np.float64)
    active = flight[(flight > 0) & (sending > 0)] if flight.size == sending.size else flight
    windows = np.asarray(conn.series.min_window_bytes[1] if conn.series.min_window_bytes
                         else [], dtype=np.float64)
    windows = windows[windows >= 0]
    limits = up.limits
    return replace(
        seen, source=f"capture {label} {conn.connection.a_port}->{conn.connection.b_port}",
        min_rtt_s=up.rtt.min_s, median_rtt_s=up.rtt.median_s,
        advertised_window_median_bytes=int(np.median(windows)) if windows.size else None,
        advertised_window_max_bytes=down.max_window_bytes or None,
        bytes_in_flight_median=int(np.median(active)) if active.size else None,
        bytes_in_flight_p95=int(np.percentile(active, 95)) if active.size else None,
        rwnd_limited_share=limits.share(LimitKind.RWND),
        network_limited_share=limits.share(LimitKind.CWND) + limits.share(LimitKind.LOSS),
        self_limited_share=limits.share(LimitKind.SELF),
        max_acked_segment_bytes=up.max_acked_segment_bytes if up.payload_bytes else None,
        unacked_retransmissions=up.unacked_retransmissions,
        min_unacked_retransmitted_bytes=up.min_unacked_retransmitted_bytes,
    )


def _at_receiver(conn: ConnectionAnalysis, seen: obs.CaptureMetrics, label: str,
                 tcp: ReceiverTcpSummary | None) -> obs.CaptureMetrics:
    """Captured where the data arrived (``a`` receives, ``b`` sends). A segment lost on the
    path is never seen there, so its retransmission fills a hole below what already arrived:
    the analyser counts it as a retransmission, and ``retransmission_rate`` is the repaired
    loss. Data-to-ACK times at the receiver are its ACK delay, not the path: the RTTs are
    the handshake's and the receiver's TCP_INFO (minimum, receiver's median). Of the
    sender's limits only the receive window's share is known, from what arrived per round
    trip against the receiver's window (:func:`receiver_window_limited_share`); the
    congestion window's and the application's are left unknown."""
    client, server = conn.a_to_b, conn.b_to_a
    hs = conn.handshake
    # SYN, then a reset from the server's side and nothing else: its time is the refusal's.
    refused = (hs.syn_count > 0 and hs.synack_count == 0 and server.resets_sent > 0
               and not client.payload_bytes and not server.payload_bytes)
    return replace(
        seen, source=f"capture {label} {conn.connection.b_port}->{conn.connection.a_port} "
        "(download, at the client)",
        min_rtt_s=tcp.min_rtt_s if tcp else None,
        median_rtt_s=tcp.median_rtt_s if tcp else None,
        # Without the handshake the window's scale is unknown and the raw field is no size:
        # the client's TCP_INFO speaks for its window, and the share stays unknown.
        advertised_window_max_bytes=(client.max_window_bytes or None)
        if hs.window_scale_known else (tcp.advertised_window_max_bytes if tcp else None),
        rwnd_limited_share=receiver_window_limited_share(
            conn.series, hs.rtt_s or (tcp.min_rtt_s if tcp else None))
        if hs.window_scale_known else None,
        refused_after_s=conn.duration_s if refused else None,
        # What arrived: the largest segment the client's cumulative ACK covered (the capture),
        # else the kernel's estimate (TCP_INFO rcv_mss).
        max_received_segment_bytes=(server.max_acked_segment_bytes or None
                                    if server.payload_bytes else None)
        or (tcp.rcv_mss_max_bytes if tcp else None),
    )


def tcpinfo_rows(run_dir: Path, name: str | None) -> Noted[list[dict[str, Any]] | None]:
    """A ``<stem>.tcpinfo.jsonl`` file's samples (None when absent or unreadable)."""
    if name is None or not (run_dir / name).is_file():
        return Noted(value=None)
    try:
        text = read_text_input(run_dir / name, max_bytes=MAX_JSON_BYTES)
        rows = [loads_bounded(line, name) for line in text.splitlines() if line.strip()]
    except (OSError, ValueError) as exc:
        why = str(exc)
    except GitnetdiagError as exc:
        why = exc.message
    else:
        if all(isinstance(row, dict) for row in rows):
            return Noted(value=rows)
        why = "a line is not an object"
    return Noted(value=None, notes=(f"{name}: unreadable TCP_INFO samples ({why})",))


def tcpinfo_metrics(run_dir: Path, protocol: str,
                    records: Sequence[PushRecord]) -> Noted[obs.CaptureMetrics | None]:
    """The kernel's TCP_INFO of a push (the client sends) as the engine's TCP view, when no
    capture was taken."""
    candidates = [(f"{protocol} push {r.repeat}", r.artifacts.get("tcpinfo"))
                  for r in analysis_order(records)]
    if protocol in NATIVE_FILES:  # the native probe's own socket, same path
        candidates.append((f"native {protocol} probe",
                           NATIVE_FILES[protocol].removesuffix(".json") + ".tcpinfo.jsonl"))
    notes: list[str] = []
    for label, name in candidates:
        read = tcpinfo_rows(run_dir, name)
        notes.extend(read.notes)
        if read.value is None:
            continue
        try:
            summary = summarize_sender(read.value, CLIENT)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            notes.append(f"{name}: unreadable TCP_INFO samples ({exc})")
            continue
        if summary is None:
            continue
        rwnd, sndbuf = summary.rwnd_limited_share, summary.sndbuf_limited_share
        return Noted(notes=tuple(notes), value=obs.CaptureMetrics(
            source=f"TCP_INFO ({summary.source}) {label}",
            min_rtt_s=summary.min_rtt_s, median_rtt_s=summary.median_rtt_s,
            handshake_seen=False,
            advertised_window_median_bytes=summary.peer_window_median_bytes,
            advertised_window_max_bytes=summary.peer_window_max_bytes,
            bytes_in_flight_median=summary.in_flight_median_bytes,
            bytes_in_flight_p95=summary.in_flight_p95_bytes,
            rwnd_limited_share=rwnd,
            network_limited_share=max(0.0, 1.0 - rwnd - (sndbuf or 0.0))
            if rwnd is not None else None,
            retransmitted_bytes=summary.retransmitted_bytes,
            retransmission_rate=summary.retransmission_rate,
        ))
    return Noted(value=None, notes=tuple(notes))
