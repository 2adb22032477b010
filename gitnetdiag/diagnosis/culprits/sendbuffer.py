"""The sender's send buffer (``server-send-buffer``, a download: the server's or edge's socket).

In a fetch the server sends. When its send buffer is small (the server's
``net.ipv4.tcp_wmem`` maximum, HAProxy ``tune.sndbuf.server`` /
``tune.sndbuf.client``, nginx ``listen ... sndbuf=``, an application's
``SO_SNDBUF``), the kernel cannot keep more than about that buffer's worth of
data unacknowledged, so the server's bytes in flight sit at a ceiling below
the window the client advertises, every round trip alike. Seen from the client
(TCP_INFO, any user):

- the bytes that arrive per round trip (``rate x RTT``, and ``rcv_space``:
  autotuning's count of what the sender delivered per RTT) stay well below the
  window the client advertised (``rcv_ssthresh``): the client's window is not
  what binds;
- the RTT the receiver measures stays near the path's minimum: no queue builds
  on the path, so neither a bottleneck link nor a shaper is holding the rate;
- the rate is flat (the monitor stopped the clone at a stable rate);
- the socket carried data for most of the time it was sampled (less than
  :data:`~gitnetdiag.diagnosis.transfers.IDLE_SHARE` of it idle): a buffer holds a
  sender that has more to write, so the flight sits at the buffer round trip after round
  trip. A server that produces the pack slower than the path carries (a CPU-starved
  upload-pack) also keeps a small flight with no queue, but leaves the socket idle most of
  the time (the lab's ``slow-pack-generation``: idle 87-93% of 18-23 s, a flight of 5.7-27 kB
  per round trip; its 64 KiB ``server-sndbuf-clamp``: at most 28%, issue 26).

A server that writes the pack steadily, only slower than the path carries (its
pace, not idle stretches), still looks the same from the client; only the
server's own TCP_INFO tells the two apart. When the server runs on this machine (the lab,
``--host-netns``, ``--host-local``) the fetch samples it
(:mod:`gitnetdiag.analysis.tcpinfo`): a send buffer that held the bytes in
flight for most of the sending time, with the client's window and the
congestion window open, is the culprit's own signature and lifts the cap; a
sender that was mostly held by something else (the client's window, its own
pace) clears the send buffer whatever the client saw. A lossy path keeps the
flight small too (the sender's congestion window backs off): with the clone's
capture showing the server's retransmissions at ``packet-loss``'s rate (without a capture,
the client's out-of-order arrivals at its share), this stays silent.

The fix names the hop whose sockets sent the held clones, as the push side does
(:func:`~gitnetdiag.diagnosis.servers.answering_fix`): HTTPS clones held while SSH and
git:// were not come from the sockets of the product that answered over HTTPS (an edge
with ``tune.sndbuf.client`` or ``listen ... sndbuf=``), so its setting leads; SSH or
git:// held too reach the git server's own processes, which set no buffer of their own, so
the git server's ``tcp_wmem`` leads (the lab's ``server-sndbuf-clamp`` clamps the whole
server namespace: every way in is held).

A bare capture taken at the server (issue 43) shows the sender's own view instead
(:attr:`~gitnetdiag.diagnosis.transfers.CaptureMetrics.plateau`,
:mod:`gitnetdiag.analysis.plateau`): its bytes in flight held flat (within 0.5-1.5x of one
level for half the pack's bulk and at least 1 s, growing at most 1.5x) at a small level
below half the client's advertised window, with its data-to-ACK round trips showing no
queue and the bulk taking at least half of the time the server sent data. That is the
send buffer's signature; a flight that grew with slow start or the congestion window, or
sat at the window, clears it, and so does a pack sent at the end of a long trickle of
progress. What a capture cannot show is said: the buffer's size and the setting behind
it, and that a server program writing no faster than that (its own flow-control window, a
pace) would look the same (capped at 0.85).
"""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.analysis.tcpinfo import SenderTcpSummary
from gitnetdiag.diagnosis.culprits._common import (
    LOSS_RATE,
    OUT_OF_ORDER_SHARE,
    Hit,
    Tally,
    flight_in_window,
    label,
    no_queue,
    typical_costliest,
    unclamped_cost_s,
)
from gitnetdiag.diagnosis.edgelimits import setting_text
from gitnetdiag.diagnosis.model import Evidence, Quantity
from gitnetdiag.diagnosis.observations import Observations
from gitnetdiag.diagnosis.proxies import SocketHolder, path_hops, socket_holder
from gitnetdiag.diagnosis.servers import answering_fix, sending_hop
from gitnetdiag.diagnosis.transfers import IDLE_SHARE, TransferObservation
from gitnetdiag.diagnosis.units import fmt_bytes, fmt_rate, fmt_s

