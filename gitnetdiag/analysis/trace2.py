"""Where the time of a transfer went, from git's trace2: pure parsing of what git and the
monitor wrote.

No I/O: the functions take the texts of a run's artifacts and return values. Both
directions' phases come from the transfer's trace2 file when the run is analysed: a push's
at the sending client (:func:`push_phases`, the sender's ``pack-objects`` regions; it lives
in :mod:`gitnetdiag.rundir.trace2`, which the probe also reads for git's own duration), and
the receiving client's phases of a clone, derived here in order::

    start ──ref advertisement──> fetch-pack ──negotiation──> request sent
          (connect, TLS/SSH, auth,        (wants/haves,       │
           protocol v2 ls-refs)            rounds)            │ server pack generation:
                                                              │ counting, compressing
    first pack byte <─────────────────────────────────────────┘ (sideband "remote:" lines)
          └──transfer (bytes, rate)──> pack received ──index-pack──> ──checkout──> exit
                                                     (resolving deltas,  (unpack_trees)
                                                      checking objects)

Sources: trace2 events (``GIT_TRACE2_EVENT``: the ``fetch-pack`` regions, the
``negotiation_v2`` region and ``total_rounds``, index-pack's ``progress``
regions, ``unpack_trees``), git's stderr (the server's sideband progress
``remote: Counting objects`` / ``Compressing objects`` and the client's
``Receiving objects``), the monitor's timeline (when each stderr byte had been
written: a progress line is dated to the sample that first saw it, within the
sampling interval), and ``GIT_TRACE_PACKET`` (the refs the server advertised, and the first
pack byte: its ``PACK ...`` line, stamped by git to the microsecond; the sample's date of
``Receiving objects`` only where the trace has none).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from gitnetdiag.rundir.records import TimelinePoint
from gitnetdiag.rundir.trace2 import event_time_s, push_phases, trace2_events
from gitnetdiag.thresholds import MIN_RATE_BYTES

__all__ = ["ReceiverPhases", "count_advertised_refs", "finished_clone_rate", "push_phases",
           "receiver_phases", "seen_at_s"]


@dataclass(frozen=True, kw_only=True)
class ReceiverPhases:
    """Phases of one transfer at the receiving client (a clone) in seconds since git
    started; None when not seen (a clone stopped mid-pack has no index-pack or checkout)."""

    protocol_version: int | None
    """Wire protocol version git negotiated (trace2 ``negotiated-version``)."""
    ref_count: int | None
    """Refs the server advertised (``ls-refs`` answer, or the v0 advertisement)."""
    ref_advertisement_s: float | None
    """Start to fetch-pack's first region: connect, TLS/SSH, auth and the refs."""
    negotiation_s: float | None
    """Client negotiation (want/have rounds) until the request was sent."""
    negotiation_rounds: int | None
    """Negotiation rounds (trace2 ``total_rounds``)."""
    request_sent_s: float | None
    """When the fetch request went out (end of negotiation), since start."""
    first_pack_byte_s: float | None
    """When the first pack object arrived (git's first ``Receiving objects`` line)."""
    server_objects_counted: int | None
    """Objects the server said it counted (``remote: Counting objects ... done``)."""
    server_objects_compressed: int | None
    """Objects the server said it compressed (delta search)."""
    server_counting_done_s: float | None
    """When the server's ``Counting objects ... done`` was seen, since start."""
    server_compressing_done_s: float | None
    """When the server's ``Compressing objects ... done`` was seen, since start."""
    pack_received_s: float | None
    """When the whole pack was received (index-pack left ``Receiving objects``)."""
    received_bytes: int | None
    """Pack bytes index-pack received (trace2 ``total_bytes``), for a whole pack."""
    index_pack_s: float | None
    """index-pack resolving deltas and checking objects (client CPU)."""
    checkout_s: float | None
    """Checking out the working tree (``unpack_trees``)."""
    total_s: float | None
    """Start to git clone's exit (trace2), None when it was stopped."""
    receiving_s: float | None = None
    """index-pack's ``Receiving objects`` region: the pack's transfer as git timed it (with
    index-pack's own work per object), None without the region."""

    @property
    def server_pack_generation_s(self) -> float | None:
        """Request sent to the first pack byte: the server's counting and compressing
        (plus one round trip), the wait before a single object moves."""
        if self.request_sent_s is None or self.first_pack_byte_s is None:
            return None
        return max(0.0, self.first_pack_byte_s - self.request_sent_s)


