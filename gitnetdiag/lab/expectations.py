"""What the diagnosis of each lab fault must say: the culprit it ranks first and a setting or
step its fix names, pushes and clones (``--direction fetch``) apart; the lab tests and the
recorded runs of ``captures/`` check every diagnosis against these tables (pure).

:mod:`gitnetdiag.lab.spec` re-exports them; the faults themselves are its :data:`FAULTS`."""

from __future__ import annotations

from gitnetdiag.lab import clonefaults as _clone
from gitnetdiag.lab import edgefaults as _edge
from gitnetdiag.lab import httpfaults as _http
from gitnetdiag.lab import idlefaults as _idle
from gitnetdiag.lab import pathfaults as _path

FAULT_CULPRIT: dict[str, str | None] = {
    "healthy": None,
    "h2-small-window": "h2-flow-control-window",
    "tcp-rmem-clamp": "tcp-receive-window-clamp",
    "tiny-backlog": "listen-backlog-overflow",
    "loss": "packet-loss",
    "firewall-reset": "firewall-reset",
    "slow-hook": "server-processing",
    "slow-auth": "slow-ref-advertisement",
    "window-scaling-off": "tcp-window-scaling-off",
    "syn-drop": "syn-drop",
    "bandwidth-limit": "bandwidth-limit",
    "ssh-channel-window": "ssh-channel-window",
    "ssh-maxstartups": "ssh-maxstartups",
    "pmtu-blackhole": "path-mtu-blackhole",

    "edge-buffering": "edge-request-buffering",

    "slow-storage": "slow-storage",
    "client-pack-cpu": "client-pack-cpu",
    "h2-frame-settings": "h2-frame-settings",
    "h2-client-stall": "client-http-stack",
    "edge-backend-errors": "edge-backend-errors",
}
"""The culprit id (docs/culprits.md) each fault must produce as the top finding.

``auth`` is left out: it is a way in that real hosts have, not a culprit; it is
combined with a fault (``h2-small-window`` + ``auth``)."""

FAULT_FIX_NAMES: dict[str, str] = {
    "h2-small-window": "tune.h2.initial-window-size",
    "tcp-rmem-clamp": "net.ipv4.tcp_rmem",
    "tiny-backlog": "net.core.somaxconn",
    "loss": "lossy hop",
    "firewall-reset": "tcp-reset",
    "slow-hook": "pre-receive",
    "slow-auth": "authentication",
    "window-scaling-off": "net.ipv4.tcp_window_scaling",
    "syn-drop": "SYN rate limits in firewalls",
    "bandwidth-limit": "Not a misconfiguration",
    "ssh-channel-window": "HPN-SSH",
    "ssh-maxstartups": "MaxStartups",
    "pmtu-blackhole": "clamp-mss-to-pmtu",
    "pmtu-blackhole-client": "clamp-mss-to-pmtu",

    "edge-buffering": "proxy_request_buffering",

    "slow-storage": "faster storage",
    "client-pack-cpu": "pack.threads",
    "h2-frame-settings": "tune.bufsize",
    "h2-client-stall": "http.version HTTP/1.1",
    "edge-backend-errors": "option httpchk",
    **_http.HTTP_FAULT_FIX_NAMES,
    **_clone.CLONE_FAULT_FIX_NAMES,
    **_edge.EDGE_FAULT_FIX_NAMES,
    **_idle.IDLE_FAULT_FIX_NAMES,
    **_path.PATH_FAULT_FIX_NAMES,
}
"""A setting or step the fix of each fault's culprit must name."""

FETCH_FAULT_CULPRIT: dict[str, str] = {
    "client-rmem-clamp": "client-tcp-receive-window-clamp",
    "slow-pack-generation": "server-pack-generation",
    "server-sndbuf-clamp": "server-send-buffer",
    "client-index-cpu": "client-index-pack-cpu",
    "client-h2-window": "client-http2-window",

    "edge-response-buffering": "edge-response-buffering",
    **_edge.EDGE_FETCH_FAULT_CULPRIT,
}
"""The download culprit each fetch fault must rank first under ``--direction fetch``
(their push diagnosis is not theirs to rank: they are not in :data:`FAULT_CULPRIT`)."""
FETCH_FAULT_FIX_NAMES: dict[str, str] = {
    "client-rmem-clamp": "net.ipv4.tcp_rmem",
    "slow-pack-generation": "repack -adb",
    "server-sndbuf-clamp": "net.ipv4.tcp_wmem",
    "client-index-cpu": "index-pack",
    "client-h2-window": "http.version HTTP/1.1",

    "edge-response-buffering": "proxy_buffering off",
    **_edge.EDGE_FETCH_FAULT_FIX_NAMES,
}
"""A setting or step the fix of each fetch fault's culprit must name."""

# --- Push faults whose direction-independent culprit a fetch ranks too (issue 26 item 5) ---

