"""Server phases (trace2): processing after the upload, a slow first response."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TypedDict

from gitnetdiag.diagnosis.culprits._common import (
    SLOW_PHASE_S,
    Hit,
    phase_evidence,
    phase_excess,
    storage_slowness,
    term,
    typical_costliest,
)
from gitnetdiag.diagnosis.culprits.weights import weight
from gitnetdiag.diagnosis.edgelimits import setting_text
from gitnetdiag.diagnosis.measures import rtt_s
from gitnetdiag.diagnosis.model import Evidence, Quantity
from gitnetdiag.diagnosis.observations import Observations
from gitnetdiag.diagnosis.servers import answering_fix, sending_hop
from gitnetdiag.diagnosis.transfers import TransferObservation
from gitnetdiag.diagnosis.units import fmt_s


class _Threshold(TypedDict):
    threshold: float
    basis: str
    basis_terms: tuple[Quantity, ...]


SERVER_WAIT_RTTS: dict[str, float] = {"*": 2}
"""Round trips between the end of the upload and the server's status: the last data
reaching the server, the status coming back."""
REF_ADVERTISEMENT_RTTS: dict[str, float] = {"*": 3, "ssh": 12}
"""Round trips before the first response: TCP, TLS and the request over HTTP; over SSH
also the version exchange, key exchange, new keys, service request, authentication,
channel open and exec. The lab's healthy SSH at 20 and 80 ms RTT took about 12 RTT and
0.4 s of key exchange and key lookup (docs/culprits.md)."""


CONNECT_RTTS = 1
"""A CONNECT through a forward proxy adds one round trip (the request and its ``200``)
before TLS (RFC 9110 section 9.3.6)."""


SOCKS_RTTS = {"socks5": 2, "socks5h": 2, "socks4": 1, "socks4a": 1}
"""Round trips a SOCKS tunnel adds before the server's first byte: SOCKS5 its method
selection, then its CONNECT (RFC 1928 sections 3-4); SOCKS4 its one CONNECT request."""


def hop_rtts(obs: Observations, rtts: Mapping[str, float]) -> dict[str, float]:
    """``rtts`` with each protocol's first hop's own round trips added: a CONNECT through an
    HTTP proxy; through an SSH jump host (``ProxyJump``) a whole SSH session to the jump
    host before the one to the server, tunnelled inside it (the lab's ``ssh-jump-host``:
    1.6-2.8 s to the first response at 50 ms, against 12 RTT + 1 s for one session)."""
    added = dict(rtts)
    for hop in obs.run.first_hops:
        count = added.get(hop.protocol, rtts["*"])
        kind = hop.proxy_type or ("ssh" if hop.source.endswith("proxyjump") else
                                  "http" if hop.kind == "http-proxy" else "")
        if kind == "ssh":
            added[hop.protocol] = count + rtts.get("ssh", rtts["*"])
        elif kind in SOCKS_RTTS or kind in ("http", "https"):
            added[hop.protocol] = count + SOCKS_RTTS.get(kind, CONNECT_RTTS)
    return added


def _over_rtts(obs: Observations, rtts: Mapping[str, float], name: str) -> _Threshold:
    """A phase is slow at :data:`SLOW_PHASE_S` over the round trips it needs anyway."""
    count = rtts.get(name, rtts["*"])
    return _Threshold(
        threshold=SLOW_PHASE_S + count * (rtt_s(obs) or 0.0),
        basis="{} over {} RTT",
        basis_terms=(term(SLOW_PHASE_S, "s"), term(count, "count")),
    )


def _evidence(obs: Observations, values: list[tuple[str, float]], what: str,
              rtts: Mapping[str, float]) -> tuple[Evidence, ...]:
    """Each protocol's phase against its own threshold."""
    return tuple(item for name, value in values
                 for item in phase_evidence([(name, value)], what, **_over_rtts(obs, rtts, name)))


