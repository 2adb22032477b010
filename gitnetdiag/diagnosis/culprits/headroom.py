"""A window that allows far more than the run asked of it did not bind.

Every window culprit (the HTTP/2 window, the SSH channel window, the TCP receive
window) rests on one rule: a window of W bytes lets a transfer move at most
W / RTT. The same rule speaks against the culprit when that rate is far above
anything the run reached or needed: on a 0 ms path a 65536 B HTTP/2 window allows
gigabytes per second, and a push that hung for 15 s with 8 MB to send needed half a
megabyte per second. A window never stops a transfer (a receiver that stops
granting credit does, whatever its size), and a window that allows four times the
fastest rate seen limited none of them: the stall or the slowness has another cause.

    allows = window / RTT
    reached = the fastest upload rate of any protocol's completed pushes
    needed  = a stalled push's pack / its duration (what would have finished it in time)
    path    = the measured path rate

    allows >= HEADROOM_RATIO x max(reached, needed)  or  allows > path  -> did not bind

Rates say nothing of a push that stopped dead. A hung push whose sockets moved no more
than one window of its pack (:func:`stopped_within_window`) used up its credit and was
never granted more: that is the window's own stall signature, and the rule does not rule
the window out then (``h2-flow-control-window``). The loopback HTTP/2 server that never
sends WINDOW_UPDATE (tests/probe/test_h2_stall.py) hangs the pack POST after 959 B
acknowledged, whatever the 32768 B its TCP_INFO once saw in flight (one loopback MSS)
over 0.019 ms "allows" (1.7 GB/s, 98x the git:// push beside it); nginx in front of a
receive-pack that never reads (the rule's origin) hung after 0.3 MiB over a 64 KiB
window, credited again and again: the rule stands there.

    moved <= window x STALL_FRAMING_RATIO + STALL_PREAMBLE_BYTES  (pack > window)
                                                    -> stopped at the window: may bind
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from gitnetdiag.diagnosis.culprits._common import label, observed, term
from gitnetdiag.diagnosis.culprits.mtu import STALL_KINDS
from gitnetdiag.diagnosis.measures import path_rate_bytes_per_s, upload_rate_bytes_per_s
from gitnetdiag.diagnosis.model import Evidence
from gitnetdiag.diagnosis.observations import Observations, PushObservation

HEADROOM_RATIO = 4.0
"""A window whose rate (window / RTT) is at least this multiple of the fastest rate a
transfer of the run reached or needed did not bind. A window that binds holds its rate
near window / RTT (within 1.5x: ``MATCHES_CAP_RATIO``); a short push at a long RTT
spends part of its time in slow start and may reach a third of it (the SSH rule): four
times is beyond both."""


@dataclass(frozen=True, kw_only=True)
class Headroom:
    """Why a window did not bind: the rate it allows against what the run asked."""

    allows_bytes_per_s: float
    """window / RTT."""
    reference_bytes_per_s: float
    """The rate it is compared with."""
    reference: str
    """What that rate is, in words (``HTTP/1.1 push``, ``path rate``, ...)."""
    ratio: float
    """The multiple of the reference the window's rate reaches at least."""


def asked_rates(obs: Observations) -> list[tuple[str, float]]:
    """Every rate the run reached or needed, canonical protocol order: each protocol's
    completed upload rate, and for its stalled pushes the rate that would have moved
    the whole pack within the time the push ran."""
    rates: list[tuple[str, float]] = []
    for name, p in observed(obs):
        rate = upload_rate_bytes_per_s(p)
        if rate is not None and rate > 0:
            rates.append((f"{label(name)} push", rate))
        needed = [push.bytes / push.duration_s for push in p.pushes
                  if not push.ok and push.error_kind in STALL_KINDS
                  and push.bytes > 0 and push.duration_s > 0]
        if needed:
            rates.append((f"rate a stalled {label(name)} push needed to finish in the "
                          "time it ran (pack / duration)", max(needed)))
    return rates


