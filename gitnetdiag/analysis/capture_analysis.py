"""One library call from a capture file to per-connection TCP results.

:func:`analyze_capture` streams the file through :class:`CaptureReader` into
:class:`~gitnetdiag.analysis.tcp.TcpAnalyzer`, so memory stays bounded by the
chunk size however large the capture is.  A damaged file is analysed up to
the damage and the result says so in ``warnings``; a file that is not a
capture at all raises :class:`~gitnetdiag.errors.CaptureFormatError`.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from gitnetdiag.analysis import TCP_FIELDS
from gitnetdiag.analysis.tcp import ConnectionAnalysis, TcpAnalyzer, Thresholds
from gitnetdiag.capture.decodestats import DecodeStats
from gitnetdiag.capture.formats import DEFAULT_CHUNK_BYTES
from gitnetdiag.capture.reader import CaptureReader, take_read_ahead


@dataclass(frozen=True, kw_only=True)
class CaptureAnalysis:
    """TCP analysis of one capture file."""

    path: str
    """The file analysed."""
    file_bytes: int
    """Its size."""
    records: int
    """Packet records read (every frame, TCP or not)."""
    tcp_segments: int
    """TCP segments decoded."""
    non_ip: int
    """Frames that were not IPv4/IPv6."""
    non_tcp: int
    """IP packets that were not TCP."""
    fragments: int
    """IP fragments (skipped)."""
    short_frames: int
    """Frames cut inside the IP or TCP header (skipped, counted)."""
    truncated_at: int | None
    """Byte offset where the file was damaged, None when clean."""
    warnings: list[str]
    """Things the reader of the report should know (damage, unsupported link types)."""
    connections: list[ConnectionAnalysis]
    """One entry per TCP connection, in order of first appearance."""
    has_tls_secrets: bool = False
    """The pcapng carries TLS decryption secrets: HTTP/2 can be decoded without a keylog."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        return data | {"warnings": list(self.warnings),
                       "connections": [c.to_dict() for c in self.connections]}


def analyze_capture(
    path: str | os.PathLike[str],
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    thresholds: Thresholds | None = None,
    parallel: bool | None = None,
    own_capture: bool = False,
) -> CaptureAnalysis:
    """Read ``path`` (pcap or pcapng) and analyse every TCP connection in it.

    ``own_capture``: gitnetdiag's probe took the file (it is listed in a run
    directory's manifest), so frames stamped less than a millisecond before the one
    ahead of them are the packet socket's stamping race
    (:data:`~gitnetdiag.capture.decodestats.CAPTURE_RACE_NS`), read in frame order like any
    step back but not warned about.

    A large file is read and decoded in a forked child while this process
    analyses (see :func:`~gitnetdiag.capture.reader.use_parallel`);
    ``parallel`` forces that on or off.  The result is the same either way.
    With neither ``chunk_bytes`` nor ``parallel`` given, the reading that
    :func:`~gitnetdiag.capture.reader.read_ahead` started for ``path`` is taken over.
    """
    defaults = chunk_bytes == DEFAULT_CHUNK_BYTES and parallel is None
    ahead = take_read_ahead(path, TCP_FIELDS) if defaults else None
    analyzer = TcpAnalyzer(thresholds)
    # The loop makes enough short-lived containers to trigger full collections
    # over everything the CLI imported (~30 ms per million packets, measured),
    # while it makes next to no garbage cycles: those wait until it is done.
    collecting = gc.isenabled()
    gc.disable()
    try:
        with (ahead[0] if ahead else
              CaptureReader(path, chunk_bytes=chunk_bytes, parallel=parallel)) as reader:
            # The analysis keeps none of the chunks: they may be borrowed.
            chunks = ahead[1] if ahead else reader.column_chunks(borrowed=True,
                                                                 fields=TCP_FIELDS)
            for columns in chunks:
                analyzer.feed_columns(columns)
            stats = reader.stats
            damage = reader.damage
            connections = analyzer.results(reader.connections)
            bridged = analyzer.clock_bridged()
            file_bytes = reader.file_bytes
            segments = reader.packets_read
            secrets = reader.has_tls_secrets
    finally:
        if collecting:
            gc.enable()
    warnings: list[str] = []
    if damage is not None:
        warnings.append(
            f"{damage.message}: analysed the {segments} TCP segments before it "
            f"({damage.hint})" if damage.hint else f"{damage.message}"
        )
    if stats.unsupported_linktypes:
        kinds = ", ".join(str(k) for k in sorted(stats.unsupported_linktypes))
        warnings.append(f"frames of unsupported link type(s) {kinds} were skipped")
    if stats.short:
        warnings.append(
            f"{stats.short} frame(s) were cut inside the IP/TCP header (snap length too small?)"
        )
    warnings += clock_warnings(stats, own_capture=own_capture, bridged=bridged)
    if stats.records and not segments:
        warnings.append("the capture holds no TCP segments")
    return CaptureAnalysis(
        path=str(Path(path)),
        file_bytes=file_bytes,
        records=stats.records,
        tcp_segments=segments,
        non_ip=stats.non_ip,
        non_tcp=stats.non_tcp,
        fragments=stats.fragments,
        short_frames=stats.short,
        truncated_at=None if damage is None else damage.offset,
        warnings=warnings,
        connections=connections,
        has_tls_secrets=secrets,
    )


