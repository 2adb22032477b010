"""Culprits of the download direction on the client: its CPU and its HTTP stack's window.

- ``client-index-pack-cpu``: after the pack arrives, git's ``index-pack``
  inflates every object, resolves each delta against its base and hashes the
  result (trace2's ``Resolving deltas`` and ``Checking objects`` regions). On a
  starved client (a CI runner under load, a CPU quota) or for a delta-heavy
  history that work, not the network, is the clone's time. The same seconds on
  every protocol say it is the client's work, not a transport's.
- ``client-http2-window``: over HTTP/2 the client's stream window bounds the
  server's DATA at ``window / RTT``; libcurl's window changed from release to
  release (``gitnetdiag/data/libcurl_h2_windows.toml``). It fires when the
  HTTP/2 clone ran slower than the HTTP/1.1 clone of the same repository at
  the same time, with about one small window per round trip: the window git's
  own decrypted frames show (``--full``), else the one its release is
  documented to advertise when that release is listed as small or slow, else
  HTTP/2's default 65,535 B when the rate per round trip sits at it (a build
  or a preloaded library can advertise less than its release's documented
  window; the evidence then gives both).
"""

from __future__ import annotations

from collections.abc import Sequence

from gitnetdiag.analysis.flowcontrol import HTTP2_DEFAULT_WINDOW_BYTES
from gitnetdiag.diagnosis.culprits._common import Hit, Tally
from gitnetdiag.diagnosis.culprits.fetchobs import FetchObservation
from gitnetdiag.diagnosis.culprits.libcurlwin import LibcurlWindow, window_for
from gitnetdiag.diagnosis.culprits.weights import weight
from gitnetdiag.diagnosis.model import Evidence, Quantity

INDEX_PACK_MIN_S = 1.0
"""index-pack seconds that count as the client's work, not noise."""
INDEX_PACK_SHARE = 0.3
"""index-pack at least this share of the whole clone."""
SAME_WORK_SPREAD = 2.0
"""index-pack on every protocol within this factor: the client's work, not a transport's."""

INDEX_PACK_FIX = (
    "give the client CPU for index-pack: run the clone where cores are free (a CI runner "
    "without a CPU quota, or a larger one), let index-pack use every core (git config "
    "pack.threads 0, the default, or index-pack.threads), and ask for less work: "
    "'git clone --filter=blob:none' or a shallow clone (--depth 1); on the server, "
    "'git repack -adf --depth=50' keeps delta chains short")


def _index_pack_hit(obs: FetchObservation, peers: Sequence[float]) -> Hit | None:
    phases = obs.phases
    index_s = phases.index_pack_s
    # The clone up to the end of index-pack: checkout is a phase of its own (a bare clone, a
    # fetch into an existing repository have none), and the client's too.
    total = (phases.total_s or 0.0) - (phases.checkout_s or 0.0)
    if index_s is None or total <= 0 or index_s < INDEX_PACK_MIN_S:
        return None
    if index_s < INDEX_PACK_SHARE * total:
        return None
    tally = Tally("client-index-pack-cpu")
    tally.add_part("share-above-threshold", (index_s / total - INDEX_PACK_SHARE) / 0.3)
    tally.add("index-pack-share", Evidence(
        what="index-pack resolving deltas and checking objects", value=index_s, unit="s",
        threshold=INDEX_PACK_SHARE * total, comparison=">=",
        basis="30% of the clone's {} before checkout",
        basis_terms=(Quantity(value=total, unit="s"),),
        source=f"trace2 progress regions, fetch {obs.protocol} #{obs.repeat}"))
    if phases.received_bytes:
        tally.note(Evidence(what="pack bytes index-pack received", unit="B",
                                value=float(phases.received_bytes), source="trace2 total_bytes"))
    others = [s for s in peers if s > 0]
    if len(others) >= 2 and max(others) <= SAME_WORK_SPREAD * min(others):
        tally.add("same-on-every-transport", Evidence(
            what="index-pack on the fastest protocol (the same work on every transport)",
            value=min(others), unit="s", of=max(others),
            source=f"trace2, {len(others)} clones"))
    if phases.checkout_s is not None:
        tally.note(Evidence(what="checkout (unpack_trees)", value=phases.checkout_s,
                                unit="s", source="trace2"))
    return Hit(
        score=round(min(weight("client-index-pack-cpu", "cap"), tally.score), 2),
        cost_s=index_s,
        summary=(f"the client's index-pack took {index_s:.1f} s of the clone's {total:.1f} s "
                 "before checkout, resolving deltas: the client's CPU, not the network, set "
                 "the clone's time"),
        evidence=tuple(tally.evidence), fix=INDEX_PACK_FIX, cost_protocol=obs.protocol)


