"""tshark, the one external dissector: decrypts TLS and decodes HTTP/2 for the ledgers.

    capture + keys --tshark_argv()/run--> "-T fields" text
        --analysis.h2ledger.parse_tshark_fields()--> rows --h2_ledgers_from_rows()--> ledgers

tshark is run directly (``-T fields``) rather than through pyshark: the fields
output is a few columns of text that the pure parser reads, tested on recorded
output, and it runs under :func:`gitnetdiag.proc.run` with its timeout and
error mapping (docs/architecture.md, "Why no pyshark").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from gitnetdiag.analysis.h1responses import H1_TSHARK_FIELDS, H1Response, parse_h1_responses
from gitnetdiag.analysis.h2ledger import (
    TSHARK_FIELDS,
    H2WireLedger,
    h2_ledgers_from_rows,
    parse_tshark_fields,
)
from gitnetdiag.analysis.packbody import (
    STREAM_FIELDS,
    PackCheck,
    RequestBody,
    check_pack,
    client_body,
    receive_pack_streams,
)
from gitnetdiag.errors import CaptureFormatError, InputError
from gitnetdiag.inputfile import unusable_reason
from gitnetdiag.proc import require_program, run


def _reading(tshark: str, pcap: Path, keylog: Path | None) -> list[str]:
    """The start of every tshark command line here: read ``pcap``, no name resolution,
    TLS decrypted with ``keylog`` when given."""
    argv = [tshark, "-n", "-r", str(pcap)]
    if keylog is not None:
        argv += ["-o", f"tls.keylog_file:{keylog}"]
    return argv


def tshark_argv(tshark: str, pcap: Path, keylog: Path | None) -> list[str]:
    """The tshark command line that prints :data:`TSHARK_FIELDS` for every HTTP/2 frame."""
    argv = _reading(tshark, pcap, keylog)
    argv += ["-Y", "http2", "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a"]
    argv += ["-E", "aggregator=,"]
    for name in TSHARK_FIELDS:
        argv += ["-e", name]
    return argv


def http1_argv(tshark: str, pcap: Path, keylog: Path | None) -> list[str]:
    """The tshark command line that prints :data:`H1_TSHARK_FIELDS` for every HTTP/1.1
    response head (body reassembly off: a response cut short is dissected too)."""
    argv = _reading(tshark, pcap, keylog)
    argv += ["-o", "http.desegment_body:FALSE", "-Y", "http.response", "-T", "fields",
             "-E", "separator=/t", "-E", "occurrence=f"]
    for name in H1_TSHARK_FIELDS:
        argv += ["-e", name]
    return argv


def http1_responses_from_capture(pcap: Path, keylog: Path | None, *,
                                 timeout_s: float = 300.0) -> list[H1Response]:
    """The decrypted HTTP/1.1 response heads of ``pcap`` (with ``keylog``, or secrets
    embedded in a pcapng)."""
    return parse_h1_responses(_fields(pcap, keylog, http1_argv, timeout_s=timeout_s))


def http2_fields(pcap: Path, keylog: Path | None, *, timeout_s: float = 300.0) -> str:
    """tshark's ``-T fields`` text for the HTTP/2 frames of ``pcap`` (decrypted with ``keylog``,
    or with the secrets embedded in a pcapng)."""
    return _fields(pcap, keylog, tshark_argv, timeout_s=timeout_s)


def _fields(pcap: Path, keylog: Path | None,
            argv_of: Callable[[str, Path, Path | None], list[str]], *, timeout_s: float) -> str:
    """tshark's ``-T fields`` text of ``pcap`` for the command line ``argv_of`` builds."""
    if not Path(pcap).is_file():
        raise InputError(f"no such capture: {pcap}", hint="give a pcap or pcapng file")
    reason = unusable_reason(Path(keylog)) if keylog is not None else None
    if reason is not None:
        raise InputError(
            f"key log {keylog} {reason}" if reason != "does not exist"
            else f"no such key log: {keylog}",
            hint="give the SSLKEYLOGFILE written during the capture",
        )
    tshark = require_program("tshark")
    proc = run(argv_of(tshark, Path(pcap), keylog), timeout_s=timeout_s, check=False)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise CaptureFormatError(
            f"tshark could not read {pcap}: {lines[-1] if lines else proc.returncode}",
            hint="check that the file is a pcap/pcapng capture",
        )
    return proc.stdout


def h2_ledgers_from_capture(
    pcap: Path, keylog: Path | None, *, timeout_s: float = 300.0
) -> list[H2WireLedger]:
    """Decrypt ``pcap`` (with ``keylog``, or secrets embedded in a pcapng) and build ledgers."""
    text = http2_fields(pcap, keylog, timeout_s=timeout_s)
    return h2_ledgers_from_rows(parse_tshark_fields(text))


def receive_pack_argv(tshark: str, pcap: Path, keylog: Path | None) -> list[str]:
    """The tshark command line that prints, per packet with a request HEADERS frame, the
    fields :func:`gitnetdiag.analysis.packbody.receive_pack_streams` reads."""
    argv = _reading(tshark, pcap, keylog)
    argv += ["-Y", "http2.headers.method", "-T", "fields", "-E", "separator=/t",
             "-E", "occurrence=a", "-E", "aggregator=|"]
    for name in STREAM_FIELDS:
        argv += ["-e", name]
    return argv


def pack_checks_from_capture(pcap: Path, keylog: Path | None, *,
                             timeout_s: float = 60.0) -> list[tuple[int, int, PackCheck]]:
    """(TCP stream, HTTP/2 stream, check) of the pack in every receive-pack POST of
    ``pcap``, each body followed by tshark (``-z follow,http2,raw``) within ``timeout_s``
    in all."""
    return [(tcp, stream, check_pack(body))
            for tcp, stream, body in receive_pack_bodies(pcap, keylog, timeout_s=timeout_s)]


def receive_pack_bodies(pcap: Path, keylog: Path | None, *,
                        timeout_s: float = 60.0) -> list[tuple[int, int, RequestBody]]:
    """(TCP stream, HTTP/2 stream, the client's DATA) of every receive-pack POST of
    ``pcap``, within ``timeout_s`` in all (the streams not reached by then are left out)."""
    deadline = time.monotonic() + timeout_s
    streams = receive_pack_streams(_fields(pcap, keylog, receive_pack_argv,
                                           timeout_s=timeout_s))
    bodies = []
    for tcp, stream in streams:
        left = deadline - time.monotonic()
        if left <= 0:
            break

        def follow(tshark: str, path: Path, keys: Path | None, tcp: int = tcp,
                   stream: int = stream) -> list[str]:
            return [*_reading(tshark, path, keys), "-q", "-z",
                    f"follow,http2,raw,{tcp},{stream}"]

        bodies.append((tcp, stream, client_body(_fields(pcap, keylog, follow, timeout_s=left))))
    return bodies
