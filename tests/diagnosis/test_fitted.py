"""The fitted confidences: the shipped table matches the catalogue, and the matrix
scoring and fitting give known answers on crafted runs."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from gitnetdiag.diagnosis import CULPRITS, diagnose
from gitnetdiag.diagnosis.calibration import Calibration, fit_platt
from gitnetdiag.diagnosis.culprits.fitted import FITTED, HAND_WEIGHTED, MATRIX
from gitnetdiag.diagnosis.matrix import (
    Fit,
    MatrixRun,
    fit_calibrations,
    hand_weighted,
    ranked_ids,
    raw_hits,
    score_matrix,
    top1_accuracy,
    with_calibrations,
)
from gitnetdiag.diagnosis.observations import Observations
from gitnetdiag.lab.spec import FAULT_CULPRIT
from tests.diagnosis import examples

BUNDLE = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "fault-matrix.json.gz"
REGENERATE = ("re-fit: PYTHONPATH=. python benchmarks/fault_matrix.py "
              "--from benchmarks/data/fault-matrix.json.gz --fit (new faults: run them with "
              "--fault F --results DIR, then add --from DIR to that command)")


UPLOAD_FITTED = {culprit_id: cal for (d, culprit_id), cal in FITTED.items() if d == "upload"}
UPLOAD_HAND = {culprit_id: why for (d, culprit_id), why in HAND_WEIGHTED.items() if d == "upload"}


def test_every_culprit_is_fitted_or_explicitly_hand_weighted() -> None:
    """The shipped table names every registered culprit once per direction it is fitted in:
    each upload culprit in the upload rows, each download-only one in the download rows
    (a culprit of both directions keeps its upload row on clones), and nothing else."""
    assert not set(FITTED) & set(HAND_WEIGHTED)
    for direction in ("upload", "download"):
        ids = {c.id for c in CULPRITS if c.directions == frozenset({direction})
               or (direction == "upload" and c.judges("upload"))}
        rows = {culprit_id for d, culprit_id in (*FITTED, *HAND_WEIGHTED) if d == direction}
        assert rows == ids, (direction, REGENERATE)
        assert "commit" in MATRIX[direction]
    assert all(reason for reason in HAND_WEIGHTED.values())


def test_fitted_culprits_come_from_a_lab_fault_and_are_sane() -> None:
    """Only culprits some lab fault produces are fitted; each fit saw its fault, and never
    lowers the confidence as the raw score grows."""
    produced = {c for c in FAULT_CULPRIT.values() if c is not None}
    for culprit_id, cal in UPLOAD_FITTED.items():
        assert culprit_id in produced, culprit_id
        assert cal.positives >= 1 and cal.slope >= 0, (culprit_id, cal)
        assert math.isfinite(cal.intercept) and math.isfinite(cal.slope)


def test_a_finding_reports_the_shipped_confidence() -> None:
    """The h2 finding of the slow edge example scores its calibrated raw score."""
    obs = examples.slow_h2_edge()
    culprit = next(c for c in CULPRITS if c.id == "h2-flow-control-window")
    raw = raw_hits(obs)[culprit.id]
    finding = culprit(obs)
    assert finding is not None
    cal = UPLOAD_FITTED.get(culprit.id)
    expected = cal.confidence(raw) if cal else min(1.0, raw)
    assert finding.score == pytest.approx(expected, abs=1e-3)


def test_score_matrix_counts_tp_fp_fn_as_documented() -> None:
    """Three runs: the right first culprit (TP) with a secondary (FP), a miss ranked second
    (FN for it, FP for the one ahead), and a healthy run with a culprit (FP)."""
    obs = examples.healthy()
    runs = [
        MatrixRun(name="a-r1", fault="a", expected="x", observations=obs),
        MatrixRun(name="b-r1", fault="b", expected="y", observations=obs),
        MatrixRun(name="healthy-r1", fault="healthy", expected=None, observations=obs),
    ]
    rankings = [["x", "z"], ["x", "y"], ["z"]]
    tallies = score_matrix(runs, rankings)
    assert (tallies["x"].tp, tallies["x"].fp, tallies["x"].fn) == (1, 1, 0)
    assert (tallies["y"].tp, tallies["y"].fp, tallies["y"].fn) == (0, 0, 1)
    assert (tallies["z"].tp, tallies["z"].fp, tallies["z"].fn) == (0, 2, 0)
    assert tallies["x"].precision == 0.5 and tallies["x"].recall == 1.0
    assert tallies["y"].precision is None and tallies["y"].recall == 0.0
    assert top1_accuracy(runs, rankings) == pytest.approx(1 / 3)


def test_fit_on_crafted_runs() -> None:
    """Four slow-edge runs injected as the h2 fault, two healthy: the h2 culprit fires only
    with its fault, so its fit is that of four positives at its raw score; culprits no fault
    produces keep their hand weights and say why; the fitted ranking scores with it."""
    slow, healthy = examples.slow_h2_edge(), examples.healthy()
    runs = [MatrixRun(name=f"h2-r{i}", fault="h2-small-window",
                      expected="h2-flow-control-window", observations=slow) for i in range(4)]
    runs += [MatrixRun(name=f"healthy-r{i}", fault="healthy", expected=None,
                       observations=healthy) for i in range(2)]
    fits = fit_calibrations(runs)
    assert set(fits) == {c.id for c in CULPRITS if c.judges("upload")}
    h2 = fits["h2-flow-control-window"].calibration
    raw = raw_hits(slow)["h2-flow-control-window"]
    assert h2 == fit_platt([raw] * 4, [True] * 4)
    assert (h2.positives, h2.negatives) == (4, 0)
    assert fits["slow-storage"].calibration is None
    assert "no lab fault" in fits["slow-storage"].reason
    fitted = with_calibrations(fits)
    top = diagnose(slow, culprits=fitted).findings[0]
    assert top.id == "h2-flow-control-window"
    assert top.score == pytest.approx(h2.confidence(raw), abs=1e-3)
    assert ranked_ids(healthy, fitted) == []


def test_too_few_firings_keep_the_hand_weights() -> None:
    slow = examples.slow_h2_edge()
    runs = [MatrixRun(name="h2-r1", fault="h2-small-window", expected="h2-flow-control-window",
                      observations=slow)]
    fit = fit_calibrations(runs)["h2-flow-control-window"]
    assert fit.calibration is None and "fired 1 time" in fit.reason


def test_hand_weighted_and_given_calibrations() -> None:
    """With ``fitted=False`` a finding's score is the raw score clipped to 0..1, whatever the
    shipped table says; a calibration given to the culprit wins (a = b = 0: 0.5)."""
    obs = examples.slow_h2_edge()
    raw = raw_hits(obs)["h2-flow-control-window"]
    findings = diagnose(obs, culprits=hand_weighted()).findings
    h2 = next(f for f in findings if f.id == "h2-flow-control-window")
    assert h2.score == pytest.approx(min(1.0, raw), abs=1e-3)
    even = Calibration(intercept=0.0, slope=0.0, positives=1, negatives=1)
    forced = with_calibrations({"h2-flow-control-window": Fit(calibration=even, reason="")})
    h2 = next(f for f in diagnose(obs, culprits=forced).findings
              if f.id == "h2-flow-control-window")
    assert h2.score == 0.5


def test_shipped_table_is_the_fit_of_the_shipped_matrix() -> None:
    """Re-fitting the matrix bundle in benchmarks/data gives exactly the shipped table: the
    confidences are the measurement's, not edited by hand (a detector change or a new culprit
    needs the re-fit, one command without a lab)."""
    bundle = json.loads(gzip.decompress(BUNDLE.read_bytes()))
    runs = [MatrixRun(name=row["run_dir"], fault=row["fault"],
                      expected=FAULT_CULPRIT.get(row["fault"]),
                      observations=Observations.from_dict(bundle["observations"][row["run_dir"]]))
            for row in bundle["index"]["runs"] if row["run_dir"] in bundle["observations"]]
    assert len(runs) >= 2 * len(UPLOAD_FITTED)
    fits = fit_calibrations(runs)
    refit = {c: f.calibration for c, f in fits.items() if f.calibration is not None}
    reasons = {c: f.reason for c, f in fits.items() if f.calibration is None}
    assert (refit, reasons) == (UPLOAD_FITTED, UPLOAD_HAND), REGENERATE
    assert MATRIX["upload"].startswith(f"{len(runs)} runs")
