"""``edge-response-buffering``: the HTTPS edge buffers the clone's pack to a slow disk.

nginx buffers responses by default (``proxy_buffering on``): it reads the git
server's response as fast as it comes into ``proxy_buffers`` (eight memory
pages) and, once the client takes it slower than the server sends, writes the
rest to temporary files under ``proxy_temp_path`` and serves the client from
them. Measured in the lab (6 MiB of random data, 50 ms RTT, nginx 1.22):

- buffering on, temporary files on an ordinary disk: 1.03 s per clone through
  the edge, as fast as with ``proxy_buffering off`` (1.05 s) and SSH (1.6 s):
  buffering alone costs a clone nothing;
- the same edge with its temporary files on a device that writes at 30 IOPS
  (every write reaching it before ``write`` returns, as on a host whose page
  cache cannot absorb them): 12-31 s per clone through the edge, SSH 1.6 s.
  The first pack byte is *not* later through the edge (0.78 s against 0.77 s
  over git://): the first buffers leave from memory; the rest arrives in bursts
  (up to 263 KB in one round trip at an average of 12 KB per round trip).

The gaps are the edge's worker blocked writing temporary files. In the fetch fault
matrix's four runs the longest gap without a byte per HTTPS clone was 3.0 to 5.5 s at
20 ms RTT; at 80 ms 8.0 and 14.4 s, and two of the four HTTPS clones went past the 15 s
stall timeout (after 1,239,900 and 1,906,542 B), as the HTTP/1.1 clone of a fresh-clone
``make test`` did (after 1,090,737 B).
A clone through the edge that stalls after it moved pack data is this fault at its worst,
not another failure: it counts at its average rate over its wall time.

So the client sees what a user can check: the clone through the HTTPS edge is
several times slower than over SSH or git:// from the same server, with the
client's window open and no queue on the path (neither the client nor the
path binds), and the data arrives in bursts (``rcv_space``, the most the
sender delivered in one round trip, far above the average per round trip),
which a send-buffer clamp (a steady flight at the buffer) does not show. The
server's own pack generation is not it: the clone is priced on its time after
the first pack byte (the transfer), and a wait before that byte is left to
``server-pack-generation``, which ranks beside this culprit, never acquits it.

nginx's defaults and the fix's settings come from
``gitnetdiag/data/nginx_response_buffering.toml`` with their pages.
"""

from __future__ import annotations

import statistics
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources

from gitnetdiag.diagnosis.culprits._common import (
    Hit,
    Tally,
    config_evidence,
    flight_in_window,
    no_queue,
    typical_max,
)
from gitnetdiag.diagnosis.culprits.weights import weight
from gitnetdiag.diagnosis.model import Evidence, Finding, Quantity
from gitnetdiag.diagnosis.observations import ConfigFinding, Observations
from gitnetdiag.diagnosis.servers import answering_fix, sending_hop
from gitnetdiag.diagnosis.transfers import TransferObservation
from gitnetdiag.diagnosis.units import fmt_rate
from gitnetdiag.errors import UsageError

DATA_FILE = "nginx_response_buffering.toml"
EDGE_PROTOCOLS = ("h1", "h2")
"""The HTTPS ways in, through the edge when there is one."""
DIRECT_PROTOCOLS = ("ssh", "git")
"""Ways in that reach the git server without the HTTPS edge."""
SLOWER_SHARE = 1 / 3
"""The fastest HTTPS clone at most this share of the fastest direct clone's rate: the edge
costs more than TLS and HTTP framing could (the lab's healthy edges are within 10% of SSH)."""
MIN_MEASURED_S = 2.0
"""An HTTPS rate measured over less than this is mostly slow start."""
BURST_FACTOR = 8.0
"""The most delivered in one round trip (``rcv_space``) at least this many times the average
per round trip: the data came in bursts after gaps (the lab's fault: 15x to 65x over four
clones; a steady sender delivers a few times its average: 1.6x to 3.8x on the HTTPS clones
of ``server-sndbuf-clamp``, whose git:// ran 3.4x faster than HTTPS)."""
GAP_RTTS = 10
"""A gap without a byte of at least this many round trips mid-pack is a burst's other side:
a sender paced by a window or a send buffer delivers every round trip."""
GAP_MIN_S = 0.5
"""...and at least this long: two samples of the socket (every 0.25-0.3 s) read the same bytes
received across it. A fresh-clone CI run's HTTP/1.1 clone through the lab's edge (748 kB/s
against 8.6 MB/s over git://) had gaps of 1.3 s and 0.9 s with no byte, its largest
``rcv_space`` 289,600 B just under 8 x its 37,557 B average per round trip (2026-12-04)."""
WINDOW_OPEN_SHARE = 0.5
"""Bytes per round trip at most this share of the client's advertised window: it did not bind."""
RTT_UNINFLATED = 1.5
"""A median receiver RTT within this factor of the minimum: no queue on the path."""
CULPRIT_ID = "edge-response-buffering"
STALLED_MIN_BYTES = 256 * 1024
"""A stalled clone through the edge that moved at least this much had its pack flowing (the
preamble is a few kB): its average rate over its wall time counts."""


