"""What decoding a capture met besides decodable TCP segments: the counts of
:class:`DecodeStats` (records that are not IP or not TCP, fragments, cut frames, tunnels)
and the capture clock's trouble (steps back, leaps ahead, bad sub-second fields), kept
across chunks and merged across forked readers."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

I64Array = npt.NDArray[np.int64]

CLOCK_JUMP_NS = 24 * 3600 * 1_000_000_000
"""A gap between consecutive records longer than a day is taken as a clock jump."""
FRAMES_NAMED = 5
"""Frame numbers kept per kind of timestamp trouble, for the warning."""
CAPTURE_RACE_NS = 1_000_000
"""A step back shorter than this is counted apart (``clock_backwards_sub_ms``): a Linux
packet socket stamps an incoming frame before it queues it and an outgoing one when it
is handed to the device, so on several CPUs an ACK can be queued behind a segment sent
a few microseconds after it was stamped (1 us in the lab's own captures)."""


@dataclass
class DecodeStats:
    """What a chunk held besides decodable TCP segments."""

    records: int = 0
    """Records seen."""
    non_ip: int = 0
    """Records that are not IPv4/IPv6 (ARP, unknown link types, ...)."""
    non_tcp: int = 0
    """IP packets that do not carry TCP."""
    fragments: int = 0
    """IP fragments, skipped like Wireshark does."""
    short: int = 0
    """Frames cut before the end of the base TCP header (20 bytes)."""
    options_cut: int = 0
    """TCP segments whose options were cut by the snap length (kept)."""
    unsupported_linktypes: set[int] = field(default_factory=set)
    """Link types seen but not decoded."""
    tunnelled: int = 0
    """Packets read from inside a VXLAN or GENEVE encapsulation."""
    clock_backwards: int = 0
    """Records stamped earlier than the record before them."""
    clock_backwards_sub_ms: int = 0
    """Of those, the ones stamped less than :data:`CAPTURE_RACE_NS` earlier (their frame
    numbers are not kept apart: ``backwards-ms`` names the longer steps only)."""
    clock_jumps: int = 0
    """Records stamped more than CLOCK_JUMP_NS after the record before them."""
    bad_fractions: int = 0
    """Records whose sub-second field is out of range (>= 1e9 ns or >= 1e6 us)."""
    clock_frames: dict[str, list[int]] = field(default_factory=dict)
    """The first frame numbers of each kind above (``backwards``, ``backwards-ms``,
    ``jumps``, ``fractions``)."""
    last_ts_ns: int | None = None
    """Time of the last record seen (the clock check continues across chunks)."""

    def add(self, other: DecodeStats) -> None:
        """Accumulate ``other`` into this one."""
        self.records += other.records
        self.non_ip += other.non_ip
        self.non_tcp += other.non_tcp
        self.fragments += other.fragments
        self.short += other.short
        self.options_cut += other.options_cut
        self.unsupported_linktypes |= other.unsupported_linktypes
        self.tunnelled += other.tunnelled
        self.clock_backwards += other.clock_backwards
        self.clock_backwards_sub_ms += other.clock_backwards_sub_ms
        self.clock_jumps += other.clock_jumps
        self.bad_fractions += other.bad_fractions
        for kind, frames in other.clock_frames.items():
            kept = self.clock_frames.setdefault(kind, [])
            kept.extend(frames[: FRAMES_NAMED - len(kept)])
        if other.last_ts_ns is not None:
            self.last_ts_ns = other.last_ts_ns

    def check_clock(self, ts_ns: I64Array, bad_fraction: I64Array) -> None:
        """Count timestamps that step back or leap ahead (records ``ts_ns`` come next)."""
        if len(ts_ns) == 0:
            return
        first_frame = self.records + 1
        prev = np.empty_like(ts_ns)
        prev[0] = ts_ns[0] if self.last_ts_ns is None else self.last_ts_ns
        prev[1:] = ts_ns[:-1]
        step = ts_ns - prev
        self.last_ts_ns = int(ts_ns[-1])
        odd = (step < 0) | (step > CLOCK_JUMP_NS)
        if not odd.any() and not len(bad_fraction):
            return
        backwards = np.flatnonzero(step < 0)
        long_back = np.flatnonzero(step <= -CAPTURE_RACE_NS)
        jumps = np.flatnonzero(step > CLOCK_JUMP_NS)
        for kind, rows in (("backwards", backwards), ("backwards-ms", long_back),
                           ("jumps", jumps), ("fractions", bad_fraction)):
            if not len(rows):
                continue
            kept = self.clock_frames.setdefault(kind, [])
            kept.extend((rows[: FRAMES_NAMED - len(kept)] + first_frame).tolist())
        self.clock_backwards += len(backwards)
        self.clock_backwards_sub_ms += len(backwards) - len(long_back)
        self.clock_jumps += len(jumps)
        self.bad_fractions += len(bad_fraction)
