"""The download direction of the fault matrix, offline: a small recorded matrix (crafted clone
observations in a bundle, no lab) scored and fitted, the generated table written, and a fetch
finding's confidence read from the fitted table."""

from __future__ import annotations

import gzip
import importlib.util
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from benchmarks import fault_matrix as fm
from benchmarks import fault_matrix_fetch as fmf
from benchmarks import matrix_files as mf
from gitnetdiag.diagnosis.calibration import Calibration
from gitnetdiag.diagnosis.culprits import fitted
from gitnetdiag.diagnosis.culprits.fitted import FITTED, HAND_WEIGHTED, MATRIX
from gitnetdiag.diagnosis.engine import MIN_SCORE
from gitnetdiag.diagnosis.matrix import MatrixRun, score_matrix
from gitnetdiag.diagnosis.observations import CaptureMetrics
from gitnetdiag.lab.spec import FETCH_FAULT_CULPRIT, FETCH_SHARED_FAULT_CULPRIT
from gitnetdiag.serial import to_jsonable
from tests.acceptance.test_fetch_shared_lab import EXTRA_ARGS as SHARED_LAB_EXTRA_ARGS
from tests.acceptance.test_fetch_shared_lab import PROTOCOLS as SHARED_LAB_PROTOCOLS
from tests.diagnosis.test_transfer_culprits import HEALTHY, PHASES, TCP
from tests.diagnosis.transfer_cases import ranked

CLAMP = "client-tcp-receive-window-clamp"
# The client's window clamped (raw score 0.85: buffer at tcp_rmem's maximum).
CLAMPED = replace(
    HEALTHY, moved_bytes=3_000_000, measured_s=5.0, rate_bytes_per_s=600_000.0,
    client_rmem_max_bytes=65_536,
    tcp=replace(TCP, advertised_window_max_bytes=32_000, receive_buffer_max_bytes=65_536))
# A lossy path that looks window-bound to the client without its tcp_rmem (raw score 0.6):
# a false clamp the fit should discount.
LOSSY = replace(CLAMPED, client_rmem_max_bytes=None,
                tcp=replace(TCP, advertised_window_max_bytes=32_000,
                            receive_buffer_max_bytes=None))
SLOW_PACK = replace(HEALTHY, phases=replace(PHASES, first_pack_byte_s=6.15, total_s=8.0),
                    wall_s=8.0)

ROWS = [("client-rmem-clamp", "20ms", 1, CLAMPED), ("client-rmem-clamp", "20ms", 2, CLAMPED),
        ("client-rmem-clamp", "80ms", 1, CLAMPED), ("client-rmem-clamp", "80ms", 2, CLAMPED),
        ("slow-pack-generation", "20ms", 1, SLOW_PACK),
        ("slow-pack-generation", "80ms", 1, SLOW_PACK),
        ("healthy", "20ms", 1, HEALTHY), ("healthy", "80ms", 1, HEALTHY),
        ("loss", "20ms", 1, LOSSY), ("loss", "80ms", 1, LOSSY), ("loss", "80ms", 2, LOSSY)]


def _bundle(path: Path, rows: list[tuple[str, str, int, Any]] = ROWS,
            stale: tuple[str, ...] = ()) -> Path:
    """A recorded fetch matrix as ``--fit`` ships it: the index and each run's clones, each
    row's lab set up as its fault's is now (``stale``: those faults' rows without)."""
    runs, observations = [], {}
    for fault, rtt, repeat, obs in rows:
        name = f"{fault}-{rtt}-r{repeat}"
        runs.append({"fault": fault, "rtt": rtt, "repeat": repeat, "run_dir": name,
                     "expected": fmf.expected_culprit(fault)})
        if fmf.fetch_lab_args(fault) and fault not in stale:
            runs[-1]["lab_args"] = list(fmf.fetch_lab_args(fault))
        observations[name] = [to_jsonable(obs), to_jsonable(replace(obs, protocol="git"))]
    index = {"started": "2026-11-26 14:00 UTC", "commit": "abc1234", "size": "-",
             "repeats": 2, "rtts": ["20ms", "80ms"], "direction": "fetch", "runs": runs}
    path.write_bytes(gzip.compress(json.dumps(
        {"index": index, "observations": observations, "missing": []}).encode()))
    return path


