"""Hand-set signal weights: what each signal of a detector adds to its raw score.

A detector gathers its signals in a :class:`~gitnetdiag.diagnosis.culprits._common.Tally`
by name (``tally.add("slower", evidence)``); the numbers live here, one table for
every culprit, beside the fitted calibrations (:mod:`.fitted`) that turn the raw
score into the confidence a finding reports. A weight is added when its signal
holds; a ``factor`` multiplies the score so far (a caveat that halves it); a
``base`` or a fixed score is what the culprit's signature alone is worth.

Changing a weight changes the raw scores the fault matrix saw: re-fit
(``benchmarks/fault_matrix.py --from benchmarks/data/fault-matrix.json.gz --fit``).
"""

from __future__ import annotations

WEIGHTS: dict[str, dict[str, float]] = {
    # The download direction (sendbuffer.py, client.py, h2.py): "cap" is the most the raw
    # score may reach from the client's evidence alone.
    "client-tcp-receive-window-clamp": {
        "buffer-at-ceiling": 0.85,  # the window is bound and the buffer sits at tcp_rmem's max
        "window-bound": 0.6,  # the download ran at advertised window / RTT
    },
    "server-pack-generation": {
        "base": 0.5,  # counting and compressing dominate the time to the first pack byte;
        "cap": 0.9,  # plus the share of the clone they took, up to this
    },
    "server-send-buffer": {
        "flight-below-window": 0.45,  # rate x RTT at most half the advertised window, small
        "rcv-space-small": 0.1,  # the most delivered in one RTT is about the flight
        "no-queue": 0.2,  # median RTT within 1.5x the minimum: no queue on the path
        "steady": 0.1,  # the monitor stopped on a stable rate
        "cap": 0.85,  # the client alone cannot tell a clamped buffer from slow production
        "sender-sndbuf-limited": 0.45,  # the server's own sockets: buffer-bound, windows open
        "cap-with-sender": 0.95,  # ... and with the server's word on it
        # A capture at the server (bare captures only: the fault matrix has none, its raw
        # scores are unchanged): its flight flat below half the client's window, held
        "sender-flight-plateau": 0.2,
        "cap-capture": 0.85,  # a capture shows neither the buffer nor a program's own pace
    },
    "edge-response-buffering": {
        "slower-than-direct": 0.45,  # HTTPS through the edge at most 1/3 of SSH's or git://'s
        "every-https": 0.1,  # both HTTP versions slow through the edge
        "window-open": 0.1,  # rate x RTT at most half the client's advertised window
        "no-queue": 0.1,  # median RTT within 1.5x the minimum: the path did not bind
        "bursts": 0.2,  # rcv_space >= 8x the average per RTT: bursts after gaps (required)
        "cap": 0.9,  # the client cannot see the edge's disk
        "configured": 0.05,  # host.json: nginx proxy_buffering on (explicit or default)
        "cap-configured": 0.95,  # with the config: the buffering is known, the disk is not
    },
    "client-index-pack-cpu": {
        "index-pack-share": 0.4,  # index-pack took INDEX_PACK_SHARE or more of the clone
        "share-above-threshold": 0.3,  # part: the share above the threshold, up to 0.3
        "same-on-every-transport": 0.15,  # the same index-pack time on every protocol
        "cap": 0.9,
    },
    "client-http2-window": {
        "listed-release": 0.4,  # the libcurl release's window is documented as small
        "slower-than-h1": 0.3,  # the HTTP/2 clone at most 2/3 of the HTTP/1.1 rate
        "rate-at-window": 0.2,  # bytes per round trip near the window
        # --full: git's own frames advertise a window below HTTP/1.1's bytes per round trip
        "advertised-small-window": 0.35,
        # neither frames nor a listed release: bytes per round trip at HTTP/2's default
        # window (another h2-only limit, a server's, could give the same rate)
        "rate-at-default-window": 0.25,
        "cap": 0.9,
    },
    "h2-flow-control-window": {
        "slower": 0.35,  # HTTP/2 below SLOWER_RATIO of the fastest other transport
        "self-limited": 0.15,  # the TCP sender waited on HTTP/2, not on TCP
        "tcp-window-open": 0.1,  # advertised TCP window >= 2x bytes in flight
        "small-window": 0.25,  # granted HTTP/2 window below the BDP
        "rate-at-window": 0.1,  # measured rate within MATCHES_CAP_RATIO of window / RTT
        "zero-credit": 0.15,  # at zero send credit for ZERO_CREDIT_SHARE of the upload
        "stalled": 0.2,  # pushes hung, beside the signals above
        "stalled-alone": 0.4,  # pushes hung, no other signal
        "capture-only": 0.45,  # a bare capture: self-limited with the TCP window open
        "capture-rate-at-plateau": 0.15,  # ... the rate within 1.5x of plateau / RTT
        "capture-flat-plateau": 0.1,  # ... in flight (median) >= 80% of its p95
        "capture-default-window": 0.2,  # ... the plateau at HTTP/2's default 65535 B window
    },
    "h2-frame-settings": {
        "buffer-below-a-frame": 0.8,  # an edge buffer smaller than one DATA frame, pushes fail
        "small-frames": 0.45,  # minimum frame size, window open, HTTP/2 slower
    },
    "tcp-receive-window-clamp": {
        "rwnd-limited": 0.45,  # the sender sat at the advertised window
        "flat-in-flight": 0.2,  # bytes in flight flat at the advertised window
        "below-bdp": 0.2,  # the window is below a measured BDP
        "no-bdp": -0.1,  # only the 1 MiB fallback to compare with
        "every-protocol": 0.1,  # two or more protocols, every captured one clamped
        "zero-window": 0.05,  # the receiver advertised a zero window
        "autotune-maximum": 0.5,  # factor: the window is the usual autotuning maximum
    },
    "tcp-window-scaling-off": {
        "rwnd-limited": 0.9,  # no scale option and the sender sat at the window
        "unscaled": 0.4,  # no scale option only
    },
    "ssh-channel-window": {
        "slower": 0.35,  # SSH below SLOWER_RATIO of the fastest other transport
        "self-limited": 0.15,  # the TCP sender waited on the SSH channel
        "small-window": 0.25,  # granted channel window below the BDP
        "rate-at-window": 0.2,  # measured rate reaches window / RTT
        "zero-window": 0.15,  # at zero channel window for ZERO_CREDIT_SHARE of the upload
    },
    "ssh-maxstartups": {
        "burst-refused": 0.45,  # concurrent SSH connections refused or reset
        "log-only": 0.3,  # no burst: only sshd's log
        "log": 0.35,  # sshd logged MaxStartups throttling
        "configured": 0.1,  # MaxStartups set in sshd_config
    },
    "listen-backlog-overflow": {
        "host-evidence": 0.3,  # a counter, a small backlog or a kernel log line
        "accept-queue-counters": 0.3,  # ListenOverflows / ListenDrops rose
        "syn-queue-counters": 0.1,  # TCPReqQFull* / SyncookiesSent rose
        "small-backlog": 0.15,  # a listener's backlog <= SMALL_BACKLOG
        "burst-symptoms": 0.2,  # a burst saw SYN retransmissions, failures or slow connects
    },
    "syn-drop": {
        "burst-clean-server": 0.7,  # burst SYN losses, the server's queues counted none
        "burst": 0.6,  # burst SYN losses, no server counters
        "pushes-only": 0.5,  # SYN retransmissions on the pushes only
    },
    "request-body-limit": {
        "refused-bracketed": 0.9,  # pushes failed on a 413 and the body probe bracketed it
        "refused": 0.75,  # a 413 on the pack POST, no bracket or no push failed on it
    },
    "streamed-body-refused": {
        "pushes-failed": 0.85,  # pushes failed on a refused streamed body
        "probe-only": 0.6,  # only the body probe saw it
    },
    "edge-no-backend": {
        "every-request": 0.75,  # every HTTPS request the same 502/503 from one hop, none 2xx
        "other-transport-works": 0.1,  # SSH or git:// to the same host completed
        "several-requests": 0.05,  # more than one kind of request, or git's and the tool's
        "cap": 0.9,
    },
    "edge-idle-timeout": {
        "server-working": 0.85,  # closed after N s of silence; the server measured busier
        "close-only": 0.55,  # the close alone: the server's working time not measured
    },
    "proxy-refused-tunnel": {
        "connect-refused": 0.9,  # curl's words: the proxy answered CONNECT with an error
    },
    "path-idle-timeout": {
        "bracketed": 0.9,  # keepalives answered below N, unanswered above, new connection ok
        "unanswered-only": 0.75,  # even the shortest silence went unanswered: N not bracketed
    },
    "firewall-reset": {
        "pushes-reset": 0.45,  # pushes reset or refused
        "bursts-reset": 0.35,  # only burst connections reset or refused
        "rst-seen": 0.15,  # RST segments from the server side
        "filter-rule": 0.3,  # a REJECT / DROP / tcp-reset rule in the host's config
    },
    "packet-loss": {
        "loss": 0.55,  # retransmission rate >= LOSS_RATE, no window explains the rate
        "heavy-loss": 0.15,  # retransmission rate >= HEAVY_LOSS_RATE
        "timeouts": 0.1,  # RTO retransmissions
        "network-limited": 0.1,  # the sender was network-limited half the time or more
        "no-window-known": 0.7,  # factor: the cost is the fallback (no window known)
    },
    "bandwidth-limit": {
        "at-path-rate": 0.6,  # the fastest push at the measured path rate
        "standing-queue": 0.6,  # a queue stood in front of the narrowest link
        "all-alike": 0.4,  # every protocol network-limited alike, no loss
    },
    "path-mtu-blackhole": {
        "swallowed": 0.55,  # large segments resent, never acknowledged
        "stalled": 0.25,  # pushes hung after the handshake
        "full-size-lost": 0.1,  # the lost segments are full-size for the agreed MSS
        "several-protocols": 0.1,  # seen on two or more protocols
        # The receiver's view (a clone): only segments well below its advertised MSS arrived
        # in a transfer that stalled ("stalled" is added too: the stall is required).
        "starved": 0.45,
    },
    "path-unreachable": {
        "no-answer": 0.9,  # the path check's SYNs got no answer at all (filtered)
        "no-route": 0.9,  # the path check's connect met no route (EHOSTUNREACH/ENETUNREACH)
        "tls-stalled": 0.8,  # TCP connected, the TLS handshake never completed
        "every-protocol": 0.05,  # every requested protocol's port is dead
    },
    "path-latency": {
        "autotune-maximum": 0.6,  # the window is the autotuning maximum: latency is the lever
        "small-window": 0.3,  # a small window: latency only multiplies it
    },
    "server-processing": {
        "several-protocols": 0.7,  # the wait on two or more protocols
        "one-protocol": 0.6,  # the wait on one protocol
        "slow-storage": 0.4,  # the storage is slow too: slow-storage explains it
    },
    "slow-ref-advertisement": {
        "several-protocols": 0.7,  # the delay on two or more protocols
        "one-protocol": 0.6,  # the delay on one protocol
    },
    "client-pack-cpu": {
        "slow-pack-objects": 0.6,  # pack-objects took SLOW_PHASE_S and a share of the push
    },
    "client-http-stack": {
        "spoiled-body": 0.85,  # a failed push's body held a pack that fails its trailer
        "stall-with-credit": 0.8,  # a hung push's frames show credit left
        "bug-failed": 0.75,  # a known-bad version, and its pushes failed
        "bug-slow": 0.45,  # a known-bad version, and its pushes were slow
        "bug-only": 0.3,  # a known-bad version, no symptom measured
    },
    "slow-storage": {
        "below-reference": 0.5,  # IOPS below the reference
        "per-slowness": 0.3,  # times how far below (0..1)
    },
    "edge-request-buffering": {
        "https-waits": 0.45,  # HTTPS pushes waited after the upload beyond SSH's
        "every-https": 0.15,  # both HTTPS protocols waited
        "buffers-by-default": 0.2,  # the edge that answered buffers bodies by default
        "configured": 0.2,  # a buffering setting on in its config
        "grows-with-pack": 0.2,  # a larger pack waited longer
    },
}
"""Culprit id -> signal name -> raw-score weight (or factor, where the comment says so)."""


def weight(culprit: str, signal: str) -> float:
    """One weight of the table (a ``KeyError`` names a signal the table lacks)."""
    return WEIGHTS[culprit][signal]
