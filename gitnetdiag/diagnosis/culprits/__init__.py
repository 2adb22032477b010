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
module, one line of :data:`CULPRITS`, and the family's test module
(docs/culprits.md lists every signature).
"""

from __future__ import annotations

from gitnetdiag.diagnosis.culprits import (
    accept_queue,
    client,
    edge,
    edgeresponse,
    h2,
    h2settings,
    mtu,
    path,
    pool,
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

CULPRITS: tuple[Culprit, ...] = (
    Culprit(
        id="h2-flow-control-window",
        title="HTTP/2 flow-control window",
        detect=h2.h2_flow_control_window,
    ),
    Culprit(
        id="h2-frame-settings",
        title="HTTP/2 frame and buffer settings",
        detect=h2settings.h2_frame_settings,
    ),
    Culprit(
        id="tcp-receive-window-clamp",
        title="TCP receive window clamped",
        detect=tcp.tcp_receive_window_clamp,
    ),
    Culprit(
        id="tcp-window-scaling-off",
        title="TCP window scaling off",
        detect=tcp.tcp_window_scaling_off,
    ),
    Culprit(id="ssh-channel-window", title="SSH channel window", detect=ssh.ssh_channel_window),
    Culprit(
        id="ssh-maxstartups", title="sshd MaxStartups", detect=ssh.ssh_maxstartups, directions=BOTH
    ),
    Culprit(
        id="listen-backlog-overflow",
        title="Listen backlog overflow",
        detect=accept_queue.listen_backlog_overflow,
        directions=BOTH,
    ),
    Culprit(
        id="syn-drop", title="SYN / SYN-ACK drops", detect=accept_queue.syn_drop, directions=BOTH
    ),
    Culprit(
        id="firewall-reset",
        title="Connections reset by a filter",
        detect=accept_queue.firewall_reset,
        directions=BOTH,
    ),
    Culprit(id="packet-loss", title="Packet loss", detect=path.packet_loss, directions=BOTH),
    Culprit(
        id="bandwidth-limit", title="Path bandwidth", detect=path.bandwidth_limit, directions=BOTH
    ),
    Culprit(
        id="path-mtu-blackhole",
        title="Path-MTU black hole",
        detect=mtu.path_mtu_blackhole,
        directions=BOTH,
    ),
    Culprit(id="path-latency", title="Path latency", detect=path.path_latency, directions=BOTH),
    Culprit(id="server-processing", title="Server processing", detect=server.server_processing),
    Culprit(
        id="slow-ref-advertisement",
        title="Slow first response",
        detect=server.slow_ref_advertisement,
        directions=BOTH,
    ),
    Culprit(id="client-pack-cpu", title="Client pack-objects CPU", detect=client.client_pack_cpu),
    Culprit(
        id="client-http-stack",
        title="Client HTTP stack bug",
        detect=client.client_http_stack,
        directions=BOTH,
    ),
    Culprit(id="slow-storage", title="Slow storage", detect=storage.slow_storage),
    Culprit(
        id="edge-request-buffering",
        title="Edge buffers the request body",
        detect=edge.edge_request_buffering,
    ),
    Culprit(
        id="edge-backend-errors",
        title="Edge pool member answers errors",
        detect=pool.edge_backend_errors,
    ),
    Culprit(
        id="request-body-limit",
        title="Request-body size limit",
        detect=refusals.request_body_limit,
    ),
    Culprit(
        id="edge-idle-timeout",
        title="Edge idle timeout",
        detect=refusals.edge_idle_timeout,
    ),
    Culprit(
        id="streamed-body-refused",
        title="Streamed request body refused",
        detect=refusals.streamed_body_refused,
    ),
    # The download direction's own: the client receives, the server sends and works first.
    Culprit(
        id="client-tcp-receive-window-clamp",
        title="Client TCP receive window clamped",
        detect=tcp.client_tcp_receive_window_clamp,
        directions=DOWNLOAD,
    ),
    Culprit(
        id="server-pack-generation",
        title="Server pack generation before the first byte",
        detect=server.server_pack_generation,
        directions=DOWNLOAD,
    ),
    Culprit(
        id="server-send-buffer",
        title="Server or edge send buffer caps the download",
        detect=sendbuffer.server_send_buffer,
        directions=DOWNLOAD,
    ),
    Culprit(
        id="client-index-pack-cpu",
        title="Client CPU resolving deltas (index-pack)",
        detect=client.client_index_pack_cpu,
        directions=DOWNLOAD,
    ),
    Culprit(
        id="client-http2-window",
        title="Client libcurl's HTTP/2 download window",
        detect=h2.client_http2_window,
        directions=DOWNLOAD,
    ),
    Culprit(
        id="edge-response-buffering",
        title="Edge buffers the pack to a slow disk",
        detect=edgeresponse.edge_response_buffering,
        directions=DOWNLOAD,
    ),
)
"""The catalogue, in DESIGN.md order, each entry with the directions it judges (upload by
default; ``BOTH``: the same physics whichever end sends; ``DOWNLOAD``: clones only). Ids are
stable (JSON and tests use them)."""