def _runs(tmp_path: Path) -> list[MatrixRun]:
    index, observations, _ = fmf.read_fetch_matrix(_bundle(tmp_path / "m.json.gz"))
    return fmf.fetch_runs(index, observations)


def test_faults_and_expected_culprits_follow_the_spec() -> None:
    """Every download fault runs and expects its culprit; healthy and loss expect none; a
    push fault whose culprit is a download culprit too (slow-auth) expects it."""
    faults = fmf.fetch_faults()
    assert set(FETCH_FAULT_CULPRIT) <= set(faults) and "healthy" in faults
    for fault, culprit in FETCH_FAULT_CULPRIT.items():
        assert fmf.expected_culprit(fault) == culprit
    assert fmf.expected_culprit("healthy") is None
    assert fmf.expected_culprit("slow-auth") == "slow-ref-advertisement"
    assert fmf.fetch_args("slow-pack-generation", "3MiB") == (
        "--direction", "fetch", "--protocols", "h1,git")


def test_shared_faults_run_on_the_lab_test_setup() -> None:
    """A push fault whose shared culprit a clone ranks runs on a lab serving random data,
    over the lab test's transports (tests/acceptance/test_fetch_shared_lab.py); a download
    fault brings its own history."""
    assert set(FETCH_SHARED_FAULT_CULPRIT) <= set(fmf.fetch_faults())
    assert fmf.fetch_lab_args("loss") == ("--fetch-history", "random")
    assert fmf.fetch_args("loss", "-") == ("--direction", "fetch", "--protocols", "h1,git")
    assert fmf.fetch_lab_args("client-rmem-clamp") == fmf.fetch_lab_args("healthy") == ()
    for fault, protocols in SHARED_LAB_PROTOCOLS.items():
        assert fmf.fetch_args(fault, "-")[-2:] == ("--protocols", protocols), fault
    for fault, extra in SHARED_LAB_EXTRA_ARGS.items():  # the stall timeout of the black hole
        args = fmf.fetch_args(fault, "-")
        assert any(args[i:i + len(extra)] == extra for i in range(len(args))), fault


def test_runs_of_an_older_lab_setup_are_left_out_and_said_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The loss runs recorded on the lab without random data (nothing to clone) are neither
    scored nor shipped: the report names them; the rest of the matrix is scored."""
    source = _bundle(tmp_path / "old.json.gz", stale=("loss",))
    index, observations, missing = fmf.drop_stale(*fmf.read_fetch_matrix(source))
    assert [row["fault"] for row in index["runs"]].count("loss") == 0
    assert len(index["runs"]) == len(observations) == len(ROWS) - 3
    assert missing[0] == ("loss-20ms-r1 (lab without `--fetch-history random`: superseded)")
    assert fmf.report_and_fit_fetch([source], write=False) is not None
    out = capsys.readouterr().out
    assert "not scored (3): loss-20ms-r1" in out and out.count("8 runs,") == 1


def test_shared_culprits_are_scored_with_their_evidence(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A shared culprit gets its row: the loss runs whose clones carried a capture with the
    server's retransmissions rank packet-loss first (TP), the one without a capture misses
    it (FN), and the row says how many of its runs had a capture."""
    retransmitting = CaptureMetrics(source="capture", handshake_seen=True,
                                    retransmission_rate=0.02, retransmitted_bytes=60_000,
                                    min_rtt_s=0.02, median_rtt_s=0.021, mss_bytes=1448,
                                    advertised_window_max_bytes=3_000_000)
    slow = replace(HEALTHY, moved_bytes=3_000_000, measured_s=10.0, rate_bytes_per_s=300_000.0)
    rows = [("loss", "20ms", 1, replace(slow, capture=retransmitting)),
            ("loss", "80ms", 1, replace(slow, capture=retransmitting)),
            ("loss", "80ms", 2, slow), ("healthy", "20ms", 1, HEALTHY)]
    score = fmf.report_and_fit_fetch([_bundle(tmp_path / "m.json.gz", rows)], write=False)
    assert score is not None and score.runs == len(rows)
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| `packet-loss` (shared)"))
    assert "| `loss` |" in row and "| 2/0/1 | 1.00 | 0.67 |" in row
    assert "clones captured in 2 of 3 runs of its faults" in row


