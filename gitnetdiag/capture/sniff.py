"""What application protocol a TCP connection carries, from the first payload bytes.

A bare capture (someone else's tcpdump) says which connections are git only
by their ports, unless it holds payload: then a TLS ClientHello (its ALPN
list and SNI), the ``SSH-2.0-`` banner or a ``git://`` request
(``git-receive-pack``) names the protocol on any port. A plain-HTTP request line
(``GET /repo.git/info/refs?service=git-upload-pack``, ``POST /repo.git/git-upload-pack``)
names the git service too: which way the pack flows, as a ``git://`` request does. A
headers-only capture (``tcpdump -s 96``) keeps a few payload bytes at best: enough for the TLS
record header or the SSH banner, rarely for the ALPN list.

The walk is a second, cheap pass over the file: the vectorised decoder, then
a numpy test of the first bytes of every payload, and Python only for the few
segments that start like a handshake.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gitnetdiag.capture.compressed import capture_stream
from gitnetdiag.capture.decode import decode_tcp
from gitnetdiag.capture.decodestats import DecodeStats
from gitnetdiag.capture.formats import open_walker
from gitnetdiag.capture.reader import open_capture
from gitnetdiag.errors import GitnetdiagError

HEAD_BYTES = 1024
"""Payload bytes kept of a segment that starts like a handshake."""
MAX_HEADS = 4096
"""At most this many such segments are parsed (bounded work on a huge capture)."""


@dataclass(kw_only=True)
class Sniffed:
    """What the first payload bytes of one TCP connection said (keyed by its ports)."""

    tls: bool = False
    """A TLS ClientHello was seen (sent by ``client_port``)."""
    alpn: tuple[str, ...] = ()
    """ALPN protocols offered in the ClientHello (``h2``, ``http/1.1``), when captured."""
    sni: str | None = None
    """Server name of the ClientHello, when captured."""
    ssh_banner: str | None = None
    """The first ``SSH-2.0-...`` line seen."""
    git_service: str | None = None
    """``git-receive-pack`` or ``git-upload-pack`` of a git:// request."""
    http_service: str | None = None
    """``git-receive-pack`` or ``git-upload-pack`` named by a plain-HTTP request line."""
    client_port: int | None = None
    """Port of the side that sent the ClientHello / the git:// or HTTP request (the client)."""
    notes: list[str] = field(default_factory=list)
    """Partial evidence (a ClientHello cut before its ALPN by the snap length)."""
    http_status: int | None = None
    """Status of the last plain-HTTP response seen on the connection."""
    content_length: int | None = None
    """That response's ``Content-Length``; None when it gave none (chunked, or a close)."""
    body_start_seq: int | None = None
    """Sequence number (32 bits) where that response's body begins."""
    body_bytes: int = 0
    """Body bytes of that response the server sent (highest sequence reached past it)."""
    progress_packets: int = 0
    """Segments that begin with a sideband band-2 pkt-line (the server's progress), where
    the payload was captured (git://, plain HTTP)."""
    pack_seen: bool = False
    """The pack's header was seen: a band-1 pkt-line that begins ``PACK``, or ``PACK`` and
    its version in one of the server's first segments (:func:`_scan_pack`)."""
    tails: dict[int, bytes | None] = field(default_factory=dict)
    """Per sending port of a readable connection (a git:// or plain-HTTP request seen): the
    last bytes of its last data segment, None when that segment was not captured whole."""
    scanned: int = 0
    """Server segments searched for the pack header so far (:func:`_scan_pack`)."""
    decrypted: bool = False
    """The response head came from a decrypted capture (a keylog, tshark): its body bytes
    count from the segment that ended the head, TLS framing included (an upper bound)."""

    @property
    def service(self) -> str | None:
        """The git service the client asked for (git:// or plain HTTP), when seen."""
        return self.git_service or self.http_service


