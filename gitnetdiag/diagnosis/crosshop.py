"""A/B comparisons across different first hops (issue 43): HTTP/2 through a proxy, SSH direct.

Several culprits hold one protocol's rate against another's (``h2-flow-control-window`` and
``h2-frame-settings``: HTTP/2 slower than SSH; ``ssh-channel-window``: SSH slower than the
HTTPS ones; ``client-http-stack``, ``client-http2-window``, ``edge-response-buffering``; each
says which two in :attr:`~gitnetdiag.diagnosis.model.Finding.compares`). The comparison
holds the path fixed only when both protocols took the same first hop. When one went
through a forward proxy and the other did not, the difference between them is the
protocol's *or* the proxy leg's (its TCP connection ends at the proxy: its window, its
buffers). The rule, from the evidence:

- the two took different first hops: the finding says so (its summary and one evidence
  row) and stays ranked: nothing measured on the proxy's leg explains the difference;
- and a culprit of the proxy's leg (:data:`~gitnetdiag.diagnosis.proxies.LEG_KNOBS`)
  measured on the protocol judged slower, confident (:data:`LEG_MIN_SCORE`) and costing
  at least :data:`LEG_EXPLAINS_SHARE` of the seconds this one prices, explains it: the
  comparison is set aside and the culprit judged again beside only the protocols that
  took the same first hop (HTTP/1.1 through the same proxy, say). Ranked only if it still
  fires on that evidence (a small HTTP/2 window the native probe measured does); else it
  is not ranked, and its summary says why (the lab's ``forward-proxy-buffer`` push: HTTP/2
  at 0.72 MB/s through the proxy's 64 KiB window against SSH direct at 4.5 MB/s fired
  ``h2-frame-settings`` at 0.28 on the default 16384 B frame size and that difference
  alone, beside ``tcp-receive-window-clamp`` on the proxy's leg at 0.94).

Pure: reads the findings, the observations and the recorded first hops.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from gitnetdiag.diagnosis.model import Evidence, Finding
from gitnetdiag.diagnosis.observations import PROTOCOL_LABELS, Observations
from gitnetdiag.diagnosis.proxies import LEG_KNOBS, as_sentence, finding_protocols, path_hops
from gitnetdiag.diagnosis.units import fmt_s
from gitnetdiag.hops import PathHop

LEG_EXPLAINS_SHARE = 0.5
"""A leg culprit explains a comparison when it costs at least this share of the seconds the
comparing culprit prices (both price the same slow transfer: the lab's buffered proxy 3.7 s
and 3.7 s)."""
LEG_MIN_SCORE = 0.5
"""... and is at least this confident (a weak leg finding explains nothing away)."""

Rejudge = Callable[[str, Observations], Finding | None]
"""The engine's: culprit id, observations -> its priced finding, None when it does not fire."""


def _label(protocol: str) -> str:
    return PROTOCOL_LABELS.get(protocol, protocol)


def _hop_key(hop: PathHop | None) -> tuple[str, str]:
    return ("direct", "") if hop is None or not hop.proxied else (hop.kind, hop.proxy)


def _went(hop: PathHop | None) -> str:
    if hop is None or not hop.proxied:
        return "direct"
    return f"through the {'SSH proxy' if hop.kind == 'ssh-proxy' else 'proxy'} {hop.proxy}"


def _hops_sentence(judged: str, reference: str, hops: dict[str, PathHop]) -> str:
    return (f"{_label(judged)} went {_went(hops.get(judged))}, {_label(reference)} "
            f"{_went(hops.get(reference))}")


def _hops_evidence(judged: str, reference: str, hops: dict[str, PathHop]) -> Evidence:
    text = "; ".join(f"{_label(p)}: {hops[p].text if p in hops else 'direct'}"
                     for p in (judged, reference))
    return Evidence(what="first hops of the protocols compared", text=text,
                    basis="the comparison holds the path fixed only on the same first hop",
                    source="first hop as git resolves it")


