"""A port on 127.0.0.1 that refuses connections and stays refused.

A port found free and then released can be taken by any other test running beside it (the
unit tests run on several workers, beside the lab tests): a "closed port" test then talks
to somebody's server. Here the port stays bound, never listening, for the life of the test
process: Linux answers a connection to it with a reset (ECONNREFUSED), and nobody else can
bind it.
"""

from __future__ import annotations

import socket

_HELD: list[socket.socket] = []


def closed_port() -> int:
    """A loopback port bound by this process and never listened on: connections refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    _HELD.append(sock)
    return int(sock.getsockname()[1])


def free_port() -> int:
    """A loopback port free a moment ago, for a server the test starts on it (released at
    once, so the server can bind it: another process may take it first, rarely)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
