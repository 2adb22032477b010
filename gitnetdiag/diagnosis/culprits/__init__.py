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
    h2,
    mtu,
    path,
    pool,
    refusals,
    server,
    ssh,
    storage,
)
from gitnetdiag.diagnosis.culprits import tcp_windows as tcp
from gitnetdiag.diagnosis.culprits._common import SMALL_BACKLOG, SYN_RTO_S, Culprit, Detector, Hit

__all__ = ["CULPRITS", "SMALL_BACKLOG", "SYN_RTO_S", "Culprit", "Detector", "Hit"]

CULPRITS: tuple[Culprit, ...] = (
    Culprit(
        id="h2-flow-control-window",
        title="HTTP/2 flow-control window",
        detect=h2.h2_flow_control_window,
    ),
    Culprit(
        id="h2-frame-settings",
        title="HTTP/2 frame and buffer settings",
        detect=h2.h2_frame_settings,
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
    Culprit(id="ssh-maxstartups", title="sshd MaxStartups", detect=ssh.ssh_maxstartups),
    Culprit(
        id="listen-backlog-overflow",
        title="Listen backlog overflow",
        detect=accept_queue.listen_backlog_overflow,
    ),
    Culprit(id="syn-drop", title="SYN / SYN-ACK drops", detect=accept_queue.syn_drop),
    Culprit(
        id="firewall-reset",
        title="Connections reset by a filter",
        detect=accept_queue.firewall_reset,
    ),
    Culprit(id="packet-loss", title="Packet loss", detect=path.packet_loss),
    Culprit(id="bandwidth-limit", title="Path bandwidth", detect=path.bandwidth_limit),
    Culprit(
        id="path-mtu-blackhole",
        title="Path-MTU black hole",
        detect=mtu.path_mtu_blackhole,
    ),
    Culprit(id="path-latency", title="Path latency", detect=path.path_latency),
    Culprit(id="server-processing", title="Server processing", detect=server.server_processing),
    Culprit(
        id="slow-ref-advertisement",
        title="Slow first response",
        detect=server.slow_ref_advertisement,
    ),
    Culprit(id="client-pack-cpu", title="Client pack-objects CPU", detect=client.client_pack_cpu),
    Culprit(id="client-http-stack", title="Client HTTP stack bug", detect=client.client_http_stack),
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
)
"""The catalogue, in DESIGN.md order; ids are stable (JSON and tests use them)."""
