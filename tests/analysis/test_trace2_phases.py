"""Phases of a clone from crafted trace2 events, progress text and a monitor timeline."""

from __future__ import annotations

import json
from functools import partial

import pytest

from gitnetdiag.analysis.trace2 import (
    count_advertised_refs,
    pack_packet_epoch_s,
    receiver_phases,
)
from gitnetdiag.rundir.records import TimelinePoint

T0 = 1_700_000_000.0
approx = partial(pytest.approx, abs=1e-5)


def _event(sid: str, at: float, event: str, **fields: object) -> str:
    from datetime import UTC, datetime

    stamp = datetime.fromtimestamp(T0 + at, UTC).isoformat().replace("+00:00", "Z")
    return json.dumps({"sid": sid, "time": stamp, "event": event, **fields})


TRACE2 = [
    _event("a", 0.0, "start", argv=["git", "clone"]),
    _event("a", 0.01, "data", category="transfer", key="negotiated-version", value="2"),
    _event("a", 0.30, "region_enter", category="fetch-pack",
           label="parse_remote_refs_and_find_cutoff"),
    _event("a", 0.31, "region_enter", category="fetch-pack", label="negotiation_v2"),
    _event("a", 0.32, "data", category="negotiation_v2", key="total_rounds", value="1"),
    _event("a", 0.35, "region_leave", category="fetch-pack", label="negotiation_v2"),
    _event("a/b", 0.36, "region_enter", category="progress", label="Receiving objects"),
    _event("a/b", 6.0, "data", category="progress", key="total_bytes", value="5000000"),
    _event("a/b", 6.0, "region_leave", category="progress", label="Receiving objects"),
    _event("a/b", 6.1, "region_enter", category="progress", label="Resolving deltas"),
    _event("a/b", 6.5, "region_leave", category="progress", label="Resolving deltas"),
    _event("a/b", 6.5, "region_enter", category="progress", label="Checking objects"),
    _event("a/b", 6.7, "region_leave", category="progress", label="Checking objects"),
    "not json {",
    _event("a", 7.0, "region_enter", category="unpack_trees", label="unpack_trees"),
    _event("a", 7.4, "region_leave", category="unpack_trees", label="unpack_trees"),
    _event("a", 7.5, "exit", code=0),
]
COUNTED = "remote: Counting objects: 100% (9000/9000), done.        \n"
COMPRESSED = "remote: Compressing objects: 100% (3000/3000), done.        \n"
FIRST = "Receiving objects:   1% (90/9000)\r"
STDERR = "Cloning into 'x'...\n" + COUNTED + COMPRESSED + FIRST + "Receiving objects: 100%\n"


def _timeline() -> list[TimelinePoint]:
    # git was started 20 ms before trace2's start; each sample dates what stderr held then.
    at = {0.25: 20, 2.0: 20 + len(COUNTED), 3.5: 20 + len(COUNTED) + len(COMPRESSED),
          4.0: len(STDERR)}
    return [TimelinePoint(t_s=t, stderr_bytes=size, received_bytes=0) for t, size in at.items()]


def test_phases_in_order_from_every_source() -> None:
    """Each phase comes from its own source and the timeline's clock is aligned to trace2's."""
    phases = receiver_phases(trace2=TRACE2, stderr=STDERR, timeline=_timeline(),
                          packet_trace="", started_epoch_s=T0 - 0.02)
    assert phases.protocol_version == 2
    assert phases.ref_advertisement_s == approx(0.30)
    assert phases.negotiation_s == approx(0.04)
    assert phases.negotiation_rounds == 1
    assert phases.request_sent_s == approx(0.35)
    assert phases.server_objects_counted == 9000 and phases.server_objects_compressed == 3000
    assert phases.server_counting_done_s == approx(1.98)
    assert phases.server_compressing_done_s == approx(3.48)
    assert phases.first_pack_byte_s == approx(3.98)
    assert phases.server_pack_generation_s == approx(3.63)
    assert phases.received_bytes == 5_000_000
    assert phases.index_pack_s == approx(0.6)
    assert phases.checkout_s == approx(0.4)
    assert phases.total_s == approx(7.5)