def test_recorded_matrix_round_trips_and_fires_as_recorded(tmp_path: Path) -> None:
    """The bundle's clones come back as the transfers of a download the detectors fire on
    alike."""
    runs = _runs(tmp_path)
    assert [r.name for r in runs][:2] == ["client-rmem-clamp-20ms-r1", "client-rmem-clamp-20ms-r2"]
    assert runs[0].observations.transfers[0] == CLAMPED
    assert runs[0].observations.run.transfer == "download"
    assert fmf.fetch_raw_hits(runs[0]) == {CLAMP: 0.85}
    assert fmf.fetch_raw_hits(runs[-1]) == {CLAMP: 0.6}
    assert fmf.fetch_raw_hits(runs[6]) == {}


def test_fit_and_score_on_the_recorded_matrix(tmp_path: Path) -> None:
    """The clamp is fitted on 4 positives and 3 negatives: the lossy runs' raw score (0.6)
    gets a lower confidence than the hand weights give it, the clamped runs' (0.85) a higher
    one, and every clamp run still ranks it first (the pull towards the hand weights keeps
    three negatives from dropping it under the threshold). Culprits that fired too rarely,
    or that no fault produces, keep their hand weights and say why."""
    runs = _runs(tmp_path)
    fits = fmf.fit_fetch_calibrations(runs)
    assert set(fits) == set(fmf.download_ids())
    cal = fits[CLAMP].calibration
    assert cal is not None and (cal.positives, cal.negatives) == (4, 3)
    assert MIN_SCORE < cal.confidence(0.6) < 0.5 < 0.6 < cal.confidence(0.85)
    assert fits["server-pack-generation"].reason == "fired 2 times in the matrix (< 3)"
    assert fits["server-send-buffer"].reason == "no lab fault in the matrix produces it"
    hand = score_matrix(runs, [fmf.run_ranked_ids(r, {}) for r in runs])
    scored = score_matrix(runs, [fmf.run_ranked_ids(r, fits) for r in runs])
    assert (hand[CLAMP].tp, hand[CLAMP].fp, hand[CLAMP].fn) == (4, 3, 0)
    assert (scored[CLAMP].tp, scored[CLAMP].fp, scored[CLAMP].fn) == (4, 3, 0)
    assert scored["server-pack-generation"].recall == 1.0