def _hello(data: bytes, s: Sniffed) -> None:
    """ALPN and SNI of a ClientHello record, as far as the bytes reach."""
    s.tls = True
    try:
        p = 5 + 4 + 2 + 32  # record header, handshake header, version, random
        p += 1 + data[p]  # session id
        p += 2 + int.from_bytes(data[p:p + 2], "big")  # cipher suites
        p += 1 + data[p]  # compression methods
        end = p + 2 + int.from_bytes(data[p:p + 2], "big")
        p += 2
        while p + 4 <= min(end, len(data)):
            kind = int.from_bytes(data[p:p + 2], "big")
            size = int.from_bytes(data[p + 2:p + 4], "big")
            body = data[p + 4:p + 4 + size]
            if len(body) < size:
                break
            if kind == 0 and len(body) > 5:  # server_name: list len, type, name len, name
                s.sni = body[5:5 + int.from_bytes(body[3:5], "big")].decode("ascii", "replace")
            elif kind == 16:  # application_layer_protocol_negotiation
                names, q = [], 2
                while q < len(body):
                    n = body[q]
                    names.append(body[q + 1:q + 1 + n].decode("ascii", "replace"))
                    q += 1 + n
                s.alpn = tuple(names)
            p += 4 + size
    except IndexError:
        pass
    if not s.alpn:
        s.notes.append("the ClientHello was cut before its ALPN list (snap length)")


_SERVICES = (b"git-upload-pack", b"git-receive-pack")


def _http_service(data: bytes) -> str | None:
    """The git service of an HTTP request line, None when it names neither."""
    line = data.split(b"\r\n", 1)[0].split(b"\n", 1)[0]
    for name in _SERVICES:
        if name in line:
            return name.decode()
    return None


def _response(data: bytes, seq: int, s: Sniffed) -> None:
    """Status, Content-Length and body start of a plain-HTTP response head."""
    head, sep, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    try:
        s.http_status = int(lines[0].split(b" ")[1])
    except (IndexError, ValueError):
        return
    s.content_length = None
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            s.content_length = int(value.strip())
    s.body_start_seq = (seq + len(head) + len(sep)) & 0xFFFFFFFF if sep else None
    s.body_bytes = 0
    if b"\x01PACK" in body:
        s.pack_seen = True


def _count_bands(first: np.ndarray, sport: np.ndarray, dport: np.ndarray,
                 out: dict[tuple[int, int], Sniffed]) -> None:
    """Sideband pkt-lines at the start of segments: progress (band 2), the pack (band 1)."""
    hexed = (_is_hex(first[:, 0]) & _is_hex(first[:, 1]) & _is_hex(first[:, 2])
             & _is_hex(first[:, 3]))
    band2 = hexed & (first[:, 4] == 2)
    pack = (hexed & (first[:, 4] == 1) & (first[:, 5] == ord("P")) & (first[:, 6] == ord("A"))
            & (first[:, 7] == ord("C")) & (first[:, 8] == ord("K")))
    for mask, what in ((band2, "progress"), (pack, "pack")):
        if not mask.any():
            continue
        keys = np.minimum(sport[mask], dport[mask]) * 65536 + np.maximum(sport[mask], dport[mask])
        for key, n in zip(*np.unique(keys, return_counts=True), strict=True):
            s = out.get((int(key) >> 16, int(key) & 0xFFFF))
            if s is None or s.tls:
                continue
            if what == "progress":
                s.progress_packets += int(n)
            else:
                s.pack_seen = True


def _body_reach(rows_seq: np.ndarray, plen: np.ndarray, sport: np.ndarray, dport: np.ndarray,
                out: dict[tuple[int, int], Sniffed]) -> None:
    """How far each open response's body reached in this batch (its server's segments)."""
    for (lo, hi), s in out.items():
        if s.body_start_seq is None or s.client_port is None:
            continue
        server = hi if s.client_port == lo else lo
        mine = (sport == server) & (dport == s.client_port)
        if not mine.any():
            continue
        reach = (rows_seq[mine] + plen[mine] - s.body_start_seq) % (1 << 32)
        reach = reach[reach < (1 << 31)]
        if len(reach):
            s.body_bytes = max(s.body_bytes, int(reach.max()))


