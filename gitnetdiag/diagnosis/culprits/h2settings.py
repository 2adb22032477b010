"""HTTP/2 frame and buffer settings (``h2-frame-settings``): frames or buffers smaller
than the window lets through."""

from __future__ import annotations

import re

from gitnetdiag.diagnosis.culprits._common import (
    Hit,
    above_zero,
    config_evidence,
    config_lines,
    failure_cost_s,
    label,
    share_of_upload,
    slower_than,
)
from gitnetdiag.diagnosis.culprits.h2 import TERMINATOR, hop_source, hops
from gitnetdiag.diagnosis.culprits.weights import weight
from gitnetdiag.diagnosis.measures import (
    best_other_rate,
    failed_pushes,
    ok_pushes,
    push_bytes,
    rtt_s,
    saved_time_s,
    upload_rate_bytes_per_s,
    upload_s,
)
from gitnetdiag.diagnosis.model import Evidence
from gitnetdiag.diagnosis.observations import (
    Observations,
)
from gitnetdiag.diagnosis.servers import (
    answering_server,
    frame_fix,
)
from gitnetdiag.diagnosis.units import fmt_rate
from gitnetdiag.outcomes import REFUSALS

H2_DEFAULT_FRAME_BYTES = 16384
"""HTTP/2's default SETTINGS_MAX_FRAME_SIZE (RFC 9113 section 6.5.2), the largest DATA
payload a client sends before the server says otherwise; also the smallest a server
may set."""


def _buffer_below_a_frame(obs: Observations) -> Hit | None:
    """HTTP/2 pushes fail while other transports push, and the edge's per-stream buffer
    (HAProxy ``tune.bufsize``) is smaller than one full DATA frame. Measured with HAProxy 2.6
    at 4096, 8192 and 12288 B: every HTTP/2 request, the first GET of the ref advertisement
    included, ends in "Empty reply from server", while HTTP/1.1 through it works."""
    p = obs.protocols.get("h2")
    if p is None or not any(ok_pushes(o) for n, o in obs.protocols.items() if n != "h2"):
        return None
    small = [c for c in config_lines(obs, r"^tune\.bufsize$")
             if (size := _size_bytes(c.value)) is not None and size < H2_DEFAULT_FRAME_BYTES]
    cost, failed, total = failure_cost_s(obs, "h2", {"reset", "other", "hung", "timeout"})
    if not small or not failed:
        return None
    first = next(f for f in failed_pushes(p) if f.error_kind not in REFUSALS)
    size = _size_bytes(small[0].value)
    return Hit(
        score=weight("h2-frame-settings", "buffer-below-a-frame"),
        cost_s=cost,
        summary=(
            f"{failed} of {total} HTTP/2 pushes failed while the other transports pushed: the "
            f"edge buffers {size} B per stream, less than one {H2_DEFAULT_FRAME_BYTES} B "
            "HTTP/2 frame, and drops HTTP/2 requests (\"Empty reply from server\")."
        ),
        evidence=(
            Evidence(
                what="edge buffer per stream (tune.bufsize)",
                value=size,
                unit="B",
                threshold=H2_DEFAULT_FRAME_BYTES,
                comparison="<",
                basis="one HTTP/2 DATA frame at the default maximum frame size",
                source=f"{small[0].file} line {small[0].line}",
            ),
            above_zero("HTTP/2 pushes failed", failed,
                       "pushes: " + (first.error_message or first.error_kind or ""), of=total),
        ),
        fix=(
            f"Raise HAProxy `tune.bufsize` to at least {H2_DEFAULT_FRAME_BYTES} (its default) "
            "so a whole HTTP/2 frame fits; meanwhile `git config http.version HTTP/1.1` "
            "pushes through the same edge."
        ),
    )


FRAME_SLOWER_RATIO = 0.8
"""Small frames are a suspect when HTTP/2 runs below this share of the fastest other rate."""
FRAME_ZERO_CREDIT_SHARE = 0.1
"""...and spent less than this share of the upload at zero credit (the window is open)."""


def _size_bytes(text: str) -> int | None:
    match = re.fullmatch(r"(\d+)\s*([kKmM]?)", text.strip())
    if match is None:
        return None
    return int(match.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20}[match.group(2).lower()]


def h2_frame_settings(obs: Observations) -> Hit | None:
    broken = _buffer_below_a_frame(obs)
    if broken is not None:
        return broken
    p = obs.protocols.get("h2")
    if p is None or p.h2_ledger is None or p.h2_ledger.max_frame_size_bytes is None:
        return None
    ledger = p.h2_ledger
    h2_rate, other, size, up = (
        upload_rate_bytes_per_s(p),
        best_other_rate(obs, "h2"),
        push_bytes(p),
        upload_s(p),
    )
    rtt = rtt_s(obs, p)
    if h2_rate is None or other is None or size is None or up is None:
        return None
    frame = ledger.max_frame_size_bytes
    if frame is None or frame > H2_DEFAULT_FRAME_BYTES or h2_rate >= FRAME_SLOWER_RATIO * other[1]:
        return None
    window = ledger.granted_window_bytes
    if window is not None and rtt is not None and window < other[1] * rtt:
        return None  # the window explains it: h2-flow-control-window
    zero = ledger.zero_credit_s
    if zero >= FRAME_ZERO_CREDIT_SHARE * up:
        return None
    if p.capture is not None and p.capture.network_bound:
        return None  # TCP was bound by the network (loss, cwnd), not by per-frame cost
    identity = answering_server(obs)
    return Hit(
        score=weight("h2-frame-settings", "small-frames"),
        cost_s=saved_time_s(size, up, other[1]) or 0.0,
        summary=(
            f"HTTP/2 uploaded at {fmt_rate(h2_rate)} vs {label(other[0])} "
            f"{fmt_rate(other[1])} although its window was open; the server allows only "
            f"{ledger.max_frame_size_bytes} B frames, so per-frame overhead and buffering dominate."
        ),
        evidence=(
            Evidence(
                what=f"SETTINGS_MAX_FRAME_SIZE of {TERMINATOR}",
                value=ledger.max_frame_size_bytes,
                unit="B",
                threshold=H2_DEFAULT_FRAME_BYTES,
                comparison="<=",
                basis="the protocol minimum",
                source=hop_source(ledger.source, identity),
            ),
            slower_than("HTTP/2 upload rate", h2_rate, other, "pushes", ratio=FRAME_SLOWER_RATIO),
            share_of_upload("time at zero HTTP/2 credit (the window is not the limit)", zero,
                            up, ledger.source, share=FRAME_ZERO_CREDIT_SHARE, comparison="<"),
            *config_evidence(
                config_lines(obs, r"max-frame-size|bufsize|StreamMaxMemSize|chunk_size")
            ),
            *hops(identity),
        ),
        fix=frame_fix(identity),
        compares=("h2", other[0]),
    )
