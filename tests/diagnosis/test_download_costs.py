"""What a download culprit costs a clone, and how ``compare`` times a fetch's clones: the
slow-start ramp of an unclamped clone, the typical clone of the costliest protocol, whole
complete clones less their checkout."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitnetdiag.diagnosis.culprits._common import Hit, typical_costliest, unclamped_cost_s
from gitnetdiag.diagnosis.culprits.edgeresponse import edge_response_buffering
from gitnetdiag.diagnosis.measures import fetched_clones, ramp_time_s
from gitnetdiag.diagnosis.transfers import TransferObservation
from tests.diagnosis.test_edge_response_buffering import LAB_FAULT, _stalled
from tests.diagnosis.test_transfer_culprits import HEALTHY, PHASES
from tests.diagnosis.transfer_cases import on

MIB = 1024 * 1024
RTT = 0.05
CLAMPED = replace(HEALTHY, moved_bytes=6 * MIB, measured_s=9.0, rate_bytes_per_s=6 * MIB / 9.0)


def test_an_unclamped_clone_still_slow_starts() -> None:
    """6 MiB at 50 ms: nine round trips of slow start up to 3 MiB a round trip (0.45 s),
    not 6 MiB at 3 MiB / RTT (0.1 s)."""
    ramp = ramp_time_s(6 * MIB, 3 * MIB / RTT, RTT, 1460)
    assert 0.40 < ramp < 0.50
    assert unclamped_cost_s(CLAMPED, 3 * MIB, RTT) == pytest.approx(9.0 - ramp)
    fast = replace(CLAMPED, rate_bytes_per_s=100 * MIB)  # faster than 3 MiB / RTT already
    assert unclamped_cost_s(fast, 3 * MIB, RTT) == 0.0


def _hit_of_measured(obs: TransferObservation) -> Hit:
    return Hit(score=0.8, cost_s=obs.measured_s, summary="", evidence=(), fix="",
               cost_protocol=obs.protocol)


def test_a_culprit_is_priced_on_the_typical_clone_of_its_costliest_protocol() -> None:
    """Per protocol the clone of median cost (the lower middle of two), then the protocol
    where that costs most: the slowest repeat's noise is no part of the prediction."""
    clones = [replace(HEALTHY, protocol="h1", repeat=i, measured_s=s)
              for i, s in enumerate((5.3, 6.6, 5.5), 1)]
    clones += [replace(HEALTHY, protocol="git", repeat=i, measured_s=s)
               for i, s in enumerate((4.0, 9.0), 1)]
    hit = typical_costliest(on(clones).transfers, _hit_of_measured)
    assert hit is not None and hit.cost_s == 5.5 and hit.cost_protocol == "h1"
    assert typical_costliest(on(clones).transfers, lambda _obs: None) is None


def test_compare_times_complete_clones_whole_less_their_checkout() -> None:
    whole = replace(HEALTHY, outcome="ok", stopped=None, wall_s=23.0,
                    phases=replace(PHASES, checkout_s=2.0, total_s=22.8))
    records = fetched_clones(on([whole, replace(whole, repeat=2)]), "h1")
    assert records is not None and [r.duration_s for r in records] == [21.0, 21.0]
    assert records[0].bytes == whole.moved_bytes and records[0].ok
    bounded = replace(whole, outcome="bounded", stopped="stable")
    assert fetched_clones(on([whole, bounded]), "h1") is None  # then the pack at its rate
    assert fetched_clones(on([whole]), "git") is None


def test_a_stalled_clone_through_the_edge_costs_its_wait_and_a_redo() -> None:
    """The 2026-11-28 run: HTTP/1.1 clones through the edge of 32.7 and 25.7 s and one stalled
    after 24.6 s; compare counts the stalled one as its wait plus a redo, so does the cost."""
    slow, direct = LAB_FAULT[0], LAB_FAULT[3]
    done = [replace(slow, repeat=i, measured_s=s, wall_s=s + 0.5, moved_bytes=6 * MIB,
                    rate_bytes_per_s=6 * MIB / s) for i, s in ((1, 32.7), (2, 25.7))]
    stalled = replace(_stalled(slow, 2_320_782, 24.6), repeat=3)
    hit = edge_response_buffering(on([*done, stalled, direct]))
    assert hit is not None and hit.cost_protocol == "h1"
    direct_s = 6 * MIB / (direct.rate_bytes_per_s or 1.0)
    # Lost: 32.7, 25.7 and 24.6 + 29.2 (the median completed clone) less 0.53 s each; the
    # typical one is the 32.7 s clone's.
    assert hit.cost_s == pytest.approx(32.7 - direct_s)
