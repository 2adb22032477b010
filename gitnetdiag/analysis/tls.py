"""Which application protocol (ALPN) each TLS connection negotiated, without keys.

The ClientHello (offers) is always in clear text. The server's choice is in
the ServerHello for TLS 1.2, but TLS 1.3 moves it into the encrypted
EncryptedExtensions: then the answer is ``encrypted`` unless keys are given
(tshark then shows it). A headers-only capture has no handshake bytes:
``unknown``.

Pure parsers of handshake records plus one tshark-based reader
(:func:`alpn_by_connection`).
"""

from __future__ import annotations

import struct
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitnetdiag.errors import CaptureFormatError, InputError

HANDSHAKE_CONTENT_TYPE = 22
CLIENT_HELLO, SERVER_HELLO = 1, 2
EXT_ALPN, EXT_SUPPORTED_VERSIONS = 16, 43
TLS13 = 0x0304


@dataclass(frozen=True, kw_only=True)
class Hello:
    """The parts of a ClientHello or ServerHello that matter here."""

    kind: str
    """``client`` or ``server``."""
    alpn: tuple[str, ...]
    """ALPN protocols (offered by a client; the one chosen by a TLS 1.2 server)."""
    tls13: bool
    """supported_versions names TLS 1.3 (for a server: it chose 1.3)."""


def _extensions(body: bytes, offset: int) -> dict[int, bytes]:
    (total,) = struct.unpack_from("!H", body, offset)
    offset += 2
    end = offset + total
    found: dict[int, bytes] = {}
    while offset + 4 <= end:
        ext_type, length = struct.unpack_from("!HH", body, offset)
        found[ext_type] = body[offset + 4 : offset + 4 + length]
        offset += 4 + length
    return found


def _alpn_list(data: bytes) -> tuple[str, ...]:
    names: list[str] = []
    offset = 2
    while offset < len(data):
        length = data[offset]
        names.append(data[offset + 1 : offset + 1 + length].decode("ascii", errors="replace"))
        offset += 1 + length
    return tuple(names)


def parse_hello(record: bytes) -> Hello | None:
    """Parse the first handshake message of a TLS record; None if it is not a Hello.

    Raises CaptureFormatError for a truncated or malformed Hello.
    """
    if len(record) < 9 or record[0] != HANDSHAKE_CONTENT_TYPE:
        return None
    kind = record[5]
    if kind not in (CLIENT_HELLO, SERVER_HELLO):
        return None
    body = record[9:]
    try:
        offset = 2 + 32  # legacy version, random
        session_len = body[offset]
        offset += 1 + session_len
        if kind == CLIENT_HELLO:
            (suites_len,) = struct.unpack_from("!H", body, offset)
            offset += 2 + suites_len
            offset += 1 + body[offset]  # compression methods
        else:
            offset += 2 + 1  # cipher suite, compression method
        extensions = _extensions(body, offset) if offset < len(body) else {}
    except (IndexError, struct.error) as exc:
        raise CaptureFormatError(
            "truncated TLS Hello", hint="the capture may be headers-only (snaplen too small)"
        ) from exc
    versions = extensions.get(EXT_SUPPORTED_VERSIONS, b"")
    if kind == SERVER_HELLO:
        tls13 = len(versions) == 2 and struct.unpack("!H", versions)[0] == TLS13
    else:
        offered = versions[1:]
        tls13 = any(
            struct.unpack_from("!H", offered, i)[0] == TLS13 for i in range(0, len(offered) - 1, 2)
        )
    alpn = _alpn_list(extensions[EXT_ALPN]) if EXT_ALPN in extensions else ()
    return Hello(kind="client" if kind == CLIENT_HELLO else "server", alpn=alpn, tls13=tls13)


def negotiated_alpn(client: Hello | None, server: Hello | None) -> str:
    """``h2``/``http/1.1``/..., ``none`` (no ALPN), ``encrypted`` (TLS 1.3) or ``unknown``."""
    if server is None:
        return "unknown"
    if server.alpn:
        return server.alpn[0]
    if server.tls13:
        return "encrypted" if client is None or client.alpn else "none"
    return "none"


