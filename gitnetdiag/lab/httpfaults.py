"""Issue 33's lab faults, where an HTTPS push is refused or cut by the server side while
small requests pass: the data :mod:`gitnetdiag.lab.spec` merges into its tables, and the
settings they give the lab's servers (pure).

- ``request-body-limit``: Apache ``LimitRequestBody`` :data:`BODY_LIMIT_BYTES` on
  ``<Location /git/>`` (both virtual hosts: the edge's backend port and the direct TLS
  port). git streams a pack above ``http.postBuffer`` (1 MiB) with no Content-Length, so
  Apache counts the body as it arrives and answers 413 once it passes the limit (a pack
  sent with a Content-Length above the limit gets 413 at once); a pack under the limit and
  every small request pass.
- ``edge-idle-timeout``: the HAProxy edge's ``timeout server`` is :data:`EDGE_IDLE_TIMEOUT_S`,
  a silent pre-receive hook sleeps :data:`EDGE_IDLE_HOOK_S` and the repository's
  ``receive.keepAlive`` is :data:`SERVER_KEEPALIVE_S`, above the hook: receive-pack sends
  nothing while the hook runs, the edge cuts every HTTPS push after its timeout, and
  receive-pack, still unaware, updates the ref when the hook ends: the branch lands
  seconds after git said the push failed (as behind an edge with a 60 s timeout, a
  longer hook and a server that sends no keepalives). With git's default
  ``receive.keepAlive`` (5 s) the first keepalive packet found the connection gone:
  Apache ended the request, receive-pack died with it and only the orphaned hook ran on,
  so the push never landed (measured, 3 s timeout, 8 s hook); with an edge timeout above
  5 s those keepalives would have held the connection open.
- ``streamed-body-refused``: the HAProxy edge answers 411 to a POST without a
  Content-Length (``http-request return status 411``), which is every pack above
  ``http.postBuffer``; git's 4-byte probe POST and every other request carry one.

Their settings are read from the lab's faults and fixes (``spec.faults``, ``spec.fixed``)
by the functions below, not kept as :class:`~gitnetdiag.lab.spec.LabSpec` fields: each
fix is the fault's setting gone (the limit removed, the rule removed), except the edge
timeout, which a fixed ``edge-idle-timeout`` raises to :data:`FIXED_EDGE_TIMEOUT_S`.
"""

from __future__ import annotations

from typing import Protocol

BODY_LIMIT_BYTES = 1024 * 1024
"""Apache ``LimitRequestBody`` on the git location under ``request-body-limit``: 1 MiB, git's
own ``http.postBuffer`` default, so every streamed pack is above it."""
EDGE_IDLE_TIMEOUT_S = 5
"""HAProxy ``timeout server`` (seconds) under ``edge-idle-timeout``: half the hook's silence,
and above every other silence of the lab's servers (``slow-auth`` delays the ref
advertisement 3 s: with a 3 s timeout the edge answered 504 to it)."""
EDGE_IDLE_HOOK_S = 10.0
"""Seconds the silent pre-receive hook sleeps under ``edge-idle-timeout``."""
SERVER_KEEPALIVE_S = 60
"""git's ``receive.keepAlive`` on the lab's repository under ``edge-idle-timeout`` (also once
fixed): above the hook, so no keepalive packet breaks its silence."""
FIXED_EDGE_TIMEOUT_S = 60
"""HAProxy ``timeout server`` once ``edge-idle-timeout`` is fixed: well above the hook."""
DEFAULT_EDGE_TIMEOUT_S = 600
"""HAProxy ``timeout server`` of every other lab."""
HAPROXY_FAULTS = ("edge-idle-timeout", "streamed-body-refused")
"""Faults set in the HAProxy edge's configuration: they need ``--edge haproxy``."""

HTTP_FAULTS: dict[str, str] = {
    "request-body-limit": f"Apache LimitRequestBody {BODY_LIMIT_BYTES} on the git location: "
    "a pack POST above it is refused with 413, small requests pass",
    "edge-idle-timeout": f"the HAProxy edge's timeout server is {EDGE_IDLE_TIMEOUT_S} s and a "
    f"silent pre-receive hook sleeps {EDGE_IDLE_HOOK_S:g} s: the edge cuts HTTPS pushes while "
    "the hook runs",
    "streamed-body-refused": "the HAProxy edge answers 411 Length Required to a POST without "
    "a Content-Length: git's streamed packs (above http.postBuffer)",
}

HTTP_FAULT_CULPRIT: dict[str, str] = {
    "request-body-limit": "request-body-limit",
    "edge-idle-timeout": "edge-idle-timeout",
    "streamed-body-refused": "streamed-body-refused",
}
"""The culprit each fault must rank first, kept apart from
:data:`~gitnetdiag.lab.expectations.FAULT_CULPRIT` until the detectors exist: every fault there
needs a recorded run in ``captures/`` (``tests/captures/test_recorded_runs.py``) and is
ranked by ``tests/acceptance/test_diagnose_lab.py``."""

