"""``probe --repo`` against a loopback git daemon that already holds the repository's
history: the user's config and hooks cannot add refs, and the push really sends data."""

from __future__ import annotations

import os
import subprocess
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from gitnetdiag.probe.gitpush import Transport, parse_pack_progress, push_argv, run_git
from gitnetdiag.probe.pushonce import sent_too_little
from gitnetdiag.probe.repo import salt_blob, salted_copy
from gitnetdiag.probe.runner import ProbeOptions, run_probe
from gitnetdiag.rundir import load_run
from gitnetdiag.vocabulary import TransportKind

RefsOf = Callable[[str], dict[str, str]]
IDENTITY = {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@u", "GIT_COMMITTER_NAME": "u",
            "GIT_COMMITTER_EMAIL": "u@u"}


def _git(*args: str, cwd: Path) -> str:
    env = {**os.environ, **IDENTITY}
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, (args, proc.stderr)
    return proc.stdout


@pytest.fixture()
def user_repo(git_daemon: str, tmp_path: Path) -> Path:
    """A clone of the daemon's repository, one more commit of text pushed back to main (so
    the server holds all of it), an annotated tag only here, and a pre-push hook."""
    repo = tmp_path / "user"
    _git("clone", "-q", "-b", "main", git_daemon, str(repo), cwd=tmp_path)
    text = "".join(f"line {i}: the quick brown fox jumps over the lazy dog\n"
                   for i in range(20000))
    (repo / "notes.txt").write_text(text)
    (repo / "data.bin").write_bytes(os.urandom(300 * 1024))
    _git("add", "-A", cwd=repo)
    _git("commit", "-qm", "text and data", cwd=repo)
    _git("push", "-q", "origin", "HEAD:main", cwd=repo)
    _git("tag", "-a", "v9-user", "-m", "user tag", cwd=repo)
    hook = repo / ".git" / "hooks" / "pre-push"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path / 'pre-push-ran'}\n")
    hook.chmod(0o755)
    return repo


def test_user_config_and_hooks_cannot_add_refs(
    git_daemon: str, user_repo: Path, tmp_path: Path, remote_refs: RefsOf,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """push.followTags=true, a hooksPath and a pre-push hook: no tag, no hook, refs unchanged."""
    hooks = tmp_path / "user-hooks"
    hooks.mkdir()
    (hooks / "pre-push").write_text(f"#!/bin/sh\ntouch {tmp_path / 'hooks-path-ran'}\n")
    (hooks / "pre-push").chmod(0o755)
    user_config = tmp_path / "user.gitconfig"
    user_config.write_text(
        f"[push]\n\tfollowTags = true\n\tpushOption = ci.skip\n\trecurseSubmodules = check\n"
        f"[core]\n\thooksPath = {hooks}\n[remote]\n\tpushDefault = origin\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(user_config))
    before = remote_refs(git_daemon)
    user_refs = _git("for-each-ref", cwd=user_repo)
    head = _git("rev-parse", "HEAD", cwd=user_repo).strip()
    assert "refs/tags/v9-user" not in before and before["refs/heads/main"] == head

    outcome = run_probe(ProbeOptions(
        urls={TransportKind.GIT: git_daemon}, protocols=(TransportKind.GIT,), size_bytes=1, seed=1,
        repo=user_repo, repeat=1, ca_file=None, insecure=False, ssh_command=None,
        out_dir=tmp_path / "run", full=False, burst=0, timeout_s=60.0, capture=False,
    ))
    assert outcome.error is None, outcome.manifest.errors
    assert remote_refs(git_daemon) == before
    assert not (tmp_path / "pre-push-ran").exists() and not (tmp_path / "hooks-path-ran").exists()
    assert _git("for-each-ref", cwd=user_repo) == user_refs
    assert _git("status", "--porcelain", cwd=user_repo) == ""

    manifest = load_run(tmp_path / "run")
    assert manifest.repo is not None and manifest.repo.source_oid == head
    assert manifest.repo.head_oid != head and not manifest.repo.generated
    (push,) = manifest.protocols[0].pushes
    assert push.outcome == "ok" and push.cleanup == "deleted", push
    assert push.pack_written_bytes is not None and push.rate_bytes_per_s is not None
    # What git wrote is the pack planned (git rounds its figure to 0.01 units).
    planned = manifest.repo.pack_bytes
    assert abs(push.pack_written_bytes - planned) < 0.05 * planned


def test_salted_copy_keeps_sizes_and_compressibility(user_repo: Path, tmp_path: Path) -> None:
    salted = salted_copy(user_repo, tmp_path / "salted")
    original = {line.split()[4]: line.split()[3]
                for line in _git("ls-tree", "-r", "--long", "HEAD", cwd=user_repo).splitlines()}
    copied = {line.split()[4]: line.split()[3]
              for line in _git("ls-tree", "-r", "--long", "HEAD", cwd=salted.path).splitlines()}
    assert original.keys() == copied.keys() and salted.blobs == len(original)
    for path, size in original.items():
        assert abs(int(copied[path]) - int(size)) <= 8, path
    old = set(_git("ls-tree", "-r", "HEAD", cwd=user_repo).split())
    new = set(_git("ls-tree", "-r", "HEAD", cwd=salted.path).split())
    assert not {o for o in old if len(o) == 40} & {n for n in new if len(n) == 40}
    text = (user_repo / "notes.txt").read_bytes()
    ratio = len(zlib.compress(text)) / len(text)
    salted_text = salt_blob(text, b"0123abcd")
    assert abs(len(zlib.compress(salted_text)) / len(salted_text) - ratio) < 0.01
    assert _git("rev-list", "--count", "HEAD", cwd=salted.path).strip() == "1"


def test_a_push_of_objects_the_server_has_is_no_data(
    git_daemon: str, user_repo: Path
) -> None:
    """Real git output for the unsalted history: nothing sent, never a rate."""
    transport = Transport(protocol=TransportKind.GIT, url=git_daemon)
    head = _git("rev-parse", "HEAD", cwd=user_repo).strip()
    run = run_git(push_argv(transport, head, "gitnetdiag/probe-nodata1"), env=transport.env(),
                  cwd=user_repo, timeout_s=60)
    assert run.ok, run.stderr
    progress = parse_pack_progress(run.stderr)
    assert sent_too_little(progress.objects, progress.written_bytes, 400 * 1024), run.stderr
    _git("push", "-q", git_daemon, ":refs/heads/gitnetdiag/probe-nodata1", cwd=user_repo)
