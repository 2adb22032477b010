"""The native SSH download ledger summarised (pure): the server's pacing under the channel
window this client granted (:mod:`gitnetdiag.probe.sshfetch`).

The server may have sent at most what the client granted: the channel's initial
window plus every window adjust the client sent since. Whatever of it the
client has not read yet is in flight or buffered, so ``granted - read`` after
each read is the most credit the server can have had left: near zero, the
channel window (not TCP, not the server) held the download.
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass

from gitnetdiag.analysis.fetchwindow import BURST_GAP_S
from gitnetdiag.rundir.fetchrecords import SshDownloadRecord


@dataclass(frozen=True, kw_only=True)
class SshDownloadPacing:
    """How the server paced the pack under the channel window the client granted."""

    target: str
    """``host:port``."""
    outcome: str
    """The native fetch's outcome."""
    error: str
    """Why it failed, else empty."""
    client_window_bytes: int
    """The channel window the client granted at the open."""
    client_max_packet_bytes: int
    """The largest channel packet the client accepts."""
    received_bytes: int
    """Bytes of upload-pack's answer received."""
    rate_bytes_per_s: float | None
    """Its rate."""
    reads: int
    """Reads of the answer."""
    median_burst_bytes: float | None
    """Median bytes per burst (reads less than ``BURST_GAP_S`` apart)."""
    longest_gap_s: float | None
    """Longest pause between two reads."""
    adjusts: int
    """Window adjusts the client sent."""
    median_adjust_bytes: float | None
    """Median bytes one adjust granted."""
    least_credit_bytes: int | None
    """The least the server can have had left to send (granted minus read, after each
    read); None without reads."""


def ssh_download_pacing(record: SshDownloadRecord) -> SshDownloadPacing:
    """A native SSH download ledger summarised: bursts, pauses, grants, the least credit."""
    times, sizes = record.read_t_s, record.read_bytes
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    bursts: list[int] = []
    for index, size in enumerate(sizes):
        if index == 0 or gaps[index - 1] >= BURST_GAP_S:
            bursts.append(0)
        bursts[-1] += size
    grants = sorted(zip(record.adjust_t_s, record.adjust_bytes, strict=False))
    credit: list[int] = []
    granted, read, next_grant = record.client_window_bytes, 0, 0
    for t_s, size in zip(times, sizes, strict=False):
        while next_grant < len(grants) and grants[next_grant][0] <= t_s:
            granted += grants[next_grant][1]
            next_grant += 1
        read += size
        credit.append(granted - read)
    return SshDownloadPacing(
        target=record.target, outcome=record.outcome, error=record.error,
        client_window_bytes=record.client_window_bytes,
        client_max_packet_bytes=record.client_max_packet_bytes,
        received_bytes=record.received_bytes, rate_bytes_per_s=record.rate_bytes_per_s,
        reads=len(sizes), median_burst_bytes=statistics.median(bursts) if bursts else None,
        longest_gap_s=max(gaps) if gaps else None, adjusts=len(record.adjust_bytes),
        median_adjust_bytes=(statistics.median(record.adjust_bytes)
                             if record.adjust_bytes else None),
        least_credit_bytes=max(0, min(credit)) if credit else None)