@dataclass(frozen=True, kw_only=True)
class NginxFacts:
    """nginx's response-buffering defaults and the fix, from the data file."""

    defaults: dict[str, str]
    """Directive -> default value."""
    sources: dict[str, str]
    """Directive -> documentation page."""
    fix_setting: str
    """What the fix sets (``proxy_buffering off``)."""
    fix_where: str
    """Where it goes."""
    fix_alternative: str
    """The other ways out."""
    fix_source: str
    """The page the fix cites."""
    aio_source: str
    """The page of nginx's ``aio_write``."""


@cache
def nginx_facts() -> NginxFacts:
    """The data file, validated; a missing field is one clear line."""
    text = resources.files("gitnetdiag.data").joinpath(DATA_FILE).read_text()
    data = tomllib.loads(text)
    try:
        settings = data["setting"]
        fix = data["fix"]
        return NginxFacts(
            defaults={str(s["name"]): str(s["default"]) for s in settings},
            sources={str(s["name"]): str(s["source"]) for s in settings},
            fix_setting=str(fix["setting"]), fix_where=str(fix["where"]),
            fix_alternative=str(fix["alternative"]), fix_source=str(fix["source"]),
            aio_source=str(fix["aio_source"]))
    except (KeyError, TypeError) as exc:
        raise UsageError(f"{DATA_FILE}: missing field {exc}",
                         hint="every [[setting]] needs name, default, fact and source") from exc


def _stalled_with_pack(obs: TransferObservation) -> bool:
    return obs.outcome == "stalled" and obs.moved_bytes >= STALLED_MIN_BYTES and obs.wall_s > 0


def _rate(obs: TransferObservation) -> float:
    """A measured clone's rate; a stalled one's average over its wall time, gaps included."""
    if _stalled_with_pack(obs):
        return obs.moved_bytes / obs.wall_s
    return obs.rate_bytes_per_s or 0.0


def _time_s(obs: TransferObservation) -> float:
    return obs.wall_s if _stalled_with_pack(obs) else obs.measured_s


def fastest(observations: Sequence[TransferObservation], protocols: tuple[str, ...], *,
             stalled: bool = False) -> TransferObservation | None:
    """The fastest measured clone of ``protocols`` (``stalled``: or stalled with its pack
    flowing, at its average rate)."""
    seen = [o for o in observations if o.protocol in protocols
            and (o.measured or (stalled and _stalled_with_pack(o)))]
    return max(seen, key=_rate) if seen else None


def _bursts(obs: TransferObservation, rtt: float) -> Evidence | None:
    """The data came in bursts after gaps: the most delivered in one round trip far above
    the average per round trip, or a gap without a byte of many round trips mid-pack (what a
    sender paced by a buffer or a window does not do)."""
    tcp = obs.tcp
    flight = _rate(obs) * rtt
    if tcp is None or flight <= 0:
        return None
    if tcp.rcv_space_max_bytes is None or tcp.rcv_space_max_bytes < BURST_FACTOR * flight:
        return _gap(obs, rtt)
    return Evidence(
        what="most the edge delivered in one round trip (rcv_space)",
        value=float(tcp.rcv_space_max_bytes), unit="B", threshold=BURST_FACTOR * flight,
        comparison=">=", basis="8 x the average per round trip {}",
        basis_terms=(Quantity(value=flight, unit="B"),),
        source=f"{tcp.source} rcv_space; fetch {obs.protocol} #{obs.repeat}")