def _slow_phase(obs: Observations, culprit: str, attr: str, rtts: Mapping[str, float], *,
                what: str, summary: str, fix: str) -> Hit | None:
    """A server phase (``attr``) beyond the round trips it needs by :data:`SLOW_PHASE_S` on
    every protocol (:func:`phase_excess`); ``summary``'s ``{}`` is that excess."""
    phase = phase_excess(obs, attr, rtts)
    excess, values = phase.excess_s, phase.values
    if excess < SLOW_PHASE_S:
        return None
    score = weight(culprit, "several-protocols" if len(values) >= 2 else "one-protocol")
    if culprit == "server-processing" and storage_slowness(obs) is not None:
        score = weight(culprit, "slow-storage")
    return Hit(score=score, cost_s=excess, cost_protocol=phase.protocol,
               summary=summary.format(fmt_s(excess)),
               evidence=_evidence(obs, values, what, rtts), fix=fix)


def server_processing(obs: Observations) -> Hit | None:
    return _slow_phase(
        obs, "server-processing", "server_wait_s", SERVER_WAIT_RTTS,
        what="wait after upload until the server's status",
        summary="After the upload the server took {} beyond the network round trips to "
        "answer: hooks or receive-pack work on the server.",
        fix=(
            "Time the server side of receive-pack: pre-receive / update / post-receive hooks "
            "(`GIT_TRACE2_PERF` on the server), `receive.fsckObjects`, the connectivity check "
            "of large packs, repository maintenance (`git maintenance run`), and storage latency."
        ),
    )


def slow_ref_advertisement(obs: Observations) -> Hit | None:
    return _slow_phase(
        obs, "slow-ref-advertisement", "ref_advertisement_s",
        hop_rtts(obs, REF_ADVERTISEMENT_RTTS),
        what="time to the first response",
        summary="The first response (authentication and ref advertisement) arrived {} later "
        "than the connection's round trips explain.",
        fix=(
            "Check the authentication backend's latency (LDAP, SSO, token checks) on the first "
            "request, and the ref count (`git ls-remote URL | wc -l`): hide refs with "
            "`transfer.hideRefs` (`receive.hideRefs` from pushes, `uploadpack.hideRefs` from "
            "clones and fetches), `git pack-refs --all` on the server; protocol v2 "
            "(`protocol.version=2`) lets a client ask only for the refs it needs."
        ),
    )


# The download direction: the server works before the first pack byte.

PACK_GENERATION_MIN_S = 1.0
"""Seconds before the first pack byte that count as the server's work, not noise."""
PACK_GENERATION_SHARE = 0.3
"""The wait for the first pack byte is this share of the clone's time up to its end."""


PACK_GENERATION_FIX = (
    "on the server: 'git repack -adb' (one pack with a reachability bitmap), "
    "repack.writeBitmaps=true so later repacks keep it, pack.useBitmaps=true (the default); "
    "for the user: 'git clone --filter=blob:none' (or a shallow clone) asks for less")


HTTPS_PROTOCOLS = ("h1", "h2")
"""Clones through the HTTP server or edge that answered, which waits while the server works."""
TIMEOUT_PRODUCTS = ("haproxy", "nginx", "apache")
"""The self-hosted edges whose timeout toward the server the fix lists beside the one that
answered (any product of ``data/edge_limits.toml``, a load balancer or CDN too)."""
MIN_EDGE_TIMEOUT_S = 60.0
"""The edge timeout the fix asks for at least (nginx's and Apache's default)."""


def server_pack_generation(run: Observations) -> Hit | None:
    """A download: the server's counting and compressing before the first pack byte
    dominate, or outlasted the bound that stopped the clone (:func:`_cut_hit`). When the
    clone priced came over HTTPS, the fix adds the timeout of the product that answered
    (:func:`edge_wait_fix`)."""
    hit = typical_costliest(run.transfers, _pack_generation_hit)
    if hit is None or hit.cost_protocol not in HTTPS_PROTOCOLS:
        return hit
    return replace(hit, fix=f"{hit.fix}. {edge_wait_fix(run, hit.cost_s)}")


def edge_wait_fix(run: Observations, wait_s: float) -> str:
    """The HTTPS hop waits silent while the server prepares: its timeout toward the server,
    the product that answered first (:func:`~gitnetdiag.diagnosis.servers.answering_fix`),
    kept above twice the wait measured, else the same slow preparation cuts the clone
    (``edge-idle-timeout``)."""
    target = max(MIN_EDGE_TIMEOUT_S, 2 * wait_s)
    settings = answering_fix(sending_hop(run),
                             lambda p: setting_text(p, "idle_timeout", target), TIMEOUT_PRODUCTS)
    return (f"Until then the HTTPS edge waits on a silent server: keep its timeout toward the "
            f"server at {target:.0f} s or more (twice the {wait_s:.1f} s measured), else a "
            f"slower preparation fails the clone (edge-idle-timeout): {settings}")


