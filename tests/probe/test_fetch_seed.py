"""``--fetch-seed``: a generated repository pushed to a throwaway branch, fetched alone, and
deleted, against a loopback git daemon that accepts pushes; without it nothing is written."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from gitnetdiag.pipeline import diagnose_clones
from gitnetdiag.probe.fetchonce import clone_argv
from gitnetdiag.probe.fetchrun import run_fetch_probe
from gitnetdiag.probe.fetchseed import seed_errors
from gitnetdiag.probe.gitpush import Transport
from gitnetdiag.probe.options import ProbeOptions
from gitnetdiag.rundir.manifest import load_fetch_manifest
from gitnetdiag.rundir.records import SeedBranch
from gitnetdiag.vocabulary import TransportKind
from tests.probe.test_fetch_daemon import history_daemon, tree_digest

__all__ = ["history_daemon"]

SEED_BYTES = 3 * 2**20


def _options(url: str, out: Path, seed_bytes: int | None) -> ProbeOptions:
    return ProbeOptions(
        urls={TransportKind.GIT: url}, protocols=(TransportKind.GIT,), size_bytes=0, seed=7,
        repo=None, repeat=1, ca_file=None, insecure=False, ssh_command=None, out_dir=out,
        full=False, burst=0, timeout_s=60.0, capture=False, fetch_seed_bytes=seed_bytes)


def test_seed_branch_is_fetched_then_gone(
        git_daemon: str, remote_refs: Callable[[str], dict[str, str]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The clone measured the generated pack (more than the seed's bytes, the main branch's
    README is not fetched), and the server lists the same refs afterwards as before."""
    before = remote_refs(git_daemon)
    loose_before = _loose(tmp_path / "srv" / "repo.git")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    outcome = run_fetch_probe(_options(git_daemon, tmp_path / "run", SEED_BYTES))

    assert outcome.error is None, outcome.error
    assert remote_refs(git_daemon) == before
    seed = outcome.manifest.seed
    assert seed is not None and seed.pushed and seed.protocol == "git"
    assert seed.branch.startswith("gitnetdiag/probe-")
    assert seed.cleanup == "deleted" and seed.gone_on_server is True
    diagnosis = diagnose_clones(tmp_path / "run")
    assert diagnosis is not None
    (obs,) = diagnosis.observations.transfers
    assert obs.outcome == "ok"
    assert obs.moved_bytes >= SEED_BYTES
    manifest = load_fetch_manifest(tmp_path / "run")
    assert manifest is not None and manifest.seed == seed
    assert manifest.options["fetch_seed_bytes"] == SEED_BYTES
    assert list(scratch.iterdir()) == []
    # more objects than receive.unpackLimit: the server kept the pack, nothing to deflate
    assert _loose(tmp_path / "srv" / "repo.git") == loose_before


def _loose(bare: Path) -> int:
    return sum(1 for path in (bare / "objects").glob("??/*") if path.is_file())


def test_without_the_option_nothing_is_pushed(
        git_daemon: str, remote_refs: Callable[[str], dict[str, str]], tmp_path: Path) -> None:
    before = remote_refs(git_daemon)
    outcome = run_fetch_probe(_options(git_daemon, tmp_path / "run", None))
    assert outcome.error is None
    assert outcome.manifest.seed is None
    assert remote_refs(git_daemon) == before


def test_a_refused_seed_push_is_an_error_and_fetches_nothing(
        history_daemon: tuple[str, Path], tmp_path: Path) -> None:
    """A read-only daemon (no receive-pack) refuses the seed: one error, no clone, and the
    clean-up knows the branch was never created."""
    url, bare = history_daemon
    before = tree_digest(bare)
    outcome = run_fetch_probe(_options(url, tmp_path / "run", 2**20))
    assert outcome.error is not None and outcome.error.reference == "fetch-seed-push"
    seed = outcome.manifest.seed
    assert seed is not None and not seed.pushed and seed.cleanup == "never-created"
    assert outcome.manifest.protocols[0].fetches == ()
    assert tree_digest(bare) == before


