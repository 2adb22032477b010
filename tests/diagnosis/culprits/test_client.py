"""Client culprits: crafted runs whose top-ranked finding is the culprit."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.observations import (
    H2Ledger,
    Observations,
    PushObservation,
)
from tests.diagnosis import examples
from tests.diagnosis.culprits.crafted import (
    MB,
    Case,
    assert_ranks_first_with_its_fix,
    cap,
    proto,
    run,
    three,
)


def case_client_pack_cpu() -> Observations:
    return Observations(
        run=run(), protocols=three(2.6, capture=cap(), trace={"pack_objects_s": 12.0})
    )


def case_client_http_stack() -> Observations:
    ledger = H2Ledger(server_initial_window_bytes=16_777_216, connection_window_bytes=16_777_216)
    h2 = proto(2.7, capture=cap(), h2_ledger=ledger)
    broken = PushObservation(
        duration_s=4.0,
        bytes=MB,
        ok=False,
        error_kind="other",
        error_message="error: RPC failed; curl 16 Error in the HTTP2 framing layer",
    )
    h2 = replace(h2, pushes=(h2.pushes[0], broken, broken))
    return Observations(
        run=run(libcurl_version="8.10.0"),
        protocols={"h1": proto(2.6, capture=cap()), "h2": h2},
    )


CASES: dict[str, Case] = {
    "client-pack-cpu": (case_client_pack_cpu, ("pack.compression", "pack.threads")),
    "client-http-stack": (case_client_http_stack, ("8.10.1",)),
}
"""Each culprit of the family, its crafted run and the settings its fix names."""


@pytest.mark.parametrize("culprit_id", list(CASES))
def test_culprit_ranks_first_with_its_fix(culprit_id: str) -> None:
    """The crafted run's top finding is the culprit, with numbers, evidence and the setting."""
    assert_ranks_first_with_its_fix(culprit_id, CASES[culprit_id])


def test_known_bad_version_alone_is_not_blamed() -> None:
    """A bad libcurl without any symptom stays below the threshold."""
    obs = replace(examples.healthy(), run=replace(examples.healthy().run, libcurl_version="8.10.0"))
    result = diagnose(obs)
    assert result.verdict == "healthy"
    assert [f.id for f in result.dropped] == ["client-http-stack"]
