"""Edge request buffering: crafted runs, and what keeps it from firing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.observations import H2Ledger, Observations
from tests.diagnosis.culprits.crafted import (
    MB,
    Case,
    assert_ranks_first_with_its_fix,
    cap,
    proto,
    run,
)

NGINX = run(server_headers=("nginx/1.22.1",))


def _edge_run(https_wait_s: float, ssh_wait_s: float = 0.15, **run_kw: object) -> Observations:
    """h1 and h2 through the edge wait ``https_wait_s`` after a 1 s upload; SSH goes direct."""
    info = run(**run_kw) if run_kw else NGINX
    https = {"server_wait_s": https_wait_s}
    return Observations(run=info, protocols={
        "h1": proto(1.0, size=3 * MB, capture=cap(), trace=https),
        "h2": proto(1.0, size=3 * MB, capture=cap(), trace=https),
        "ssh": proto(1.0, size=3 * MB, capture=cap(), trace={"server_wait_s": ssh_wait_s}),
    })


def case_edge_request_buffering() -> Observations:
    return _edge_run(2.3)


CASES: dict[str, Case] = {
    "edge-request-buffering": (case_edge_request_buffering, ("proxy_request_buffering off",)),
}
"""Each culprit of the family, its crafted run and the settings its fix names."""


@pytest.mark.parametrize("culprit_id", list(CASES))
def test_culprit_ranks_first_with_its_fix(culprit_id: str) -> None:
    """The crafted run's top finding is the culprit, with numbers, evidence and the setting."""
    assert_ranks_first_with_its_fix(culprit_id, CASES[culprit_id])


def test_cost_is_what_streaming_would_overlap() -> None:
    """The wait beyond SSH's is 2.15 s, the upload 1 s: streaming saves at most the upload."""
    top = diagnose(case_edge_request_buffering()).findings[0]
    assert top.cost_s == pytest.approx(1.0)
    rate = next(e for e in top.evidence if e.unit == "B/s")
    assert rate.value == pytest.approx(3 * MB / 2.15)


def test_a_wait_on_every_transport_is_the_server_not_the_edge() -> None:
    """A slow hook delays SSH too: server-processing, and no edge finding."""
    result = diagnose(_edge_run(3.0, ssh_wait_s=3.0))
    ids = [f.id for f in result.findings]
    assert ids[0] == "server-processing" and "edge-request-buffering" not in ids


def test_without_a_direct_way_in_there_is_nothing_to_compare() -> None:
    obs = _edge_run(3.0)
    only_https = Observations(run=obs.run, protocols={k: v for k, v in obs.protocols.items()
                                                      if k != "ssh"})
    assert "edge-request-buffering" not in [f.id for f in diagnose(only_https).findings]


def test_small_differences_do_not_fire() -> None:
    assert diagnose(_edge_run(0.9)).findings == ()


def test_the_answering_edge_is_named_first_and_raises_confidence() -> None:
    """nginx answered: its setting leads the fix; an unknown server scores lower."""
    named = diagnose(_edge_run(2.3)).findings[0]
    unknown = diagnose(_edge_run(2.3, rtt_s=0.05)).findings[0]
    assert named.fix.index("proxy_request_buffering") < named.fix.index("http-buffer-request")
    assert "On the edge that answered, nginx:" in named.fix
    assert unknown.score < named.score


def _with_native(obs: Observations, request_bytes: int, wait_s: float) -> Observations:
    h2 = replace(obs.protocols["h2"], h2_ledger=H2Ledger(
        server_initial_window_bytes=16 * 2**20, request_bytes=request_bytes,
        server_wait_s=wait_s))
    return replace(obs, protocols={**obs.protocols, "h2": h2})


def test_a_smaller_pack_that_waits_less_shows_the_wait_grows_with_the_pack() -> None:
    """The native probe's 24 MB waited 0.9 s, git's 72 MB 2.3 s: 48 MB in 1.4 s more."""
    base = _edge_run(2.3, rtt_s=0.05)
    grown = diagnose(_with_native(base, MB, 0.9)).findings[0]
    rate = next(e for e in grown.evidence if "grows with the pack" in e.what)
    assert rate.value == pytest.approx(2 * MB / 1.4) and rate.unit == "B/s"
    assert grown.score > diagnose(base).findings[0].score
    flat = diagnose(_with_native(base, MB, 2.3)).findings[0]
    assert not any("grows with the pack" in e.what for e in flat.evidence)
