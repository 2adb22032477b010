"""The lab's fault matrix: every named fault x RTT x repeat, scored per culprit.

    PYTHONPATH=. .venv/bin/python benchmarks/fault_matrix.py          # run, score, print
    PYTHONPATH=. .venv/bin/python benchmarks/fault_matrix.py --fit    # ... and ship the fit
    PYTHONPATH=. .venv/bin/python benchmarks/fault_matrix.py --from runs/fault-matrix-X --fit
    PYTHONPATH=. .venv/bin/python benchmarks/fault_matrix.py --fault loss --rtt 20ms --repeats 1
    # new faults only, then one bundle and one fit of the shipped runs and the new ones:
    PYTHONPATH=. .venv/bin/python benchmarks/fault_matrix.py --fault F ... --results runs/fm-new
    PYTHONPATH=. .venv/bin/python benchmarks/fault_matrix.py \
        --from benchmarks/data/fault-matrix.json.gz --from runs/fm-new --fit

For every fault of ``gitnetdiag.lab.spec.FAULTS`` (read at run time, so new
faults join by themselves) and every ``--rtt`` (a fault defined by its RTT, in
``FAULT_RTTS``, at that RTT) it brings up a private lab instance (root), runs
``gitnetdiag diagnose --lab ... --format json`` with the fault's
``FAULT_PROBE_ARGS`` ``--repeats`` times (bounded pushes of ``--size``),
then takes the lab down. Every run directory (report.json, observations.json,
captures) stays under the results directory, with ``matrix.json`` indexing them.

Scoring (``gitnetdiag.diagnosis.matrix``): the expected culprit of a run is
``FAULT_CULPRIT[fault]`` (none for ``healthy`` and for faults without an entry,
such as ``auth``). Per culprit: TP = expected and ranked first; FN = expected and
not ranked first; FP = ranked at any place above the reporting threshold while
another fault (or none) was injected. Precision = TP / (TP + FP), recall =
TP / (TP + FN). The table is computed twice from the same saved observations,
with the hand-set weights and with the fitted confidences, side by side.

``--from`` repeated merges matrices: the runs of every source are scored and
fitted together, the written bundle holds them all and its index lists each
source's commit, date, size, RTTs and repeats (``merge_matrices``).

``--fit`` turns the matrix's raw detector scores into per-culprit calibrated
confidences (``gitnetdiag.diagnosis.calibration``) and writes
``gitnetdiag/diagnosis/culprits/fitted.py`` and the generated table of
``docs/culprits.md``.

``--direction fetch`` is the download direction's matrix (``FETCH_FAULT_CULPRIT``'s faults
and a few negatives, ``diagnose --lab --direction fetch``; its bundle
``benchmarks/data/fault-matrix-fetch.json.gz``, its fit the download rows of
``culprits/fitted.py``):
``benchmarks/fault_matrix_fetch.py``.

``--direction both`` scores the two matrices in one run and ends with one line for both
(the runs whose first culprit is right, in sample and with each (fault, RTT) cell held out
of its own direction's fit); without ``--from`` it runs both labs (``--results DIR``: its
``push/`` and ``fetch/``)::

    PYTHONPATH=. .venv/bin/python benchmarks/fault_matrix.py --direction both \
        --from benchmarks/data/fault-matrix.json.gz \
        --from benchmarks/data/fault-matrix-fetch.json.gz
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.matrix_files import write_docs, write_fitted
from gitnetdiag.diagnosis.culprits import CULPRITS
from gitnetdiag.diagnosis.matrix import (
    CulpritCounts,
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
from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.lab.spec import (
    FAULT_CULPRIT,
    FAULT_PROBE_ARGS,
    FAULTS,
    SSH_WINDOW_RTT_MS,
    parse_duration_ms,
)
from gitnetdiag.pipeline import observations_from_run

ROOT = Path(__file__).resolve().parent.parent
INDEX = "matrix.json"
BUNDLE = ROOT / "benchmarks" / "data" / "fault-matrix.json.gz"

FAULT_RTTS: dict[str, list[str]] = {"ssh-channel-window": [f"{SSH_WINDOW_RTT_MS:g}ms"]}
"""Faults defined by their RTT run at that RTT only, with the repeats of every RTT the others
get (the same number of runs): at 20 or 80 ms OpenSSH's 2 MiB channel window binds nothing,
and the lab would be the healthy one."""


def fault_cells(faults: list[str], rtts: list[str], repeats: int) -> list[tuple[str, str, int]]:
    """(fault, RTT, repeats) of every lab instance the matrix brings up."""
    cells = []
    for fault in faults:
        own = FAULT_RTTS.get(fault)
        if own:
            cells += [(fault, rtt, repeats * len(rtts) // len(own)) for rtt in own]
        else:
            cells += [(fault, rtt, repeats) for rtt in rtts]
    return cells


def _git_commit() -> str:
    proc = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, timeout=30)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--",
                            "gitnetdiag"], capture_output=True, text=True, timeout=30)
    return proc.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _rtt_label(rtt: str) -> str:
    return rtt.replace(".", "_")


def push_args(fault: str, size: str) -> tuple[str, ...]:
    """``diagnose`` arguments of a push run of ``fault`` (bounded pushes of ``size``)."""
    return ("--size", size, *FAULT_PROBE_ARGS.get(fault, ("--protocols", "h1,h2,ssh")))


def _diagnose(instance: str, args: tuple[str, ...], timeout_s: float,
              out: Path) -> dict[str, Any]:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--lab", "--lab-instance", instance,
         "--timeout", f"{timeout_s:g}", "--format", "json", "--out", str(out), *args],
        capture_output=True, text=True, timeout=max(900.0, 10 * timeout_s),
    )
    wall = time.monotonic() - started
    row: dict[str, Any] = {"exit_code": proc.returncode, "wall_s": round(wall, 1)}
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        row["error"] = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return row
    row["verdict"] = report.get("verdict")
    row["ranked"] = [c["id"] for c in report.get("culprits") or []]
    return row


def run_matrix(results: Path, faults: list[str], rtts: list[str], repeats: int, size: str,
               timeout_s: float, *, direction: str = "push",
               expected: Callable[[str], str | None] = FAULT_CULPRIT.get,
               diagnose_args: Callable[[str, str], tuple[str, ...]] = push_args,
               lab_args: Callable[[str], tuple[str, ...]] = lambda fault: ()) -> None:
    """Run every (fault, RTT) lab and its repeats; append each run to the index as it ends.

    ``expected`` names the culprit a fault must rank first, ``diagnose_args`` the arguments
    of its ``diagnose`` (given the fault and ``size``): the push matrix's by default, the
    download direction's from :mod:`benchmarks.fault_matrix_fetch`; ``lab_args`` the extra
    ``lab up`` arguments of a fault (kept in each run's row)."""
    results.mkdir(parents=True, exist_ok=True)
    index_path = results / INDEX
    index: dict[str, Any] = {
        "started": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _git_commit(), "size": size, "repeats": repeats, "rtts": rtts, "runs": [],
    }
    if direction != "push":
        index["direction"] = direction
    cli = [sys.executable, "-m", "gitnetdiag", "lab"]
    for fault, rtt, cell_repeats in fault_cells(faults, rtts, repeats):
        instance = "fm" + uuid.uuid4().hex[:5]
        try:
            extra = lab_args(fault)
            up = subprocess.run([*cli, "up", "--name", instance, "--fault", fault, "--rtt", rtt,
                                 *extra], capture_output=True, text=True, timeout=600)
            for repeat in range(1, cell_repeats + 1):
                name = f"{fault}-{_rtt_label(rtt)}-r{repeat}"
                row: dict[str, Any] = {"fault": fault, "rtt": rtt, "repeat": repeat,
                                       "expected": expected(fault), "run_dir": name}
                if extra:
                    row["lab_args"] = list(extra)
                if up.returncode != 0:
                    row["error"] = "lab up failed: " + (up.stderr.strip().splitlines()
                                                       or ["?"])[-1]
                else:
                    row.update(_diagnose(instance, diagnose_args(fault, size), timeout_s,
                                              results / name))
                index["runs"].append(row)
                index_path.write_text(json.dumps(index, indent=1) + "\n")
                print(f"{name}: {row.get('wall_s', 0):.0f} s, expected "
                      f"{row['expected']}, ranked {row.get('ranked', row.get('error'))}",
                      file=sys.stderr, flush=True)
        finally:
            # Also when terminated during `lab up`: a half-built instance is taken down.
            subprocess.run([*cli, "down", "--name", instance], capture_output=True,
                           timeout=600)
    index["finished"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    index_path.write_text(json.dumps(index, indent=1) + "\n")


def read_matrix(source: Path, *, reanalyse: bool = False,
                ) -> tuple[dict[str, Any], dict[str, dict[str, Any]], list[str]]:
    """The index, each run's saved observations (as JSON) and the runs without, from a
    results directory or from a bundle (``--fit`` writes ``benchmarks/data``'s).

    With ``reanalyse`` the observations are derived afresh from each run directory's raw
    artifacts by the current pipeline (after an analysis change), not read from the
    ``observations.json`` the run saved.
    """
    if source.is_file():
        bundle = json.loads(gzip.decompress(source.read_bytes()))
        return bundle["index"], bundle["observations"], bundle.get("missing", [])
    index = json.loads((source / INDEX).read_text())
    observations, missing = {}, []
    for row in index["runs"]:
        path = source / row["run_dir"] / "observations.json"
        if reanalyse and (source / row["run_dir"] / "manifest.json").is_file():
            try:
                derived, _ = observations_from_run(source / row["run_dir"])
            except GitnetdiagError as exc:
                missing.append(f"{row['run_dir']} (re-analysis: {exc.message})")
                continue
            observations[row["run_dir"]] = json.loads(json.dumps(derived.to_dict()))
        elif path.is_file():
            observations[row["run_dir"]] = json.loads(path.read_text())
        else:
            missing.append(f"{row['run_dir']} ({row.get('error', 'no observations.json')})")
    return index, observations, missing


def matrix_runs(index: dict[str, Any], observations: dict[str, dict[str, Any]]) -> list[MatrixRun]:
    """The scored runs: each with its expected culprit as ``FAULT_CULPRIT`` says now."""
    return [MatrixRun(name=row["run_dir"], fault=row["fault"],
                      expected=FAULT_CULPRIT.get(row["fault"]),
                      observations=Observations.from_dict(observations[row["run_dir"]]))
            for row in index["runs"] if row["run_dir"] in observations]


def _source_entry(source: Path, index: dict[str, Any], runs: int) -> dict[str, Any]:
    """What one results directory (or single-source bundle) says about where its runs came from."""
    path = source.resolve()
    entry: dict[str, Any] = {
        "source": str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(source),
        "runs": runs}
    entry.update((k, index[k]) for k in ("started", "finished", "commit", "size", "repeats",
                                         "rtts", "reanalysed") if k in index)
    return entry


def merge_matrices(parts: list[tuple[Path, dict[str, Any], dict[str, Any], list[str]]],
                   ) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Several matrices as one: every run of every part, the index listing each part's commit,
    date, size, RTTs and repeats under ``sources`` (each run's ``source`` points there).

    A part that is itself a merged bundle brings its sources along. A run whose directory name
    another part already used (the same fault and RTT run twice) is renumbered after the
    cell's last repeat, so that it stays in its (fault, RTT) cell; ``source_run_dir`` keeps
    the name it has in its own part.
    """
    sources: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    observations: dict[str, Any] = {}
    missing: list[str] = []
    taken: set[str] = set()
    for path, index, part_obs, part_missing in parts:
        offset = len(sources)
        if "sources" in index:
            sources += index["sources"]
        else:
            sources.append(_source_entry(path, index, len(index["runs"])))
        for row in index["runs"]:
            row = {**row, "source": offset + row.get("source", 0)}
            name = row["run_dir"]
            if name in taken:
                cell = name.rsplit("-r", 1)[0]
                repeat = 1 + max(int(t.rsplit("-r", 1)[1]) for t in taken
                                 if t.rsplit("-r", 1)[0] == cell)
                row.update(repeat=repeat, run_dir=f"{cell}-r{repeat}",
                           source_run_dir=row.get("source_run_dir", name))
            taken.add(row["run_dir"])
            runs.append(row)
            if name in part_obs:
                observations[row["run_dir"]] = part_obs[name]
        missing += part_missing
    return {"sources": sources, "runs": runs}, observations, missing


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def provenance(index: dict[str, Any], runs: int) -> str:
    """One line naming where the scored runs came from (fitted.py's MATRIX, the docs table):
    per source its date, commit, size, the RTTs its runs had (``FAULT_RTTS`` included) and
    its repeats per RTT."""
    def one(src: dict[str, Any], number: int | None) -> str:
        rtts = sorted({row["rtt"] for row in index["runs"] if row.get("source") == number}
                      or set(src["rtts"]), key=parse_duration_ms)
        listed = " and ".join([", ".join(rtts[:-1]), rtts[-1]] if len(rtts) > 1 else rtts)
        # A fetch matrix clones the lab's repository: no --size.
        size = f"--size {src['size']}, " if src.get("size") not in (None, "-") else ""
        return (f"{src['started']}, commit {src['commit']}, {size}"
                f"RTT {listed}, "
                f"{_plural(src['repeats'], 'repeat')}"
                + (f", observations re-derived at commit {src['reanalysed']}"
                   if src.get("reanalysed") else ""))

    if "sources" not in index:
        return f"{_plural(runs, 'run')}, {one(index, None)}"
    return f"{_plural(runs, 'run')}: " + "; ".join(
        f"{_plural(src['runs'], 'run')} of {one(src, number)}"
        for number, src in enumerate(index["sources"]))


def read_sources(sources: list[Path], *, reanalyse: bool = False,
                 ) -> tuple[dict[str, Any], dict[str, dict[str, Any]], list[str]]:
    """One source as it is; several merged (:func:`merge_matrices`). ``reanalyse`` applies to
    results directories (a bundle holds no raw artifacts)."""
    parts = []
    for source in sources:
        index, observations, missing = read_matrix(source, reanalyse=reanalyse)
        if reanalyse and source.is_dir():
            index = {**index, "reanalysed": _git_commit()}
        parts.append((source, index, observations, missing))
    if len(parts) == 1:
        return parts[0][1:]
    return merge_matrices(parts)


def write_bundle(index: dict[str, Any], observations: dict[str, Any], missing: list[str],
                 *, bundle: Path | None = None) -> None:
    """The matrix's observations in one file (no capture), so that anyone can re-fit without
    a lab: :data:`BUNDLE`, or ``bundle`` (the fetch matrix's)."""
    path = BUNDLE if bundle is None else bundle
    data = json.dumps({"index": index, "observations": observations, "missing": missing},
                      sort_keys=True, separators=(",", ":")).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data, mtime=0))
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size / 1e3:.0f} kB)")


@dataclass(frozen=True)
class Accuracy:
    """How many of a matrix's runs had the first culprit right (none ranked when none was
    expected): with hand weights, fitted in sample, and with each (fault, RTT) cell held out."""

    direction: str
    runs: int
    hand: int
    fitted: int
    held_out: int

    @classmethod
    def of(cls, direction: str, runs: list[MatrixRun], hand: list[list[str]],
           fitted: list[list[str]], held_out: list[list[str]]) -> Accuracy:
        def right(rankings: list[list[str]]) -> int:
            return round(top1_accuracy(runs, rankings) * len(runs))

        return cls(direction, len(runs), right(hand), right(fitted), right(held_out))


def both_directions(scores: list[Accuracy]) -> str:
    """One line for the matrices of both directions: right runs of all runs, each way."""
    runs = sum(a.runs for a in scores)
    parts = [f"{label} {sum(getattr(a, key) for a in scores)}/{runs}"
             for key, label in (("hand", "hand weights"), ("fitted", "fitted in sample"),
                                ("held_out", "fitted with each (fault, RTT) cell held out"))]
    per = "; ".join(f"{a.direction} {a.fitted}/{a.runs} in sample, {a.held_out}/{a.runs} "
                    "held out" for a in scores)
    return f"both directions, first culprit right: {', '.join(parts)} ({per})"


def held_out_rankings(runs: list[MatrixRun]) -> list[list[str]]:
    """Each run ranked with confidences fitted on the other (fault, RTT) cells only."""
    def cell(run: MatrixRun) -> str:
        return run.name.rsplit("-r", 1)[0]

    rankings = []
    for run in runs:
        others = [r for r in runs if cell(r) != cell(run)]
        culprits = with_calibrations(fit_calibrations(others))
        rankings.append(ranked_ids(run.observations, culprits))
    return rankings


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _counts(t: CulpritCounts | None) -> str:
    t = t or CulpritCounts()
    return f"{t.tp}/{t.fp}/{t.fn}"


def culprit_faults() -> dict[str, list[str]]:
    faults: dict[str, list[str]] = {}
    for fault, culprit in FAULT_CULPRIT.items():
        if culprit is not None:
            faults.setdefault(culprit, []).append(fault)
    return faults


def false_positive_faults(runs: Sequence[MatrixRun],
                          rankings: list[list[str]]) -> dict[str, list[str]]:
    """Culprit id -> the faults (with RTT and count) of the runs where it was a false positive."""
    counts: dict[str, dict[str, int]] = {}
    for run, ranked in zip(runs, rankings, strict=True):
        cell = run.name.rsplit("-r", 1)[0]
        for culprit in ranked:
            if culprit != run.expected:
                per = counts.setdefault(culprit, {})
                per[cell] = per.get(cell, 0) + 1
    return {c: [f"{cell} x{n}" for cell, n in per.items()] for c, per in counts.items()}


def matrix_table(hand: dict[str, CulpritCounts], fitted: dict[str, CulpritCounts],
                 fits: dict[str, Fit], fired: dict[str, int],
                 fp_faults: dict[str, list[str]]) -> list[str]:
    """The per-culprit Markdown table (docs/culprits.md and the terminal)."""
    faults = culprit_faults()
    lines = ["| culprit | lab fault | fired | hand TP/FP/FN | hand precision | hand recall "
             "| fitted TP/FP/FN | fitted precision | fitted recall | fitted FP in | confidence |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in CULPRITS:
        fit = fits.get(c.id)
        if fit is None:  # a download-only culprit: the fetch matrix's table has it
            continue
        if fit.calibration is not None:
            cal = fit.calibration
            how = (f"fitted: a = {cal.intercept:g}, b = {cal.slope:g} "
                   f"({cal.positives} positive, {cal.negatives} negative)")
        else:
            how = f"hand weights: {fit.reason}"
        h, f = hand.get(c.id), fitted.get(c.id)
        lines.append(
            f"| `{c.id}` | {', '.join(f'`{x}`' for x in faults.get(c.id, [])) or '-'} "
            f"| {fired.get(c.id, 0)} | {_counts(h)} | {_ratio(h.precision if h else None)} "
            f"| {_ratio(h.recall if h else None)} | {_counts(f)} "
            f"| {_ratio(f.precision if f else None)} | {_ratio(f.recall if f else None)} "
            f"| {', '.join(fp_faults.get(c.id, [])) or '-'} | {how} |")
    return lines


def report_and_fit(sources: list[Path], *, write: bool, reanalyse: bool = False,
                   ) -> Accuracy | None:
    """Score the matrix (the sources' runs merged) with hand weights and fitted confidences;
    with ``write``, ship the fit (and the bundle, unless the one source is the bundle)."""
    index, observations, missing = read_sources(sources, reanalyse=reanalyse)
    runs = matrix_runs(index, observations)
    if not runs:
        print(f"error: no run in {', '.join(map(str, sources))} has observations.json "
              "(hint: look at matrix.json for the errors)", file=sys.stderr)
        return None
    fits = fit_calibrations(runs)
    hand_culprits, fitted_culprits = hand_weighted(CULPRITS), with_calibrations(fits)
    hand_ranked = [ranked_ids(run.observations, hand_culprits) for run in runs]
    fitted_ranked = [ranked_ids(run.observations, fitted_culprits) for run in runs]
    held_out = held_out_rankings(runs)
    fired: dict[str, int] = {}
    for run in runs:
        for culprit in raw_hits(run.observations):
            fired[culprit] = fired.get(culprit, 0) + 1
    table = matrix_table(score_matrix(runs, hand_ranked), score_matrix(runs, fitted_ranked),
                         fits, fired, false_positive_faults(runs, fitted_ranked))
    matrix = provenance(index, len(runs))
    print(f"fault matrix: {matrix}")
    if missing:
        print(f"not scored ({len(missing)}): " + "; ".join(missing))
    print("\n".join(table))
    accuracy = (f"first culprit right (healthy, auth: none ranked): hand weights "
                f"{top1_accuracy(runs, hand_ranked):.1%}, fitted "
                f"{top1_accuracy(runs, fitted_ranked):.1%} (in sample), fitted with each "
                f"(fault, RTT) cell held out of its own fit {top1_accuracy(runs, held_out):.1%}")
    print(accuracy)
    wrong = []
    for run, hand_ids, fitted_ids in zip(runs, hand_ranked, fitted_ranked, strict=True):
        want = [run.expected] if run.expected else []
        if hand_ids[:1] != want or fitted_ids[:1] != want:
            wrong.append(f"- `{run.name}`: expected {run.expected or 'none'}; hand weights "
                         f"rank {', '.join(hand_ids) or 'none'}; fitted "
                         f"{', '.join(fitted_ids) or 'none'}")
    print("\n".join(wrong))
    if write:
        if [source.resolve() for source in sources] != [BUNDLE]:
            write_bundle(index, observations, missing)
        write_fitted(fits, matrix)
        write_docs([*table, "", accuracy + ".", "", "Runs whose first culprit is wrong "
                    "with either weighting:", "", *(wrong or ["none."])], matrix)
    return Accuracy.of("push", runs, hand_ranked, fitted_ranked, held_out)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--direction", choices=("push", "fetch", "both"), default="push",
                        help="push (default): FAULTS, fitted.py; fetch: FETCH_FAULT_CULPRIT's "
                        "faults and the negatives of benchmarks/fault_matrix_fetch.py, "
                        "fitted.py's download rows; both: the two matrices one after the other "
                        "(with --from: each source scored with its direction's), then one line "
                        "for both")
    parser.add_argument("--fault", action="append", choices=list(FAULTS),
                        help="lab fault (repeat; default: every fault of the direction)")
    parser.add_argument("--rtt", action="append", help="lab RTT (repeat; default 20ms and 80ms)")
    parser.add_argument("--repeats", type=int, default=2, help="diagnoses per fault and RTT")
    parser.add_argument("--size", default="3MiB", help="generated repository size (bounded pushes)")
    parser.add_argument("--timeout", type=float, help="timeout of each git run, s "
                        "(default 90; 60 with --direction fetch)")
    parser.add_argument("--results", type=Path, help="results directory "
                        "(default runs/fault-matrix-<UTC time>; both: its push/ and fetch/)")
    parser.add_argument("--from", dest="sources", action="append", type=Path,
                        help="score (and --fit) a results directory, or the shipped bundle "
                        "benchmarks/data/fault-matrix.json.gz (fetch: fault-matrix-fetch.json.gz);"
                        " runs no lab. Repeat to merge several: their runs are scored and fitted "
                        "together, and --fit writes one bundle of them all")
    parser.add_argument("--reanalyse", action="store_true",
                        help="with --from DIR: derive each run's observations afresh from its "
                        "raw artifacts with the current pipeline (after an analysis change; "
                        "a fetch matrix always does)")
    parser.add_argument("--fit", action="store_true",
                        help="write the fitted confidences and the docs/culprits.md table")
    return parser.parse_args()


def source_direction(source: Path) -> str:
    """``fetch`` for the fetch bundle or a results directory of ``--direction fetch`` (its
    index says so), else ``push``."""
    if source.resolve() == BUNDLE:
        return "push"
    if source.name == "fault-matrix-fetch.json.gz":
        return "fetch"
    index_file = source / INDEX
    if index_file.is_file():
        return str(json.loads(index_file.read_text()).get("direction", "push"))
    return "push"


def _score(direction: str, args: argparse.Namespace, sources: list[Path] | None,
           results: Path) -> Accuracy | None:
    """One direction's matrix: run it in the lab unless ``sources`` are given, then score
    (and with ``--fit`` ship) it."""
    fetch = direction == "fetch"
    if fetch:
        from benchmarks import fault_matrix_fetch as fmf
    if not sources:
        rtts = args.rtt or ["20ms", "80ms"]
        if fetch:
            fmf.run_fetch_matrix(results, args.fault, rtts, args.repeats, args.timeout or 60.0)
        else:
            run_matrix(results, args.fault or list(FAULTS), rtts, args.repeats, args.size,
                       args.timeout or 90.0)
        print(f"results: {results}", file=sys.stderr)
        sources = [results]
    if fetch:
        return fmf.report_and_fit_fetch(sources, write=args.fit)
    return report_and_fit(sources, write=args.fit, reanalyse=args.reanalyse)


def main() -> int:
    args = _arguments()
    # A terminated matrix still takes its lab down (the finally clauses run).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    for source in args.sources or []:
        if not (source.is_file() or (source / INDEX).is_file()):
            print(f"error: no {INDEX} in {source} (hint: pass a directory this script "
                  f"wrote, or {BUNDLE.relative_to(ROOT)})", file=sys.stderr)
            return 2
        if args.direction != "both" and (found := source_direction(source)) != args.direction:
            print(f"error: {source} holds a {found} matrix, not a {args.direction} one "
                  f"(hint: add --direction {found}, or --direction both)", file=sys.stderr)
            return 2
    directions = ["push", "fetch"] if args.direction == "both" else [args.direction]
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    scores = []
    for direction in directions:
        sources = args.sources
        if sources and args.direction == "both":
            sources = [s for s in sources if source_direction(s) == direction]
            if not sources:
                print(f"error: no --from source of the {direction} direction (hint: pass "
                      "both bundles, or a results directory of each)", file=sys.stderr)
                return 2
        name = "fault-matrix-fetch" if direction == "fetch" else "fault-matrix"
        results = (args.results / direction if args.results and len(directions) > 1
                   else args.results or ROOT / "runs" / f"{name}-{stamp}")
        if len(directions) > 1:
            print(f"\n## {direction}\n")
        score = _score(direction, args, sources, results)
        if score is None:
            return 2
        scores.append(score)
    if len(scores) > 1:
        print("\n" + both_directions(scores))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