@dataclass(frozen=True, kw_only=True)
class TlsConnectionAlpn:
    """ALPN of one TLS connection in a capture."""

    tcp_stream: int
    """tshark's TCP conversation index."""
    client: str
    """Client ``ip:port`` (sender of the ClientHello), or ``unknown``."""
    offered: tuple[str, ...]
    """Protocols the client offered."""
    negotiated: str
    """What the server chose, ``encrypted`` or ``unknown`` (see module docstring)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "tcp_stream": self.tcp_stream,
            "client": self.client,
            "offered": list(self.offered),
            "negotiated": self.negotiated,
        }


TLS_FIELDS = (
    "tcp.stream",
    "ip.src",
    "ipv6.src",
    "tcp.srcport",
    "tls.handshake.type",
    "tls.handshake.extensions_alpn_str",
    "tls.handshake.extensions.supported_version",
)


def parse_tls_fields(text: str) -> list[TlsConnectionAlpn]:
    """Pure: tshark ``-T fields`` output of :data:`TLS_FIELDS` -> ALPN per connection.

    A frame from the ClientHello's sender lists the offers; any ALPN string in
    a frame from the other side is the server's choice (ServerHello in TLS
    1.2, EncryptedExtensions when decrypted).
    """
    clients: dict[int, str] = {}
    offered: dict[int, tuple[str, ...]] = {}
    chosen: dict[int, str] = {}
    server_seen: dict[int, bool] = defaultdict(bool)
    server_tls13: dict[int, bool] = defaultdict(bool)
    for line in text.splitlines():
        if not line.strip():
            continue
        columns = line.split("\t")
        if len(columns) != len(TLS_FIELDS):
            raise CaptureFormatError(
                f"unexpected tshark TLS line with {len(columns)} columns",
                hint="run tshark with exactly TLS_FIELDS",
            )
        stream_text, ip4, ip6, port, types, alpns, versions = columns
        stream = int(stream_text)
        src = f"{ip4 or ip6}:{port}"
        type_list = [int(t) for t in types.split(",") if t]
        alpn_list = tuple(a for a in alpns.split(",") if a)
        if CLIENT_HELLO in type_list:
            clients[stream] = src
            offered[stream] = alpn_list
            continue
        if stream in clients and src != clients[stream]:
            if SERVER_HELLO in type_list:
                server_seen[stream] = True
                server_tls13[stream] = "0x0304" in versions.lower()
            if alpn_list:
                chosen[stream] = alpn_list[0]
    result: list[TlsConnectionAlpn] = []
    for stream in sorted(clients):
        if stream in chosen:
            negotiated = chosen[stream]
        elif not server_seen[stream]:
            negotiated = "unknown"
        elif server_tls13[stream] and offered[stream]:
            negotiated = "encrypted"
        else:
            negotiated = "none"
        result.append(
            TlsConnectionAlpn(
                tcp_stream=stream,
                client=clients[stream],
                offered=offered[stream],
                negotiated=negotiated,
            )
        )
    return result


def alpn_by_connection(
    pcap: Path, keylog: Path | None = None, *, timeout_s: float = 300.0
) -> list[TlsConnectionAlpn]:
    """Run tshark over ``pcap`` and report each TLS connection's ALPN."""
    from gitnetdiag.proc import require_program, run

    if not Path(pcap).is_file():
        raise InputError(f"no such capture: {pcap}", hint="give a pcap or pcapng file")
    argv = [require_program("tshark"), "-n", "-r", str(pcap)]
    if keylog is not None:
        argv += ["-o", f"tls.keylog_file:{keylog}"]
    argv += ["-Y", "tls.handshake", "-T", "fields", "-E", "occurrence=a"]
    for name in TLS_FIELDS:
        argv += ["-e", name]
    proc = run(argv, timeout_s=timeout_s, check=False)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise CaptureFormatError(
            f"tshark could not read {pcap}: {lines[-1] if lines else proc.returncode}",
            hint="check that the file is a pcap/pcapng capture",
        )
    return parse_tls_fields(proc.stdout)