FLIGHT_BELOW_WINDOW = 0.5
"""Bytes delivered per RTT at most this share of the advertised window: the window did not
bind (Linux's receive autotuning keeps the window about twice what arrives per RTT while
the sender keeps up, so a window-bound download sits near 1)."""
SMALL_FLIGHT_BYTES = 256 * 1024
"""A sender that never has more than this in flight on a path with room is held by its
buffer: Linux's own ``tcp_wmem`` maximum (4 MiB) lets it keep ten times more, and the
clamps met in the field (``tune.sndbuf.*``, ``sndbuf=``) are tens of KiB. Above it, a
sender that is merely slow (its congestion window, a policer) is as likely."""
RTT_UNINFLATED = 1.5
"""A median receiver RTT within this factor of the minimum: no queue on the path."""
MIN_RTT_S = 0.005
"""Below 5 ms of RTT a small buffer is enough for any rate; the clamp cannot be told."""
MIN_MEASURED_S = 2.0
"""A rate measured over less than this is mostly slow start, when every sender has less in
flight than the window allows (the lab's 0.7 MB packs: 0.55 s, a false send-buffer clamp)."""
SNDBUF_SHARE = 0.5
"""The server's own counters: send-buffer limited for at least half of the bytes it sent
(the lab's 64 KiB clamp at 50 ms: most of them; an unclamped server: its congestion window
or the client's window bind instead)."""
MIN_SNDBUF_HELD_S = 0.5
"""The server's send buffer seen holding for at least this long, beside that share (two
0.25 s samples, or the kernel's ``sndbuf_limited`` chronograph): one sample can carry most
of a short clone's bytes. The
demo path's 25 MB HTTP/2 clone at 50 ms (1.1 s, all slow start) had its last 0.29 s sample
at Linux's default 4 MiB buffer, with the congestion window grown past it: 58% of the
bytes, a send-buffer finding in one run of five (issue 26). The lab's 64 KiB clamp: 1.1 s
of a 1.9 s clone."""
RATE_OF_BUFFER = 1 / 3
"""A buffer that holds the download lets through about itself per round trip: the bytes
delivered per RTT (rate x RTT) at least this share of the largest send buffer (``skmem
tb``; Linux charges each segment's overhead to it too). The lab's 64 KiB clamp: about 2;
the demo path's slow start at the default 4 MiB (issue 26): 0.27, the buffer bound only
after the rate had been made."""
MIN_SENDER_SAMPLES = 3
"""Fewer sending samples of the server's socket (0.25 s apart) say too little, except that
the buffer never held (:func:`_never_buffer_bound`)."""
NEVER_HELD_S = 0.05
"""The kernel's ``sndbuf_limited`` chronograph at most this (it counts from the connection's
start, so one sample carries it): with no sample of a full buffer and the flight at most half
the buffer, the send buffer never held the clone. A loaded run's HTTP/1.1 clone through the
edge (2 samples, 2.5 MB/s against HTTP/2's 1.0 MB/s): 0.0 s of 1.8 s busy, congestion window
bound, 143 kB in flight against a 456 kB buffer; ranked over ``client-http2-window`` on the
client's evidence alone. The lab's 64 KiB clamp: 0.51 s, the flight 55 kB in a 64 kB buffer."""
PLATEAU_HELD_SHARE = 0.5
"""A capture at the server: its flight within 0.5-1.5x of its level for at least this share
of the pack's bulk (the lab's 64 KiB clamp at 50 ms: 68% over git://, 100% over SSH and
HTTPS; :mod:`gitnetdiag.analysis.plateau`)."""
MIN_PLATEAU_S = 1.0
"""... and for at least this long (20 round trips at 50 ms): an unclamped 6 MB clone at
50 ms is slow start all through and holds a level for 0.4-0.5 s (lab, server-side
captures); the clamped ones 1.3-4.8 s."""
PLATEAU_GROWTH = 1.5
"""... and the flight of the bulk's last third at most this multiple of its first third's: a
flight that keeps growing is a congestion window opening (the lab's git:// clones under the
same clamp, whose server socket queued 0.38-0.69 MB against its 64 KiB buffer in ``ss``:
100 kB to 370 kB over 2.5 s, a growth of 2.3-2.6), not a buffer holding it."""
UNCLAMPED_FLIGHT_BYTES = 3 * 1024 * 1024
"""What a sender with Linux's default ``tcp_wmem`` maximum (4 MiB) keeps in flight (the
buffer holds the unacknowledged data and its overhead): the rate an unclamped server reaches
at most, ``3 MiB / RTT``."""

