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


def test_ssh_handshake_round_trips_are_not_a_slow_ref_advertisement() -> None:
    """At 80 ms a healthy SSH connection answers after about 12 RTT and its key exchange:
    1.5 s is no slow server over SSH (12 x 80 ms + 1 s = 1.96 s allowed), but it is over
    HTTP (3 x 80 ms + 1 s = 1.24 s allowed)."""
    from gitnetdiag.diagnosis import diagnose
    from gitnetdiag.diagnosis.observations import ProtocolObservation

    def only(name: str) -> Observations:
        p: ProtocolObservation = three(2.6, capture=cap(), trace={"ref_advertisement_s": 1.5})[
            "h1"]
        return Observations(run=run(rtt_s=0.08), protocols={name: p})

    assert "slow-ref-advertisement" not in [f.id for f in diagnose(only("ssh")).findings]
    found = {f.id: f for f in diagnose(only("h1")).findings}
    top = found["slow-ref-advertisement"]
    assert top.cost_s == pytest.approx(1.5 - 3 * 0.08) and top.cost_protocol == "h1"
    (item,) = top.evidence
    assert item.threshold == pytest.approx(1.0 + 3 * 0.08)


def test_the_least_excess_names_its_protocol() -> None:
    """SSH 2.2 s (12 RTT: 0.6 s at 50 ms) and HTTP/1.1 2.0 s (3 RTT: 0.15 s): the server
    delayed every transport by at least SSH's 1.6 s excess, measured on SSH."""
    from gitnetdiag.diagnosis import diagnose

    protocols = three(2.6, capture=cap(), trace={"ref_advertisement_s": 2.0})
    ssh = three(2.6, capture=cap(), trace={"ref_advertisement_s": 2.2})["ssh"]
    obs = Observations(run=run(), protocols={"h1": protocols["h1"], "ssh": ssh})
    top = next(f for f in diagnose(obs).findings if f.id == "slow-ref-advertisement")
    assert top.cost_protocol == "ssh" and top.cost_s == pytest.approx(2.2 - 12 * 0.05)
    thresholds = {item.what.split(":")[0]: item.threshold for item in top.evidence}
    assert thresholds == {"HTTP/1.1": pytest.approx(1.15), "SSH": pytest.approx(1.6)}
