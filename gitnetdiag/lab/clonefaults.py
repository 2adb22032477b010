"""Issue 42's lab faults where an edge cuts a clone while the server prepares its pack: the
data :mod:`gitnetdiag.lab.spec` merges into its tables, and the settings they give the lab's
servers (pure).

The server prepares each clone's pack in silence for :data:`SILENT_PACK_S` (a script in
place of pack-objects, ``uploadpack.packObjectsHook``, that sleeps and then runs
pack-objects: a slow count and compression as on a large repository never repacked), and
the HAProxy edge's ``timeout server`` is :data:`CLONE_EDGE_TIMEOUT_S`. Where the cut lands
depends on when the server's response headers leave, measured here (git 2.39.5, Apache 2.4
mod_cgid, HAProxy 2.6):

- ``clone-edge-cut`` (after the headers, curl 18): protocol v2's upload-pack writes its
  ``packfile`` line *before* it starts pack-objects (``upload_pack_v2``), and
  git-http-backend has written its headers before that; Apache's CGI handler flushes both
  at once (they reached the client 57 ms after the request, at 50 ms RTT). The
  silence that follows is pack-objects' (the hook's sleep): the edge closes the connection
  its timeout after the ``packfile`` line (5.00 s after it with a 5 s timeout). HTTP/1.1:
  ``curl 18 transfer closed with outstanding read data remaining``, ``bytes of body are
  still expected``, ``early EOF``, ``invalid index-pack output``; HTTP/2: the stream ends
  cleanly for curl ("left intact") and git says only ``early EOF`` and ``invalid index-pack
  output``. So a packObjectsHook can never give a 504 on git 2.39.
- ``clone-edge-504`` (before the headers, 504): the same silent preparation placed before
  git-http-backend starts (the CGI sleeps :data:`SILENT_PACK_S` on ``POST
  git-upload-pack`` before it runs it), as a server does that prepares the pack before it
  answers (a pack cache, a front that starts the backend late): nothing reaches the edge,
  which answers 504 itself at its timeout; git says ``RPC failed; HTTP 504 curl 22`` and
  ``expected 'packfile'``.

Timings: git's ``uploadpack.keepAlive`` (5 s by default) sends an empty keepalive packet
after 5 s of pack-objects silence once the response has begun; with the edge's timeout at
5 s the keepalive and the cut race. :data:`CLONE_EDGE_TIMEOUT_S` is 3 s, 2 s below the
first keepalive, so every cut after the headers is the edge's, with git's defaults on the
server; the silence (:data:`SILENT_PACK_S`, twice the timeout) ends well after the cut.
SSH clones meet the same silent preparation (the hook through sshd's ``SetEnv``), with no
edge: they pass after it, and their wait for the first pack byte is the server's silent
phase a diagnosis shows beside the cut. The fix of both faults raises the edge's
``timeout server`` to :data:`FIXED_CLONE_EDGE_TIMEOUT_S`.
"""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.lab.httpfaults import FaultSettings

CLONE_EDGE_TIMEOUT_S = 3
"""HAProxy ``timeout server`` under the clone faults: below git's default
``uploadpack.keepAlive`` (5 s), so no keepalive packet comes before the cut."""
SILENT_PACK_S = 6.0
"""Seconds the server prepares each clone's pack in silence (twice the edge's timeout)."""
FIXED_CLONE_EDGE_TIMEOUT_S = 60
"""HAProxy ``timeout server`` once a clone fault is fixed: well above the silence."""
SLOW_PACK_SCRIPT = "slow-pack-objects"
"""The script in ``bin/`` that git runs in place of pack-objects."""
CLONE_FAULT_NAMES = ("clone-edge-504", "clone-edge-cut")

CLONE_FAULTS: dict[str, str] = {
    "clone-edge-504": f"download direction: the server prepares each clone's pack for "
    f"{SILENT_PACK_S:g} s before its response headers and the HAProxy edge's timeout server "
    f"is {CLONE_EDGE_TIMEOUT_S} s: the edge answers the HTTPS clones' pack request 504",
    "clone-edge-cut": f"download direction: the server says 'packfile', then prepares each "
    f"clone's pack in silence for {SILENT_PACK_S:g} s (uploadpack.packObjectsHook) and the "
    f"HAProxy edge's timeout server is {CLONE_EDGE_TIMEOUT_S} s: the edge closes the HTTPS "
    "clones' connection after the response headers (curl 18)",
}

