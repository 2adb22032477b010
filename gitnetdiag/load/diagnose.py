"""A load report as the diagnosis engine's input (pure).

Every step becomes a concurrency burst against the target's service, and the
server counter deltas of all steps become host evidence, so the engine's
``listen-backlog-overflow`` and ``syn-drop`` culprits can fire on a load run.
"""

from __future__ import annotations

from collections import Counter
from urllib.parse import urlsplit

from gitnetdiag.diagnosis.observations import BurstResult, HostEvidence, Observations, RunInfo
from gitnetdiag.load.model import LoadReport

_ENGINE_KINDS = {"reset", "timeout", "refused", "hung", "auth"}
_DEFAULT_PORTS = {"git": 9418, "ssh": 22, "https": 443, "http": 80}


def target_port(url: str) -> int | None:
    """The TCP port a remote URL connects to (scheme default when absent)."""
    try:
        parts = urlsplit(url)
        return parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        return None


def observations_from_load(report: LoadReport) -> Observations:
    """Bursts (one per step) and host counter deltas (summed over steps)."""
    ports = {target_port(url) for url in report.remotes}
    port = ports.pop() if len(ports) == 1 else None
    bursts = []
    for step in report.steps:
        failed: Counter[str] = Counter()
        for group in step.errors:
            failed[group.kind if group.kind in _ENGINE_KINDS else "other"] += group.count
        bursts.append(BurstResult(
            protocol=report.protocol,  # type: ignore[arg-type]
            concurrency=step.concurrency,
            ok=step.ok,
            port=port,
            failed_by_kind=dict(failed),
            duration_p50_s=step.latency.p50_s if step.latency else None,
        ))
    totals: Counter[str] = Counter()
    for step in report.steps:
        totals.update({k: v for k, v in step.host_deltas.items() if "." not in k})
    host = HostEvidence(counter_deltas=dict(totals)) if totals else None
    return Observations(
        run=RunInfo(started=report.started, target_url=report.target,
                    measured_by=f"gitnetdiag load ({report.source})"),
        bursts=tuple(bursts),
        host=host,
    )
