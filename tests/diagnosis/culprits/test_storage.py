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
    proto,
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


def test_only_the_push_that_stored_the_objects_waited_for_the_slow_disk() -> None:
    """The probe sends one commit over every transport: the first push stores the objects
    (3.0 s of syncing on the lab's throttled disk), the next finds them stored (0.5 s).
    The storage finding costs the wait of the push that wrote; the shortest wait, what a
    hook would add to every push, stays under server-processing's threshold."""
    observed = Observations(
        run=run(),
        protocols={"h1": proto(1.2, trace={"server_wait_s": 3.0}),
                   "ssh": proto(1.2, trace={"server_wait_s": 0.5})},
        storage=StorageResult(read_iops=50, write_iops=18, path="/srv/git"),
    )
    findings = diagnose(observed).findings
    assert [f.id for f in findings] == ["slow-storage"]
    assert findings[0].cost_s == pytest.approx(3.0 - 2 * 0.05)
    assert "server took 2.9 s" in findings[0].summary
