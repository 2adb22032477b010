"""A SOCKS client handshake on a connected socket: how the native probes tunnel through the
SOCKS proxy git's libcurl uses (``http.proxy`` / ``all_proxy`` = ``socks5h://...``), so that
they measure the same leg git's transfers do.

    socks5 / socks5h   RFC 1928: method selection (no authentication, or user name and
                       password, RFC 1929), then CONNECT; ``socks5h`` sends the host name
                       (the proxy resolves it), ``socks5`` the address resolved here
    socks4 / socks4a   the SOCKS 4 protocol: CONNECT with the IPv4 address resolved here;
                       ``socks4a`` sends the host name (address 0.0.0.x)

Every refusal is one :class:`~gitnetdiag.errors.NetworkError` naming the proxy and the reply.
"""

from __future__ import annotations

import ipaddress
import socket
import struct

from gitnetdiag.errors import NetworkError

SOCKS5_REPLIES = {
    1: "general SOCKS server failure", 2: "connection not allowed by ruleset",
    3: "network unreachable", 4: "host unreachable", 5: "connection refused",
    6: "TTL expired", 7: "command not supported", 8: "address type not supported",
}
"""RFC 1928 section 6, the REP field."""


def _recv_exact(sock: socket.socket, count: int, display: str) -> bytes:
    data = b""
    while len(data) < count:
        try:
            chunk = sock.recv(count - len(data))
        except OSError as exc:
            raise NetworkError(f"the SOCKS proxy {display} failed: {exc}",
                               reference="proxy-failed") from exc
        if not chunk:
            raise NetworkError(f"the SOCKS proxy {display} closed the connection during its "
                               "handshake", hint="check http.proxy / all_proxy",
                               reference="proxy-failed")
        data += chunk
    return data


def _refused(display: str, what: str, auth: bool = False) -> NetworkError:
    return NetworkError(f"the SOCKS proxy {display} refused: {what}",
                        hint="check the proxy's user name and password in the proxy URL"
                        if auth else "check http.proxy / all_proxy",
                        reference="proxy-auth-failed" if auth else "proxy-failed")


def _resolved(host: str, port: int, family: int = socket.AF_UNSPEC) -> str:
    try:
        return str(socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)[0][4][0])
    except OSError as exc:
        raise NetworkError(f"cannot resolve {host}: {exc}", reference="connect-failed") from exc


def _socks5(sock: socket.socket, host: str, port: int, remote_dns: bool, display: str,
            username: str | None, password: str | None) -> None:
    methods = b"\x00\x02" if username is not None else b"\x00"
    sock.sendall(b"\x05" + bytes([len(methods)]) + methods)
    version, method = _recv_exact(sock, 2, display)
    if version != 5 or method == 0xFF:
        raise _refused(display, "no acceptable authentication method", username is not None)
    if method == 2:
        user, secret = (username or "").encode(), (password or "").encode()
        sock.sendall(b"\x01" + bytes([len(user)]) + user + bytes([len(secret)]) + secret)
        if _recv_exact(sock, 2, display)[1] != 0:
            raise _refused(display, "user name and password", auth=True)
    if remote_dns:
        name = host.encode("idna")
        address = b"\x03" + bytes([len(name)]) + name
    else:
        ip = ipaddress.ip_address(_resolved(host, port))
        address = (b"\x01" if ip.version == 4 else b"\x04") + ip.packed
    sock.sendall(b"\x05\x01\x00" + address + struct.pack("!H", port))
    _version, reply, _rsv, kind = _recv_exact(sock, 4, display)
    if reply != 0:
        raise _refused(display, f"CONNECT to {host}:{port}: "
                       f"{SOCKS5_REPLIES.get(reply, f'reply {reply}')}")
    length = {1: 4, 4: 16}.get(kind) or _recv_exact(sock, 1, display)[0]
    _recv_exact(sock, length + 2, display)  # the bound address and port


def _socks4(sock: socket.socket, host: str, port: int, remote_dns: bool, display: str,
            username: str | None) -> None:
    user = (username or "").encode() + b"\x00"
    if remote_dns:
        request = struct.pack("!BBH", 4, 1, port) + b"\x00\x00\x00\x01" + user \
            + host.encode("idna") + b"\x00"
    else:
        address = ipaddress.IPv4Address(_resolved(host, port, socket.AF_INET))
        request = struct.pack("!BBH", 4, 1, port) + address.packed + user
    sock.sendall(request)
    reply = _recv_exact(sock, 8, display)
    if reply[1] != 0x5A:
        raise _refused(display, f"CONNECT to {host}:{port}: reply {reply[1]}")


def socks_connect(sock: socket.socket, scheme: str, host: str, port: int, *, display: str,
                  username: str | None = None, password: str | None = None) -> None:
    """Ask the SOCKS proxy ``sock`` is connected to for a tunnel to ``host:port``."""
    if scheme in ("socks5", "socks5h"):
        _socks5(sock, host, port, scheme == "socks5h", display, username, password)
    elif scheme in ("socks4", "socks4a"):
        _socks4(sock, host, port, scheme == "socks4a", display, username)
    else:
        raise NetworkError(f"not a SOCKS proxy scheme: {scheme}", reference="proxy-failed")
