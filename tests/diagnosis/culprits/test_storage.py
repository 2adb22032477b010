"""Storage culprits: crafted runs whose top-ranked finding is the culprit."""

from __future__ import annotations

import pytest

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.observations import (
    Observations,
    StorageResult,
)
from tests.diagnosis.culprits.crafted import (
    Case,
    assert_ranks_first_with_its_fix,
    cap,
    run,
    three,
)


def case_slow_storage() -> Observations:
    return Observations(
        run=run(),
        protocols=three(2.6, capture=cap(), trace={"server_wait_s": 6.0}),
        storage=StorageResult(read_iops=300, write_iops=150, path="/srv/git"),
    )


CASES: dict[str, Case] = {
    "slow-storage": (case_slow_storage, ("storage",)),
}
"""Each culprit of the family, its crafted run and the settings its fix names."""


@pytest.mark.parametrize("culprit_id", list(CASES))
def test_culprit_ranks_first_with_its_fix(culprit_id: str) -> None:
    """The crafted run's top finding is the culprit, with numbers, evidence and the setting."""
    assert_ranks_first_with_its_fix(culprit_id, CASES[culprit_id])


def test_storage_outranks_server_processing_when_storage_is_slow() -> None:
    ids = [f.id for f in diagnose(case_slow_storage()).findings]
    assert ids[:2] == ["slow-storage", "server-processing"]
