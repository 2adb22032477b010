"""Run every culprit of the run's direction, rank the findings, and build the :class:`Diagnosis`.

One path for both directions: the culprits that judge ``obs.run.transfer``
(:attr:`~gitnetdiag.diagnosis.culprits.Culprit.directions`) run on the one
:class:`Observations`, are priced by the one cost model (:func:`apply_costs`), ranked and
thresholded alike; a download's findings of culprits of both directions are told of
clones (:func:`~gitnetdiag.diagnosis.assembly.in_download_words`), and an edge's own
config backs ``edge-response-buffering``.

Ranking: by ``cost_s x score`` (expected seconds lost), highest first; ties by
score, then by catalogue order. A finding is kept only when its impact is at
least :data:`MIN_IMPACT_S` seconds and its score at least :data:`MIN_SCORE`;
the rest are returned as ``dropped``. The verdict also weighs what could not
be measured (:mod:`gitnetdiag.diagnosis.verdict`): a failed measurement is
never ``healthy``. In a ``failed`` run the culprits that explain its failing protocols
rank first (:func:`failure_first`, also for ``--direction both``), and its headline is
the failure's (:mod:`gitnetdiag.diagnosis.headline`): a culprit measured on a protocol
that passed never leads it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from gitnetdiag import __version__
from gitnetdiag.diagnosis.assembly import in_download_words
from gitnetdiag.diagnosis.costs import apply_costs
from gitnetdiag.diagnosis.crosshop import across_first_hops
from gitnetdiag.diagnosis.culprits import CULPRITS, Culprit
from gitnetdiag.diagnosis.culprits.edgeresponse import with_edge_config
from gitnetdiag.diagnosis.failuredesc import describe_failures
from gitnetdiag.diagnosis.headline import failure_culprits, verdict_headline
from gitnetdiag.diagnosis.measures import (
    failed_pushes,
    median,
    ok_pushes,
    push_bytes,
    push_duration_s,
    upload_s,
)
from gitnetdiag.diagnosis.model import Diagnosis, Environment, Finding, ProtocolSummary
from gitnetdiag.diagnosis.observations import (
    PROTOCOL_LABELS,
    PROTOCOL_ORDER,
    Observations,
    ProtocolObservation,
)
from gitnetdiag.diagnosis.proxies import on_proxied_legs, path_hops
from gitnetdiag.diagnosis.servers import answering_server
from gitnetdiag.diagnosis.units import fmt_rate, fmt_s
from gitnetdiag.diagnosis.verdict import judge, supported
from gitnetdiag.outcomes import FailureKind

MIN_IMPACT_S = 0.5
"""Findings whose cost x score is below this many seconds are dropped."""
MIN_SCORE = 0.25
"""Findings less confident than this are dropped."""


def rank(findings: Sequence[Finding]) -> list[Finding]:
    """Order by cost x score, then score, then catalogue order (stable)."""
    order = {culprit.id: index for index, culprit in enumerate(CULPRITS)}
    return sorted(
        findings,
        key=lambda f: (-f.impact_s, -f.score, order.get(f.id, len(order))),
    )


def failure_first(findings: Sequence[Finding], explains: Callable[[Finding], bool]
                  ) -> tuple[Finding, ...]:
    """A failed run's ranking: the findings that explain its failure first, then the rest,
    each group in the order given (:func:`rank`'s)."""
    return tuple(sorted(findings, key=lambda f: not explains(f)))


def summarize_protocol(name: str, p: ProtocolObservation) -> ProtocolSummary:
    """Outcome and rates of one protocol's pushes."""
    done = ok_pushes(p)
    rates = sorted(push.bytes / push.duration_s for push in done if push.bytes > 0)
    durations = sorted(push.duration_s for push in done)
    size = push_bytes(p)
    typical = push_duration_s(p)
    if typical is None and p.pushes:
        typical = sorted(push.duration_s for push in p.pushes)[len(p.pushes) // 2]
    return ProtocolSummary(
        protocol=name,
        label=PROTOCOL_LABELS.get(name, name),
        pushes_ok=len(done),
        pushes_failed=len(failed_pushes(p)),
        failure_kinds=tuple(push.error_kind or FailureKind.OTHER for push in failed_pushes(p)),
        bytes=round(size) if size is not None else None,
        duration_s=typical,
        duration_min_s=durations[0] if durations else None,
        duration_max_s=durations[-1] if durations else None,
        rate_bytes_per_s=median(rates),
        rate_min_bytes_per_s=rates[0] if rates else None,
        rate_max_bytes_per_s=rates[-1] if rates else None,
        upload_s=upload_s(p),
        projected_pushes=sum(push.projected for push in done),
    )


def _environment(obs: Observations, min_impact_s: float, min_score: float) -> Environment:
    run = obs.run
    versions = {name: value for name in ("git", "libcurl", "nghttp2", "openssh")
                if (value := getattr(run, f"{name}_version"))}
    return Environment(
        gitnetdiag_version=__version__,
        started=run.started,
        target_url=run.target_url,
        rtt_s=run.rtt_s,
        path_rate_bytes_per_s=run.path_rate_bytes_per_s,
        versions=versions,
        protocols=tuple(name for name in PROTOCOL_ORDER if name in obs.protocols),
        measured_by=run.measured_by,
        min_impact_s=min_impact_s,
        min_score=min_score,
        server=answering_server(obs),
        remote_name=run.remote_name,
        remote_notes=run.remote_notes,
        paths=path_hops(run.first_hops),
    )


def _headline(findings: Sequence[Finding], protocols: Sequence[ProtocolSummary],
              transfers: str = "pushes") -> str:
    rates = ", ".join(f"{s.label} {fmt_rate(s.rate_bytes_per_s)}" for s in protocols
                      if s.rate_bytes_per_s)
    if not findings:
        measured = f" ({rates})" if rates else ""
        return f"No culprit costs the {transfers} noticeable time{measured}."
    top = findings[0]
    more = ""
    if len(findings) > 1:
        more = f"; {len(findings) - 1} more culprit{'s' if len(findings) > 2 else ''} below"
    return f"{top.id} costs an estimated {fmt_s(top.cost_s)} (confidence {top.score:.2f}){more}."


def fired_findings(obs: Observations, culprits: Sequence[Culprit] = CULPRITS) -> list[Finding]:
    """Every culprit of the run's direction that fires, in catalogue order."""
    direction = obs.run.transfer
    return [finding for culprit in culprits
            if culprit.judges(direction) and (finding := culprit(obs)) is not None]


def _in_words(obs: Observations, findings: Sequence[Finding],
              culprits: Sequence[Culprit]) -> list[Finding]:
    """A download's findings of culprits of both directions told of clones (after pricing,
    whose sentence speaks of the upload too)."""
    if obs.run.transfer != "download":
        return list(findings)
    shared = {c.id for c in culprits if c.judges("upload")}
    return [in_download_words(f) if f.id in shared else f for f in findings]


def rank_findings(
    obs: Observations,
    culprits: Sequence[Culprit] = CULPRITS,
    *,
    min_impact_s: float = MIN_IMPACT_S,
    min_score: float = MIN_SCORE,
) -> tuple[tuple[Finding, ...], tuple[Finding, ...]]:
    """The findings kept (ranked, above the thresholds) and those dropped."""
    fired = fired_findings(obs, culprits)
    told, set_aside = across_first_hops(
        obs, on_proxied_legs(obs, _in_words(obs, apply_costs(obs, fired), culprits)),
        lambda culprit_id, same_hop: _rejudge(same_hop, culprit_id, culprits))
    ranked = rank(told)
    kept = tuple(f for f in ranked if f.impact_s >= min_impact_s and f.score >= min_score
                 and supported(obs, f))
    if obs.host is not None:
        kept = with_edge_config(kept, obs.host.config_findings)
    dropped = tuple(f for f in ranked if f.id not in {k.id for k in kept}) + tuple(
        rank(set_aside))
    return kept, dropped


def _rejudge(obs: Observations, culprit_id: str, culprits: Sequence[Culprit]) -> Finding | None:
    """One culprit judged and priced again on ``obs`` (the protocols of one first hop:
    :func:`~gitnetdiag.diagnosis.crosshop.across_first_hops`), None when it does not fire."""
    culprit = next((c for c in culprits if c.id == culprit_id), None)
    found = culprit(obs) if culprit is not None and culprit.judges(obs.run.transfer) else None
    if found is None:
        return None
    return on_proxied_legs(obs, _in_words(obs, apply_costs(obs, [found]), culprits))[0]


def diagnose(
    obs: Observations,
    *,
    culprits: Sequence[Culprit] = CULPRITS,
    min_impact_s: float = MIN_IMPACT_S,
    min_score: float = MIN_SCORE,
) -> Diagnosis:
    """Diagnose one run: every culprit of its direction, ranked, thresholded."""
    kept, dropped = rank_findings(obs, culprits, min_impact_s=min_impact_s, min_score=min_score)
    summaries = tuple(
        summarize_protocol(name, obs.protocols[name])
        for name in PROTOCOL_ORDER
        if name in obs.protocols
    )
    judgement = judge(obs, kept)
    judgement = replace(judgement, failures=describe_failures(obs, judgement.failures))
    if judgement.verdict == "failed":
        explaining = failure_culprits(judgement.failures, judgement.failing)
        kept = failure_first(kept, lambda f: f.id in explaining)
    said = verdict_headline(judgement, kept, obs)
    # A failed run's headline is the failure's alone: what fails and why, not seconds.
    headline = said if judgement.verdict == "failed" else " ".join(filter(None, [
        said, _headline(kept, summaries, "clones" if obs.run.transfer == "download"
                        else "pushes")]))
    return Diagnosis(
        verdict=judgement.verdict,
        headline=headline,
        findings=kept,
        dropped=dropped,
        protocols=summaries,
        environment=_environment(obs, min_impact_s, min_score),
        observations=obs,
        requested_protocols=judgement.requested,
        measured_protocols=judgement.measured,
        measurement_failures=judgement.failures,
    )