HOST_FIX = (
    "the third value of sysctl net.ipv4.tcp_wmem (Linux's default is 4194304) and "
    "net.core.wmem_max where a program sets SO_SNDBUF, at least twice the path's "
    "bandwidth-delay product")
"""The sending host's own limit (the git server's, or the edge's host)."""
HTTPS_PROTOCOLS = ("h1", "h2")
"""Clones through the HTTP server or edge that answered."""
DIRECT_PROTOCOLS = ("ssh", "git")
"""Clones that reach the git server's own processes (sshd, git daemon): no HTTP product."""
DIRECT_FASTER = 3.0
"""SSH or git:// clones not held that ran at least this many times the held HTTPS clones'
rate show the git server sends faster than the HTTPS hop lets through (the edge's buffer;
``edge-response-buffering`` asks the same 3x of a direct way in)."""
SEND_BUFFER_PRODUCTS = ("haproxy", "nginx", "apache")
"""Products whose send-buffer setting ``data/edge_limits.toml`` documents."""


def _flight_signals(obs: TransferObservation, rtt: float, tally: Tally) -> float | None:
    """The bytes per RTT against the advertised window; returns the flight when it fits."""
    tcp = obs.tcp
    rate = obs.rate_bytes_per_s or 0.0
    if tcp is None or tcp.advertised_window_max_bytes is None:
        return None
    flight = rate * rtt
    window = tcp.advertised_window_max_bytes
    if flight > FLIGHT_BELOW_WINDOW * window or flight > SMALL_FLIGHT_BYTES:
        return None
    tally.add("flight-below-window", flight_in_window(
        "server's bytes in flight per round trip (rate x RTT)", flight, float(window),
        FLIGHT_BELOW_WINDOW,
        f"{tcp.source} bytes_received, rcv_ssthresh; fetch {obs.protocol} #{obs.repeat}"))
    if tcp.rcv_space_max_bytes is not None and tcp.rcv_space_max_bytes <= 2 * max(flight, 1.0):
        tally.add("rcv-space-small", Evidence(
            what="most the sender delivered in one RTT (rcv_space)",
            value=float(tcp.rcv_space_max_bytes), unit="B", threshold=2 * flight,
            comparison="<=", basis="twice the flight {}",
            basis_terms=(Quantity(value=flight, unit="B"),), source=tcp.source))
    return flight


def _queue_signal(obs: TransferObservation, tally: Tally) -> bool:
    """No queue on the path: the receiver's RTT stays near the minimum."""
    queue = no_queue(obs.tcp, RTT_UNINFLATED) if obs.tcp is not None else None
    if queue is None:
        return False
    tally.add("no-queue", queue)
    return True


def _busy_signal(obs: TransferObservation, tally: Tally) -> bool:
    """The download socket carried data for most of its sampled life (a buffer holds a
    sender that has more to write: its flight stays at the buffer, round trip after round
    trip). A socket idle most of the time had a sender with nothing to send, whose small
    flight is the producer's pace, not a buffer's. True when not known (a short socket)."""
    idle = obs.idle_share
    if idle is None:
        return True
    tally.note(Evidence(
        what="share of the download socket's sampled life it carried no data (1 - bytes "
             "received / (rate x time sampled))", value=idle, unit="ratio",
        threshold=IDLE_SHARE, comparison="<",
        source=f"{obs.tcp.source if obs.tcp else 'TCP_INFO'} bytes_received; "
               f"fetch {obs.protocol} #{obs.repeat}"))
    return idle < IDLE_SHARE


