"""Issue 42's edge faults, where every HTTPS request through the edge fails while the
server behind it works: the data :mod:`gitnetdiag.lab.spec` merges into its tables, and
the settings they give the HAProxy edge (pure).

- ``edge-no-backend``: the HAProxy edge's only backend server points at
  :data:`DEAD_BACKEND_PORT`, where nothing listens, with a health check (``check inter
  500ms fall 1``) that marks it down: HAProxy answers every request itself with 503 (its
  page "No server is available to handle this request.", no ``server`` header). SSH, git://
  and Apache's own TLS port still work; the lab waits for those only.

The pool of ``edge-backend-errors`` (one good member and one answering 308, round-robin)
stays in :mod:`gitnetdiag.lab.config`.
"""

from __future__ import annotations

from collections.abc import Collection

from gitnetdiag.lab.httpfaults import FaultSettings

DEAD_BACKEND_PORT = 8082
"""Loopback port of the edge's backend under ``edge-no-backend``: nothing listens there."""
HAPROXY_FAULTS = ("edge-no-backend",)
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


def edge_unanswered(faults: Collection[str]) -> bool:
    """The edge answers no request with git's protocol: the lab is ready without it."""
    return "edge-no-backend" in faults


def haproxy_backend(spec: FaultSettings) -> str | None:
    """The HAProxy edge's backend section under these faults, None for the usual one."""
    if "edge-no-backend" not in spec.faults:
        return None
    return ("backend apache\n"
            f"    server apache 127.0.0.1:{DEAD_BACKEND_PORT} check inter 500ms fall 1 rise 1\n")
