"""HTTP/1.1 response heads from a decrypted capture (tshark does the TLS and HTTP).

    capture + keys --tshark -T fields (H1_TSHARK_FIELDS)--> text
        --parse_h1_responses()--> H1Response per response head

What a bare capture of an HTTPS clone needs of them is the answer's status and its
``Content-Length`` against what the server sent after it (issue 42: a 200 that carried
100 kB of an 8 MiB pack): :mod:`gitnetdiag.capture.sniff` measures how far past the head's
segment the server's bytes reached. Everything here is pure, tested on recorded tshark
output; running tshark is :mod:`gitnetdiag.tools.tshark`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitnetdiag.errors import CaptureFormatError

H1_TSHARK_FIELDS = ("tcp.srcport", "tcp.dstport", "http.response.code",
                    "http.content_length", "tcp.seq_raw")
"""The fields tshark prints per HTTP response (``-Y http.response``, body reassembly off so
a response cut short is still dissected)."""


@dataclass(frozen=True, kw_only=True)
class H1Response:
    """One HTTP/1.1 response head seen decrypted."""

    server_port: int
    """Port of the side that sent it."""
    client_port: int
    """Port of the side it went to."""
    status: int
    """The status code."""
    content_length: int | None
    """Its ``Content-Length``; None when it gave none (chunked, or a close)."""
    segment_seq: int
    """Raw (32-bit) sequence number of the TCP segment that ended the head: the body is at
    most what the server sent from there (TLS records' framing included)."""


def parse_h1_responses(text: str) -> list[H1Response]:
    """Parse ``tshark -T fields`` output (tab separated, :data:`H1_TSHARK_FIELDS`); a line
    that is not a response (no status) is skipped."""
    found: list[H1Response] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        columns = line.split("\t")
        if len(columns) != len(H1_TSHARK_FIELDS):
            raise CaptureFormatError(
                f"tshark line {number} has {len(columns)} columns, expected "
                f"{len(H1_TSHARK_FIELDS)}", hint="run tshark with exactly H1_TSHARK_FIELDS")
        sport, dport, status, length, seq = (c.split(",")[0].strip() for c in columns)
        if not status.isdigit():
            continue
        try:
            found.append(H1Response(server_port=int(sport), client_port=int(dport),
                                    status=int(status),
                                    content_length=int(length) if length.isdigit() else None,
                                    segment_seq=int(seq)))
        except ValueError as exc:
            raise CaptureFormatError(f"tshark line {number}: {exc}",
                                     hint="the capture may be damaged at this frame") from exc
    return found
