"""An edge that buffers the whole request body before it forwards it to the git server.

The client's upload ends when the edge has the last byte; git's receive-pack
sees the first byte only then, and the forwarding time (which grows with the
pack) is added after the upload instead of overlapping it. From the client
this shows as a wait after the upload on the HTTPS ways in only: SSH (which
reaches the git server directly) answers promptly, so no hook or server step
explains it (those delay every transport alike, see ``server-processing``).
"""

from __future__ import annotations

from gitnetdiag.diagnosis.culprits._common import (
    SLOW_PHASE_S,
    Hit,
    Tally,
    config_evidence,
    config_lines,
    label,
    phase_values,
    storage_slowness,
)
from gitnetdiag.diagnosis.measures import push_bytes, upload_s
from gitnetdiag.diagnosis.model import Evidence
from gitnetdiag.diagnosis.observations import Observations
from gitnetdiag.diagnosis.servers import answering_server, buffering_knob, ordered
from gitnetdiag.diagnosis.units import fmt_rate, fmt_s

HTTPS_PROTOCOLS = ("h1", "h2")
DIRECT_PROTOCOLS = ("ssh", "git")
BUFFERS_BY_DEFAULT = ("nginx",)
"""Edges whose default is to read the whole request body before forwarding it
(nginx ``proxy_request_buffering on``)."""
BUFFERING_CONFIG = r"^(proxy_request_buffering|fastcgi_request_buffering|uwsgi_request_buffering" \
    r"|option http-buffer-request|request_buffers)$"


SIZE_SPREAD = 1.3
"""Two pushes tell whether the wait grows with the pack when one is this much larger."""


def _wait_growth(obs: Observations, size: float | None,
                 wait: float) -> tuple[Evidence, ...] | None:
    """The native HTTP/2 probe pushes a smaller pack through the same edge: when the larger
    pack waits longer, the wait grows with the pack at the forwarding rate (bytes / s)."""
    h2 = obs.protocols.get("h2")
    ledger = h2.h2_ledger if h2 is not None else None
    if (ledger is None or ledger.request_bytes is None or ledger.server_wait_s is None
            or not size):
        return None
    small, large = sorted(((float(ledger.request_bytes), ledger.server_wait_s), (size, wait)))
    if large[0] < SIZE_SPREAD * small[0] or large[1] <= small[1]:
        return None
    return (
        Evidence(what="smaller pack through the same edge (native HTTP/2 probe)",
                 value=small[0], unit="B", source="native HTTP/2 probe"),
        Evidence(what="its wait after the upload", value=small[1], unit="s",
                 source="native HTTP/2 probe"),
        Evidence(what="forwarding rate from the two packs (the wait grows with the pack)",
                 value=(large[0] - small[0]) / (large[1] - small[1]), unit="B/s",
                 source="native HTTP/2 probe + trace2"),
    )


def edge_request_buffering(obs: Observations) -> Hit | None:
    https = phase_values(obs, "server_wait_s", HTTPS_PROTOCOLS)
    direct = phase_values(obs, "server_wait_s", DIRECT_PROTOCOLS)
    if not https or not direct:
        return None
    base_name, base_wait = min(direct, key=lambda item: item[1])
    name, wait = min(https, key=lambda item: item[1])
    extra = wait - base_wait
    if extra < SLOW_PHASE_S:
        return None
    if storage_slowness(obs) is not None and len(https) < 2:
        # One push carries the new objects (the probe sends the same commit every way); on
        # a slow disk that push alone waits to store them, whatever way it came in.
        return None
    p = obs.protocols[name]
    size = push_bytes(p)
    tally = Tally("edge-request-buffering")
    tally.add("https-waits", Evidence(
        what=f"{label(name)} wait after the upload beyond the {label(base_name)} push's",
        value=extra, unit="s", threshold=SLOW_PHASE_S, comparison=">=",
        source="trace2 (server_wait_s)"))
    if len(https) >= 2:
        tally.add("every-https", Evidence(what="HTTPS protocols that waited", value=len(https),
                                 unit="count", source="trace2"))
    identity = answering_server(obs)
    server = identity.server if identity else None
    if server in BUFFERS_BY_DEFAULT:
        tally.add("buffers-by-default", Evidence(
            what="edge that answered buffers request bodies by default",
            text=identity.product if identity else "",
            source="; ".join(identity.basis) if identity else ""))
    lines = [c for c in config_lines(obs, BUFFERING_CONFIG)
             if c.value.strip().lower() not in ("off", "")]
    if lines:
        tally.add("configured", *config_evidence(lines))
    if size:
        tally.note(Evidence(
            what="forwarding rate implied (pack / extra wait)", value=size / extra, unit="B/s",
            source="trace2 + pack size"))
    growth = _wait_growth(obs, size, wait)
    if growth is not None:
        tally.add("grows-with-pack", *growth)
    up = upload_s(p)
    cost = min(extra, up) if up else extra
    documented = server is not None and not buffering_knob(server).endswith(
        "no request-buffering setting is documented")
    first, *rest = ordered(server if documented else "nginx")
    lead = "On the edge that answered, " if server == first else "On the edge, e.g. "
    return Hit(
        score=min(tally.score, 1.0),
        cost_s=cost,
        summary=(
            f"{label(name)} pushes waited {fmt_s(extra)} longer after the upload than "
            f"{label(base_name)}: the HTTPS edge holds the whole body before the git server sees "
            f"it (a forwarding rate of {fmt_rate(size / extra) if size else 'unknown'})."
        ),
        evidence=tuple(tally.evidence),
        fix=(
            f"Stream request bodies to the git server instead of buffering them. {lead}"
            f"{buffering_knob(first)}. Other edges: "
            + "; ".join(buffering_knob(s) for s in rest if s != "h2o")
            + ". Keep the HTTP/2 window large when buffering is off (nginx "
            "`http2_body_preread_size`, `client_body_buffer_size`)."
        ),
    )