TAIL_BYTES = 16
"""Bytes kept of a readable connection's last segment each way: git's closing flush-pkt
(``0000``) and, over chunked HTTP, the last chunk after it."""


def _tails(buf: np.ndarray, sport: np.ndarray, dport: np.ndarray, end: np.ndarray,
           whole: np.ndarray, out: dict[tuple[int, int], Sniffed]) -> None:
    """The end of the last data segment of this batch, each way, of every readable
    connection (rows in capture order)."""
    keys = np.minimum(sport, dport) * 65536 + np.maximum(sport, dport)
    for key in np.unique(keys):
        s = out.get((int(key) >> 16, int(key) & 0xFFFF))
        if s is None or s.service is None or s.tls:
            continue
        for port in {int(p) for p in sport[keys == key]}:
            last = int(np.flatnonzero((keys == key) & (sport == port))[-1])
            s.tails[port] = (bytes(buf[max(0, int(end[last]) - TAIL_BYTES):int(end[last])])
                             if whole[last] else None)


PACK_SCAN_SEGMENTS = 64
"""A readable connection's first server data segments searched for the pack's header
(``PACK``, version 2 or 3): git writes the band-1 header and the pack's first bytes in
separate writes, so the header need not begin a segment."""


def _scan_pack(buf: np.ndarray, sport: np.ndarray, dport: np.ndarray, start: np.ndarray,
               end: np.ndarray, out: dict[tuple[int, int], Sniffed]) -> None:
    """Look for the pack header in the first server segments of each readable connection."""
    for (lo, hi), s in out.items():
        if s.pack_seen or s.client_port is None or s.tls or s.service is None \
                or s.scanned >= PACK_SCAN_SEGMENTS:
            continue
        server = hi if s.client_port == lo else lo
        rows = np.flatnonzero((sport == server) & (dport == s.client_port))
        for row in rows[:PACK_SCAN_SEGMENTS - s.scanned]:
            a, b = int(start[row]), int(end[row])
            data = bytes(buf[a:b])  # the whole captured payload: PACK may sit behind progress
            if b"PACK\0\0\0\x02" in data or b"PACK\0\0\0\x03" in data:
                s.pack_seen = True
                break
        s.scanned += min(len(rows), PACK_SCAN_SEGMENTS - s.scanned)


