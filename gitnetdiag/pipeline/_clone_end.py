"""How a clone seen in a bare capture ended: its bytes against what the pack needed.

A capture of a clone holds no git exit code. What it holds is how the download connection
ended and, where the payload was captured, what the server said. A clone that got less
than its pack is a failed or stalled clone, never ``ok`` (issue 42: a capture of 300 s of
progress, of a 200 that carried 100 kB of an 8 MiB pack, and of a reset after 100 kB each
came out ``healthy``). In the order they are tried:

==========================  ===========================================================
a reset that stranded data  an RST with the server's bytes unacknowledged (``failed``,
                            ``reset``)
a short 200                 plain HTTP: the answer's ``Content-Length`` above the body
                            bytes the server sent (``failed``, ``reset``: closed mid-way)
a cut answer                git:// or plain HTTP, the pack's header seen: the server
                            closed or reset its end first and its last segment, captured
                            whole, is not git's closing flush-pkt ``0000`` (``failed``,
                            ``reset``)
a reset from the server     the server's side sent an RST before either side closed its
                            end (FIN): the download cut after N bytes (``failed``)
progress and no pack        the server's data in small segments only (none above
                            ``SMALL_SEGMENT_BYTES``) for :data:`PROGRESS_ONLY_S` or more
                            after its last larger one, no pack header seen (``stalled``,
                            ``hung``); where the payload was captured, its band-2
                            (progress) packets are counted
an end never captured       no FIN and no RST either way: the server silent for
                            :data:`SILENT_END_S` or more before the capture ended is a
                            stall (``stalled``); data up to the end is a clone the capture
                            stopped (``bounded``: the rate of the bytes captured, said)
==========================  ===========================================================

Where a capture cannot tell, it says so: over TLS or SSH with headers only, a server that
closed first after N bytes may have sent the whole pack or part of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitnetdiag.analysis.tcp_results import SMALL_SEGMENT_BYTES
from gitnetdiag.capture.sniff import Sniffed
from gitnetdiag.outcomes import FailureKind, TransferOutcome

PROGRESS_ONLY_S = 10.0
"""Only small segments from the server (none above
:data:`~gitnetdiag.analysis.tcp_results.SMALL_SEGMENT_BYTES`) for this long after its last
larger one (the ref advertisement on a kept-alive connection, or none) are a pack that
never came: a pack's segments are full-size, and after its last one a finished clone's
server sends a few bytes at most (the final flush), within a round trip."""
SILENT_END_S = 5.0
"""Silence from the server this long before a capture that ends with the connection open
is a stall, not a capture stopped mid-flow."""
NS = 1_000_000_000


@dataclass(frozen=True, kw_only=True)
class CloneEnd:
    """How one captured clone ended."""

    outcome: TransferOutcome
    """``ok``, ``bounded`` (the capture stopped it), ``stalled`` or ``failed``."""
    kind: FailureKind | None = None
    """How it failed; None when it did not."""
    line: str = ""
    """What was seen, with its bytes and seconds ("" when it did not fail)."""
    note: str = ""
    """What the capture could not tell, or that it stopped the clone ("" when nothing)."""


@dataclass(frozen=True, kw_only=True)
class ServerSide:
    """The figures of the download connection the rules read (from its TCP analysis)."""

    moved_bytes: int
    """The server's data bytes."""
    first_data_ns: int | None
    last_data_ns: int | None
    last_large_ns: int | None
    """The server's last segment above the small size; None when none was."""
    small_tail_bytes: int
    """The server's bytes after it (all of them when none was)."""
    unacked_bytes: int
    """The server's bytes the client had not acknowledged at the end."""
    reset_ns: int | None
    """The server side's first RST."""
    fin_ns: int | None
    """The server side's first FIN."""
    client_reset_ns: int | None
    client_fin_ns: int | None
    encrypted: bool
    """TLS or SSH: nothing above TCP readable without a keylog."""
    client_closes: bool = False
    """HTTP: the client closes a finished connection first (its keep-alive ends with git)."""


def _short_answer(side: ServerSide, wire: Sniffed | None) -> CloneEnd | None:
    if wire is None or wire.http_status != 200 or wire.content_length is None:
        return None
    if wire.body_bytes >= wire.content_length:
        return None
    how = ("then the server side reset the connection" if side.reset_ns is not None
           else "then the server closed the connection (FIN)" if side.fin_ns is not None
           else "then nothing more until the capture ended")
    share = 100.0 * wire.body_bytes / wire.content_length if wire.content_length else 0.0
    carried = (f"at most {wire.body_bytes} B (TLS records included)" if wire.decrypted
               else f"{wire.body_bytes} B")
    return CloneEnd(outcome="failed", kind=FailureKind.RESET, line=(
        f"the 200 answer carried {carried} of its Content-Length "
        f"{wire.content_length} B ({share:.1f}%), {how} "
        f"({'capture, decrypted' if wire.decrypted else 'capture'})"))


FLUSH_ENDS = (b"0000", b"0000\r\n0\r\n\r\n")
"""How git's answer ends: its flush-pkt, alone or as the last chunk of a chunked HTTP
body."""