def client_index_pack_cpu(observations: Sequence[FetchObservation]) -> Hit | None:
    """The client's index-pack (resolving deltas) dominates the clone."""
    peers = [obs.phases.index_pack_s for obs in observations
             if obs.phases.index_pack_s is not None]
    best: Hit | None = None
    for obs in observations:
        hit = _index_pack_hit(obs, peers)
        if hit is not None and (best is None or hit.cost_s > best.cost_s):
            best = hit
    return best


H2_SLOWER = 0.67
"""The HTTP/2 clone at most this share of the HTTP/1.1 clone's rate."""
NEAR_WINDOW = 1.5
"""Bytes per RTT within this factor of the window: the window binds."""
DEFAULT_WINDOW_LOW = 0.3
"""Without the client's frames or a listed release: bytes per RTT from this share of
HTTP/2's default window up (nghttp2 grants more once half the window is read, so a client
that keeps the default moves about 0.5-1 window per round trip) count as that window."""

H2_WINDOW_FIX = (
    "upgrade libcurl (and the git built on it) to a release with a large HTTP/2 download "
    "window (7.52.0 to 8.0.1, or 8.1.1 and later: 10 MB); a client that still advertises "
    "a small window (a build or a preloaded library that changes it) needs that fixed; until "
    "then let git use HTTP/1.1 to this server: git config http.version HTTP/1.1")


def _fastest(observations: Sequence[FetchObservation], protocol: str) -> FetchObservation | None:
    measured = [o for o in observations if o.protocol == protocol and o.measured]
    return max(measured, key=lambda o: o.rate_bytes_per_s or 0.0) if measured else None


def _window_evidence(tally: Tally, h2: FetchObservation, h1_flight: float,
                     entry: LibcurlWindow | None) -> int | None:
    """The window that held HTTP/2, with its evidence; None when none did.

    git's own frames (``--full``) win over the release's documented window; without them a
    listed release's window, else HTTP/2's default when the bytes per RTT sit at it."""
    rtt = h2.rtt_s or 0.0
    flight = (h2.rate_bytes_per_s or 0.0) * rtt
    seen = h2.git_h2_window
    listed = entry is not None and entry.slow_downloads
    documented = entry.steady_window if entry is not None else None
    if seen is not None:
        window = min(seen.stream_window_bytes, seen.connection_window_bytes)
        source = f"--full: git's SETTINGS and WINDOW_UPDATE frames, from frame {seen.first_frame}"
        if window >= h1_flight or flight > NEAR_WINDOW * window:
            return None  # the window git advertised did not hold it
        tally.add("advertised-small-window", Evidence(
            what="HTTP/2 window git advertised (stream and connection, the smaller)",
            value=float(window), unit="B", threshold=h1_flight, comparison="<",
            basis="the HTTP/1.1 clone's bytes per round trip {}",
            basis_terms=(Quantity(value=h1_flight, unit="B"),), source=source))
    elif listed and documented is not None:
        window = documented
    elif listed:
        return 0  # a release known to be slow, its window not documented
    else:
        window = HTTP2_DEFAULT_WINDOW_BYTES
        if not DEFAULT_WINDOW_LOW * window <= flight <= NEAR_WINDOW * window:
            return None
        tally.add("rate-at-default-window", Evidence(
            what="HTTP/2 bytes per round trip (rate x RTT)", value=flight, unit="B",
            threshold=NEAR_WINDOW * window, comparison="<=",
            basis="1.5 x HTTP/2's default window {}, what a client that does not raise it "
                  "advertises", basis_terms=(Quantity(value=float(window), unit="B"),),
            source="fetch monitor x path RTT; RFC 9113 section 6.9.2"))
        if documented is not None and entry is not None:
            tally.note(Evidence(
                what=f"HTTP/2 window libcurl {h2.libcurl} is documented to advertise (the "
                     "rate says the window this client advertised was smaller)",
                value=float(documented), unit="B", source=entry.source))
        return window
    if flight > NEAR_WINDOW * window:
        return None
    tally.add("rate-at-window", Evidence(
        what="HTTP/2 bytes per round trip (rate x RTT)", value=flight, unit="B",
        threshold=NEAR_WINDOW * window, comparison="<=",
        basis=("1.5 x the window git advertised {}" if seen is not None
               else "1.5 x the stream window its libcurl release advertises {}"),
        basis_terms=(Quantity(value=float(window), unit="B"),),
        source="fetch monitor x path RTT" + (f"; {entry.source}" if seen is None and entry
                                             else "")))
    if seen is not None and entry is not None and documented not in (None, window):
        tally.note(Evidence(
            what=f"HTTP/2 window libcurl {h2.libcurl} is documented to advertise (git's frames "
                 "show another)", value=float(documented or 0), unit="B", source=entry.source))
    return window