def test_fit_writes_module_bundle_and_docs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """``--direction fetch --from BUNDLE --fit`` offline: the table shows hand and fitted side
    by side, the generated module (do not edit, MATRIX provenance) holds the fit in its
    download rows and keeps the upload rows as shipped, and the docs section between the
    markers is rewritten."""
    module, docs, bundle = tmp_path / "fitted.py", tmp_path / "culprits.md", tmp_path / "b.gz"
    module.write_text("")
    docs.write_text(f"head\n{fmf.DOCS_START}\nold\n{fmf.DOCS_END}\ntail\n")
    monkeypatch.setattr(mf, "FITTED_MODULE", module)
    monkeypatch.setattr(fmf, "FETCH_BUNDLE", bundle)
    monkeypatch.setattr(mf, "DOCS", docs)
    monkeypatch.setattr(fm, "ROOT", tmp_path)
    monkeypatch.setattr(mf, "ROOT", tmp_path)
    source = _bundle(tmp_path / "recorded.json.gz")
    assert fmf.report_and_fit_fetch([source], write=True) is not None
    out = capsys.readouterr().out
    assert (f"| `{CLAMP}` | `client-rmem-clamp` | 7 | 4/3/0 | 0.57 | 1.00 | 4/3/0 | 0.57 "
            "| 1.00 | loss-20ms x1, loss-80ms x2 | fitted: a = -0.5736, b = 1.0567 (4 positive, "
            "3 negative) |") in out
    assert "11 runs, 2026-11-26 14:00 UTC, commit abc1234, RTT 20ms and 80ms" in out
    spec = importlib.util.spec_from_file_location("generated_fitted", module)
    assert spec is not None and spec.loader is not None
    generated: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generated)
    assert "do not edit" in module.read_text()
    assert generated.MATRIX["download"].startswith("11 runs, 2026-11-26 14:00 UTC, commit abc1234")
    assert generated.MATRIX["upload"] == MATRIX["upload"]
    assert {key for key in generated.FITTED if key[0] == "download"} == {("download", CLAMP)}
    assert {k: v for k, v in generated.FITTED.items() if k[0] == "upload"} == {
        k: v for k, v in FITTED.items() if k[0] == "upload"}
    assert generated.HAND_WEIGHTED[("download", "server-pack-generation")].startswith(
        "fired 2 times")
    assert json.loads(gzip.decompress(bundle.read_bytes()))["index"]["runs"][0]["fault"] == (
        "client-rmem-clamp")
    text = docs.read_text()
    assert "old" not in text and "Matrix: 11 runs" in text and text.endswith("tail\n")


def test_a_fetch_finding_reports_the_fitted_confidence(monkeypatch: pytest.MonkeyPatch) -> None:
    """A download ranks with the shipped table's download row: a fitted culprit's raw score
    goes through its calibration, and one calibrated below the threshold is not ranked."""
    cal = Calibration(intercept=-0.5, slope=2.0, positives=4, negatives=2)
    monkeypatch.setitem(fitted.FITTED, ("download", CLAMP), cal)
    [finding] = ranked([CLAMPED])
    assert finding.score == round(cal.confidence(0.85), 3) != 0.85
    assert ranked([CLAMPED], calibrations={})[0].score == 0.85
    monkeypatch.setitem(fitted.FITTED, ("download", CLAMP), replace(cal, intercept=-5.0))
    assert ranked([CLAMPED]) == ()


def test_shipped_fetch_table_covers_every_download_culprit() -> None:
    """Every download culprit is fitted or says why it keeps its hand weights; a fitted one
    saw its fault and never lowers the confidence as its raw score grows."""
    ids = set(fmf.download_ids())
    table = {culprit_id: cal for (d, culprit_id), cal in FITTED.items() if d == "download"}
    hand = {culprit_id for d, culprit_id in HAND_WEIGHTED if d == "download"}
    assert not set(table) & hand
    assert set(table) | hand == ids, (
        "re-fit: PYTHONPATH=. python benchmarks/fault_matrix.py --direction fetch --from "
        "benchmarks/data/fault-matrix-fetch.json.gz --fit")
    assert MATRIX["download"]
    for cal in table.values():
        assert cal.positives >= 1 and cal.slope >= 0


def test_the_shipped_backlog_runs_rank_the_backlog_from_their_burst_and_host_evidence(
        ) -> None:
    """A fetch burst's overflow is seen beside the clones, not in them: the bundle keeps each
    run's bursts and host evidence, and without them the same clones rank nothing."""
    index, observations, _ = fmf.read_fetch_matrix(fmf.FETCH_BUNDLE)
    runs = [run for run in fmf.fetch_runs(index, observations) if run.fault == "tiny-backlog"]
    assert len(runs) >= 2
    for run in runs:
        assert run.observations.bursts and run.observations.host is not None, run.name
        assert fmf.run_ranked_ids(run, {})[:1] == ["listen-backlog-overflow"], run.name
        bare = replace(run, observations=replace(run.observations, bursts=(), host=None))
        assert "listen-backlog-overflow" not in fmf.run_ranked_ids(bare, {}), run.name