def _git_starts(first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Segments that begin a git:// request: its pkt-line, or its text alone."""
    git = (_is_hex(first[:, 0]) & _is_hex(first[:, 1]) & _is_hex(first[:, 2])
           & _is_hex(first[:, 3]) & (first[:, 4] == ord("g"))
           & (first[:, 5] == ord("i")) & (first[:, 6] == ord("t")))
    # git writes a git:// request's pkt-line length in a segment of its own
    # (seen in the lab: "003d", then "git-upload-pack /lab.git\0host=...").
    split = ((first[:, 0] == ord("g")) & (first[:, 1] == ord("i"))
             & (first[:, 2] == ord("t")) & (first[:, 3] == ord("-"))
             & ((first[:, 4] == ord("u")) | (first[:, 4] == ord("r"))))
    return git, split


def _http_starts(first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Segments that begin a plain-HTTP request (GET, POST) and a response."""
    request = (((first[:, 0] == ord("G")) & (first[:, 1] == ord("E"))
                & (first[:, 2] == ord("T")) & (first[:, 3] == ord(" ")))
               | ((first[:, 0] == ord("P")) & (first[:, 1] == ord("O"))
                  & (first[:, 2] == ord("S")) & (first[:, 3] == ord("T"))
                  & (first[:, 4] == ord(" "))))
    response = ((first[:, 0] == ord("H")) & (first[:, 1] == ord("T"))
                & (first[:, 2] == ord("T")) & (first[:, 3] == ord("P"))
                & (first[:, 4] == ord("/")))
    return request, response


def _is_hex(b: np.ndarray) -> np.ndarray:
    return ((b >= 48) & (b <= 57)) | ((b >= 97) & (b <= 102))


def sniff_connections(path: str | os.PathLike[str],
                      seeded: dict[tuple[int, int], Sniffed] | None = None
                      ) -> dict[tuple[int, int], Sniffed]:
    """Per connection (its two ports, sorted), what its first payload bytes said;
    ``seeded``: what is known already (decrypted response heads), whose body bytes the walk
    measures.

    Never raises for damage: what was read before it counts. A file that is not
    a capture raises :class:`~gitnetdiag.errors.CaptureFormatError` like the reader.
    """
    out: dict[tuple[int, int], Sniffed] = dict(seeded or {})
    parsed = 0
    with open_capture(Path(path)) as handle:
        walker = open_walker(capture_stream(handle))
        stats = DecodeStats()
        try:
            for batch in walker.batches():
                rows = decode_tcp(batch, stats)
                has = rows.payload_len > 0
                if not has.any():
                    continue
                rec = rows.record[has]
                plen = rows.payload_len[has]
                start = batch.data_off[rec] + batch.origlen[rec] - plen
                end = batch.data_off[rec] + batch.caplen[rec]
                ok = (end - start >= 4) & (start >= batch.data_off[rec])
                idx = np.flatnonzero(ok)
                whole = batch.caplen[rec] == batch.origlen[rec]
                if not len(idx):
                    if any(s.service and not s.tls for s in out.values()):
                        _tails(batch.buf, rows.sport[has], rows.dport[has], end, whole, out)
                    continue
                first = np.stack([batch.buf[np.minimum(start[idx] + k, len(batch.buf) - 1)]
                                  for k in range(9)], axis=1)
                tls = (first[:, 0] == 0x16) & (first[:, 1] == 3) & (first[:, 5] == 1)
                ssh = ((first[:, 0] == ord("S")) & (first[:, 1] == ord("S"))
                       & (first[:, 2] == ord("H")) & (first[:, 3] == ord("-")))
                git, split = _git_starts(first)
                http, response = _http_starts(first)
                sport, dport = rows.sport[has][idx], rows.dport[has][idx]
                seqs = rows.seq[has][idx]
                for j in np.flatnonzero(tls | ssh | git | split | http | response):
                    if parsed >= MAX_HEADS:
                        return out
                    parsed += 1
                    a, b = int(start[idx[j]]), int(end[idx[j]])
                    data = bytes(batch.buf[a:min(b, a + HEAD_BYTES)])
                    sp, dp = int(sport[j]), int(dport[j])
                    s = out.setdefault((min(sp, dp), max(sp, dp)), Sniffed())
                    if tls[j] and not s.tls:
                        s.client_port = sp
                        _hello(data, s)
                    elif ssh[j] and s.ssh_banner is None:
                        s.ssh_banner = data.split(b"\r\n")[0].split(b"\n")[0].decode(
                            "ascii", "replace")[:80]
                    elif (git[j] or split[j]) and s.git_service is None:
                        named = data[4:] if git[j] else data
                        s.git_service = named.split(b" ")[0].decode("ascii", "replace")
                        s.client_port = sp
                    elif http[j] and s.http_service is None and not s.tls:
                        s.http_service = _http_service(data)
                        if s.http_service is not None:
                            s.client_port = sp
                    elif response[j] and not s.tls and s.client_port == dp:
                        _response(data, int(seqs[j]), s)
                if not any((s.service and not s.tls) or s.body_start_seq is not None
                           for s in out.values()):
                    continue  # nothing readable (TLS, SSH): no answer to follow
                _count_bands(first, sport, dport, out)
                _body_reach(seqs, plen[idx], sport, dport, out)
                _tails(batch.buf, rows.sport[has], rows.dport[has], end, whole, out)
                _scan_pack(batch.buf, sport, dport, start[idx], end[idx], out)
        except GitnetdiagError:
            return out  # damage: the reader reports it; what came before counts
    return out