def test_stopped_clone_has_no_late_phases() -> None:
    """A clone stopped mid-pack: no pack received, index-pack, checkout or exit."""
    phases = receiver_phases(trace2=TRACE2[:7], stderr=STDERR, timeline=_timeline(),
                          packet_trace="", started_epoch_s=T0)
    assert phases.first_pack_byte_s is not None
    assert phases.pack_received_s is None and phases.received_bytes is None
    assert phases.index_pack_s is None and phases.checkout_s is None and phases.total_s is None


def test_a_sample_after_the_pack_was_received_dates_nothing() -> None:
    """A starved monitor whose first sample past the server's words and the first object
    came after git's own clock says the pack was all received (6.0 s): those phases are not
    known, and no server wait longer than the clone is made of them."""
    late = [TimelinePoint(t_s=0.25, stderr_bytes=20, received_bytes=0),
            TimelinePoint(t_s=6.5, stderr_bytes=len(STDERR), received_bytes=0)]
    phases = receiver_phases(trace2=TRACE2, stderr=STDERR, timeline=late,
                             packet_trace="", started_epoch_s=T0 - 0.02)
    assert phases.first_pack_byte_s is None and phases.server_pack_generation_s is None
    assert phases.server_counting_done_s is None and phases.server_compressing_done_s is None
    assert phases.pack_received_s == approx(6.0) and phases.request_sent_s == approx(0.35)
    # Without a Receiving region's end (stopped), git's exit bounds it; with neither, none.
    stopped = receiver_phases(trace2=TRACE2[:7], stderr=STDERR, timeline=late,
                              packet_trace="", started_epoch_s=T0 - 0.02)
    assert stopped.first_pack_byte_s == approx(6.48)


def _packet_line(at: float, text: str) -> str:
    from datetime import datetime

    stamp = datetime.fromtimestamp(T0 + at).strftime("%H:%M:%S.%f")
    return f"{stamp} pkt-line.c:80           packet:     {text}\n"


def test_the_packet_trace_dates_the_first_pack_byte() -> None:
    """git stamps its ``PACK ...`` packet to the microsecond: the first pack byte is that
    stamp on trace2's clock, not the sample that saw the first count (3.98 s here), and a
    late sample does not undo it."""
    trace = (_packet_line(0.2, "clone< version 2") + _packet_line(0.36, "clone< packfile")
             + _packet_line(2.5, "sideband< PACK ...") + _packet_line(2.6, "sideband< 0002"))
    phases = receiver_phases(trace2=TRACE2, stderr=STDERR, timeline=_timeline(),
                             packet_trace=trace, started_epoch_s=T0 - 0.02)
    assert phases.first_pack_byte_s == approx(2.5)
    assert phases.server_pack_generation_s == approx(2.15)
    # A stamp after the pack was all received (6.0 s) is not this clone's: the sample's date.
    late = _packet_line(6.5, "sideband< PACK ...")
    fallback = receiver_phases(trace2=TRACE2, stderr=STDERR, timeline=_timeline(),
                               packet_trace=late, started_epoch_s=T0 - 0.02)
    assert fallback.first_pack_byte_s == approx(3.98)


def test_a_pack_packet_across_midnight_is_on_the_next_day() -> None:
    from datetime import datetime

    start = datetime(2026, 12, 3, 23, 59, 59, 500000).timestamp()
    line = "00:00:00.250000 pkt-line.c:80 packet:        clone< PACK ...\n"
    assert pack_packet_epoch_s(line, start) == pytest.approx(start + 0.75)
    assert pack_packet_epoch_s("no pack here\n", start) is None
    assert pack_packet_epoch_s("25:61:00.000000 x packet: clone< PACK ...\n", start) is None


def test_advertised_refs_counted_from_the_client_side() -> None:
    """Refs the client read, once each; peeled tags and the server's own lines not counted."""
    oid = "a" * 40
    trace = "\n".join([
        f"12:00 pkt-line.c:80 packet:  upload-pack> {oid} refs/heads/main",
        f"12:00 pkt-line.c:80 packet:        clone< {oid} HEAD symref-target:refs/heads/main",
        f"12:00 pkt-line.c:80 packet:        clone< {oid} refs/heads/main",
        f"12:00 pkt-line.c:80 packet:        clone< {oid} refs/tags/v1 peeled:{oid}",
        f"12:00 pkt-line.c:80 packet:        clone< {oid} refs/tags/v1^{{}}",
        "12:00 pkt-line.c:80 packet:        clone> command=fetch",
    ])
    assert count_advertised_refs(trace) == 3
    assert count_advertised_refs("") is None