FETCH_SHARED_FAULT_CULPRIT: dict[str, str] = {
    "loss": "packet-loss",
    "bandwidth-limit": "bandwidth-limit",
    "firewall-reset": "firewall-reset",
    "slow-auth": "slow-ref-advertisement",
    "syn-drop": "syn-drop",
    "pmtu-blackhole-client": "path-mtu-blackhole",
    "tiny-backlog": "listen-backlog-overflow",
    "ssh-maxstartups": "ssh-maxstartups",
}
"""Push faults that slow or break a clone as well, with the culprit ``--direction fetch``
must rank first on a lab whose ``main`` serves random data (``fetch_history="random"``):
the same id and fix as the push's (:data:`FAULT_FIX_NAMES`). ``syn-drop`` needs a fetch burst
(``--burst 40`` over git://, as the push's): each clone's own connection meets the router's
30% SYN drop only by chance, and the SYN retransmissions of every clone's capture count, but
with one clone per transport (h1, git) 5 of 8 runs ranked it and with five 5 of 5 did (3 to
8 SYN retransmissions), until a fresh-clone ``make test`` run whose ten clones all missed
the drop (p = 0.7^10 = 2.8%) ranked nothing (measured 2026-11-26). A burst's 80 connections
miss it with p = 0.7^80.

``tiny-backlog`` needs a fetch burst (``--burst 150``, git://, as the push's
:data:`~gitnetdiag.lab.spec.FAULT_PROBE_ARGS`): git daemon's backlog of 5 overflows only when
more than five connections wait to be accepted at once, and a fetch's clones connect one after
another (measured 2026-11-26 without a burst, h1 and git clones of 6 MiB, 3 runs: 24 passive
opens in the server namespace per run, ``TcpExtListenOverflows`` and ``ListenDrops`` +0, no SYN
retransmitted, every clone 6,291,456 B at 5.6-7.6 MB/s, verdict ``healthy``). With the burst
after the clone (150 ls-remotes at once, then 150 raw connects; the server's counters snapshot
before the clone), measured 2026-11-26 in 5 runs: the clone measured (6,291,456 B),
ListenOverflows +559 to +635 (in the 3 runs that printed them: ListenDrops the same,
SyncookiesSent +270 to +288, SyncookiesFailed equal to the failed ls-remotes), 95-132 of 150
ls-remotes failed (``reset``: a SYN cookie's ACK that found the queue still full; 7 ``other``
in one run), 0-61 SYN retransmissions in the burst's capture, and ``listen-backlog-overflow``
ranked first at 0.905 (cost 1.1-1.3 s) with git daemon's fix in 5 of 5 runs, verdict
``degraded``; 5.1-5.9 s per ``diagnose``, 6.1-6.9 s per lab test.

Left out, measured 2026-11-26 (3 runs each, h1 and git clones of 6 MiB):

- ``pmtu-blackhole`` drops large packets *to* the server only, and a clone sends none (its
  requests are small), so the download never meets it. Its mirror ``pmtu-blackhole-client``
  (large packets *to* the client dropped, the same silence) is the one a clone meets, and it
  is in the table: a push's culprit from the receiver's side. A capture at the client never
  sees the swallowed segments, so none is "resent and never acknowledged" there; what the
  client sees is a clone that stalls with only small segments received. Measured 2026-11-26
  (h1, ``--stall-timeout 6``, 50 ms, 4 runs): the ref advertisement and the server's
  sideband progress got through ("Compressing objects: 100% (9/9), done."), then
  3,973-4,226 B in all and nothing for 6 s; the client's TCP_INFO ``rcv_mss`` stayed at
  882-884 B (the largest segment the capture saw acknowledged the same) against an
  ``advmss`` of 1448 B (the handshake's MSS option 1460 B), the clone ended at its stall
  timeout (6.6 s wall, its partial clone removed) and ``path-mtu-blackhole`` ranked first at
  0.68 in 4 of 4 runs (8.9 s per ``diagnose``, 12.2-13.3 s per lab test). SSH stalls even
  before its key exchange (1,129 B received) and git:// after "Compressing objects: 66%"
  (952 B): the black hole shows on every transport; the test clones with HTTP/1.1 only.
- ``path-latency`` has no push fault (no fault of :data:`FAULT_CULPRIT` names it). On clones
  its detector reads the sender's receive-window-limited share from the lab server's own
  socket, else from the clone's capture (the bytes that arrived per round trip against the
  client's window). No lab setup ranks it first in a short test (measured 2026-11-26, h1 and
  git clones): with a normal window the 6 MiB clones end in slow start (healthy at 200 ms:
  3.4-3.9 MB/s through 8.6-9.0 MB windows, the server window-bound 6-10% of the time); at
  500 ms with Linux's classic 6 MiB ``tcp_rmem`` and 32 MiB of history (37.5 s) the clones
  ran at 4.9-5.1 MB/s, 0.62-0.64 of window / RTT (just outside the detector's 1.5x), and
  ``client-tcp-receive-window-clamp`` ranked first (the buffer at that ceiling). With a
  clamped window (``client-rmem-clamp`` at 50 and 200 ms) it fires and ranks second, behind
  the clamp."""

# --- end of the fetch shared faults block ---