def _sender_signal(obs: TransferObservation, tally: Tally) -> bool | None:
    """The server's own TCP_INFO: True when its send buffer held the bytes in flight for
    most of the transfer, False when something else did, None when the server's sockets
    were not sampled (a remote server)."""
    sender = obs.sender
    if sender is None or sender.samples < 1:
        return None
    if sender.samples < MIN_SENDER_SAMPLES:
        return False if _never_buffer_bound(sender) else None
    share = sender.sndbuf_limited_share
    held_s = max(sender.buffer_full_s, sender.sndbuf_limited_s or 0.0)
    per_rtt = (obs.rate_bytes_per_s or 0.0) * (obs.rtt_s or 0.0)
    buffer = sender.send_buffer_max_bytes
    if share < SNDBUF_SHARE or held_s < MIN_SNDBUF_HELD_S \
            or (buffer and per_rtt < RATE_OF_BUFFER * buffer):
        return False
    source = f"{sender.source}; fetch {obs.protocol} #{obs.repeat}"
    tally.add("sender-sndbuf-limited", Evidence(
        what="share of the bytes the server sent while its send buffer held them back (the "
             "client's window and the congestion window open)", value=share, unit="ratio",
        threshold=SNDBUF_SHARE, comparison=">=",
        source=f"{source}: skmem w/tb, unacked, cwnd, snd_wnd, sndbuf_limited"))
    tally.note(Evidence(
        what="time the server's send buffer was seen holding its bytes in flight",
        value=held_s, unit="s", threshold=MIN_SNDBUF_HELD_S, comparison=">=",
        source=f"{source}: buffer-bound samples, sndbuf_limited"))
    if buffer:
        tally.note(Evidence(
            what="bytes delivered per round trip (rate x RTT) against the send buffer",
            value=per_rtt, unit="B", threshold=RATE_OF_BUFFER * buffer, comparison=">=",
            basis="a third of its largest send buffer {} (skmem tb)",
            basis_terms=(Quantity(value=float(buffer), unit="B"),), source=source))
    if sender.flight_median_bytes is not None and sender.send_buffer_max_bytes:
        tally.note(Evidence(
            what="server's median bytes in flight (unacked x mss)",
            value=float(sender.flight_median_bytes), unit="B",
            threshold=float(sender.send_buffer_max_bytes), comparison="<=",
            basis="its send buffer {} (skmem tb)",
            basis_terms=(Quantity(value=float(sender.send_buffer_max_bytes), unit="B"),),
            source=source))
    return True


def _never_buffer_bound(sender: SenderTcpSummary) -> bool:
    """The server's counters, however few its samples, say its send buffer never held the
    clone (see :data:`NEVER_HELD_S`)."""
    flight, buffer = sender.flight_max_bytes, sender.send_buffer_max_bytes
    return (sender.sndbuf_limited_s is not None and sender.sndbuf_limited_s <= NEVER_HELD_S
            and sender.buffer_full_share == 0.0 and flight is not None and buffer is not None
            and buffer > 0 and flight <= 0.5 * buffer)


def _send_buffer_hit(obs: TransferObservation, holder: SocketHolder) -> Hit | None:
    rtt = obs.rtt_s
    if not obs.measured or (obs.tcp is None and obs.sender is None) or not rtt \
            or rtt < MIN_RTT_S:
        return None
    if _lossy(obs):
        return None  # loss holds the sender's congestion window down: packet-loss's flight
    tally = Tally("server-send-buffer")
    server = _sender_signal(obs, tally)
    captured = captured_at_sender(obs, tally) if server is None else None
    if captured is not None:
        return _captured_hit(obs, rtt, tally) if captured else None
    # Slow start is the congestion window's in the server's own counters, not the buffer's.
    if server is False or (server is None and obs.measured_s < MIN_MEASURED_S):
        return None
    client = _flight_signals(obs, rtt, tally)
    queue = _queue_signal(obs, tally)
    if server is None and (client is None or not queue or not _busy_signal(obs, tally)):
        return None
    flight = client if client is not None else (obs.rate_bytes_per_s or 0.0) * rtt
    if obs.stopped == "stable":
        tally.add("steady", Evidence(what="download rate, steady (four half-second windows within "
                                "10%)", value=obs.rate_bytes_per_s, unit="B/s",
                                source=f"fetch monitor, {obs.protocol} #{obs.repeat}"))
    rate = obs.rate_bytes_per_s or 0.0
    cost = unclamped_cost_s(obs, UNCLAMPED_FLIGHT_BYTES, rtt)
    if holder.proxy is not None:
        tally.note(Evidence(
            what="whose socket sent the clone", text=holder.text.removesuffix(","),
            basis="its local address is the forward proxy's, or the process listening there is "
                  "a proxy (host snapshot)",
            source=f"{obs.sender.source if obs.sender else 'first hop'}; fetch {obs.protocol} "
                   f"#{obs.repeat}"))
    return tally.hit(cost_s=max(0.0, cost), summary=_summary(obs, flight, rate, holder),
                     fix=HOST_FIX, cost_protocol=obs.protocol,
                     cap="cap" if server is None else "cap-with-sender")