def _gap(obs: TransferObservation, rtt: float) -> Evidence | None:
    """A gap without a byte mid-pack of :data:`GAP_MIN_S` and :data:`GAP_RTTS` round trips
    at least (the socket's samples read the same bytes received across it)."""
    tcp = obs.tcp
    threshold = max(GAP_MIN_S, GAP_RTTS * rtt)
    if tcp is None or tcp.longest_gap_s is None or tcp.longest_gap_s < threshold:
        return None
    return Evidence(
        what="longest time without a byte mid-pack through the edge", value=tcp.longest_gap_s,
        unit="s", threshold=threshold, comparison=">=",
        basis="the larger of {} and {} round trips",
        basis_terms=(Quantity(value=GAP_MIN_S, unit="s"), Quantity(value=GAP_RTTS, unit="count")),
        source=f"{tcp.source} bytes_received; fetch {obs.protocol} #{obs.repeat}")


def _path_signals(obs: TransferObservation, rtt: float, tally: Tally) -> None:
    """The client's window open, no queue on the path."""
    tcp = obs.tcp
    if tcp is None:
        return
    flight = _rate(obs) * rtt
    window = tcp.advertised_window_max_bytes
    if window and flight <= WINDOW_OPEN_SHARE * window:
        tally.add("window-open", flight_in_window(
            "bytes per round trip through the edge (rate x RTT)", flight, float(window),
            WINDOW_OPEN_SHARE, f"{tcp.source} rcv_ssthresh; fetch {obs.protocol} #{obs.repeat}"))
    if (queue := no_queue(tcp, RTT_UNINFLATED)) is not None:
        tally.add("no-queue", queue)


def _slow_edge_clone(obs: TransferObservation, direct_rate: float) -> bool:
    """A clone through the edge measured long enough (or stalled after its pack began to
    flow), far slower than direct, its data in bursts. Its wait for the first pack byte
    acquits nothing: a wait every way in shared is the server's (``server-pack-generation``
    prices it beside this), and one the direct clones did not have came on the edge's path
    too (a fresh-clone fault-matrix run: 5.77 s to the first pack byte through the
    buffering edge, the direct clones quick; server-pack-generation ranked first while that
    wait acquitted the edge). Its cost is its time in the transfer (:func:`_lost_s`), the
    wait left out."""
    rate = _rate(obs)
    long_enough = obs.measured and obs.measured_s >= MIN_MEASURED_S
    if not (long_enough or _stalled_with_pack(obs)) or rate > SLOWER_SHARE * direct_rate:
        return False
    return bool(obs.rtt_s) and _bursts(obs, obs.rtt_s or 0.0) is not None


def _lost_s(obs: TransferObservation, slow: Sequence[TransferObservation],
            direct_rate: float) -> float:
    """What the edge cost one clone: its time less its bytes at the direct rate. A stalled
    clone failed: its wait plus a redo, the median completed slow clone of its protocol (as
    every failure is counted, and ``compare`` counts it), less the whole pack at the direct
    rate; its time alone when no clone of its protocol completed."""
    redo = [o for o in slow if o.protocol == obs.protocol and not _stalled_with_pack(o)]
    if not _stalled_with_pack(obs) or not redo:
        return _time_s(obs) - obs.moved_bytes / direct_rate
    whole = statistics.median(o.moved_bytes for o in redo)
    return obs.wall_s + statistics.median(_time_s(o) for o in redo) - whole / direct_rate


