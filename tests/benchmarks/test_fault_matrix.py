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
