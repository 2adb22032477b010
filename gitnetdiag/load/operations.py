"""The git operations of a load test, run with the real git CLI in a scratch directory.

Safety: pushes go only to throwaway branches ``gitnetdiag/probe-<id>``
(:func:`gitnetdiag.probe.gitpush.push_argv` refuses any other ref), every git
run reads the isolated config of :mod:`gitnetdiag.probe.gitconfig`, and each
branch is removed right after its push by
:func:`gitnetdiag.probe.cleanup.remove_probe_ref` (which waits for a server
still applying a push, deletes under a lease, verifies). A push cut by Ctrl-C
or SIGTERM leaves its branch to :meth:`Workspace.close`, which cleans it the
same way, then removes the scratch directory. Every git call has a timeout.

git commands run through :class:`InFlight` rather than
:func:`~gitnetdiag.probe.gitpush.run_git` because the load test has many
operations in flight on worker threads: on Ctrl-C the main thread must be able
to kill all their process groups at once, which a blocking call on another
thread cannot do. The argv builders, the environment and the stderr
classification are gitpush's own.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gitnetdiag.errors import GitnetdiagError, NetworkError
from gitnetdiag.load.stats import git_error_message
from gitnetdiag.model.load.records import Operation
from gitnetdiag.probe.cleanup import (
    DEFAULT_CLEANUP_WAIT_S,
    Aftermath,
    CleanupCancelled,
    RefCleanup,
    push_aftermath,
    remove_probe_ref,
)
from gitnetdiag.probe.gitconfig import write_isolated_config
from gitnetdiag.probe.gitpush import (
    FailureKind,
    GitRun,
    Transport,
    error_for_failure,
    failure_line,
    last_stderr_line,
    ls_remote_argv,
    push_argv,
)
from gitnetdiag.probe.repo import git_env, new_probe_id, probe_branch_name
from gitnetdiag.proc import kill_group, start
from gitnetdiag.redaction import redact_text, redact_url

LOCAL_GIT_TIMEOUT_S = 60.0
_SERVER_ERROR = re.compile(r"(returned error|http|status)[: ]+5\d\d\b", re.IGNORECASE)


def load_failure_kind(run: GitRun) -> str | None:
    """Failure kind of a git run for the load report: gitpush's kinds, with HTTP 5xx
    answers (gitpush's ``http-status``) as ``server-error``."""
    kind = run.failure_kind()
    if kind is None:
        return None
    if kind in (FailureKind.OTHER, FailureKind.HTTP_STATUS) and _SERVER_ERROR.search(run.stderr):
        return FailureKind.SERVER_ERROR.value
    return kind.value


class InFlight:
    """Runs git commands (from any thread) and can kill every running one at once."""

    def __init__(self) -> None:
        self._procs: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self._stopping = False

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        timeout_s: float,
        input_bytes: bytes | None = None,
    ) -> GitRun:
        """Run in its own process group; the timeout (or :meth:`kill_all`) kills the group.

        A process group rather than a new session keeps vfork usable, which halves the
        cost of starting git at hundreds of operations per second."""
        started = time.monotonic()
        proc = start(argv, isolate="group", cwd=cwd, env=env,
                     stdin=subprocess.PIPE if input_bytes is not None else subprocess.DEVNULL,
                     missing_hint="install the Debian package 'git'")
        with self._lock:
            self._procs.add(proc)
            stopping = self._stopping
        if stopping:
            kill_group(proc)
        timed_out = False
        try:
            out, err = proc.communicate(input=input_bytes, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc)
            out, err = proc.communicate()
        except BaseException:
            kill_group(proc)
            proc.communicate()
            raise
        finally:
            with self._lock:
                self._procs.discard(proc)
        return GitRun(
            argv=tuple(argv), exit_code=None if timed_out else proc.returncode,
            wall_s=time.monotonic() - started, timed_out=timed_out,
            stderr=err.decode(errors="replace"), stdout=out.decode(errors="replace"),
        )

    def kill_all(self) -> None:
        """Kill every running command, and every one started from now on."""
        with self._lock:
            self._stopping = True
            procs = list(self._procs)
        for proc in procs:
            kill_group(proc)

    def resume(self) -> None:
        """Allow commands again (for the final cleanup after :meth:`kill_all`)."""
        with self._lock:
            self._stopping = False

    @property
    def stopping(self) -> bool:
        """True between :meth:`kill_all` and :meth:`resume`."""
        with self._lock:
            return self._stopping


@dataclass(frozen=True, kw_only=True)
class OpOutcome:
    """What one operation measured (the scheduler adds step, slot and start)."""

    wall_s: float
    """Duration of the timed git command."""
    ok: bool
    """Success."""
    kind: str | None
    """Failure kind, None on success."""
    message: str
    """git's whole error message on failure, one line, redacted."""
    bytes_moved: int
    """Bytes received, sent or listed."""
    cleanup: str | None = None
    """Push only: what became of its throwaway branch (a ``RefCleanup`` value), None when
    the clean-up was left to :meth:`Workspace.close` (the run was being stopped)."""


