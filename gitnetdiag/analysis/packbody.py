"""Was the request body of a git HTTP/2 push the pack git built? (pure)

git ends every pack with the SHA-1 of all the bytes before it (gitformat-pack(5): "a
20-byte trailer, the SHA-1 checksum of all of the above"). git computes that trailer over
what it wrote, so a body that reached the wire whole (END_STREAM sent) but whose last 20
bytes are not the SHA-1 of the rest was changed between git and the socket: by the
client's HTTP stack. Seen here with git 2.39.5's libcurl 7.88.1 under CPU load: the
body's second 65,535 B window sent twice in a row, the edge forwarding it, the server's
git saying ``early EOF`` and the edge answering 502 (docs/lab.md).

The input is tshark's ``-z follow,http2,raw`` text of one stream
(:func:`gitnetdiag.tools.tshark.http2_follow_raw`): a hex line per HTTP/2 frame the client
sent (the server's lines are indented), header included except for the decoded header
block. The receive-pack POST's streams come from ``-T fields`` text
(:func:`receive_pack_streams`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

PACK_CHECK_SCHEMA = "gitnetdiag.pack-check/1"
"""Schema of the probe's ``<stem>.packcheck.json``: one :class:`PackCheck` per receive-pack
POST of a push's capture, with its TCP and HTTP/2 stream."""
TRAILER_BYTES = 20
"""The SHA-1 trailer of a pack."""
PACK_HEADER_BYTES = 12
"""``PACK``, the version and the object count."""
STREAM_FIELDS = ("tcp.stream", "http2.streamid", "http2.type", "http2.headers.method",
                 "http2.headers.path")
"""tshark's fields per packet that :func:`receive_pack_streams` reads (aggregator ``|``)."""
_HEX_LINE = re.compile(r"[0-9a-f]+")
_DATA, _END_STREAM, _PADDED = 0, 0x1, 0x8


@dataclass(frozen=True, kw_only=True)
class RequestBody:
    """The DATA a client sent on one HTTP/2 stream."""

    data: bytes
    ended: bool
    """A DATA frame carried END_STREAM: the client sent the body whole, as far as it knew."""
    frames: int
    """DATA frames."""


@dataclass(frozen=True, kw_only=True)
class PackCheck:
    """What the body of a receive-pack POST held, measured against its own trailer."""

    body_bytes: int
    pack_bytes: int | None
    """Bytes from ``PACK`` to the end; None when no pack followed the commands."""
    objects: int | None
    """The object count the pack's header states."""
    ended: bool
    trailer_ok: bool | None
    """The last 20 bytes are the SHA-1 of the rest; None when not judged (no pack, or the
    body never ended: a cut body proves nothing about the client)."""

    @property
    def spoiled(self) -> bool:
        """The client sent a whole body that is not the pack git built."""
        return self.trailer_ok is False


def receive_pack_streams(fields_text: str) -> list[tuple[int, int]]:
    """(TCP stream, HTTP/2 stream) of every ``POST .../git-receive-pack`` request, from
    tshark's :data:`STREAM_FIELDS` (one line per packet: each frame's stream id and type
    in order, and each request HEADERS frame's method and path, so the n-th method is the
    n-th HEADERS frame's)."""
    found: list[tuple[int, int]] = []
    for line in fields_text.splitlines():
        tcp, sids, kinds, methods, paths = (line.split("\t") + [""] * 5)[:5]
        headers = [sid for sid, kind in zip(sids.split("|"), kinds.split("|"), strict=False)
                   if kind == "1"]
        for sid, method, path in zip(headers, methods.split("|"), paths.split("|"),
                                     strict=False):
            if method == "POST" and path.endswith("/git-receive-pack") and (
                    tcp.isdigit() and sid.isdigit()):
                found.append((int(tcp), int(sid)))
    return found


def client_body(follow_text: str) -> RequestBody:
    """The client's DATA payload of one followed stream (padding removed)."""
    data, ended, frames = bytearray(), False, 0
    for line in follow_text.splitlines():
        if not _HEX_LINE.fullmatch(line):  # the server's lines are indented, headers text
            continue
        frame = bytes.fromhex(line) if len(line) % 2 == 0 else b""
        if len(frame) < 9 or int.from_bytes(frame[:3], "big") != len(frame) - 9:
            continue  # the decoded header block: no frame header
        kind, flags, payload = frame[3], frame[4], frame[9:]
        if kind != _DATA:
            continue
        if flags & _PADDED and payload:
            payload = payload[1:len(payload) - payload[0]]
        data += payload
        frames += 1
        ended = ended or bool(flags & _END_STREAM)
    return RequestBody(data=bytes(data), ended=ended, frames=frames)


def pack_of(body: bytes) -> bytes | None:
    """The pack after a receive-pack request's commands, None when none follows them."""
    start = _pack_offset(body)
    return body[start:] if start is not None else None


def _pack_offset(body: bytes) -> int | None:
    """Where the pack starts: after the pkt-line commands and their flush-pkt."""
    at = 0
    while at + 4 <= len(body):
        try:
            size = int(body[at:at + 4], 16)
        except ValueError:
            return None
        if size == 0:
            return at + 4 if body[at + 4:at + 8] == b"PACK" else None
        if size < 4:
            return None
        at += size
    return None


def check_pack(body: RequestBody) -> PackCheck:
    """The body's pack against its own SHA-1 trailer."""
    data = body.data
    start = _pack_offset(data)
    if start is None:
        return PackCheck(body_bytes=len(data), pack_bytes=None, objects=None,
                         ended=body.ended, trailer_ok=None)
    pack = memoryview(data)[start:]
    objects = (int.from_bytes(pack[8:12], "big") if len(pack) >= PACK_HEADER_BYTES
               else None)
    judged = body.ended and len(pack) >= PACK_HEADER_BYTES + TRAILER_BYTES
    trailer_ok = None
    if judged:
        digest = hashlib.sha1(pack[:-TRAILER_BYTES], usedforsecurity=False).digest()
        trailer_ok = digest == bytes(pack[-TRAILER_BYTES:])
    return PackCheck(body_bytes=len(data), pack_bytes=len(pack), objects=objects,
                     ended=body.ended, trailer_ok=trailer_ok)
