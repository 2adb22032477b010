"""``--fetch-seed SIZE``: something to fetch when the user's repository is too small or empty.

Without the option a fetch run writes nothing on the server. With it, before
the clones, a generated repository (:func:`~gitnetdiag.probe.repo.generate_repo`,
random data, packed) is pushed whole to a throwaway branch named as the push
probes name theirs (``gitnetdiag/probe-<id>``), over the first protocol that
takes it; the clones then fetch that branch alone (``--single-branch``). After
the clones, also on Ctrl-C or error, the branch is deleted under a lease on the
pushed object with the push probes' own clean-up
(:func:`~gitnetdiag.probe.cleanup.remove_probe_ref`), and one more
``ls-remote`` checks it is gone. What became of it is recorded
(:class:`~gitnetdiag.rundir.records.SeedBranch`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from gitnetdiag.errors import GitnetdiagError, NetworkError
from gitnetdiag.probe.cleanup import (
    Aftermath,
    RefCleanup,
    check_command,
    interrupts_deferred,
    push_aftermath,
    remove_probe_ref,
)
from gitnetdiag.probe.gitpush import (
    Transport,
    failure_line,
    ls_remote_argv,
    parse_ls_remote,
    push_argv,
    run_git,
)
from gitnetdiag.probe.repo import GeneratedRepo, generate_repo, probe_branch_name
from gitnetdiag.rundir.records import RunStage, SeedBranch
from gitnetdiag.vocabulary import TransportKind

SEED_DIR = "seed"
"""The generated repository's directory under the run's scratch directory."""
CHECK_TIMEOUT_S = 60.0
"""Bound of the ``ls-remote`` that checks the branch gone."""


SEED_FILES = 128
"""Files of the seed repository: with its tree and commit more objects than git's default
``receive.unpackLimit`` (100), so receive-pack keeps the pushed pack as it came and
upload-pack serves it again as is. Fewer objects are unpacked loose on the server, and
every clone then waits for the server to deflate them again (24 MiB in 1 MiB files: 27
loose objects, 3.0 s of pack-objects on this machine): the seed itself would be a
``server-pack-generation`` culprit."""


def seed_file_bytes(size_bytes: int) -> int:
    """Bytes per file that split ``size_bytes`` into :data:`SEED_FILES` files (at least 1)."""
    return max(1, -(-size_bytes // SEED_FILES))


def seed_repository(scratch: Path, size_bytes: int, seed: int) -> GeneratedRepo:
    """The seed's repository: ``size_bytes`` of random data in :data:`SEED_FILES` files
    (CPU and disk only: the fetch run makes it while the paths are measured)."""
    return generate_repo(scratch / SEED_DIR, size_bytes, seed, "random",
                         file_bytes=seed_file_bytes(size_bytes))


def seed_branch(transports: tuple[Transport, ...], scratch: Path, *, probe_id: str,
                size_bytes: int, seed: int, timeout_s: float,
                note: Callable[[SeedBranch], None],
                repo: GeneratedRepo | None = None) -> SeedBranch:
    """Generate ``size_bytes`` of random data (unless ``repo`` is it, made by
    :func:`seed_repository`) and push it whole to a throwaway branch over
    the first transport that takes it; ``pushed`` False when every transport refused.

    ``note`` is given the record before each push (as ``may-land``: a push cut by Ctrl-C
    may still create the branch) and after it, so the clean-up always knows the object id
    its lease needs and what the server may still do."""
    repo = repo if repo is not None else seed_repository(scratch, size_bytes, seed)
    record = SeedBranch(branch=probe_branch_name(probe_id), oid=repo.head_oid,
                       size_bytes=size_bytes)
    for transport in transports:
        record = replace(record, protocol=transport.protocol.value,
                         push_aftermath=Aftermath.MAY_LAND.value)
        note(record)
        run = run_git(push_argv(transport, record.oid, record.branch), env=transport.env(),
                      cwd=repo.path, timeout_s=timeout_s)
        record = replace(record, push_wall_s=run.wall_s, pushed=run.ok,
                         push_error="" if run.ok else failure_line(run.stderr),
                         push_aftermath=push_aftermath(run).value)
        note(record)
        if run.ok:
            break
    return record


def seed_errors(record: SeedBranch) -> list[tuple[RunStage, GitnetdiagError]]:
    """``(stage, error)`` for what went wrong with a seed branch: a push nobody took
    (``seed``), a branch that may be left on the server (``cleanup``)."""
    errors: list[tuple[RunStage, GitnetdiagError]] = []
    if not record.pushed:
        errors.append(("seed", NetworkError(
            f"could not push the --fetch-seed branch: {record.push_error or 'not attempted'}",
            hint="--fetch-seed needs write access; without it a fetch measures what the URL "
            "serves", reference="fetch-seed-push")))
    if record.cleanup in (RefCleanup.LEFTOVER, RefCleanup.UNCONFIRMED) or \
            record.gone_on_server is False:
        errors.append(("cleanup", NetworkError(
            f"the throwaway branch {record.branch} may be left on the server "
            f"({record.cleanup}: {record.cleanup_detail or 'still listed'})",
            hint=record.remove_command or record.check_command or "git push --delete it",
            reference="cleanup-leftover")))
    return errors


def remove_seed(record: SeedBranch, transports: dict[TransportKind, Transport], scratch: Path, *,
                wait_s: float) -> SeedBranch:
    """Delete the seed branch under its lease (signals held meanwhile), then look once more
    with ``ls-remote``; the record gains the clean-up's status and the look's answer.
    ``scratch`` is where :func:`seed_branch` made the repository (the lease is checked
    in it)."""
    if record.protocol is None:
        return replace(record, cleanup=RefCleanup.NEVER_CREATED,
                       cleanup_detail="no push was attempted")
    transport = transports[TransportKind(record.protocol)]
    with interrupts_deferred():
        result = remove_probe_ref(transport, record.branch, record.oid,
                                  Aftermath(record.push_aftermath), runner=run_git,
                                  cwd=scratch / SEED_DIR, wait_s=wait_s)
        gone = _gone(transport, record.branch, scratch / SEED_DIR)
    return replace(record, cleanup=result.status, cleanup_detail=result.detail,
                   cleanup_s=result.waited_s, remove_command=result.remove_command,
                   check_command=result.check_command or check_command(transport, record.branch),
                   gone_on_server=gone)


def _gone(transport: Transport, branch: str, cwd: Path) -> bool | None:
    """True when ``ls-remote`` lists no such branch; None when it could not list."""
    listing = run_git(ls_remote_argv(transport, f"refs/heads/{branch}"), env=transport.env(),
                      cwd=cwd, timeout_s=CHECK_TIMEOUT_S)
    if not listing.ok:
        return None
    return f"refs/heads/{branch}" not in parse_ls_remote(listing.stdout)