def _pack_generation_hit(obs: TransferObservation) -> Hit | None:
    wait = obs.phases.server_pack_generation_s
    if wait is None:
        return _cut_hit(obs) if obs.cut_while_preparing else None
    work = wait - (obs.rtt_s or 0.0)
    end = obs.phases.total_s or obs.wall_s
    if work < PACK_GENERATION_MIN_S or work < PACK_GENERATION_SHARE * end:
        return None
    evidence = [Evidence(
        what="fetch request to first pack byte", value=wait, unit="s",
        threshold=PACK_GENERATION_SHARE * end, comparison=">=",
        basis="30% of the clone's {}", basis_terms=(Quantity(value=end, unit="s"),),
        source=f"trace2 negotiation + git progress, fetch {obs.protocol} #{obs.repeat}"),
        *_objects_evidence(obs)]
    return Hit(
        score=_score(work, end), cost_s=work,
        summary=(f"the server worked {work:.1f} s counting and compressing objects "
                 f"before the first pack byte of a {end:.1f} s clone"),
        evidence=tuple(evidence), fix=PACK_GENERATION_FIX, cost_protocol=obs.protocol)


def _score(work_s: float, end_s: float) -> float:
    return min(weight("server-pack-generation", "cap"),
               weight("server-pack-generation", "base") + work_s / end_s)


def _objects_evidence(obs: TransferObservation) -> list[Evidence]:
    """What the server said it counted and compressed (its ``... done`` lines)."""
    evidence = []
    if obs.phases.server_objects_counted is not None:
        evidence.append(Evidence(what="objects the server counted",
                                 value=float(obs.phases.server_objects_counted),
                                 unit="count", source="sideband 'remote: Counting objects'"))
    if obs.phases.server_objects_compressed is not None:
        evidence.append(Evidence(what="objects the server compressed (delta search)",
                                 value=float(obs.phases.server_objects_compressed),
                                 unit="count",
                                 source="sideband 'remote: Compressing objects'"))
    return evidence


def _cut_hit(obs: TransferObservation) -> Hit:
    """A clone the monitor stopped while the server was still preparing its pack
    (:attr:`~gitnetdiag.diagnosis.transfers.PackWait.preparing`): the server's preparation
    lasted at least the clone's wait, which is its cost (the lab's CPU-starved upload-pack
    talked 25.0 s without a pack byte at the defaults' 25 s bound)."""
    cut = obs.pack_wait
    assert cut is not None
    source = f"fetch monitor, fetch {obs.protocol} #{obs.repeat}"
    how = ("the server's words advanced to the end, no pack byte came: the words-only bound "
           "(stall timeout + budget)" if cut.words_only else
           "the server fell silent while counting: the stall timeout")
    evidence = [
        Evidence(what="wait for the first pack byte when the clone was stopped",
                 value=cut.wait_s, unit="s", threshold=cut.bound_s, comparison=">=",
                 basis=f"the bound that stopped it, {how}",
                 text="stopped by the bound: the server's pack preparation is at least "
                 "this long", source=source),
        Evidence(what="the server's last words", text=f"remote: {cut.server_words}",
                 source=f"sideband 'remote:' on git's stderr, fetch {obs.protocol} "
                 f"#{obs.repeat}"),
        *_objects_evidence(obs)]
    return Hit(
        score=_score(cut.wait_s, obs.wall_s), cost_s=cut.wait_s,
        summary=(f"the server was still preparing the pack ('remote: {cut.server_words}') "
                 f"when the clone was stopped after waiting {cut.wait_s:.1f} s for its first "
                 "pack byte: the server's pack preparation (counting and compressing objects) "
                 "takes at least that long"),
        evidence=tuple(evidence),
        fix=(f"{PACK_GENERATION_FIX}; to measure the whole preparation, raise --budget / "
             f"--stall-timeout (the clone was stopped at the {cut.bound_s:.0f} s bound: while "
             "the server only talks, the stall timeout plus the budget)"),
        cost_protocol=obs.protocol)
