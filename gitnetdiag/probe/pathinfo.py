"""Path measurements to one endpoint with plain sockets: connect RTT, MSS, TLS, ALPN."""

from __future__ import annotations

import socket
import ssl
import statistics
import time

from gitnetdiag.rundir.records import PathMeasurement

CONNECT_ATTEMPTS = 5
CONNECT_TIMEOUT_S = 5.0


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


def measure_path(
    host: str,
    port: int,
    *,
    tls: bool,
    ca_file: str | None = None,
    insecure: bool = False,
    attempts: int = CONNECT_ATTEMPTS,
    timeout_s: float = CONNECT_TIMEOUT_S,
) -> PathMeasurement:
    """Connect ``attempts`` times, read the MSS, then (for TLS) time one handshake."""
    samples: list[float] = []
    mss: int | None = None
    error: str | None = None
    for _ in range(attempts):
        try:
            sock, elapsed = _connect(host, port, timeout_s)
        except OSError as exc:
            error = _describe(exc)
            break
        samples.append(elapsed)
        if mss is None:
            try:
                mss = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG)
            except OSError:
                mss = None
        sock.close()
    handshake_s: float | None = None
    alpn: str | None = None
    tls_version: str | None = None
    if tls and error is None:
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
                handshake_s = time.perf_counter() - started
                alpn = tls_sock.selected_alpn_protocol()
                tls_version = tls_sock.version()
        except (OSError, ssl.SSLError) as exc:
            error = _describe(exc)
    return PathMeasurement(
        endpoint=f"{host}:{port}",
        connect_rtt_samples_s=tuple(samples),
        connect_rtt_min_s=min(samples) if samples else None,
        connect_rtt_median_s=statistics.median(samples) if samples else None,
        mss_bytes=mss,
        tls_handshake_s=handshake_s,
        alpn=alpn,
        tls_version=tls_version,
        error=error,
    )
