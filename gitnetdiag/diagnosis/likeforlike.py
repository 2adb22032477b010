"""One protocol's transfers in one run, and how two runs of different amounts compare.

Pure. :func:`protocol_sample` takes a run's completed pushes (clones) of one
protocol; :func:`projection` decides what two samples compare on:

- the same amount (both moved the whole transfer, bytes within
  :data:`SIZE_RATIO`): the durations, as measured (a bounded push already
  reports its whole pack at its rate);
- different amounts (a clone bounded mid-pack on either side, or transfers of
  different sizes): each transfer's duration projected to one size at its own
  rate (``size / (bytes / duration)``; a bounded clone adds its lead, the time
  outside its part that its whole clone spends too), the projection marked. The size is the
  baseline's whole transfer when its transfers were whole, else the other
  run's, else the larger amount moved (neither was whole).

A bounded clone moved a part of an unknown whole: the issue-44 lab clamped the
client's ``tcp_rmem`` to 64 KiB at 50 ms, and each clone was stopped after
about 2 MB at 0.7 MB/s (2.7 s); lifted, each clone completed its 24 MB at
14-21 MB/s (2.3 s whole). The durations said x1.2 slower; the rates, and a
whole clone of 24 MB projected at each, say about 24 times faster (x15.8 with the
whole clones' own work, the server's and index-pack, crafted in the tests). In the lab
(2026-12-02, a loaded machine) the bounded clones' leads were 1.5 s: without them the
clamp's scaled cost was +38% of the measured gain, with them +12%.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from gitnetdiag.diagnosis.measures import fetched_clones, median, ok_pushes, push_bytes
from gitnetdiag.diagnosis.model import Diagnosis

MIN_REPEATS = 3
"""Completed transfers a side below which no noise test is run."""
ALPHA = 0.05
"""Significance level of the noise test."""
SIZE_RATIO = 1.2
"""Typical transfers whose bytes differ by more than this factor moved different amounts."""

Basis = Literal["duration", "projected"]
"""What a protocol's two runs are compared on: the measured ``duration`` of each transfer, or
each transfer ``projected`` to one size at its own rate."""


@dataclass(frozen=True, kw_only=True)
class ProtocolSample:
    """One protocol's completed pushes (clones) in one run."""

    durations_s: tuple[float, ...]
    """Duration of each completed push (projected for bounded ones), in push order; a
    bounded clone's is the bytes it moved at its rate (a part of the whole clone)."""
    failed: int
    """Failed or hung pushes."""
    failed_waits_s: tuple[float, ...] = ()
    """How long each failed or hung push ran before it ended (its wait), in push order."""
    bytes: float | None
    """Bytes of a typical push (median; a bounded clone's: the bytes it moved)."""
    duration_median_s: float | None
    """Median completed push."""
    duration_min_s: float | None
    """Fastest completed push."""
    duration_max_s: float | None
    """Slowest completed push."""
    rate_median_bytes_per_s: float | None
    """Median rate of the completed pushes, bytes per second."""
    rates_bytes_per_s: tuple[float, ...] = ()
    """Rate of each completed push that moved bytes (bytes / duration), in push order."""
    partial: int = 0
    """Completed clones stopped mid-pack (bounded): their bytes are a part of the whole
    clone, of a size not known from them. Always 0 for pushes (a bounded push's bytes
    are its whole pack)."""
    leads_s: tuple[float, ...] = ()
    """Beside each of ``rates_bytes_per_s``, the seconds of the transfer outside its bytes at
    its rate: a bounded clone's wall time less its part at its rate (connect, the refs, the
    server's work before the first pack byte, slow start), which its whole clone spends
    too; 0 for a whole clone or a push (their durations hold theirs). Empty: all 0."""


def protocol_sample(d: Diagnosis, protocol: str) -> ProtocolSample | None:
    """A protocol's completed pushes in one run; ``None`` when none completed."""
    observed = d.observations.protocols.get(protocol)
    if observed is None:
        return None
    whole = fetched_clones(d.observations, protocol)
    done = list(whole or ok_pushes(observed))
    if not done:
        return None
    durations = tuple(push.duration_s for push in done)
    rates = tuple(push.bytes / push.duration_s for push in done if push.bytes > 0)
    download = d.observations.run.transfer == "download"
    leads = _leads(d, protocol) if download and not whole else ()
    return ProtocolSample(
        durations_s=durations, failed=len(observed.pushes) - len(done),
        failed_waits_s=tuple(push.duration_s for push in observed.pushes if not push.ok),
        bytes=push_bytes(observed), duration_median_s=median(durations),
        duration_min_s=min(durations), duration_max_s=max(durations),
        rate_median_bytes_per_s=median(rates), rates_bytes_per_s=rates,
        partial=sum(push.projected for push in done) if download and not whole else 0,
        leads_s=leads)


