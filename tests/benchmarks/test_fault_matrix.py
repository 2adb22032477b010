"""benchmarks/fault_matrix.py: merging matrices from several sources, and the cells it runs."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import fault_matrix as fm
from tests.diagnosis import examples

SLOW = examples.slow_h2_edge().to_dict()
HEALTHY = examples.healthy().to_dict()


def _results_dir(path: Path, commit: str, rows: list[tuple[str, str, int, dict[str, Any]]],
                 ) -> Path:
    """A results directory as run_matrix leaves it: matrix.json and one observations.json each."""
    runs = []
    for fault, rtt, repeat, obs in rows:
        name = f"{fault}-{rtt}-r{repeat}"
        (path / name).mkdir(parents=True)
        (path / name / "observations.json").write_text(json.dumps(obs))
        runs.append({"fault": fault, "rtt": rtt, "repeat": repeat, "run_dir": name,
                     "expected": None})
    index = {"started": f"day of {commit}", "commit": commit, "size": "3MiB", "repeats": 2,
             "rtts": ["20ms"], "runs": runs}
    (path / fm.INDEX).write_text(json.dumps(index))
    return path


def test_merge_keeps_every_run_and_each_source(tmp_path: Path) -> None:
    """Two directories: every run is kept once, a run of a cell the first source already has
    is renumbered after that cell's last repeat (its observations follow it), and the index
    names each source's commit with its run count; the provenance line names both, with the
    RTTs their runs had."""
    a = _results_dir(tmp_path / "a", "aaa111", [("h2-small-window", "20ms", 1, SLOW),
                                                ("h2-small-window", "20ms", 2, SLOW),
                                                ("healthy", "20ms", 1, HEALTHY)])
    b = _results_dir(tmp_path / "b", "bbb222", [("h2-small-window", "20ms", 1, HEALTHY),
                                                ("loss", "300ms", 1, SLOW)])
    index, observations, missing = fm.read_sources([a, b])
    names = [row["run_dir"] for row in index["runs"]]
    assert names == ["h2-small-window-20ms-r1", "h2-small-window-20ms-r2", "healthy-20ms-r1",
                     "h2-small-window-20ms-r3", "loss-300ms-r1"]
    moved = index["runs"][3]
    assert (moved["repeat"], moved["source"], moved["source_run_dir"]) == (
        3, 1, "h2-small-window-20ms-r1")
    assert observations["h2-small-window-20ms-r3"] == HEALTHY
    assert observations["h2-small-window-20ms-r1"] == SLOW
    assert [(s["commit"], s["runs"]) for s in index["sources"]] == [("aaa111", 3),
                                                                    ("bbb222", 2)]
    assert missing == []
    line = fm.provenance(index, len(fm.matrix_runs(index, observations)))
    assert line.startswith("5 runs: 3 runs of day of aaa111, commit aaa111")
    assert "; 2 runs of day of bbb222, commit bbb222, --size 3MiB, RTT 20ms and 300ms" in line


def test_a_merged_bundle_merges_again_with_its_sources(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundle written from a merge, merged with one more directory, keeps the first two
    sources (their runs still point at them) and adds the third."""
    a = _results_dir(tmp_path / "a", "aaa111", [("loss", "20ms", 1, SLOW)])
    b = _results_dir(tmp_path / "b", "bbb222", [("loss", "20ms", 1, HEALTHY)])
    c = _results_dir(tmp_path / "c", "ccc333", [("healthy", "20ms", 1, HEALTHY)])
    bundle = tmp_path / "bundle.json.gz"
    monkeypatch.setattr(fm, "BUNDLE", bundle)
    monkeypatch.setattr(fm, "ROOT", tmp_path)
    fm.write_bundle(*fm.read_sources([a, b]))
    assert json.loads(gzip.decompress(bundle.read_bytes()))["index"]["sources"][1]["source"] == "b"
    index, observations, _ = fm.read_sources([bundle, c])
    assert [s["commit"] for s in index["sources"]] == ["aaa111", "bbb222", "ccc333"]
    assert [(r["run_dir"], r["source"]) for r in index["runs"]] == [
        ("loss-20ms-r1", 0), ("loss-20ms-r2", 1), ("healthy-20ms-r1", 2)]
    assert observations["loss-20ms-r2"] == HEALTHY