CLONE_FAULT_CULPRIT: dict[str, str] = {fault: "edge-idle-timeout" for fault in CLONE_FAULTS}
"""The culprit each fault must rank first under ``--direction fetch``, kept apart from
:data:`~gitnetdiag.lab.expectations.FETCH_FAULT_CULPRIT` as :mod:`gitnetdiag.lab.httpfaults` keeps
its own: every fault there is run and re-fitted by the fetch fault matrix
(``benchmarks/fault_matrix_fetch.py``) and needs a fix of its own in
:data:`~gitnetdiag.lab.fetchlab.FETCH_FAULT_FIXED_SETTINGS`; these are judged by
``tests/acceptance/test_clone_failures_lab.py``."""

CLONE_FAULT_FIX_NAMES: dict[str, str] = {fault: "timeout server" for fault in CLONE_FAULTS}
"""A setting the fix of each fault's culprit must name (with ``uploadpack.keepAlive``)."""

CLONE_FAULT_FIXED_SETTINGS: dict[str, dict[str, object]] = {fault: {} for fault in CLONE_FAULTS}
"""No :class:`~gitnetdiag.lab.spec.LabSpec` field changes: the fault's name moves from
``faults`` to ``fixed`` and :func:`edge_server_timeout_s` reads the raised timeout."""

CLONE_FAULT_PROBE_ARGS: dict[str, tuple[str, ...]] = {
    fault: ("--direction", "fetch", "--protocols", "h1,h2,ssh") for fault in CLONE_FAULTS}
"""How ``diagnose --lab`` exercises each fault: both HTTP versions through the edge, SSH
beside them (no edge: the server's silent phase, measured)."""


def _active(spec: FaultSettings) -> str | None:
    return next((f for f in spec.faults if f in CLONE_FAULTS), None)


def _touched(spec: FaultSettings) -> bool:
    return any(f in CLONE_FAULTS for f in (*spec.faults, *spec.fixed))


def edge_server_timeout_s(spec: FaultSettings) -> int | None:
    """The HAProxy edge's ``timeout server`` these faults set, None when they set none."""
    if _active(spec) is not None:
        return CLONE_EDGE_TIMEOUT_S
    return FIXED_CLONE_EDGE_TIMEOUT_S if _touched(spec) else None


def slow_pack_script() -> str:
    """What git runs in place of pack-objects: a silent wait, then pack-objects itself."""
    return f"""#!/bin/sh
# gitnetdiag lab: a silent pack preparation (uploadpack.packObjectsHook): wait, then pack
sleep {SILENT_PACK_S:g}
exec "$@"
"""


def _hook_env(script: Path) -> dict[str, str]:
    """git's command-line config through the environment (protected config: the only kind
    ``uploadpack.packObjectsHook`` is read from, with the system and global files)."""
    return {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "uploadpack.packObjectsHook",
            "GIT_CONFIG_VALUE_0": str(script)}


def cgi_lines(spec: FaultSettings, bin_dir: Path) -> str:
    """Shell lines the CGI wrapper runs before git-http-backend: the slow pack preparation
    (``clone-edge-cut``: the hook; ``clone-edge-504``: a sleep before the backend starts on
    a clone's pack request), kept when the fault is fixed (only the edge changes)."""
    if not _touched(spec):
        return ""
    if "clone-edge-504" in (*spec.faults, *spec.fixed):
        # Only a fetch command waits (protocol v2's ls-refs is a POST git-upload-pack too):
        # the small request body is kept in a file, read, and given to the backend.
        return ('case "$REQUEST_METHOD $PATH_INFO" in\n'
                '  "POST "*/git-upload-pack)\n'
                '    body=$(mktemp) && cat >"$body"\n'
                f'    grep -aq "command=fetch" "$body" && sleep {SILENT_PACK_S:g}\n'
                '    exec 0<"$body" && rm -f "$body" ;;\n'
                "esac\n")
    return "".join(f"export {key}='{value}'\n"
                   for key, value in _hook_env(bin_dir / SLOW_PACK_SCRIPT).items())


def sshd_lines(spec: FaultSettings, bin_dir: Path) -> str:
    """sshd_config lines giving SSH sessions the slow pack preparation (OpenSSH ``SetEnv``)."""
    if not _touched(spec):
        return ""
    pairs = " ".join(f"{k}={v}" for k, v in _hook_env(bin_dir / SLOW_PACK_SCRIPT).items())
    return f"SetEnv {pairs}\n"


def fix_notes(before: FaultSettings, after: FaultSettings) -> list[str]:
    """What ``lab fix`` changed for these faults, one line each."""
    was, now = edge_server_timeout_s(before), edge_server_timeout_s(after)
    if was == now or was is None or now is None:
        return []
    return [f"edge timeout server {was} s -> {now} s (the server's {SILENT_PACK_S:g} s silent "
            "pack preparation stays)"]
