"""Issue 36 item 2's acceptance: `gitnetdiag watch` runs fetch cycles, scraped by a real
Prometheus.

Two labs whose ``main`` serves 6 MiB of random data (``fetch_history="random"``): the
``writer`` target pushes (2 MiB) then clones (``direction: both``) its lab, the ``reader``
target only clones its own (``direction: fetch``, native downloads included). Prometheus's
query API must return the push and the clone rate of every protocol with their
``direction`` labels, the reader's clone rates and no push series of it; and the reader's
cycles write nothing on its server: every file under the lab's bare repository has the
same bytes (and the same set of files) after the exporter stopped as before it started.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest

from gitnetdiag.model.lab.state import LabState
from tests.conftest import LabFactory
from tests.watch.test_watch_lab import Prometheus, Vector, free_port, running

# The fail lane: two labs of its own (lab_factory); it asserts that every rate is there
# (above zero) and that a fetch writes nothing, no rate's value (77 s off the busy lane)
pytestmark = [pytest.mark.lab, pytest.mark.lab_lane("fail")]

PROTOCOLS = ("h1", "h2", "ssh")


def repository_bytes(state: LabState) -> dict[str, str]:
    """Every file under the lab's bare repository (refs, objects, packs, config, logs)
    -> the SHA-256 of its bytes; directories by name, so an empty one made counts too."""
    root = Path(state.repo_path)
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if path.is_symlink():
            found[name] = "symlink " + str(path.readlink())
        elif path.is_dir():
            found[name] = "directory"
        else:
            found[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def rates(vector: Vector) -> dict[tuple[str, str, str], float]:
    return {(r["metric"]["target"], r["metric"]["direction"], r["metric"]["protocol"]):
            float(r["value"][1]) for r in vector}


def test_prometheus_scrapes_push_and_fetch_cycles_and_a_fetch_writes_nothing(
        lab_factory: LabFactory, tmp_path: Path) -> None:
    prometheus_exe = shutil.which("prometheus")
    assert prometheus_exe, "prometheus is missing: scripts/setup.sh installs it"
    writer = lab_factory("healthy", fetch_history="random")
    reader = lab_factory("healthy", fetch_history="random")
    before = repository_bytes(reader)
    assert any(name.startswith("objects/") for name in before), "the lab's repo is empty"
    exporter_port, prometheus_port = free_port(), free_port()
    (tmp_path / "watch.yaml").write_text(f"""
listen: 127.0.0.1:{exporter_port}
runs_dir: {tmp_path / "runs"}
keep_runs: 3
targets:
  - name: writer
    lab: {writer.instance}
    direction: both
    interval: 1s
    size: 2MiB
    timeout: 30s
    native: false
  - name: reader
    lab: {reader.instance}
    direction: fetch
    interval: 1s
    timeout: 30s
""")
    (tmp_path / "prometheus.yml").write_text(f"""
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: gitnetdiag
    static_configs:
      - targets: ["127.0.0.1:{exporter_port}"]
""")
    exporter_argv = [sys.executable, "-m", "gitnetdiag", "watch", "--config",
                     str(tmp_path / "watch.yaml")]
    prometheus_argv = [prometheus_exe, f"--config.file={tmp_path / 'prometheus.yml'}",
                       f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                       f"--web.listen-address=127.0.0.1:{prometheus_port}"]
    wanted = {("writer", direction, p) for direction in ("push", "fetch") for p in PROTOCOLS}
    wanted |= {("reader", "fetch", p) for p in PROTOCOLS}
    with running(exporter_argv, tmp_path / "watch.log") as exporter, \
            running(prometheus_argv, tmp_path / "prometheus.log"):
        prom = Prometheus(prometheus_port)
        found = rates(prom.wait(
            "gitnetdiag_last_transfer_rate_bytes_per_second",
            lambda r: wanted <= set(rates(r)), 240,
            "no push and clone rate for every protocol of both targets"))
        assert set(found) == wanted, found  # the reader never pushes
        assert all(rate > 0 for rate in found.values()), found
        success = prom.query('gitnetdiag_probe_success{target="reader"}')
        assert {r["metric"]["direction"] for r in success} == {"fetch"}, success
        assert all(r["value"][1] == "1" for r in success), success
        verdicts = prom.query("gitnetdiag_verdict == 1")
        assert {(r["metric"]["target"], r["metric"]["direction"]) for r in verdicts} == {
            ("writer", "push"), ("writer", "fetch"), ("reader", "fetch")}, verdicts
        scores = prom.query('gitnetdiag_culprit_score{target="reader"}')
        assert scores and {r["metric"]["direction"] for r in scores} == {"fetch"}
        observed = prom.query('gitnetdiag_transfer_rate_bytes_per_second_count'
                              '{direction="fetch",protocol="h2"}')
        assert {r["metric"]["target"] for r in observed} == {"writer", "reader"}, observed
        assert exporter.poll() is None, "the exporter exited"
    print("rates MiB/s: " + ", ".join(f"{t} {d} {p} {v / 2**20:.1f}"
                                      for (t, d, p), v in sorted(found.items())))
    after = repository_bytes(reader)
    assert after == before, {name: (before.get(name), after.get(name))
                             for name in set(before) | set(after)
                             if before.get(name) != after.get(name)}
    runs = sorted(p for p in (tmp_path / "runs" / "reader").iterdir() if p.is_dir())
    assert runs and all((p / "fetch.json").is_file() and not (p / "manifest.json").exists()
                        for p in runs), runs
    both = sorted(p.name for p in (tmp_path / "runs" / "writer").iterdir() if p.is_dir())
    assert any(name.endswith("-fetch") for name in both), both
    # A both cycle's RUN saves the one report of both directions (the clones' own beside it
    # in RUN-fetch), never the pushes' alone: a cycle the exporter stopped in its clones
    # keeps the pushes' report that says the clones did not finish.
    saved = [json.loads(report.read_text()) for name in both if not name.endswith("-fetch")
             if (report := tmp_path / "runs" / "writer" / name / "report.json").is_file()]
    assert any(d["schema"] == "gitnetdiag.both-report/1" and set(d["parts"]) == {
        "push", "fetch"} for d in saved), [d.get("schema") for d in saved]
    assert all(d["schema"] == "gitnetdiag.both-report/1"
               or d["headline"].startswith("Clones: not measured (") for d in saved), saved