def captured_at_sender(obs: TransferObservation, tally: Tally) -> bool | None:
    """A capture taken at the server (its flight's plateau known, :attr:`CaptureMetrics.
    plateau`): True when its bytes in flight held flat at a small level below half the
    client's window for :data:`MIN_PLATEAU_S` or more, with no queue on the path (its own
    data-to-ACK round trips) and the pack's bulk taking most of the time it sent data;
    False when the capture shows otherwise (a flight that grew with slow start, reached the
    window, or was held only now and then; a server that trickled progress for most of the
    clone and sent the pack at its end, as the lab's ``slow-pack-generation``: its SSH
    clone's bulk 2.1 s of 26.3 s, its flight flat at 33 kB, against 0.68-0.85 of the time
    under ``server-sndbuf-clamp``); None without one.
    """
    cap = obs.capture
    plateau = cap.plateau if cap is not None else None
    if cap is None or plateau is None:
        return None
    level, window = plateau.flight_bytes, plateau.window_bytes
    if (level > SMALL_FLIGHT_BYTES or level > FLIGHT_BELOW_WINDOW * window
            or plateau.held_share < PLATEAU_HELD_SHARE or plateau.held_s < MIN_PLATEAU_S
            or plateau.growth > PLATEAU_GROWTH):
        return False
    least, median = cap.min_rtt_s, cap.median_rtt_s
    if not least or median is None or median > RTT_UNINFLATED * least:
        return False
    # The bulk's share of the time the server sent data: a server still producing its
    # pack trickles progress for most of it and sends the pack at the end.
    idle = max(0.0, 1.0 - plateau.span_s / obs.measured_s) if obs.measured_s > 0 else 1.0
    if idle >= IDLE_SHARE:
        return False
    source = f"{cap.source}; fetch {obs.protocol} #{obs.repeat}"
    tally.add("sender-flight-plateau", flight_in_window(
        "server's bytes in flight, the level they held (median of each 100 ms bin's most)",
        level, window, FLIGHT_BELOW_WINDOW, f"{source}: the server's unacknowledged bytes "
        "against the client's advertised window over the bins that held"))
    tally.note(
        Evidence(what="share of the pack's bulk (5-95% of its bytes) the flight held within "
                 "0.5-1.5x that level", value=plateau.held_share, unit="ratio",
                 threshold=PLATEAU_HELD_SHARE, comparison=">=", source=source),
        Evidence(what="the flight's growth over the bulk (median of its last third of bins "
                 "over its first third's)", value=plateau.growth, unit="ratio",
                 threshold=PLATEAU_GROWTH, comparison="<=", source=source),
        Evidence(what="time the flight held at that level", value=plateau.held_s, unit="s",
                 threshold=MIN_PLATEAU_S, comparison=">=", source=source),
        Evidence(what="share of the server's sending time outside the pack's bulk (1 - the "
                 "bulk's time / first to last data byte)", value=idle, unit="ratio",
                 threshold=IDLE_SHARE, comparison="<", source=source))
    tally.add("no-queue", Evidence(
        what="server's median data-to-ACK RTT (no queue on the path)", value=median, unit="s",
        threshold=RTT_UNINFLATED * least, comparison="<=",
        basis=f"{RTT_UNINFLATED:g} x the minimum RTT {{}}",
        basis_terms=(Quantity(value=least, unit="s"),), source=f"{source}: RTT samples"))
    return True


def _captured_hit(obs: TransferObservation, rtt: float, tally: Tally) -> Hit:
    """A capture at the server that shows its flight held flat below the client's window:
    the bytes per round trip against that window beside it, priced as the client's rule."""
    _flight_signals(obs, rtt, tally)
    cost = unclamped_cost_s(obs, UNCLAMPED_FLIGHT_BYTES, rtt)
    # The fix is the hop's, set by server_send_buffer for every hit.
    return tally.hit(cost_s=max(0.0, cost), summary=captured_summary(obs),
                     fix="", cost_protocol=obs.protocol, cap="cap-capture")


