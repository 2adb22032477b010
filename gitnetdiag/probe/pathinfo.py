"""Path measurements to one endpoint with plain sockets: reachability, connect RTT, MSS, TLS.

The first connects (:data:`CHECK_TRIES` at once) are the path check: bounded by
:data:`CHECK_TIMEOUT_S`, they say whether the port answers at all
(:data:`~gitnetdiag.outcomes.PathReach`) before any git transfer waits out its SYN retries
on it (about 2 min per connection with Linux's defaults). Only
an open port gets the further connects that time the RTT, and the TLS handshake, itself
bounded: a terminator that never completes it is ``tls-stalled``.
"""

from __future__ import annotations

import errno
import select
import socket
import ssl
import statistics
import struct
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from gitnetdiag.hops import FirstHop, leg_endpoint
from gitnetdiag.outcomes import PathReach
from gitnetdiag.remoteurl import endpoint_of
from gitnetdiag.rundir.records import PathMeasurement

CONNECT_ATTEMPTS = 5
CONNECT_TIMEOUT_S = 5.0
CHECK_TIMEOUT_S = 3.5
"""How long the first connect waits for an answer: Linux resends an unanswered SYN after
1 s and 3 s (initial RTO 1 s, doubling), or each second with ``tcp_syn_linear_timeouts``
(Linux 6.5+, 4 by default), so three or four SYNs have gone out unanswered by then."""
CHECK_TRIES = 2
"""Connects the check starts at once: a path that drops some SYNs at random (30% under the
lab's ``syn-drop``) loses all of two connects' three or four SYNs each far more rarely
(0.3^8) than one's (0.3^4 = 0.8%), in the same time."""
TLS_CHECK_TIMEOUT_S = 5.0
"""How long the TLS handshake on an open port may take before it is ``tls-stalled``."""
_NO_ROUTE = frozenset({errno.EHOSTUNREACH, errno.ENETUNREACH})


@dataclass(frozen=True, kw_only=True)
class _Checked:
    """The first, bounded connect: its socket when it connected, else what it met."""

    sock: socket.socket | None
    elapsed_s: float
    reach: PathReach | None
    syns_sent: int | None = None
    error: str | None = None
    connects: int = CHECK_TRIES


def _syns_sent(sock: socket.socket) -> int | None:
    """1 + the SYN retransmissions of a connect still waiting (``tcpi_retransmits``)."""
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)
    except OSError:
        return None
    return 1 + int(struct.unpack_from("B", info, 2)[0])


def check_connect(host: str, port: int, timeout_s: float = CHECK_TIMEOUT_S) -> _Checked:
    """:data:`CHECK_TRIES` connects at once, bounded by ``timeout_s``: the first to end says
    connected, refused or no route; none ending is no answer (``filtered``)."""
    started = time.perf_counter()
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port,
                                                             type=socket.SOCK_STREAM)[0]
    except socket.gaierror:
        return _Checked(sock=None, elapsed_s=time.perf_counter() - started, reach="unresolved",
                        error="unreachable: cannot resolve host")
    socks: list[socket.socket] = []
    ended: tuple[socket.socket, int] | None = None
    for _ in range(CHECK_TRIES):
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        socks.append(sock)
        code = sock.connect_ex(address)
        if code not in (errno.EINPROGRESS, errno.EAGAIN):
            ended = (sock, code)
            break
    if ended is None:
        _, writable, _ = select.select([], socks, [], timeout_s)
        if writable:
            ended = (writable[0], writable[0].getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
    elapsed = time.perf_counter() - started
    if ended is None:
        counts = [_syns_sent(sock) for sock in socks]
        for sock in socks:
            sock.close()
        syns = sum(c for c in counts if c) if all(counts) else None
        return _Checked(sock=None, elapsed_s=elapsed, reach="filtered", syns_sent=syns,
                        error="timeout")
    winner, code = ended
    for sock in socks:
        if sock is not winner or code != 0:
            sock.close()
    if code == 0:
        winner.setblocking(True)
        winner.settimeout(CONNECT_TIMEOUT_S)
        return _Checked(sock=winner, elapsed_s=elapsed, reach="open")
    if code == errno.ECONNREFUSED:
        return _Checked(sock=None, elapsed_s=elapsed, reach="refused", error="refused")
    if code in _NO_ROUTE:
        return _Checked(sock=None, elapsed_s=elapsed, reach="no-route", error="unreachable")
    return _Checked(sock=None, elapsed_s=elapsed, reach=None,
                    error=f"other: {errno.errorcode.get(code, code)}")


def _connect(host: str, port: int, timeout_s: float) -> tuple[socket.socket, float]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.settimeout(timeout_s)
    started = time.perf_counter()
    try:
        sock.connect(address)
    except BaseException:
        sock.close()
        raise
    return sock, time.perf_counter() - started


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "refused"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"tls: {exc.verify_message or exc.reason}"
    if isinstance(exc, ssl.SSLError):
        return f"tls: {exc.reason or exc}"
    if isinstance(exc, TimeoutError | socket.timeout):
        return "timeout"
    if isinstance(exc, socket.gaierror):
        return "unreachable: cannot resolve host"
    if isinstance(exc, ConnectionResetError):
        return "reset"
    if isinstance(exc, OSError) and exc.errno in (101, 113):
        return "unreachable"
    return f"other: {exc}"


def _mss(sock: socket.socket) -> int | None:
    try:
        return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG)
    except OSError:
        return None


@dataclass(frozen=True, kw_only=True)
class _Tls:
    handshake_s: float | None = None
    alpn: str | None = None
    version: str | None = None
    error: str | None = None
    stalled_s: float | None = None


