"""Server phases culprits: crafted runs whose top-ranked finding is the culprit."""

from __future__ import annotations

import pytest

from gitnetdiag.diagnosis.observations import (
    Observations,
)
from tests.diagnosis.culprits.crafted import (
    Case,
    assert_ranks_first_with_its_fix,
    cap,
    run,
    three,
)


def case_server_processing() -> Observations:
    return Observations(
        run=run(), protocols=three(2.6, capture=cap(), trace={"server_wait_s": 8.0})
    )


def case_slow_ref_advertisement() -> Observations:
    return Observations(
        run=run(), protocols=three(2.6, capture=cap(), trace={"ref_advertisement_s": 6.0})
    )


CASES: dict[str, Case] = {
    "server-processing": (case_server_processing, ("pre-receive", "receive.fsckObjects")),
    "slow-ref-advertisement": (case_slow_ref_advertisement, ("receive.hideRefs",)),
}
"""Each culprit of the family, its crafted run and the settings its fix names."""


@pytest.mark.parametrize("culprit_id", list(CASES))
def test_culprit_ranks_first_with_its_fix(culprit_id: str) -> None:
    """The crafted run's top finding is the culprit, with numbers, evidence and the setting."""
    assert_ranks_first_with_its_fix(culprit_id, CASES[culprit_id])
