"""SSH culprits: crafted runs whose top-ranked finding is the culprit."""

from __future__ import annotations

import pytest

from gitnetdiag.diagnosis.observations import (
    BurstResult,
    ConfigFinding,
    HostEvidence,
    Observations,
    SshLedger,
)
from tests.diagnosis.culprits.crafted import (
    MB,
    Case,
    assert_ranks_first_with_its_fix,
    cap,
    proto,
    run,
)


def case_ssh_window() -> Observations:
    ledger = SshLedger(
        source="ssh probe log",
        initial_window_bytes=131_072,
        max_packet_bytes=32_768,
        zero_window_s=12.0,
        window_adjusts=900,
    )
    return Observations(
        run=run(rtt_s=0.1),
        protocols={
            "h1": proto(3.0, capture=cap()),
            "ssh": proto(
                MB / (131_072 / 0.1), capture=cap(self_limited_share=0.9), ssh_ledger=ledger
            ),
        },
    )


def case_ssh_maxstartups() -> Observations:
    return Observations(
        run=run(),
        protocols={"ssh": proto(3.0)},
        bursts=(
            BurstResult(
                protocol="ssh",
                port=22,
                concurrency=100,
                ok=60,
                failed_by_kind={"refused": 40},
                connect_p50_s=0.05,
                connect_p99_s=0.2,
                connect_max_s=0.3,
                duration_p50_s=2.0,
            ),
        ),
        host=HostEvidence(
            kernel_log=("sshd[812]: error: beginning MaxStartups throttling",),
            config_findings=(
                ConfigFinding(
                    setting="MaxStartups", value="10:30:100", file="/etc/ssh/sshd_config", line=12
                ),
            ),
        ),
    )


CASES: dict[str, Case] = {
    "ssh-channel-window": (case_ssh_window, ("HPN-SSH",)),
    "ssh-maxstartups": (case_ssh_maxstartups, ("MaxStartups",)),
}
"""Each culprit of the family, its crafted run and the settings its fix names."""


@pytest.mark.parametrize("culprit_id", list(CASES))
def test_culprit_ranks_first_with_its_fix(culprit_id: str) -> None:
    """The crafted run's top finding is the culprit, with numbers, evidence and the setting."""
    assert_ranks_first_with_its_fix(culprit_id, CASES[culprit_id])