def same_hop_observations(obs: Observations, protocol: str) -> Observations:
    """``obs`` with only the protocols (and a download's transfers) whose first hop is
    ``protocol``'s."""
    hops = {hop.protocol: hop for hop in path_hops(obs.run.first_hops)}
    mine = _hop_key(hops.get(protocol))
    keep = {name for name in obs.protocols if _hop_key(hops.get(name)) == mine} | {protocol}
    return replace(obs, protocols={n: p for n, p in obs.protocols.items() if n in keep},
                   transfers=tuple(t for t in obs.transfers if t.protocol in keep))


def explaining_leg(finding: Finding, findings: Sequence[Finding], obs: Observations,
                   hops: dict[str, PathHop]) -> Finding | None:
    """The confident culprit of the proxy's leg measured on the protocol ``finding`` judges,
    costing at least :data:`LEG_EXPLAINS_SHARE` of it; None when none is."""
    if finding.compares is None:
        return None
    judged = finding.compares[0]
    hop = hops.get(judged)
    if hop is None or not hop.proxied:
        return None
    return next((f for f in findings
                 if f.id in LEG_KNOBS and f.score >= LEG_MIN_SCORE
                 and f.cost_s >= LEG_EXPLAINS_SHARE * finding.cost_s
                 and judged in finding_protocols(f, obs)), None)


def _told(finding: Finding, hops: dict[str, PathHop]) -> Finding:
    judged, reference = finding.compares or ("", "")
    return replace(
        finding,
        summary=(f"{as_sentence(finding.summary)} The comparison is across different first hops "
                 f"({_hops_sentence(judged, reference, hops)}): a difference between them may "
                 "be the proxy's."),
        evidence=(*finding.evidence, _hops_evidence(judged, reference, hops)))


def _leg_clause(finding: Finding, leg: Finding, hops: dict[str, PathHop]) -> str:
    judged, reference = finding.compares or ("", "")
    return (f"{_hops_sentence(judged, reference, hops)}, and {leg.id} measured on "
            f"{_label(judged)}'s leg to the proxy explains the difference (~{fmt_s(leg.cost_s)}"
            f" of the ~{fmt_s(finding.cost_s)} this prices)")


def _set_aside(finding: Finding, leg: Finding, hops: dict[str, PathHop]) -> Finding:
    """Not ranked: the comparison across first hops was its evidence, the leg explains it."""
    judged = finding.compares[0] if finding.compares else ""
    return replace(
        finding,
        summary=(f"{as_sentence(finding.summary)} Not ranked: {_leg_clause(finding, leg, hops)}; "
                 f"beside only the protocols of {_label(judged)}'s own first hop it does not "
                 "fire."),
        evidence=(*finding.evidence, _hops_evidence(*(finding.compares or ("", "")), hops)))


def _rejudged(again: Finding, before: Finding, leg: Finding,
              hops: dict[str, PathHop]) -> Finding:
    """Fired again beside the protocols of its own first hop: ranked on that evidence."""
    judged = before.compares[0] if before.compares else ""
    return replace(
        again,
        summary=(f"{as_sentence(again.summary)} Judged beside only the protocols of "
                 f"{_label(judged)}'s own first hop: {_leg_clause(before, leg, hops)}."),
        evidence=(*again.evidence, _hops_evidence(*(before.compares or ("", "")), hops)))


def across_first_hops(obs: Observations, findings: Sequence[Finding], rejudge: Rejudge
                      ) -> tuple[list[Finding], list[Finding]]:
    """The findings with every comparison across different first hops said (module doc),
    and those set aside (not ranked) because the proxy's leg explains their comparison."""
    hops = {hop.protocol: hop for hop in path_hops(obs.run.first_hops)}
    if not any(hop.proxied for hop in hops.values()):
        return list(findings), []
    kept: list[Finding] = []
    set_aside: list[Finding] = []
    for finding in findings:
        if finding.compares is None or len({_hop_key(hops.get(p))
                                            for p in finding.compares}) == 1:
            kept.append(finding)
            continue
        leg = explaining_leg(finding, findings, obs, hops)
        if leg is None:
            kept.append(_told(finding, hops))
            continue
        again = rejudge(finding.id, same_hop_observations(obs, finding.compares[0]))
        if again is None:
            set_aside.append(_set_aside(finding, leg, hops))
        else:
            kept.append(_rejudged(again, finding, leg, hops))
    return kept, set_aside