def client_http2_window(observations: Sequence[FetchObservation]) -> Hit | None:
    """The client advertises a small HTTP/2 download window: its libcurl release's, the one its
    decrypted frames show (``--full``), or the one its HTTP/2 rate gives away."""
    h2, h1 = _fastest(observations, "h2"), _fastest(observations, "h1")
    if h2 is None or h1 is None or not h2.rtt_s:
        return None
    entry = window_for(h2.libcurl)
    h2_rate, h1_rate = h2.rate_bytes_per_s or 0.0, h1.rate_bytes_per_s or 0.0
    if h2_rate > H2_SLOWER * h1_rate:
        return None
    tally = Tally("client-http2-window")
    if entry is not None and entry.slow_downloads:
        tally.add("listed-release", Evidence(
            what="client's libcurl", text=str(h2.libcurl),
            source=f"git version --build-options / curl-config; {entry.source}"))
    tally.add("slower-than-h1", Evidence(
        what="HTTP/2 clone's rate", value=h2_rate, unit="B/s", threshold=H2_SLOWER * h1_rate,
        comparison="<=", basis="two thirds of the HTTP/1.1 clone's {}",
        basis_terms=(Quantity(value=h1_rate, unit="B/s"),), source="fetch monitor, h1 and h2"))
    window = _window_evidence(tally, h2, h1_rate * h2.rtt_s, entry)
    if window is None:
        return None
    cost = h2.measured_s - h2.moved_bytes / h1_rate if h1_rate > h2_rate else 0.0
    return Hit(
        score=round(min(weight("client-http2-window", "cap"), tally.score), 2),
        cost_s=max(0.0, cost), summary=_summary(h2, h1_rate, window, entry),
        evidence=tuple(tally.evidence), fix=H2_WINDOW_FIX, cost_protocol="h2")


def _summary(h2: FetchObservation, h1_rate: float, window: int,
             entry: LibcurlWindow | None) -> str:
    rates = (f"the HTTP/2 clone ran at {h2.rate_bytes_per_s or 0.0:.0f} B/s against "
             f"{h1_rate:.0f} B/s over HTTP/1.1")
    documented = entry.steady_window if entry is not None else None
    release = (f"; libcurl {h2.libcurl} is documented to advertise {documented} B"
               if documented is not None and documented != window else "")
    if h2.git_h2_window is not None:
        return (f"git advertised a {window} B HTTP/2 window for its download (its decrypted "
                f"frames{release}): {rates}")
    if entry is not None and entry.slow_downloads:
        window_text = f"{window} B" if window else "a window that is not documented"
        return (f"libcurl {h2.libcurl} advertises {window_text} for an HTTP/2 download "
                f"({entry.fact.split(':')[0]}): {rates}")
    return (f"the HTTP/2 clone moved about HTTP/2's default {window} B window per round trip, "
            f"as from a client that does not raise it{release}: {rates}")