def captured_summary(obs: TransferObservation) -> str:
    """What a capture at the server shows, and what it cannot."""
    plateau = obs.capture.plateau if obs.capture is not None else None
    if plateau is None:
        return "the server's capture shows no plateau of its bytes in flight"
    return (f"the server's capture shows its bytes in flight flat at "
            f"{fmt_bytes(plateau.flight_bytes)} for {fmt_s(plateau.held_s)} while the client "
            f"advertised {fmt_bytes(plateau.window_bytes)}, with no queue on the path: its "
            f"send buffer holds the download to {fmt_rate(obs.rate_bytes_per_s)}. Not in a "
            "capture: the buffer's size and the setting behind it (the server's "
            "net.ipv4.tcp_wmem, an SO_SNDBUF, an edge's sndbuf); a server program that "
            "writes no faster than that (its own flow-control window, a pace) would look "
            "the same")


def _summary(obs: TransferObservation, flight: float, rate: float, holder: SocketHolder) -> str:
    """What held the clone, said of whose socket it was (:func:`~gitnetdiag.diagnosis.proxies.
    socket_holder`: a forward proxy's when the sampled socket is the proxy's)."""
    if obs.sender is not None and obs.sender.sndbuf_limited_share >= SNDBUF_SHARE:
        return (f"{holder.text} was held by its send buffer for "
                f"{100 * obs.sender.sndbuf_limited_share:.0f}% of the bytes it sent, the "
                f"client's window and its congestion window open: the buffer holds the "
                f"download to {rate:.0f} B/s")
    sender = f"the forward proxy {holder.proxy.proxy}" if holder.proxy else "the server"
    return (f"{sender} kept only {flight:.0f} B in flight per round trip although the "
            f"client's window allowed more, with no queue on the path: its send buffer "
            f"holds the download to {rate:.0f} B/s")


OTHER_VERSION_MORE = 1.5
"""HTTP/1.1 through the same HTTPS port carried at least this many times an HTTP/2 clone's
bytes per round trip: the hop's send buffer let its socket have more in flight."""


def _http2_held_by_its_window(obs: Observations, t: TransferObservation) -> bool:
    """An HTTP/2 clone whose flat flight HTTP/1.1 from the same HTTPS port exceeded by
    :data:`OTHER_VERSION_MORE`: the same hop's send buffer did not hold it; HTTP/2's own flow
    control did (``client-http2-window``). A loaded fresh-clone run: HTTP/2 61.6 kB per round
    trip (libcurl's 65535 B window) beside HTTP/1.1 at 2.83 MB/s, 141 kB, and this culprit
    outranked the window's on the HTTP/2 clone alone."""
    if t.protocol != "h2" or not t.rtt_s:
        return False
    h1 = max(((o.rate_bytes_per_s or 0.0) * (o.rtt_s or 0.0) for o in obs.transfers
              if o.protocol == "h1" and o.measured), default=0.0)
    return h1 >= OTHER_VERSION_MORE * (t.rate_bytes_per_s or 0.0) * t.rtt_s > 0


def server_send_buffer(obs: Observations) -> Hit | None:
    """A download: the server's (or edge's) send buffer caps its bytes in flight below the
    client's window; the fix names the hop whose sockets the held clones came from
    (:func:`send_buffer_fix`). An HTTP/2 clone HTTP/1.1 outran is its window's
    (:func:`_http2_held_by_its_window`)."""
    hits = {id(t): hit for t in obs.transfers if not _http2_held_by_its_window(obs, t)
            and (hit := _send_buffer_hit(t, _holder(obs, t))) is not None}
    chosen = typical_costliest(obs.transfers, lambda t: hits.get(id(t)))
    if chosen is None:
        return None
    held = {t.protocol for t in obs.transfers if id(t) in hits}
    return replace(chosen, fix=send_buffer_fix(obs, held))


def _holder(run: Observations, t: TransferObservation) -> SocketHolder:
    """Whose socket sent the clone: the sampled server-side socket's holder, else (the
    client's view alone) the forward proxy the clone's protocol went through, if any."""
    if t.sender is not None:
        return socket_holder(run, t.sender.local)
    hop = next((h for h in path_hops(run.run.first_hops)
                if h.protocol == t.protocol and h.kind == "http-proxy"), None)
    return SocketHolder(proxy=hop)


