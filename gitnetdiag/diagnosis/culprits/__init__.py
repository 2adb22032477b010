"""The culprit catalogue: one small detector per id, all registered in :data:`CULPRITS`.

A detector reads :class:`Observations` and returns a :class:`Hit` (score,
cost, summary, evidence, fix) or ``None``; :class:`Culprit` wraps it into a
:class:`Finding`. Costs are physical estimates in seconds on a typical push
of the affected protocol (bursts: expected seconds per connection), built on
the rule of thumb

    upload rate <= min(HTTP/2 windows, SSH channel window, TCP receive window, cwnd) / RTT

so a window culprit's cost is the measured upload time minus the time the
same bytes take at the *next* limit (the fastest other protocol, the TCP
window / RTT, or the path rate). Evidence carries numbers and units; the
renderers format them.

Detectors live one family per module; adding a culprit touches its family's
module, one row of the catalogue, and the family's test module
(docs/culprits.md lists every signature).
"""

from __future__ import annotations

from gitnetdiag.diagnosis.culprits import (
    accept_queue,
    client,
    clonecut,
    edge,
    edgeresponse,
    h2,
    h2settings,
    idlepath,
    mtu,
    nobackend,
    path,
    pool,
    proxytunnel,
    reach,
    refusals,
    sendbuffer,
    server,
    ssh,
    storage,
)
from gitnetdiag.diagnosis.culprits import tcp_windows as tcp
from gitnetdiag.diagnosis.culprits._common import (
    BOTH,
    DOWNLOAD,
    SMALL_BACKLOG,
    SYN_RTO_S,
    UPLOAD,
    Culprit,
    Detector,
    Hit,
)
from gitnetdiag.diagnosis.transfers import Direction

__all__ = [
    "BOTH",
    "CULPRITS",
    "DOWNLOAD",
    "SMALL_BACKLOG",
    "SYN_RTO_S",
    "UPLOAD",
    "Culprit",
    "Detector",
    "Hit",
]

_CATALOGUE: tuple[tuple[str, str, Detector, frozenset[Direction]], ...] = (
    # (id, title, detector, the directions it judges)
    ("h2-flow-control-window", "HTTP/2 flow-control window", h2.h2_flow_control_window, UPLOAD),
    ("h2-frame-settings", "HTTP/2 frame and buffer settings", h2settings.h2_frame_settings, UPLOAD),
    ("tcp-receive-window-clamp", "TCP receive window clamped",
     tcp.tcp_receive_window_clamp, UPLOAD),
    ("tcp-window-scaling-off", "TCP window scaling off", tcp.tcp_window_scaling_off, UPLOAD),
    ("ssh-channel-window", "SSH channel window", ssh.ssh_channel_window, UPLOAD),
    ("ssh-maxstartups", "sshd MaxStartups", ssh.ssh_maxstartups, BOTH),
    ("listen-backlog-overflow", "Listen backlog overflow",
     accept_queue.listen_backlog_overflow, BOTH),
    ("syn-drop", "SYN / SYN-ACK drops", accept_queue.syn_drop, BOTH),
    ("firewall-reset", "Connections reset by a filter", accept_queue.firewall_reset, BOTH),
    ("packet-loss", "Packet loss", path.packet_loss, BOTH),
    ("bandwidth-limit", "Path bandwidth", path.bandwidth_limit, BOTH),
    ("path-mtu-blackhole", "Path-MTU black hole", mtu.path_mtu_blackhole, BOTH),
    ("path-latency", "Path latency", path.path_latency, BOTH),
    ("path-unreachable", "Port unreachable on the path", reach.path_unreachable, BOTH),
    ("server-processing", "Server processing", server.server_processing, UPLOAD),
    ("slow-ref-advertisement", "Slow first response", server.slow_ref_advertisement, BOTH),
    ("client-pack-cpu", "Client pack-objects CPU", client.client_pack_cpu, UPLOAD),
    ("client-http-stack", "Client HTTP stack bug", client.client_http_stack, BOTH),
    ("slow-storage", "Slow storage", storage.slow_storage, UPLOAD),
    ("edge-request-buffering", "Edge buffers the request body",
     edge.edge_request_buffering, UPLOAD),
    ("edge-backend-errors", "Edge pool member answers errors", pool.edge_backend_errors, BOTH),
    ("request-body-limit", "Request-body size limit", refusals.request_body_limit, UPLOAD),
    ("edge-idle-timeout", "Edge idle timeout", clonecut.edge_idle_timeout, BOTH),
    ("streamed-body-refused", "Streamed request body refused",
     refusals.streamed_body_refused, UPLOAD),
    ("edge-no-backend", "Edge has no working backend", nobackend.edge_no_backend, BOTH),
    ("path-idle-timeout", "Path forgets idle connections", idlepath.path_idle_timeout, BOTH),
    ("proxy-refused-tunnel", "Forward proxy refused the CONNECT tunnel",
     proxytunnel.proxy_refused_tunnel, BOTH),
    # The download direction's own: the client receives, the server sends and works first.
    ("client-tcp-receive-window-clamp", "Client TCP receive window clamped",
     tcp.client_tcp_receive_window_clamp, DOWNLOAD),
    ("server-pack-generation", "Server pack generation before the first byte",
     server.server_pack_generation, DOWNLOAD),
    ("server-send-buffer", "Server or edge send buffer caps the download",
     sendbuffer.server_send_buffer, DOWNLOAD),
    ("client-index-pack-cpu", "Client CPU resolving deltas (index-pack)",
     client.client_index_pack_cpu, DOWNLOAD),
    ("client-http2-window", "Client libcurl's HTTP/2 download window",
     h2.client_http2_window, DOWNLOAD),
    ("edge-response-buffering", "Edge buffers the pack to a slow disk",
     edgeresponse.edge_response_buffering, DOWNLOAD),
)
CULPRITS: tuple[Culprit, ...] = tuple(
    Culprit(id=id_, title=title, detect=detect, directions=directions)
    for id_, title, detect, directions in _CATALOGUE
)
"""The catalogue, in DESIGN.md order, each entry with the directions it judges (``UPLOAD``:
pushes only; ``BOTH``: the same physics whichever end sends; ``DOWNLOAD``: clones only). Ids are
stable (JSON and tests use them)."""
