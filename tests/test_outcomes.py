"""One failure vocabulary end to end: the kind a probe records is the kind the engine reads."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitnetdiag.diagnosis.observations import PushObservation
from gitnetdiag.diagnosis.verdict import EXPLAINED_BY
from gitnetdiag.outcomes import MEASURED_OUTCOMES, REFUSALS, FailureKind, TransferOutcome
from gitnetdiag.pipeline._run import push_result
from gitnetdiag.redaction import redact_tree
from gitnetdiag.rundir import PushRecord, from_jsonable, to_jsonable
from gitnetdiag.rundir.records import RefCleanup


def _record(outcome: TransferOutcome, kind: FailureKind | None) -> PushRecord:
    return PushRecord(protocol="ssh", repeat=1, branch="b", started_at="", outcome=outcome,
                      failure_kind=kind, last_line="ssh: connect to host: No route to host",
                      wall_s=0.02, pack_bytes=3_146_449, rate_bytes_per_s=None,
                      http_version=None, alpn=None, post_s=None, curl_last_info=None,
                      phases=None, capture=None)


@pytest.mark.parametrize("kind", list(FailureKind))
def test_the_engine_reads_the_kind_the_probe_recorded(kind: FailureKind) -> None:
    """No mapping between the layers: every recorded kind reaches the engine as it is."""
    assert push_result(_record("failed", kind)).error_kind is kind


@pytest.mark.parametrize(("outcome", "expected"), [("hung", FailureKind.HUNG),
                                                   ("failed", FailureKind.OTHER),
                                                   ("interrupted", FailureKind.INTERRUPTED)])
def test_a_failed_push_recorded_without_a_kind_gets_one(outcome: TransferOutcome,
                                                         expected: FailureKind) -> None:
    assert push_result(_record(outcome, None)).error_kind is expected


def test_a_measured_push_has_no_kind() -> None:
    assert {"ok", "bounded"} == MEASURED_OUTCOMES
    assert push_result(_record("ok", None)).error_kind is None


def test_an_unreachable_push_counts_as_refused_where_refusals_are_evidence() -> None:
    """``unreachable`` (an ICMP answer to the SYN) is a refusal for every culprit that
    explains refusals, as ``refused`` is."""
    assert {FailureKind.REFUSED, FailureKind.UNREACHABLE} == REFUSALS
    for culprit in ("firewall-reset", "ssh-maxstartups", "listen-backlog-overflow"):
        assert EXPLAINED_BY[culprit] >= REFUSALS
    assert not REFUSALS & EXPLAINED_BY["edge-backend-errors"]


def test_a_kind_round_trips_through_the_observations_json() -> None:
    push = PushObservation(duration_s=1.0, bytes=5, ok=False, error_kind=FailureKind.HOST_KEY)
    data = to_jsonable(push)
    assert data["error_kind"] == "host-key"
    assert from_jsonable(PushObservation, data, where="push").error_kind is FailureKind.HOST_KEY


def test_redaction_keeps_the_recorded_states_typed() -> None:
    """The manifest is redacted before it is written; its enums stay enums."""
    record = replace(_record("failed", FailureKind.RESET), cleanup=RefCleanup.LEFTOVER,
                     last_line="reset by https://user:hunter2@host/r.git")
    clean = redact_tree(record, ["hunter2"])
    assert clean.failure_kind is FailureKind.RESET and clean.cleanup is RefCleanup.LEFTOVER
    assert "hunter2" not in clean.last_line


def test_the_bytes_a_push_moved_reach_the_engine() -> None:
    """A stalled push's moved bytes (the monitor's bytes_acked) reach the engine's push; an
    observations file written before the field reads as not known."""
    record = replace(_record("stalled", FailureKind.HUNG), moved_bytes=959)
    push = push_result(record)
    assert (push.moved_bytes, push.bytes) == (959, 3_146_449)
    assert push_result(replace(record, moved_bytes=None)).moved_bytes is None
    old = to_jsonable(push)
    del old["moved_bytes"]
    assert from_jsonable(PushObservation, old, where="push").moved_bytes is None