def test_a_single_source_is_read_as_it_is(tmp_path: Path) -> None:
    a = _results_dir(tmp_path / "a", "aaa111", [("loss", "20ms", 1, SLOW)])
    index, _, _ = fm.read_sources([a])
    assert "sources" not in index
    assert fm.provenance(index, 1) == ("1 run, day of aaa111, commit aaa111, --size 3MiB, "
                                       "RTT 20ms, 2 repeats")


def test_a_fault_defined_by_its_rtt_runs_there_as_often_as_the_others() -> None:
    cells = fm.fault_cells(["loss", "ssh-channel-window"], ["20ms", "80ms"], 2)
    assert cells == [("loss", "20ms", 2), ("loss", "80ms", 2), ("ssh-channel-window", "300ms", 4)]


def test_the_upload_table_leaves_the_download_only_culprits_to_the_fetch_matrix() -> None:
    """The push matrix fits only the culprits that judge uploads; its table must not ask for
    the fit of a download-only culprit (it raised KeyError before)."""
    from gitnetdiag.diagnosis.culprits import CULPRITS, DOWNLOAD
    from gitnetdiag.diagnosis.matrix import Fit

    upload = [c.id for c in CULPRITS if c.directions != DOWNLOAD]
    download = [c.id for c in CULPRITS if c.directions == DOWNLOAD]
    assert download, "the catalogue has download-only culprits"
    fits = {cid: Fit(calibration=None, reason="test") for cid in upload}
    rows = fm.matrix_table({}, {}, fits, {}, {})[2:]
    assert [row.split("`")[1] for row in rows] == upload


def test_both_directions_add_their_right_runs() -> None:
    push = fm.Accuracy("push", runs=120, hand=119, fitted=120, held_out=118)
    fetch = fm.Accuracy("fetch", runs=50, hand=50, fitted=49, held_out=48)
    line = fm.both_directions([push, fetch])
    assert "hand weights 169/170" in line
    assert "fitted in sample 169/170" in line
    assert "held out 166/170" in line
    assert "push 120/120 in sample, 118/120 held out" in line
    assert "fetch 49/50 in sample, 48/50 held out" in line


def test_a_source_is_scored_with_its_own_direction(tmp_path: Path) -> None:
    fetch_dir, push_dir = tmp_path / "f", tmp_path / "p"
    for path, index in ((fetch_dir, {"runs": [], "direction": "fetch"}),
                        (push_dir, {"runs": []})):
        path.mkdir()
        (path / fm.INDEX).write_text(json.dumps(index))
    assert fm.source_direction(fetch_dir) == "fetch"
    assert fm.source_direction(push_dir) == "push"
    assert fm.source_direction(fm.BUNDLE) == "push"
    assert fm.source_direction(fm.BUNDLE.with_name("fault-matrix-fetch.json.gz")) == "fetch"


def test_a_fetch_bundle_scored_as_a_push_matrix_is_one_line_with_the_flag(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The shipped fetch bundle without ``--direction fetch``: exit 2, the flag named, no
    traceback (it used to fail deep in the push scorer)."""
    bundle = fm.ROOT / "benchmarks" / "data" / "fault-matrix-fetch.json.gz"
    monkeypatch.setattr("sys.argv", ["fault_matrix.py", "--from", str(bundle)])
    assert fm.main() == 2
    err = capsys.readouterr().err
    assert "holds a fetch matrix" in err and "--direction fetch" in err
    assert "Traceback" not in err