def edge_response_buffering(run: Observations) -> Hit | None:
    """A download: clones through the HTTPS edge several times slower than direct ones with
    the data in bursts (required), window open, no queue: the edge buffers the pack (nginx
    ``proxy_buffering``)."""
    observations = run.transfers
    fastest_edge = fastest(observations, EDGE_PROTOCOLS, stalled=True)
    direct = fastest(observations, DIRECT_PROTOCOLS)
    if fastest_edge is None or direct is None or not direct.rate_bytes_per_s:
        return None
    direct_rate = direct.rate_bytes_per_s
    if _rate(fastest_edge) > SLOWER_SHARE * direct_rate:
        return None
    slow = [o for o in observations
            if o.protocol in EDGE_PROTOCOLS and _slow_edge_clone(o, direct_rate)]
    if not slow:
        return None
    # Priced on the typical slow clone of the costliest protocol, not the slowest repeat.
    lost = {id(o): _lost_s(o, slow, direct_rate) for o in slow}
    worst = typical_max(slow, lambda o: o.protocol, lambda o: lost[id(o)]) or slow[0]
    rate = _rate(worst)
    tally = Tally(CULPRIT_ID)
    tally.add("slower-than-direct", Evidence(
        what=f"download rate through the HTTPS edge (fetch {worst.protocol})", value=rate,
        unit="B/s", threshold=SLOWER_SHARE * direct_rate, comparison="<=",
        basis="a third of the {} clone's rate {}",
        basis_terms=(Quantity(value=float(direct.moved_bytes), unit="B"),
                     Quantity(value=direct_rate, unit="B/s")),
        source=f"fetch monitor, {worst.protocol} #{worst.repeat} and {direct.protocol} "
               f"#{direct.repeat}"))
    if {o.protocol for o in slow} == set(EDGE_PROTOCOLS):
        tally.add("every-https", Evidence(what="HTTPS versions slow through the edge",
                                          value=2.0, unit="count", source="fetch monitor"))
    rtt = worst.rtt_s or 0.0
    tally.add("bursts", *(e for e in (_bursts(worst, rtt),) if e is not None))
    _path_signals(worst, rtt, tally)
    tally.note(*(Evidence(
        what=f"bytes the clone through the edge moved before it stalled (fetch {o.protocol})",
        value=float(o.moved_bytes), unit="B", threshold=float(STALLED_MIN_BYTES),
        comparison=">=", basis="its pack flowing", source=f"fetch monitor, {o.protocol} "
        f"#{o.repeat}: nothing more for the stall timeout")
        for o in slow if _stalled_with_pack(o)))
    cost = max(0.0, lost[id(worst)])
    return tally.hit(
        cost_s=cost, cap="cap",
        summary=(f"clones through the HTTPS edge ran at {fmt_rate(rate)} against "
                 f"{fmt_rate(direct_rate)} over {direct.protocol} from the same server, with the "
                 "client's window open and the data in bursts after gaps: as an edge does that "
                 "buffers the pack to a slow disk (nginx proxy_buffering, its temporary files)"),
        fix=response_buffering_fix(run),
        cost_protocol=worst.protocol,
        compares=(worst.protocol, direct.protocol),
    )


RESPONSE_BUFFERING_PRODUCTS = ("nginx",)
"""Products whose buffering of a response to temporary files the data documents
(``data/nginx_response_buffering.toml``)."""


def response_buffering_knob(product: str) -> str | None:
    """The setting that streams a clone's pack through ``product`` instead of spilling it to
    disk, with its pages; None where the data documents none."""
    if product != "nginx":
        return None
    facts = nginx_facts()
    return (f"nginx: set '{facts.fix_setting};' {facts.fix_where} (nginx's default is "
            f"proxy_buffering {facts.defaults.get('proxy_buffering', 'on')}: it spills what "
            "the client has not taken to temporary files, up to proxy_max_temp_file_size "
            f"{facts.defaults.get('proxy_max_temp_file_size', '1024m')}; {facts.fix_source}); "
            f"or {facts.fix_alternative} ({facts.aio_source})")


def response_buffering_fix(run: Observations) -> str:
    """Stream the pack: on the product that answered over HTTPS first
    (:func:`~gitnetdiag.diagnosis.servers.answering_fix`), the others after it."""
    return ("Stream the clone's pack through the HTTPS edge instead of buffering it to disk: "
            + answering_fix(sending_hop(run), response_buffering_knob,
                            RESPONSE_BUFFERING_PRODUCTS) + ".")


def with_edge_config(findings: tuple[Finding, ...],
                     configs: Sequence[ConfigFinding]) -> tuple[Finding, ...]:
    """The edge's own config (``host.json``'s lint, ``--host-report`` or the lab's server)
    backs a fired ``edge-response-buffering``: nginx's ``proxy_buffering`` on, explicit or by
    default, is added to its evidence and score; the findings re-ranked. The config alone
    fires nothing (buffering costs a clone nothing on a fast disk)."""
    lines = [c for c in configs if c.setting == "proxy_buffering"
             and c.value.strip().lower() != "off"]
    if not lines or not any(f.id == CULPRIT_ID for f in findings):
        return findings
    backed = tuple(
        replace(f, score=round(min(weight(CULPRIT_ID, "cap-configured"),
                                   f.score + weight(CULPRIT_ID, "configured")), 3),
                evidence=(*f.evidence, *config_evidence(lines)))
        if f.id == CULPRIT_ID else f for f in findings)
    return tuple(sorted(backed, key=lambda f: f.cost_s * f.score, reverse=True))
