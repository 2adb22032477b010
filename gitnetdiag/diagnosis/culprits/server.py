"""Server phases (trace2): processing after the upload, a slow first response."""

from __future__ import annotations

from typing import TypedDict

from gitnetdiag.diagnosis.culprits._common import (
    SLOW_PHASE_S,
    Hit,
    phase_evidence,
    phase_excess,
    storage_slowness,
    term,
)
from gitnetdiag.diagnosis.measures import rtt_s
from gitnetdiag.diagnosis.model import Quantity
from gitnetdiag.diagnosis.observations import Observations
from gitnetdiag.diagnosis.units import fmt_s


class _Threshold(TypedDict):
    threshold: float
    basis: str
    basis_terms: tuple[Quantity, ...]


def fastest(values: list[tuple[str, float]]) -> str:
    """The protocol whose phase was the shortest: the one the excess is measured on."""
    return min(values, key=lambda item: item[1])[0]


def _over_rtts(obs: Observations, rtts: int) -> _Threshold:
    """A phase is slow at :data:`SLOW_PHASE_S` over the round trips it needs anyway."""
    return _Threshold(
        threshold=SLOW_PHASE_S + rtts * (rtt_s(obs) or 0.0),
        basis="{} over {} RTT",
        basis_terms=(term(SLOW_PHASE_S, "s"), term(rtts, "count")),
    )


def server_processing(obs: Observations) -> Hit | None:
    excess, values = phase_excess(obs, "server_wait_s", 2)
    if excess < SLOW_PHASE_S:
        return None
    score = 0.7 if len(values) >= 2 else 0.6
    if storage_slowness(obs) is not None:
        score = 0.4
    return Hit(
        score=score,
        cost_s=excess,
        cost_protocol=fastest(values),
        summary=(
            f"After the upload the server took {fmt_s(excess)} beyond the network round trips "
            "to answer: hooks or receive-pack work on the server."
        ),
        evidence=tuple(
            phase_evidence(
                values,
                "wait after upload until the server's status",
                **_over_rtts(obs, 2),
            )
        ),
        fix=(
            "Time the server side of receive-pack: pre-receive / update / post-receive hooks "
            "(`GIT_TRACE2_PERF` on the server), `receive.fsckObjects`, the connectivity check "
            "of large packs, repository maintenance (`git maintenance run`), and storage latency."
        ),
    )


def slow_ref_advertisement(obs: Observations) -> Hit | None:
    excess, values = phase_excess(obs, "ref_advertisement_s", 3)
    if excess < SLOW_PHASE_S:
        return None
    return Hit(
        score=0.7 if len(values) >= 2 else 0.6,
        cost_s=excess,
        cost_protocol=fastest(values),
        summary=(
            f"The first response (authentication and ref advertisement) arrived "
            f"{fmt_s(excess)} later than the connection's round trips explain."
        ),
        evidence=tuple(phase_evidence(values, "time to the first response", **_over_rtts(obs, 3))),
        fix=(
            "Check the authentication backend's latency (LDAP, SSO, token checks) on the first "
            "request, and the ref count (`git ls-remote URL | wc -l`): hide refs from pushes "
            "with `receive.hideRefs` / `transfer.hideRefs`, `git pack-refs --all` on the server."
        ),
    )
