"""The packs git sent in a run's HTTP/2 captures, checked by git's own ``index-pack``.

A lab test whose HTTP/2 push failed at the edge (a 502 from Traffic Server, "the host
requested did not return the document correctly") asks here whether the client was to
blame: the capture (``--full`` keeps it and git's TLS key log) is decrypted with tshark,
each ``POST .../git-receive-pack`` stream's DATA frames are joined, the pkt-line commands
are skipped and the pack is fed to ``git index-pack --stdin`` in a scratch repository.

Seen on this 2-core machine, 2026-12-03, with ``trafficserver-h2-small-window`` (in 2 of 9
runs with both cores busy and once in a fresh-clone ``make test``; in none of 7 unloaded
runs): git 2.39.5 with libcurl 7.88.1
pushed a 3 MiB pack over HTTP/2 through Traffic Server's 65,535 B window and sent the body's
second window (bytes 65,531-131,065) twice in a row, so index-pack fails at the first blob
(``inflate: data stream error``); a capture of Apache's side behind the edge held the same
bytes, so the edge forwarded what it got, the backend's git said ``early EOF`` and the edge
answered 502. The same push, unloaded, indexes cleanly.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path


def _tshark(pcap: Path, keylog: Path, *args: str) -> str:
    return subprocess.run(
        ["tshark", "-r", str(pcap), "-o", f"tls.keylog_file:{keylog}", *args],
        capture_output=True, text=True, timeout=120, check=False).stdout


def _push_streams(pcap: Path, keylog: Path) -> list[tuple[str, str]]:
    """(TCP stream, HTTP/2 stream) of every request HEADERS frame of a receive-pack POST.

    tshark gives one line per packet: each frame's stream id and type in order, and each
    request HEADERS frame's method and path, so the n-th method is the n-th type-1 frame."""
    out = _tshark(pcap, keylog, "-Y", "http2.headers.method", "-T", "fields",
                  "-E", "aggregator=|", "-e", "tcp.stream", "-e", "http2.streamid",
                  "-e", "http2.type", "-e", "http2.headers.method", "-e", "http2.headers.path")
    found = []
    for line in out.splitlines():
        tcp, sids, kinds, methods, paths = (line.split("\t") + [""] * 5)[:5]
        frames = zip(sids.split("|"), kinds.split("|"), strict=True)
        headers = [sid for sid, kind in frames if kind == "1"]
        for sid, method, path in zip(headers, methods.split("|"), paths.split("|"),
                                     strict=True):
            if method == "POST" and path.endswith("git-receive-pack"):
                found.append((tcp, sid))
    return found


def _client_body(pcap: Path, keylog: Path, tcp: str, stream: str) -> bytes:
    """The DATA payload the client sent on one HTTP/2 stream (frames as tshark follows them)."""
    out = _tshark(pcap, keylog, "-q", "-z", f"follow,http2,raw,{tcp},{stream}")
    body = b""
    for line in out.splitlines():
        if not re.fullmatch(r"[0-9a-f]+", line):  # the server's lines are indented
            continue
        frame = bytes.fromhex(line)
        # A line is a frame, header included, except the decoded header block (no header).
        if len(frame) < 9 or int.from_bytes(frame[:3], "big") != len(frame) - 9:
            continue
        kind, flags, payload = frame[3], frame[4], frame[9:]
        if kind == 0:
            if flags & 0x8:  # PADDED
                payload = payload[1:len(payload) - payload[0]]
            body += payload
    return body


def _pack_of(body: bytes) -> bytes | None:
    """The pack after the pkt-line commands and their flush, or None for no pack."""
    at = 0
    while at + 4 <= len(body):
        try:
            size = int(body[at:at + 4], 16)
        except ValueError:
            return None
        if size == 0:
            pack = body[at + 4:]
            return pack if pack.startswith(b"PACK") else None
        at += size
    return None


def pack_error(pack: bytes) -> str | None:
    """What ``git index-pack --stdin`` says of ``pack`` in a scratch repository; None if
    it took it."""
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(["git", "init", "-q", "--bare", scratch], check=True)
        proc = subprocess.run(["git", "-C", scratch, "index-pack", "--stdin"],
                              input=pack, capture_output=True, timeout=120, check=False)
    if proc.returncode == 0:
        return None
    return proc.stderr.decode(errors="replace").strip().replace("\n", "; ")


def invalid_packs(run: Path) -> list[str]:
    """index-pack's error for every HTTP/2 push pack of ``run`` that git rejects."""
    errors = []
    for pcap in sorted(run.glob("h2-*.pcap")):
        keylog = pcap.with_suffix(".keylog")
        if not keylog.is_file():
            continue
        for tcp, stream in _push_streams(pcap, keylog):
            pack = _pack_of(_client_body(pcap, keylog, tcp, stream))
            if pack is None:
                continue
            error = pack_error(pack)
            if error is not None:
                errors.append(f"{pcap.name} stream {stream}: {len(pack)} B: {error}")
    return errors