def _region(events: Sequence[dict[str, Any]], category: str, label: str,
            ) -> tuple[float | None, float | None]:
    """Absolute enter and leave times of the first region ``category/label``."""
    enter = leave = None
    for event in events:
        if event.get("category") != category or event.get("label") != label:
            continue
        if event.get("event") == "region_enter" and enter is None:
            enter = event_time_s(event)
        elif event.get("event") == "region_leave" and enter is not None and leave is None:
            leave = event_time_s(event)
    return enter, leave


def _data(events: Sequence[dict[str, Any]], key: str) -> int | None:
    for event in events:
        if event.get("event") == "data" and event.get("key") == key:
            try:
                return int(event.get("value", ""))
            except ValueError:
                return None
    return None


def _span(enter: float | None, leave: float | None) -> float | None:
    return leave - enter if enter is not None and leave is not None else None


_REF_LINE = re.compile(r"packet:\s+(\S+)< (?:[0-9a-f]{40}|[0-9a-f]{64}) ([^\s\x00]+)")


def count_advertised_refs(packet_trace: str) -> int | None:
    """Refs the server advertised, from ``GIT_TRACE_PACKET`` (the client's side of it);
    None when the trace holds no advertisement (a stopped run, a server that sent none)."""
    refs = {match.group(2) for match in _REF_LINE.finditer(packet_trace)
            if match.group(1) != "upload-pack" and not match.group(2).endswith("^{}")}
    return len(refs) if refs else None


_COUNTED = re.compile(r"remote: Counting objects: +\d+% \((\d+)/(\d+)\), done")
_COMPRESSED = re.compile(r"remote: Compressing objects: +\d+% \((\d+)/(\d+)\), done")
_RECEIVING = re.compile(r"Receiving objects: +\d+% \((\d+)/\d+\)")


_PACK_PACKET = re.compile(
    r"^(\d{2}):(\d{2}):(\d{2})\.(\d{6}) \S+\s+packet:\s+\S+< \x01?PACK \.\.\.", re.M)


def pack_packet_epoch_s(packet_trace: str, started_epoch_s: float) -> float | None:
    """When git read the pack's first packet (``GIT_TRACE_PACKET``'s ``... < PACK ...``
    line, which git stamps with its local time of day to the microsecond), as an epoch: on
    the day of ``started_epoch_s``, or the next when that would put it over an hour before
    the start (a clone across midnight). None without the line."""
    match = _PACK_PACKET.search(packet_trace)
    if match is None:
        return None
    hour, minute, second, micro = (int(g) for g in match.groups())
    start = datetime.fromtimestamp(started_epoch_s)
    try:
        at = start.replace(hour=hour, minute=minute, second=second, microsecond=micro)
    except ValueError:  # not a time of day (a damaged trace)
        return None
    if at < start - timedelta(hours=1):
        at += timedelta(days=1)
    return at.timestamp()


def seen_at_s(timeline: Sequence[TimelinePoint], offset: int) -> float | None:
    """When the stderr byte at ``offset`` had been written: the first sample past it."""
    for point in timeline:
        if point.stderr_bytes > offset:
            return point.t_s
    return None


def _first_object_offset(stderr: str) -> int | None:
    for match in _RECEIVING.finditer(stderr):
        if int(match.group(1)) > 0:
            return match.start()
    return None


