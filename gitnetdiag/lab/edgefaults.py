"""Issue 42's edge faults, where every HTTPS request through the edge fails while the
server behind it works: the data :mod:`gitnetdiag.lab.spec` merges into its tables, and
the settings they give the HAProxy edge (pure).

- ``edge-no-backend``: the HAProxy edge's only backend server points at
  :data:`DEAD_BACKEND_PORT`, where nothing listens, with a health check (``check inter
  500ms fall 1``) that marks it down: HAProxy answers every request itself with 503 (its
  page "No server is available to handle this request.", no ``server`` header). SSH, git://
  and Apache's own TLS port still work; the lab waits for those only.

- ``edge-sndbuf-clamp`` (download direction): the HAProxy edge fixes the send buffer of its
  client-side sockets with ``tune.sndbuf.client`` :data:`EDGE_SNDBUF_CLIENT_BYTES` (HAProxy
  2.6's configuration manual, section 3.2, :data:`EDGE_SNDBUF_SOURCE`: "Forces the kernel
  socket send buffer size on the client or the server side to the specified value in bytes";
  Linux doubles an ``SO_SNDBUF`` request and stops autotuning it). HTTPS clones through the
  edge are sent from that buffer; SSH and git:// clones reach sshd and git daemon, whose
  buffers the kernel autotunes, and Apache's own TLS port is not behind the edge. The fix
  removes the line (``lab fix``: HAProxy restarted without it).

The pool of ``edge-backend-errors`` (one good member and one answering 308, round-robin)
stays in :mod:`gitnetdiag.lab.config`.
"""

from __future__ import annotations

from collections.abc import Collection

from gitnetdiag.lab.httpfaults import FaultSettings

DEAD_BACKEND_PORT = 8082
"""Loopback port of the edge's backend under ``edge-no-backend``: nothing listens there."""
HAPROXY_FAULTS = ("edge-no-backend", "edge-sndbuf-clamp")
"""Faults set in the HAProxy edge's configuration: they need ``--edge haproxy``."""

EDGE_FAULTS: dict[str, str] = {
    "edge-no-backend": "the HAProxy edge's only backend points at a port nothing listens on "
    f"({DEAD_BACKEND_PORT}) and its health check marks it down: the edge answers 503 to every "
    "request; SSH and Apache's own TLS port work",
}

EDGE_FAULT_CULPRIT: dict[str, str] = {
    "edge-no-backend": "edge-no-backend",
}
"""The culprit each fault must rank first (kept apart from
:data:`~gitnetdiag.lab.expectations.FAULT_CULPRIT`, which needs a recorded run in ``captures/``)."""

EDGE_FAULT_FIX_NAMES: dict[str, str] = {
    "edge-no-backend": "option httpchk",
}
"""A setting the fix of each fault's culprit must name (HAProxy's health check)."""

EDGE_FAULT_PROBE_ARGS: dict[str, tuple[str, ...]] = {
    # Every HTTPS request fails at once (503 to the ref advertisement): nothing lands, so
    # the clean-up's wait is short; SSH shows the server behind works.
    "edge-no-backend": ("--protocols", "h1,h2,ssh", "--cleanup-wait", "5"),
}
"""How ``diagnose --lab`` exercises each fault."""


EDGE_SNDBUF_CLIENT_BYTES = 32768
"""HAProxy ``tune.sndbuf.client`` under ``edge-sndbuf-clamp``: Linux doubles it, so each
client-side socket of the edge sends from 64 KiB (``ss`` ``tb65536``), the buffer the
server namespace's clamp of ``server-sndbuf-clamp`` gives (its ``tcp_wmem`` maximum)."""
EDGE_SNDBUF_SETTING = "tune.sndbuf.client"
"""The HAProxy global setting (``data/edge_limits.toml`` names it in the fix, same source)."""
EDGE_SNDBUF_SOURCE = "https://docs.haproxy.org/2.6/configuration.html#3.2-tune.sndbuf.client"
"""Where the setting is documented for the lab's HAProxy (2.6; Debian's
``/usr/share/doc/haproxy/configuration.txt.gz`` holds the same text)."""

EDGE_FETCH_FAULTS: dict[str, str] = {
    "edge-sndbuf-clamp": "download direction: the HAProxy edge sets "
    f"{EDGE_SNDBUF_SETTING} {EDGE_SNDBUF_CLIENT_BYTES} (a fixed send buffer toward the "
    "client, 64 KiB once Linux doubles it): HTTPS clones through the edge are "
    "send-buffer-limited, SSH and git:// are not; the repository serves 6 MiB of random data",
}
"""Download faults of the edge, ranked by the fetch diagnosis
(:data:`~gitnetdiag.lab.expectations.FETCH_FAULT_CULPRIT`)."""

EDGE_FETCH_FAULT_CULPRIT: dict[str, str] = {"edge-sndbuf-clamp": "server-send-buffer"}
EDGE_FETCH_FAULT_FIX_NAMES: dict[str, str] = {"edge-sndbuf-clamp": EDGE_SNDBUF_SETTING}
"""The fix must lead with the setting of the product that answered: HAProxy's."""


def haproxy_global_lines(sndbuf_client: int | None) -> str:
    """Lines of HAProxy's ``global`` section for these faults ("" for none)."""
    if sndbuf_client is None:
        return ""
    return f"    {EDGE_SNDBUF_SETTING} {sndbuf_client}\n"


def edge_unanswered(faults: Collection[str]) -> bool:
    """The edge answers no request with git's protocol: the lab is ready without it."""
    return "edge-no-backend" in faults


def haproxy_backend(spec: FaultSettings) -> str | None:
    """The HAProxy edge's backend section under these faults, None for the usual one."""
    if "edge-no-backend" not in spec.faults:
        return None
    return ("backend apache\n"
            f"    server apache 127.0.0.1:{DEAD_BACKEND_PORT} check inter 500ms fall 1 rise 1\n")