def test_seed_errors_name_the_push_and_the_leftover() -> None:
    refused = SeedBranch(branch="gitnetdiag/probe-ab", oid="0" * 40, size_bytes=1,
                        protocol="git", push_error="fatal: remote error: access denied",
                        cleanup="never-created")
    assert [(stage, exc.reference) for stage, exc in seed_errors(refused)] == [
        ("seed", "fetch-seed-push")]
    left = SeedBranch(branch="gitnetdiag/probe-ab", oid="0" * 40, size_bytes=1, protocol="git",
                     pushed=True, cleanup="deleted", gone_on_server=False)
    assert [(stage, exc.reference) for stage, exc in seed_errors(left)] == [
        ("cleanup", "cleanup-leftover")]
    clean = SeedBranch(branch="gitnetdiag/probe-ab", oid="0" * 40, size_bytes=1, protocol="git",
                      pushed=True, cleanup="deleted", gone_on_server=True)
    assert seed_errors(clean) == []


def test_clone_argv_fetches_the_seed_branch_alone() -> None:
    transport = Transport(protocol=TransportKind.GIT, url="git://h/r.git", ca_file=None,
                          insecure=False, ssh_command=None)
    argv = clone_argv(transport, Path("/tmp/x"), "gitnetdiag/probe-ab")
    tail = argv[argv.index("clone"):]
    assert tail[-4:-2] == ["--branch", "gitnetdiag/probe-ab"]
    assert "--single-branch" in tail and "--no-tags" in tail
    assert "--branch" not in clone_argv(transport, Path("/tmp/x"))


def test_both_directions_print_one_json_document(
        git_daemon: str, remote_refs: Callable[[str], dict[str, str]], tmp_path: Path) -> None:
    """``--direction both --format json``: stdout is one JSON document, the one report of
    both directions (the pushes' and the clones' reports its parts), written into RUN as
    ``report.json`` and rendered again alike by ``report RUN``; the clones stay in
    RUN-fetch; nothing is left on the server."""
    before = remote_refs(git_daemon)
    run = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--git", git_daemon, "--direction",
         "both", "--format", "json", "--size", "1MiB", "--fetch-seed", "1MiB", "--out",
         str(run), "--no-capture"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.stdout.strip(), proc.stderr
    report = json.loads(proc.stdout)  # one document, or this raises
    assert report["schema"] == "gitnetdiag.both-report/1" and report["direction"] == "both"
    assert report["parts"]["push"]["direction"] == "push"
    assert report["parts"]["fetch"]["direction"] == "fetch"
    assert all(c["direction"] in ("push", "fetch") for c in report["culprits"])
    assert (tmp_path / "run-fetch" / "fetch.json").is_file()
    assert not (tmp_path / "run-fetch" / "fetch-report.json").exists()
    assert json.loads((run / "report.json").read_text())["schema"] == report["schema"]
    again = subprocess.run([sys.executable, "-m", "gitnetdiag", "report", str(run), "--format",
                            "json"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert json.loads(again.stdout)["verdict"] == report["verdict"]
    assert again.returncode == proc.returncode
    assert remote_refs(git_daemon) == before


def test_a_failed_fetch_half_fails_the_both_run(git_daemon: str, tmp_path: Path) -> None:
    """The clones of a repository too small to time measure nothing: the one report is
    ``failed`` whatever the pushes measured, its headline leads with the clones, and the
    exit code is the failed verdict's (9)."""
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--git", git_daemon, "--direction",
         "both", "--size", "1MiB", "--out", str(tmp_path / "run"), "--no-capture"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 9, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("gitnetdiag report: both directions")
    assert lines[1] == "verdict: FAILED"
    assert lines[2].startswith("Download: Nothing was measured: too-small")
    assert proc.stdout.count("gitnetdiag report: both directions") == 1
    assert "error [not-measured]: verdict failed: too-small" in proc.stderr