def receiver_phases(*, trace2: Iterable[str], stderr: str, timeline: Sequence[TimelinePoint],
                    packet_trace: str, started_epoch_s: float) -> ReceiverPhases:
    """The phases of one clone from its artifacts (see the module doc)."""
    events = trace2_events(trace2)
    starts = [t for e in events if e.get("event") == "start" and "/" not in e["sid"]
              if (t := event_time_s(e)) is not None]
    origin = starts[0] if starts else started_epoch_s
    # Timeline seconds count from our own start of git; trace2 counts from git's.
    shift = origin - started_epoch_s

    def rel(stamp: float | None) -> float | None:
        return None if stamp is None else stamp - origin

    fetch_pack = [t for e in events if e.get("category") == "fetch-pack"
                  and e.get("event") == "region_enter" if (t := event_time_s(e)) is not None]
    negotiation = next(((e.get("label"), e.get("category")) for e in events
                        if str(e.get("label", "")).startswith("negotiation")
                        and e.get("category") == "fetch-pack"), None)
    neg_enter, neg_leave = (_region(events, "fetch-pack", str(negotiation[0]))
                            if negotiation else (None, None))
    recv_enter, recv_leave = _region(events, "progress", "Receiving objects")
    resolve_enter, resolve_leave = _region(events, "progress", "Resolving deltas")
    _, check_leave = _region(events, "progress", "Checking objects")
    checkout_enter, checkout_leave = _region(events, "unpack_trees", "unpack_trees")
    exits = [t for e in events if e.get("event") == "exit" and "/" not in e["sid"]
             if (t := event_time_s(e)) is not None]
    first_offset = _first_object_offset(stderr)
    counted = _COUNTED.search(stderr)
    compressed = _COMPRESSED.search(stderr)

    received_by = rel(recv_leave) if recv_leave is not None else rel(exits[0]) if exits else None

    def dated(offset: int | None) -> float | None:
        """When the line at ``offset`` was first seen; None when the first sample past it
        came after the pack was all received (git's own clock): a starved monitor's late
        sample dates nothing (a loaded lab run's git:// clone was dated 1.9 s into a
        1.7 s clone, a server wait longer than the clone)."""
        seen = seen_at_s(timeline, offset) if offset is not None else None
        if seen is None:
            return None
        at = max(0.0, seen - shift)
        return None if received_by is not None and at > received_by else at

    index_end = check_leave if check_leave is not None else resolve_leave
    return ReceiverPhases(
        protocol_version=_data(events, "negotiated-version"),
        ref_count=count_advertised_refs(packet_trace),
        ref_advertisement_s=rel(min(fetch_pack)) if fetch_pack else None,
        negotiation_s=_span(neg_enter, neg_leave),
        negotiation_rounds=_data(events, "total_rounds"),
        request_sent_s=rel(neg_leave if neg_leave is not None else recv_enter),
        first_pack_byte_s=_first_pack_byte_s(rel(pack_packet_epoch_s(
            packet_trace, started_epoch_s)), dated(first_offset), received_by),
        server_objects_counted=int(counted.group(2)) if counted else None,
        server_objects_compressed=int(compressed.group(2)) if compressed else None,
        server_counting_done_s=dated(counted.start() if counted else None),
        server_compressing_done_s=dated(compressed.start() if compressed else None),
        pack_received_s=rel(recv_leave),
        received_bytes=_data(events, "total_bytes") if recv_leave is not None else None,
        index_pack_s=_span(resolve_enter, index_end),
        checkout_s=_span(checkout_enter, checkout_leave),
        total_s=rel(exits[0]) if exits else None,
        receiving_s=_span(recv_enter, recv_leave),
    )


def _first_pack_byte_s(traced: float | None, dated: float | None,
                       received_by: float | None) -> float | None:
    """The packet trace's stamp (never after the pack was received), else the sample's
    date of git's first ``Receiving objects`` count."""
    if traced is not None and (received_by is None or traced <= received_by + 1e-3):
        return max(0.0, traced)
    return dated


def finished_clone_rate(phases: ReceiverPhases, moved_bytes: int, wall_s: float
                        ) -> tuple[int, float, float] | None:
    """``(bytes, seconds, rate)`` of a clone that finished with no measured rate (its pack
    came between two samples of the monitor and git did not count it aloud: an older run
    directory). A clone that finished is a measurement: index-pack's ``total_bytes`` over
    its ``Receiving objects`` region, else the bytes received over the clone's wall time,
    a lower bound of its rate. None below :data:`~gitnetdiag.thresholds.MIN_RATE_BYTES`
    (round trips, not a rate: the verdict calls such a clone ``too-small``)."""
    received = phases.received_bytes
    if received and received >= MIN_RATE_BYTES and phases.receiving_s:
        return max(received, moved_bytes), phases.receiving_s, received / phases.receiving_s
    if moved_bytes >= MIN_RATE_BYTES and wall_s > 0:
        return moved_bytes, wall_s, moved_bytes / wall_s
    return None