def _pack_bytes(git_dir: Path) -> int:
    pack_dir = git_dir / "objects" / "pack"
    try:
        return sum(p.stat().st_size for p in pack_dir.glob("*.pack"))
    except OSError:
        return 0


class Workspace:
    """Scratch directory and state shared by the slots of one load generator."""

    def __init__(
        self,
        transport: Transport,
        *,
        timeout_s: float,
        push_bytes: int = 64 * 1024,
        scratch_parent: Path | None = None,
        inflight: InFlight | None = None,
        cleanup_wait_s: float = DEFAULT_CLEANUP_WAIT_S,
    ) -> None:
        self.timeout_s = timeout_s
        self.push_bytes = push_bytes
        self.cleanup_wait_s = cleanup_wait_s
        self.inflight = inflight or InFlight()
        self.root = Path(tempfile.mkdtemp(prefix="gitnetdiag-load-", dir=scratch_parent))
        try:
            config = write_isolated_config(self.root / "gitconfig")
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        self.transport = replace(transport, global_config=str(config.path),
                                 secret_config=config.secret_entries)
        self.env = self.transport.env()
        self.cleanup_counts: Counter[str] = Counter()
        self._pending: dict[str, tuple[str, Aftermath]] = {}
        self._leftover: list[str] = []
        self._lock = threading.Lock()
        self._push_repo: Path | None = None
        self._base_oid: str | None = None
        self._fetch_repos: dict[int, Path] = {}

    # -- setup -------------------------------------------------------------------------------

    def prepare(self, ops: Sequence[str]) -> None:
        """Check the remote answers (one clear error if not) and set up what pushes need."""
        probe = self.inflight.run(
            ls_remote_argv(self.transport, "HEAD"), env=self.env, cwd=self.root,
            timeout_s=self.timeout_s,
        )
        if not probe.ok:
            kind = probe.failure_kind() or FailureKind.OTHER
            raise error_for_failure(
                kind, redact_url(self.transport.url), redact_text(failure_line(probe.stderr))
            )
        if Operation.PUSH in ops:
            self._prepare_push(has_head=bool(probe.stdout.strip()))

    def _local_git(self, args: Sequence[str], cwd: Path, input_bytes: bytes | None = None) -> str:
        run = self.inflight.run(
            ["git", *args], env=git_env(), cwd=cwd, timeout_s=LOCAL_GIT_TIMEOUT_S,
            input_bytes=input_bytes,
        )
        if not run.ok:
            raise GitnetdiagError(
                f"local 'git {args[0]}' failed: {last_stderr_line(run.stderr)}",
                hint=f"check that {self.root} is writable", reference="load-scratch",
            )
        return run.stdout

    def _prepare_push(self, *, has_head: bool) -> None:
        repo = self.root / "push.git"
        self._local_git(["init", "--quiet", "--bare", str(repo)], cwd=self.root)
        if has_head:
            # Fresh commits on top of the remote's HEAD: a push then sends only them.
            fetch = self.inflight.run(
                ["git", *self.transport.config_args(), "fetch", "--quiet", "--no-tags",
                 self.transport.command_url, "+HEAD:refs/gitnetdiag-load/base"],
                env=self.env, cwd=repo, timeout_s=self.timeout_s,
            )
            if not fetch.ok:
                line = redact_text(last_stderr_line(fetch.stderr))
                raise NetworkError(
                    f"cannot fetch the remote's HEAD: {line}",
                    hint="pushes build on the remote's HEAD; check read access",
                )
            self._base_oid = self._local_git(
                ["rev-parse", "refs/gitnetdiag-load/base"], cwd=repo).strip()
        self._push_repo = repo

    def _new_commit(self, probe_id: str) -> str:
        """A fresh commit (random, incompressible file of ``push_bytes``) on the base."""
        assert self._push_repo is not None
        payload = os.urandom(self.push_bytes)
        message = f"gitnetdiag load {probe_id}\n".encode()
        stream = b"".join([
            f"commit refs/gitnetdiag-load/{probe_id}\nmark :1\n".encode(),
            b"committer gitnetdiag <load@gitnetdiag.invalid> 1700000000 +0000\n",
            f"data {len(message)}\n".encode(), message,
            f"from {self._base_oid}\n".encode() if self._base_oid else b"",
            f"M 100644 inline gitnetdiag-load-{probe_id}.bin\ndata {len(payload)}\n".encode(),
            payload, b"\n",
        ])
        marks = self.root / f"marks-{probe_id}"
        self._local_git(
            ["fast-import", "--quiet", f"--export-marks={marks}"], cwd=self._push_repo,
            input_bytes=stream,
        )
        oid = marks.read_text().split()[1]
        marks.unlink()
        return oid

    # -- operations ----------------------------------------------------------------------------

    def run(self, op: str, slot: int) -> OpOutcome:
        """Run one operation; only the git command talking to the remote is timed."""
        if op == Operation.LS_REMOTE:
            run = self.inflight.run(ls_remote_argv(self.transport), env=self.env, cwd=self.root,
                                    timeout_s=self.timeout_s)
            return self._outcome(run, len(run.stdout.encode()))
        if op == Operation.CLONE:
            dest = self.root / f"clone-{slot}-{new_probe_id()}"
            try:
                run = self.inflight.run(
                    # HEAD's branch only: the other users' throwaway push branches come
                    # and go while a clone runs (a clone that wanted one just deleted
                    # failed with "not our ref"), and they are not what a user clones.
                    ["git", *self.transport.config_args(), "clone", "--quiet", "--bare",
                     "--single-branch", "--no-tags", self.transport.command_url, str(dest)],
                    env=self.env, cwd=self.root, timeout_s=self.timeout_s,
                )
                return self._outcome(run, _pack_bytes(dest))
            finally:
                shutil.rmtree(dest, ignore_errors=True)
        if op == Operation.FETCH:
            repo = self._fetch_repo(slot)
            before = _pack_bytes(repo)
            run = self.inflight.run(
                ["git", *self.transport.config_args(), "fetch", "--quiet", "--no-tags",
                 self.transport.command_url, "+HEAD:refs/gitnetdiag-load/head"],
                env=self.env, cwd=repo, timeout_s=self.timeout_s,
            )
            return self._outcome(run, max(0, _pack_bytes(repo) - before))
        if op == Operation.PUSH:
            return self._push()
        raise ValueError(f"unknown operation {op!r}")

    def _fetch_repo(self, slot: int) -> Path:
        repo = self._fetch_repos.get(slot)
        if repo is None:
            repo = self.root / f"fetch-{slot}.git"
            self._local_git(["init", "--quiet", "--bare", str(repo)], cwd=self.root)
            self._fetch_repos[slot] = repo
        return repo

    def _push(self) -> OpOutcome:
        if self._push_repo is None:
            raise ValueError("prepare() was not given the push operation")
        probe_id = new_probe_id()
        branch = probe_branch_name(probe_id)
        oid = self._new_commit(probe_id)
        with self._lock:
            self._pending[branch] = (oid, Aftermath.MAY_LAND)
        run = self.inflight.run(
            push_argv(self.transport, oid, branch), env=self.env, cwd=self._push_repo,
            timeout_s=self.timeout_s,
        )
        outcome = self._outcome(run, self.push_bytes if run.ok else 0)
        with self._lock:
            self._pending[branch] = (oid, push_aftermath(run))
        if self.inflight.stopping:
            return outcome
        return replace(outcome, cleanup=self._clean(branch))

    def _clean(self, branch: str) -> str | None:
        """Remove one pending branch (whoever takes it from the pending set owns it);
        None when someone else did, or the run is being stopped."""
        assert self._push_repo is not None
        with self._lock:
            claimed = self._pending.pop(branch, None)
        if claimed is None:
            return None
        oid, aftermath = claimed
        try:
            result = remove_probe_ref(
                self.transport, branch, oid, aftermath, runner=self.inflight.run,
                cwd=self._push_repo, wait_s=self.cleanup_wait_s,
                cancelled=lambda: self.inflight.stopping,
            )
        except CleanupCancelled:
            with self._lock:
                self._pending[branch] = claimed
            return None
        with self._lock:
            self.cleanup_counts[result.status.value] += 1
            if result.status in (RefCleanup.LEFTOVER, RefCleanup.UNCONFIRMED):
                self._leftover.append(f"{result.status.value}: {result.remove_command} "
                                      f"({result.detail})")
        return result.status.value

    def _outcome(self, run: GitRun, bytes_moved: int) -> OpOutcome:
        kind = load_failure_kind(run)
        return OpOutcome(
            wall_s=run.wall_s, ok=run.ok, kind=kind,
            message="" if run.ok else redact_text(git_error_message(run.stderr)),
            bytes_moved=bytes_moved if run.ok else 0,
        )

    # -- teardown ------------------------------------------------------------------------------

    @property
    def pending_branches(self) -> tuple[str, ...]:
        """Branches pushed whose clean-up has not run yet."""
        with self._lock:
            return tuple(sorted(self._pending))

    @property
    def leftovers(self) -> tuple[str, ...]:
        """One line per branch left ``leftover`` or ``unconfirmed``, with the exact command
        that removes it (URL redacted)."""
        with self._lock:
            return tuple(self._leftover)

    def close(self) -> dict[str, int]:
        """Clean every throwaway branch still pending, remove the scratch directory.

        Returns how many throwaway branches ended ``deleted``, ``never-created``,
        ``leftover`` or ``unconfirmed`` over the whole run (``leftover`` always present);
        :attr:`leftovers` says how to remove the last two.
        """
        self.inflight.resume()
        try:
            for branch in self.pending_branches:
                self._clean(branch)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
        counts = dict(self.cleanup_counts)
        counts.setdefault(RefCleanup.LEFTOVER.value, 0)
        counts[RefCleanup.LEFTOVER.value] += len(self.pending_branches)
        return counts