def _tls(host: str, port: int, ca_file: str | None, insecure: bool, timeout_s: float) -> _Tls:
    """One TLS handshake, bounded by ``timeout_s`` (connect and handshake each)."""
    started = time.perf_counter()
    try:
        # Inside the try: a CA bundle that holds no certificate is this step's error,
        # never an exception escaping the thread that measures the path.
        context = ssl.create_default_context(cafile=ca_file)
        if insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        context.set_alpn_protocols(["h2", "http/1.1"])
        sock, _ = _connect(host, port, timeout_s)
        started = time.perf_counter()
        with context.wrap_socket(sock, server_hostname=host) as tls_sock:
            return _Tls(handshake_s=time.perf_counter() - started,
                        alpn=tls_sock.selected_alpn_protocol(), version=tls_sock.version())
    except TimeoutError:
        return _Tls(error="tls: handshake not completed", stalled_s=time.perf_counter() - started)
    except (OSError, ssl.SSLError) as exc:
        return _Tls(error=_describe(exc))


def measure_path(
    host: str,
    port: int,
    *,
    tls: bool,
    ca_file: str | None = None,
    insecure: bool = False,
    attempts: int = CONNECT_ATTEMPTS,
    timeout_s: float = CONNECT_TIMEOUT_S,
    check_timeout_s: float = CHECK_TIMEOUT_S,
) -> PathMeasurement:
    """The bounded path check, then (an open port) ``attempts`` connects in all, the MSS,
    and for TLS one handshake bounded by :data:`TLS_CHECK_TIMEOUT_S`."""
    first = check_connect(host, port, check_timeout_s)
    if first.sock is None:
        return PathMeasurement(
            endpoint=f"{host}:{port}", connect_rtt_samples_s=(), connect_rtt_min_s=None,
            connect_rtt_median_s=None, mss_bytes=None, tls_handshake_s=None, alpn=None,
            tls_version=None, error=first.error, reach=first.reach, syns_sent=first.syns_sent,
            check_connects=first.connects, waited_s=round(first.elapsed_s, 3))
    samples = [first.elapsed_s]
    mss = _mss(first.sock)
    first.sock.close()
    error: str | None = None
    for _ in range(attempts - 1):
        try:
            sock, elapsed = _connect(host, port, timeout_s)
        except OSError as exc:
            error = _describe(exc)
            break
        samples.append(elapsed)
        sock.close()
    reach: PathReach = "open"
    waited: float | None = None
    handshake = _Tls()
    if tls and error is None:
        handshake = _tls(host, port, ca_file, insecure, min(timeout_s, TLS_CHECK_TIMEOUT_S))
        error = handshake.error
        if handshake.stalled_s is not None:
            reach, waited = "tls-stalled", round(handshake.stalled_s, 3)
    return PathMeasurement(
        endpoint=f"{host}:{port}",
        connect_rtt_samples_s=tuple(samples),
        connect_rtt_min_s=min(samples),
        connect_rtt_median_s=statistics.median(samples),
        mss_bytes=mss,
        tls_handshake_s=handshake.handshake_s,
        alpn=handshake.alpn,
        tls_version=handshake.version,
        error=error,
        reach=reach,
        check_connects=first.connects,
        waited_s=waited,
    )


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    """One host and port to check, and whether it speaks TLS."""

    host: str
    port: int
    tls: bool
    first_hop_of: tuple[str, ...] = ()
    """The protocols whose first hop (a forward proxy, a jump host) this is: checked with
    TCP connects only (:attr:`PathMeasurement.first_hop_of`); empty for the server's."""


def path_rtt(paths: Sequence[PathMeasurement], url: str) -> float | None:
    """The least connect RTT measured to ``url``'s endpoint; None when not measured."""
    host, port = endpoint_of(url)
    return next((p.connect_rtt_min_s for p in paths if p.endpoint == f"{host}:{port}"), None)


def with_first_hops(endpoints: Sequence[Endpoint], hops: Sequence[FirstHop],
                    servers: dict[str, tuple[str, int]]) -> list[Endpoint]:
    """``endpoints`` (the servers') and, after them, the first hop of each proxied protocol
    of ``hops`` (``servers``: protocol -> its server's ``(host, port)``), once per proxy:
    the leg client -> proxy its connections really take, timed with TCP connects."""
    legs: dict[tuple[str, int], list[str]] = {}
    for hop in hops:
        server = servers.get(hop.protocol)
        if server is None or not hop.proxied:
            continue
        leg = leg_endpoint(hop, server)
        if leg is not None and leg != server:  # an unplaced command's leg: nothing to time
            legs.setdefault(leg, []).append(hop.protocol)
    return [*endpoints, *(Endpoint(host=host, port=port, tls=False, first_hop_of=tuple(names))
                          for (host, port), names in legs.items())]


def measure_paths(endpoints: Sequence[Endpoint], *, ca_file: str | None, insecure: bool,
                  attempts: int) -> list[PathMeasurement]:
    """:func:`measure_path` of every endpoint at once (a dead port's wait beside the others'),
    in the given order."""
    if not endpoints:
        return []
    with ThreadPoolExecutor(max_workers=len(endpoints),
                            thread_name_prefix="gitnetdiag-path") as pool:
        return list(pool.map(lambda e: replace(
            measure_path(e.host, e.port, tls=e.tls, ca_file=ca_file, insecure=insecure,
                         attempts=attempts), first_hop_of=e.first_hop_of), endpoints))