def _frames(stats: DecodeStats, kind: str, count: int) -> str:
    named = ", ".join(str(f) for f in stats.clock_frames.get(kind, []))
    more = ", ..." if count > len(stats.clock_frames.get(kind, [])) else ""
    return f"frame{'s' if count > 1 else ''} {named}{more}"


def _bridged_text(bridged: tuple[int, int]) -> str:
    """How the connections' clocks were read past their steps back (:mod:`.tcp_clock`)."""
    steps, lone = bridged
    parts = []
    if lone:
        parts.append(f"{lone} lone frame(s) stamped out of line taken as simultaneous with "
                     "the frame before them in their connection")
    if steps:
        parts.append(f"{steps} clock step(s) back bridged in a connection (the frame at "
                     "the step simultaneous with the one before it, the later frames "
                     "keeping their spacing)")
    return "; ".join(parts) or "no connection's own frames out of order"


def clock_warnings(stats: DecodeStats, *, own_capture: bool = False,
                   bridged: tuple[int, int] = (0, 0)) -> list[str]:
    """One line per kind of timestamp trouble, naming the first frames; in a capture of
    gitnetdiag's own, steps back shorter than a millisecond
    (:data:`~gitnetdiag.capture.decodestats.CAPTURE_RACE_NS`) are no trouble. ``bridged``:
    the TCP analysis's (clock steps, lone frames), :meth:`.TcpAnalyzer.clock_bridged`."""
    out: list[str] = []
    backwards, kind = stats.clock_backwards, "backwards"
    if own_capture:
        backwards, kind = stats.clock_backwards - stats.clock_backwards_sub_ms, "backwards-ms"
    if backwards:
        out.append(
            f"timestamps step backwards at {backwards} frame(s) "
            f"({_frames(stats, kind, backwards)}): analysed in frame order, "
            f"{_bridged_text(bridged)}"
        )
    if stats.clock_jumps:
        out.append(
            f"timestamps leap more than a day ahead at {stats.clock_jumps} frame(s) "
            f"({_frames(stats, 'jumps', stats.clock_jumps)}): durations and rates of the "
            "connections spanning them are stretched, unless the clock comes back at the "
            "next frame (a lone frame, read at the time of the one before it)"
        )
    if stats.bad_fractions:
        out.append(
            f"{stats.bad_fractions} record(s) have a sub-second timestamp field out of range "
            f"({_frames(stats, 'fractions', stats.bad_fractions)}): "
            "the writer of the capture is broken; the excess was carried into the seconds"
        )
    return out