def _leads(d: Diagnosis, protocol: str) -> tuple[float, ...]:
    """:attr:`ProtocolSample.leads_s` of a download's completed clones (the push-shaped
    records, one per clone in ``transfers`` in the same order); empty when no clone was
    bounded or the records do not line up."""
    pushes = d.observations.protocols[protocol].pushes
    clones = [t for t in d.observations.transfers if t.protocol == protocol]
    if len(clones) != len(pushes):
        return ()
    wall = {index: clone.wall_s for index, clone in enumerate(clones)}
    leads = tuple(max(0.0, wall[index] - push.duration_s) if push.projected else 0.0
                  for index, push in enumerate(pushes)
                  if push.ok and push.duration_s > 0 and push.bytes > 0)
    return leads if any(leads) else ()


def expected_s(durations_s: Sequence[float], failed_waits_s: Sequence[float]) -> float | None:
    """Mean time a transfer costs when failures count: a failed one is its wait plus a redo
    (the median completed one), as the culprits' costs count them."""
    redo = median(durations_s)
    if redo is None:
        return None
    total = sum(durations_s) + sum(wait + redo for wait in failed_waits_s)
    return total / (len(durations_s) + len(failed_waits_s))


def expected_push_s(sample: ProtocolSample) -> float | None:
    """:func:`expected_s` of a sample's measured durations."""
    return expected_s(sample.durations_s, sample.failed_waits_s)


@dataclass(frozen=True, kw_only=True)
class Projection:
    """Two samples of different amounts, each transfer projected to one size."""

    bytes: float
    """The size every transfer is projected to."""
    origin: Literal["before", "after", "larger-moved"]
    """Whose whole transfer it is: the baseline's, the other run's, or neither's (both
    bounded: the larger amount moved)."""
    before_s: tuple[float, ...]
    """The baseline's transfers at that size, each at its rate."""
    after_s: tuple[float, ...]
    """The other run's transfers at that size, each at its rate."""


def moved_differently(before: ProtocolSample, after: ProtocolSample) -> bool:
    """A clone was bounded on either side, or the typical transfers' bytes differ by more
    than :data:`SIZE_RATIO`."""
    if before.partial or after.partial:
        return True
    low, high = sorted((before.bytes or 0.0, after.bytes or 0.0))
    return high > SIZE_RATIO * low > 0


def projection(before: ProtocolSample, after: ProtocolSample) -> Projection | None:
    """What two samples of different amounts compare on; ``None`` when they moved the same
    amount (or a side has no rate to project with)."""
    if not moved_differently(before, after) or not before.rates_bytes_per_s \
            or not after.rates_bytes_per_s:
        return None
    origin: Literal["before", "after", "larger-moved"]
    if not before.partial and before.bytes:
        size, origin = before.bytes, "before"
    elif not after.partial and after.bytes:
        size, origin = after.bytes, "after"
    else:
        size, origin = max(before.bytes or 0.0, after.bytes or 0.0), "larger-moved"
    return Projection(bytes=size, origin=origin, before_s=projected_s(before, size),
                      after_s=projected_s(after, size))


def projected_s(sample: ProtocolSample, size: float) -> tuple[float, ...]:
    """Each transfer of ``sample`` as one of ``size`` bytes: its lead (a bounded clone's
    time outside its part, :attr:`ProtocolSample.leads_s`) plus ``size`` at its rate."""
    leads = sample.leads_s or (0.0,) * len(sample.rates_bytes_per_s)
    return tuple(lead + size / rate
                 for lead, rate in zip(leads, sample.rates_bytes_per_s, strict=True))


def scaled_cost_s(cost_s: float, before: ProtocolSample, size: float) -> float:
    """A culprit's cost, priced on the baseline's typical transfer (``before.bytes``), for a
    transfer of ``size`` at the same rates: the seconds a rate limit costs grow with the
    bytes that cross it. Linear, so the slow-start ramp the cost leaves to the fixed
    transfer is scaled too: for a transfer larger than the one priced, the prediction
    errs low by about that ramp (0.4 s for 2 MB at 50 ms, against 34 s at 24 MB)."""
    return cost_s * size / before.bytes if before.bytes else cost_s