def window_headroom(obs: Observations, window: float | None,
                    rtt: float | None) -> Headroom | None:
    """The evidence that a window of ``window`` bytes over ``rtt`` did not bind the run's
    transfers; None when it may have (or nothing tells)."""
    if not window or not rtt or window <= 0 or rtt <= 0:
        return None
    allows = window / rtt
    path = path_rate_bytes_per_s(obs)
    if path is not None and allows > path:
        return Headroom(allows_bytes_per_s=allows, reference_bytes_per_s=path,
                        reference="path rate", ratio=1.0)
    rates = asked_rates(obs)
    if not rates:
        return None
    what, fastest = max(rates, key=lambda item: item[1])
    if allows < HEADROOM_RATIO * fastest:
        return None
    return Headroom(allows_bytes_per_s=allows, reference_bytes_per_s=fastest, reference=what,
                    ratio=HEADROOM_RATIO)


STALL_FRAMING_RATIO = 1.05
"""One window of pack DATA as the bytes git's sockets acknowledge: each HTTP/2 DATA frame
adds its 9 B header and each TLS record 22 B (TLS 1.3: 5 B header, 16 B tag, 1 B type),
0.2% of 16 KiB frames; 5% holds down to frames of 620 B."""
STALL_PREAMBLE_BYTES = 16 * 1024
"""What a push's sockets carry besides its pack DATA: the TLS handshake (a ClientHello of
0.5-2 kB, a client certificate a few kB), the HTTP/2 preface and SETTINGS, the request
headers, git's 4-byte probe POST and the ref-update commands ahead of the pack. 959 B in
all in the loopback reproduction (tests/probe/test_h2_stall.py); nginx's hang moved 0.3 MiB
over its 64 KiB window, 4.8 windows, far above one window and this."""
PREPARING_PACK = re.compile(r"(Enumerating|Counting|Compressing) objects:\s+\d+%(?!.*done)")
"""git's last progress line while it was still preparing the pack: nothing of it was sent
yet, so a push that stopped there did not stop on the window's credit."""


@dataclass(frozen=True, kw_only=True)
class StoppedDead:
    """A hung push that moved no more than one window before it stopped: its credit ran
    out and was never granted again (the window's stall, which its rate does not show)."""

    push: PushObservation
    """The hung push."""
    moved_bytes: int
    """What its sockets moved before it stopped."""
    window_bytes: float
    """The window it was held to."""
    limit_bytes: float
    """One window with its framing and the push's preamble (:data:`STALL_FRAMING_RATIO`,
    :data:`STALL_PREAMBLE_BYTES`)."""

    def evidence(self, what: str, source: str) -> Evidence:
        """``what`` (the hung push's moved bytes) against one window and the preamble."""
        return Evidence(
            what=what, value=self.moved_bytes, unit="B", of=self.push.bytes,
            threshold=self.limit_bytes, comparison="<=",
            basis="one window {} x {} for framing + {} of handshake and request headers",
            basis_terms=(term(self.window_bytes, "B"), term(STALL_FRAMING_RATIO, "count"),
                         term(STALL_PREAMBLE_BYTES, "B")),
            source=f"{source}; pushes: {self.push.error_message or self.push.error_kind}")


def stopped_within_window(pushes: Iterable[PushObservation],
                          window: float | None) -> StoppedDead | None:
    """The first hung push (a stall or timeout, its pack larger than ``window``, not
    stopped while git still prepared the pack) whose moved bytes stayed within one window of
    ``window`` bytes; None when none did, the moved bytes are not known, or no window."""
    if not window or window <= 0:
        return None
    limit = window * STALL_FRAMING_RATIO + STALL_PREAMBLE_BYTES
    for push in pushes:
        if (not push.ok and push.error_kind in STALL_KINDS and push.moved_bytes is not None
                and push.bytes > window and push.moved_bytes <= limit
                and not PREPARING_PACK.search(push.error_message or "")):
            return StoppedDead(push=push, moved_bytes=push.moved_bytes, window_bytes=window,
                               limit_bytes=limit)
    return None