def _cut_stream(side: ServerSide, wire: Sniffed | None, server_port: int) -> CloneEnd | None:
    """A readable answer (git://, plain HTTP) whose last segment was captured whole and is
    not git's closing flush-pkt: the server's end closed (or reset) mid-answer."""
    ends = [ts for ts in (side.fin_ns, side.reset_ns) if ts is not None]
    if wire is None or not wire.pack_seen or not ends or (side.client_fin_ns is not None
                                    and side.client_fin_ns < min(ends)):
        return None  # open, or the client ended it first
    tail = wire.tails.get(server_port)
    if tail is None or tail.endswith(FLUSH_ENDS):
        return None
    how = "reset the connection" if side.reset_ns is not None else "closed (FIN)"
    return CloneEnd(outcome="failed", kind=FailureKind.RESET, line=(
        f"the server {how} after {side.moved_bytes} B without git's closing flush-pkt "
        "(its last segment captured whole): the answer was cut (capture)"))


def _since_first_s(side: ServerSide, ts_ns: int) -> float:
    first = side.first_data_ns if side.first_data_ns is not None else ts_ns
    return max(0.0, (ts_ns - first) / NS)


def _server_reset(side: ServerSide) -> CloneEnd | None:
    reset = side.reset_ns
    if reset is None:
        return None
    closed = [ts for ts in (side.fin_ns, side.client_fin_ns) if ts is not None]
    if closed and min(closed) < reset:
        return None  # a teardown after an end was closed
    return CloneEnd(outcome="failed", kind=FailureKind.RESET, line=(
        f"the server side reset the connection after {side.moved_bytes} B of the download, "
        f"{_since_first_s(side, reset):.1f} s after its first byte, before either end "
        "closed (capture)"))


def _progress_only(side: ServerSide, wire: Sniffed | None) -> CloneEnd | None:
    if side.first_data_ns is None or side.last_data_ns is None:
        return None
    since = side.first_data_ns if side.last_large_ns is None else side.last_large_ns
    span_s = (side.last_data_ns - since) / NS
    if (wire is not None and wire.pack_seen) or span_s < PROGRESS_ONLY_S:
        return None
    bands = (f", {wire.progress_packets} segments of progress (sideband band 2) and no pack "
             "header (band 1 'PACK')" if wire is not None and wire.progress_packets
             else "; the payload was not captured: progress or keepalives, unread"
             if side.encrypted or wire is None else "")
    after = ("" if side.last_large_ns is None
             else f" after its last larger one ({side.moved_bytes - side.small_tail_bytes} B "
                  "up to it)")
    return CloneEnd(outcome="stalled", kind=FailureKind.HUNG, line=(
        f"progress and no pack: {span_s:.1f} s of segments of {SMALL_SEGMENT_BYTES} B or less "
        f"from the server{after}, {side.small_tail_bytes} B in all{bands} (capture)"))


def _never_ended(side: ServerSide, capture_end_ns: int) -> CloneEnd | None:
    ends = (side.reset_ns, side.fin_ns, side.client_reset_ns, side.client_fin_ns)
    if any(ts is not None for ts in ends) or side.last_data_ns is None:
        return None
    silent_s = (capture_end_ns - side.last_data_ns) / NS
    if silent_s >= SILENT_END_S:
        return CloneEnd(outcome="stalled", kind=FailureKind.HUNG, line=(
            f"the server sent nothing for {silent_s:.1f} s after {side.moved_bytes} B, and "
            "the capture ends with the connection open (no FIN, no RST) (capture)"))
    return CloneEnd(outcome="bounded", note=(
        f"the capture ends mid-clone ({side.moved_bytes} B in, the connection open, the "
        "server's last data just before): the rate is of the bytes captured; whether the "
        "clone finished is not in the capture"))


def clone_end(side: ServerSide, wire: Sniffed | None, capture_end_ns: int, *,
              server_port: int = 0) -> CloneEnd:
    """How the captured clone ended (see the module doc); ``server_port``: the server's
    end, whose last readable segment is checked for git's closing flush-pkt."""
    if (side.reset_ns is not None or side.client_reset_ns is not None) \
            and side.unacked_bytes >= 4096:
        return CloneEnd(outcome="failed", kind=FailureKind.RESET, line=(
            f"connection reset with {side.unacked_bytes} B of the download unacknowledged "
            "(capture)"))
    for judged in (_short_answer(side, wire), _cut_stream(side, wire, server_port),
                   _server_reset(side),
                   _progress_only(side, wire), _never_ended(side, capture_end_ns)):
        if judged is not None:
            return judged
    if (side.encrypted and side.client_closes and side.fin_ns is not None
            and (side.client_fin_ns is None or side.fin_ns < side.client_fin_ns)):
        return CloneEnd(outcome="ok", note=(
            f"the server closed the connection first, after {side.moved_bytes} B: with the "
            "payload encrypted (no keylog) the capture cannot tell whether that was the whole "
            "pack or part of it"))
    return CloneEnd(outcome="ok")
