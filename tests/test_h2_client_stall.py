"""A hung HTTP/2 push whose client stopped with credit left: from the recorded frames to
the ``client-http-stack`` finding.

The two frame files are tshark's fields of two pushes recorded in the lab
(``probe --lab --full --protocols h2`` against ``h2-small-window``, libcurl 7.88.1):
push 4 hung, push 1 completed on the same edge.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from gitnetdiag.analysis.h2ledger import (
    client_stopped_with_credit,
    h2_ledgers_from_rows,
    parse_tshark_fields,
)
from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.observations import H2ClientStall, PushObservation
from gitnetdiag.pipeline._h2stall import h2_client_stall
from gitnetdiag.rundir.records import PushRecord
from tests.diagnosis import examples

DATA = Path(__file__).parent / "data"
STALLED = DATA / "h2-client-stall.http2.tsv"
COMPLETE = DATA / "h2-complete.http2.tsv"


def _ledgers(path: Path):  # type: ignore[no-untyped-def]
    return h2_ledgers_from_rows(parse_tshark_fields(path.read_text()))


def test_the_hung_push_stopped_short_with_credit_left() -> None:
    (ledger,) = _ledgers(STALLED)
    stop = client_stopped_with_credit(ledger)
    assert stop is not None and stop.stream_id == 5
    assert stop.sent_bytes == 1_048_449
    assert stop.stream_credit_left_bytes == 65_535  # the edge's whole initial window
    assert stop.connection_credit_left_bytes > 1_000_000_000


def test_the_completed_push_ended_its_stream() -> None:
    (ledger,) = _ledgers(COMPLETE)
    assert client_stopped_with_credit(ledger) is None
    upload = max(ledger.uploads, key=lambda u: u.ledger.bytes_sent)
    assert upload.finished and upload.ledger.bytes_sent == 1_049_217


def _record(repeat: int, outcome: str, wall_s: float, frames: str | None) -> PushRecord:
    return PushRecord(protocol="h2", repeat=repeat, branch="b", started_at="", outcome=outcome,
                      failure_kind=None if outcome == "ok" else outcome, last_line="",
                      wall_s=wall_s, pack_bytes=1_051_549, rate_bytes_per_s=None,
                      http_version="HTTP/2", alpn="h2", post_s=None, curl_last_info=None,
                      phases=None, capture=None,
                      artifacts={"http2_frames": frames} if frames else {})


def test_the_pipeline_reads_the_stall_from_the_probes_frames(tmp_path: Path) -> None:
    shutil.copy(STALLED, tmp_path / "h2-4.http2.tsv")
    shutil.copy(COMPLETE, tmp_path / "h2-1.http2.tsv")
    records = [_record(1, "ok", 1.3, "h2-1.http2.tsv"), _record(4, "hung", 20.0, "h2-4.http2.tsv")]
    found = h2_client_stall(tmp_path, records)
    assert found.notes == ()
    stall = found.value
    assert stall is not None and (stall.push, stall.stream_id) == (4, 5)
    assert stall.idle_s == pytest.approx(20.0 - 0.977999, abs=0.01)
    assert "h2-4.http2.tsv stream 5" in stall.source


def test_a_broken_frames_file_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "h2-4.http2.tsv").write_text("not\ta tshark line\n")
    broken = h2_client_stall(tmp_path, [_record(4, "hung", 20.0, "h2-4.http2.tsv")])
    assert broken.value is None
    assert len(broken.notes) == 1 and "h2-4.http2.tsv: not read" in broken.notes[0]
    gone = h2_client_stall(tmp_path, [_record(4, "hung", 20.0, "gone.tsv")])
    assert gone.value is None
    assert len(gone.notes) == 1 and "gone.tsv" in gone.notes[0]


def _stalled_run(*, stall: bool):  # type: ignore[no-untyped-def]
    obs = examples.healthy()
    h2 = obs.protocols["h2"]
    hung = PushObservation(duration_s=20.0, bytes=h2.pushes[0].bytes, ok=False, error_kind="hung",
                      error_message="no progress within 20 s")
    seen = H2ClientStall(source="h2-4.http2.tsv stream 5 (decrypted)", push=4, stream_id=5,
                         sent_bytes=1_048_449, stream_credit_left_bytes=65_535,
                         connection_credit_left_bytes=2_147_483_647, idle_s=19.0)
    h2 = replace(h2, pushes=(*h2.pushes, hung), h2_client_stall=seen if stall else None)
    return replace(obs, run=replace(obs.run, libcurl_version="7.88.1"),
                   protocols={**obs.protocols, "h2": h2})


def test_client_http_stack_ranks_the_stall_with_its_evidence() -> None:
    top = diagnose(_stalled_run(stall=True)).findings[0]
    assert top.id == "client-http-stack" and top.cost_protocol == "h2"
    assert "libcurl 7.88.1 stopping before the end of the request body" in top.summary
    credit = next(e for e in top.evidence if e.what.endswith("stream send credit left"))
    assert credit.value == 65_535 and credit.unit == "B"
    assert "http.version HTTP/1.1" in top.fix and "Upgrade libcurl 7.88.1" in top.fix
    assert top.cost_s > 5.0  # a 20 s hang in one push of four, with a redo


def test_without_the_frames_a_hang_is_not_blamed_on_the_client() -> None:
    ids = [f.id for f in diagnose(_stalled_run(stall=False)).findings]
    assert "client-http-stack" not in ids


def test_the_hang_is_the_clients_not_the_windows_when_the_frames_say_so() -> None:
    """The slow edge's run with a hung push: without the frames the window culprit carries
    the hang; with them the client's stack does, and the window keeps its slowdown."""
    base = examples.slow_h2_edge()
    plain = {f.id: f for f in diagnose(base).findings}
    seen = H2ClientStall(source="h2-3.http2.tsv stream 5 (decrypted)", push=3, stream_id=5,
                         sent_bytes=30_000_000, stream_credit_left_bytes=65_535,
                         connection_credit_left_bytes=10_000_000, idle_s=30.0)
    h2 = replace(base.protocols["h2"], h2_client_stall=seen)
    found = {f.id: f for f in diagnose(replace(base, protocols={**base.protocols,
                                                                "h2": h2})).findings}
    window = "h2-flow-control-window"
    assert "client-http-stack" not in plain
    assert found[window].cost_s < plain[window].cost_s
    assert found["client-http-stack"].cost_s == pytest.approx(
        plain[window].cost_s - found[window].cost_s, rel=0.05)
