"""The catalogue: every registered culprit has a crafted case in its family's test module."""

from __future__ import annotations

from gitnetdiag.diagnosis import CULPRITS, Observations, diagnose
from tests.diagnosis import examples
from tests.diagnosis.culprits import (
    test_accept_queue,
    test_client,
    test_edge,
    test_h2,
    test_idlepath,
    test_mtu,
    test_nobackend,
    test_path,
    test_pool,
    test_proxytunnel,
    test_reach,
    test_refusals,
    test_server,
    test_ssh,
    test_storage,
    test_tcp_windows,
)

FAMILIES = (
    test_h2,
    test_tcp_windows,
    test_ssh,
    test_accept_queue,
    test_path,
    test_mtu,
    test_server,
    test_client,
    test_storage,
    test_edge,
    test_pool,
    test_refusals,
    test_nobackend,
    test_idlepath,
    test_reach,
    test_proxytunnel,
)
CASES = {culprit_id: case for family in FAMILIES for culprit_id, case in family.CASES.items()}


def test_every_catalogue_id_has_a_case() -> None:
    """The crafted cases cover the catalogue's upload culprits, and ids are unique (the six
    download-only culprits have their cases in tests/diagnosis: test_client_receive_window,
    test_send_buffer_and_client, test_http2_client_window, test_edge_response_buffering)."""
    ids = [c.id for c in CULPRITS]
    upload = [c.id for c in CULPRITS if c.judges("upload")]
    assert len(ids) == len(set(ids)) == 33
    assert len(upload) == 27
    assert set(CASES) == set(upload)


def test_healthy_run_is_healthy() -> None:
    """Three fast, alike transports: verdict healthy and no culprit at all."""
    result = diagnose(examples.healthy())
    assert result.verdict == "healthy"
    assert result.findings == ()
    assert "No culprit" in result.headline


def test_empty_observations_are_healthy_without_crashing() -> None:
    result = diagnose(Observations())
    assert result.verdict == "healthy"
    assert result.protocols == ()