def send_buffer_knob(product: str) -> str | None:
    """``product``'s send-buffer setting with its page (``data/edge_limits.toml``)."""
    return setting_text(product, "send_buffer")


def send_buffer_fix(obs: Observations, held: set[str]) -> str:
    """The fix in the terms of the hop that sent the held clones. HTTPS clones held while
    SSH and git:// were not (or were not measured): the sockets of the product that answered
    over HTTPS (:func:`~gitnetdiag.diagnosis.servers.answering_fix`), the host's limit
    after it. SSH or git:// held too: those reach the git server's own processes, which have
    no setting of their own: the git server's ``tcp_wmem`` first, the HTTPS hop's after."""
    edge = answering_fix(sending_hop(obs), send_buffer_knob, SEND_BUFFER_PRODUCTS)
    held = held - _much_faster(obs, held)
    https = [p for p in HTTPS_PROTOCOLS if p in held]
    direct = [p for p in DIRECT_PROTOCOLS if p in held]
    if https and not direct:
        return (f"Raise the send buffer of the HTTPS hop the clones came through"
                f"{_direct_clause(obs, held, https)}: {edge}. On that hop's host, and the git "
                f"server's: {HOST_FIX}.")
    which = " and ".join(label(p) for p in direct)
    lead = (f"Raise the git server's send buffer ({which} clones reach its own processes, "
            f"which set none of their own): {HOST_FIX}")
    if https:
        both = " and ".join(label(p) for p in https)
        lead += f". Through the HTTPS hop ({both} held too): {edge}"
    return lead + "."


def _best_rate(obs: Observations, protocol: str) -> float:
    return max((t.rate_bytes_per_s or 0.0 for t in obs.transfers
                if t.protocol == protocol and t.measured), default=0.0)


def _much_faster(obs: Observations, held: set[str]) -> set[str]:
    """The SSH and git:// protocols among ``held`` whose clones ran at least
    :data:`DIRECT_FASTER` times the slowest held HTTPS clone: a send buffer that holds the
    HTTPS clones to that rate on the same path does not hold these (their own flat flight is
    another limit: slow start on a short clone, 2026-12-03 under load: SSH 4.3 MB/s with its
    socket never buffer-bound beside HTTPS clones at 1.1-1.2 MB/s held at the edge's)."""
    https = [rate for p in HTTPS_PROTOCOLS if p in held and (rate := _best_rate(obs, p))]
    if not https:
        return set()
    return {p for p in DIRECT_PROTOCOLS
            if p in held and _best_rate(obs, p) >= DIRECT_FASTER * min(https)}


def _direct_clause(obs: Observations, held: set[str], https: list[str]) -> str:
    """What the SSH and git:// clones that were not held say of the hop: ran at least
    :data:`DIRECT_FASTER` times the held HTTPS clones' rate from the same server, the buffer
    is the HTTPS hop's; not that much faster, the git server's own may hold them too (the
    lab's ``server-sndbuf-clamp`` clamps every way in, and SSH's clone at 1.5 MB/s against
    HTTP/1.1's 0.86 MB/s was not always seen held)."""
    slow = max((_best_rate(obs, p) for p in https), default=0.0)
    rates = {p: max(r) for p in DIRECT_PROTOCOLS if p not in held and (r := [
        t.rate_bytes_per_s or 0.0 for t in obs.transfers if t.protocol == p and t.measured])}
    if not rates or not slow:
        return ""
    free = [p for p, r in rates.items() if r >= DIRECT_FASTER * slow]
    if free:
        ratio = min(rates[p] for p in free) / slow
        return (f" ({' and '.join(label(p) for p in free)} clones from the same server were "
                f"not held and ran {ratio:.1f}x faster: the buffer is the HTTPS hop's)")
    ratio = max(rates.values()) / slow
    return (f" ({' and '.join(label(p) for p in rates)} clones were not seen held but ran at "
            f"most {ratio:.1f}x faster: the git server's own buffer may hold them too)")


def _lossy(obs: TransferObservation) -> bool:
    """The clone met loss as ``packet-loss`` counts it: the server's retransmissions in its
    capture, else the data segments the client received out of order (TCP_INFO)."""
    if obs.capture is not None and obs.capture.retransmission_rate is not None:
        return obs.capture.retransmission_rate >= LOSS_RATE
    share = obs.tcp.out_of_order_share if obs.tcp is not None else None
    return (share or 0.0) >= OUT_OF_ORDER_SHARE