HTTP_FAULT_FIX_NAMES: dict[str, str] = {
    "request-body-limit": "LimitRequestBody",
    "edge-idle-timeout": "timeout server",
    "streamed-body-refused": "http.postBuffer",
}
"""A setting the fix of each fault's culprit must name."""

HTTP_FAULT_FIXED_SETTINGS: dict[str, dict[str, object]] = {
    fault: {} for fault in HTTP_FAULTS
}
"""No :class:`~gitnetdiag.lab.spec.LabSpec` field changes: the fault's name moves from
``faults`` to ``fixed``, and the functions below read the fixed setting from that."""

HTTP_FAULT_PROBE_ARGS: dict[str, tuple[str, ...]] = {
    # 3 MiB: above the body limit and above http.postBuffer (a streamed pack). A 413 means
    # nothing landed; the native HTTP/2 ledger's clean-up would still wait 30 s for it.
    "request-body-limit": ("--protocols", "h1,h2,ssh", "--size", "3MiB", "--cleanup-wait", "5"),
    # The 411 comes from the edge (receive-pack never ran), but git's HTTP/2 words (curl 92)
    # carry no status: the clean-up would wait its 30 s for nothing.
    "streamed-body-refused": ("--protocols", "h1,h2,ssh", "--size", "3MiB",
                              "--cleanup-wait", "5"),
    # The branch lands when the hook ends, about 5 s after the edge cut the push: the
    # clean-up waits for it.
    "edge-idle-timeout": ("--protocols", "h1,h2,ssh", "--size", "3MiB", "--cleanup-wait", "20"),
}
"""How ``diagnose --lab`` exercises each fault."""


class FaultSettings(Protocol):
    """What these functions read of a :class:`gitnetdiag.lab.spec.LabSpec` (which imports
    this module's tables, so it is not imported here)."""

    @property
    def faults(self) -> tuple[str, ...]: ...

    @property
    def fixed(self) -> tuple[str, ...]: ...


def body_limit_bytes(spec: FaultSettings) -> int | None:
    """Apache's ``LimitRequestBody`` on the git location, or None (no limit)."""
    return BODY_LIMIT_BYTES if "request-body-limit" in spec.faults else None


def edge_server_timeout_s(spec: FaultSettings) -> int:
    """The HAProxy edge's ``timeout server`` in seconds."""
    if "edge-idle-timeout" in spec.faults:
        return EDGE_IDLE_TIMEOUT_S
    return FIXED_EDGE_TIMEOUT_S if "edge-idle-timeout" in spec.fixed else DEFAULT_EDGE_TIMEOUT_S


def refuses_streamed_body(spec: FaultSettings) -> bool:
    """The HAProxy edge answers 411 to a POST without a Content-Length."""
    return "streamed-body-refused" in spec.faults


def repo_config(spec: FaultSettings) -> list[tuple[str, str]]:
    """git settings of the lab's repository these faults need (key, value)."""
    if "edge-idle-timeout" in (*spec.faults, *spec.fixed):
        return [("receive.keepAlive", str(SERVER_KEEPALIVE_S))]
    return []


def apache_body_limit(spec: FaultSettings) -> str:
    """Apache's ``<Location /git/>`` block with the body limit, or nothing."""
    limit = body_limit_bytes(spec)
    if limit is None:
        return ""
    return f"<Location /git/>\n    LimitRequestBody {limit}\n</Location>\n"


def haproxy_request_rules(spec: FaultSettings) -> str:
    """Lines of the HAProxy edge's frontend that refuse requests, or nothing."""
    if not refuses_streamed_body(spec):
        return ""
    return ('    http-request return status 411 content-type text/plain '
            'string "Length Required" if METH_POST !{ req.hdr(content-length) -m found }\n')


def roles_to_restart(before: FaultSettings, after: FaultSettings) -> tuple[str, ...]:
    """The lab's servers whose configuration these faults' fixes change."""
    roles = []
    if body_limit_bytes(after) != body_limit_bytes(before):
        roles.append("apache")
    if (edge_server_timeout_s(after), refuses_streamed_body(after)) != (
            edge_server_timeout_s(before), refuses_streamed_body(before)):
        roles.append("edge")
    return tuple(roles)


def fix_notes(before: FaultSettings, after: FaultSettings) -> list[str]:
    """What ``lab fix`` changed for these faults, one line each."""
    notes = []
    limit = body_limit_bytes(before)
    if limit is not None and body_limit_bytes(after) is None:
        notes.append(f"Apache LimitRequestBody {limit} on the git location removed")
    if edge_server_timeout_s(after) != edge_server_timeout_s(before):
        notes.append(f"edge timeout server {edge_server_timeout_s(before)} s -> "
                     f"{edge_server_timeout_s(after)} s (the pre-receive hook and "
                     f"receive.keepAlive {SERVER_KEEPALIVE_S} stay)")
    if refuses_streamed_body(before) and not refuses_streamed_body(after):
        notes.append("edge rule answering 411 to a POST without Content-Length removed "
                     "(streamed packs above http.postBuffer pass)")
    return notes
