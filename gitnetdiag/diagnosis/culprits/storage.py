"""Storage: the git data filesystem below the reference IOPS."""

from __future__ import annotations

from gitnetdiag.diagnosis.culprits._common import (
    Hit,
    phase_evidence,
    phase_values,
    storage_slowness,
)
from gitnetdiag.diagnosis.culprits.weights import weight
from gitnetdiag.diagnosis.measures import rtt_s
from gitnetdiag.diagnosis.model import Evidence
from gitnetdiag.diagnosis.observations import Observations
from gitnetdiag.diagnosis.units import fmt_s


def slow_storage(obs: Observations) -> Hit | None:
    slowness = storage_slowness(obs)
    if slowness is None or obs.storage is None:
        return None
    s = obs.storage
    lowest = min(v for v in (s.read_iops, s.write_iops) if v is not None)
    # Slow storage costs the push that stores new objects. A probe sends the same commit
    # over every transport, so the later pushes find the objects stored already and wait
    # for nothing (measured in the lab: 3.0 s after the first push, 0.5 s after the next):
    # the longest wait is the one that wrote. (A hook, by contrast, delays every push alike;
    # server-processing takes the shortest.)
    values = phase_values(obs, "server_wait_s")
    longest = max((v for _, v in values), default=0.0)
    excess = max(0.0, longest - 2 * (rtt_s(obs) or 0.0))
    evidence = [
        Evidence(
            what=f"4 KiB random {kind} IOPS" + (f" on {s.path}" if s.path else ""),
            value=value,
            unit="IOPS",
            threshold=s.reference_iops,
            comparison="<",
            source="fio",
        )
        for kind, value in (("read", s.read_iops), ("write", s.write_iops))
        if value is not None
    ]
    evidence.extend(
        phase_evidence(values, "wait after upload until the server's status", basis="storage-bound")
    )
    return Hit(
        score=weight("slow-storage", "below-reference")
        + weight("slow-storage", "per-slowness") * slowness,
        cost_s=excess,
        summary=(
            f"The git data storage does {lowest:.0f} "
            f"IOPS, below the {s.reference_iops:.0f} reference"
            + (
                f", and the server took {fmt_s(excess)} after the upload to answer."
                if excess
                else "."
            )
        ),
        evidence=tuple(evidence),
        fix=(
            "Move the repositories to faster storage (local SSD/NVMe rather than network or "
            "burst-credit volumes), check the volume's IOPS quota, and keep packs consolidated "
            "(`git maintenance run --task=gc`) so fewer small files are touched."
        ),
    )
