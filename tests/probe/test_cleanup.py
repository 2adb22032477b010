"""Throwaway-branch clean-up: what a push can still do, and the truthful end of the branch.

The loopback git daemon runs receive-pack (and its pre-receive hook) in its own
process, like a real server: a client killed while the hook sleeps leaves a push
that lands seconds later.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from gitnetdiag.probe.cleanup import (
    DELETE_TIMEOUT_S,
    STEP_MIN_S,
    Aftermath,
    CleanupResult,
    RefCleanup,
    delete_may_have_landed,
    push_aftermath,
    remove_command,
    remove_probe_ref,
)
from gitnetdiag.probe.gitpush import (
    FailureKind,
    GitRun,
    Transport,
    classify_git_stderr,
    delete_argv,
    error_for_failure,
    failure_line,
    parse_pack_progress,
    push_argv,
    run_git,
)
from gitnetdiag.probe.pushonce import sent_too_little
from gitnetdiag.probe.repo import generate_repo
from gitnetdiag.vocabulary import TransportKind
from tests.httpremote import TOKEN
from tests.probe.lossyremote import LossyRemote, serve_lossy_remote

HOOK_S = 3.0


def _run(stderr: str, code: int | None = 1, *, timed_out: bool = False) -> GitRun:
    return GitRun(argv=("git",), exit_code=code, wall_s=1.0, timed_out=timed_out,
                  stderr=stderr, stdout="")


WROTE = ("Enumerating objects: 4, done.\rWriting objects: 100% (4/4), 2.00 MiB | 9 MiB/s, "
         "done.\nTotal 4 (delta 0), reused 0 (delta 0), pack-reused 0\n")


@pytest.mark.parametrize(("run", "expected"), [
    (None, Aftermath.NOT_STARTED),
    (_run("", 0), Aftermath.CREATED),
    (_run("fatal: unable to access 'https://h/r.git/': Failed to connect to h port 443 after "
          "2 ms: Couldn't connect to server"), Aftermath.NOT_STARTED),
    (_run("Host key verification failed.\nfatal: Could not read from remote repository."),
     Aftermath.NOT_STARTED),
    (_run(WROTE + "To h:r\n ! [remote rejected] x -> gitnetdiag/probe-1 (pre-receive hook "
          "declined)\n"), Aftermath.SETTLED),
    (_run(WROTE, None, timed_out=True), Aftermath.MAY_LAND),
    (_run(WROTE + "error: RPC failed; HTTP 504 curl 22\n"), Aftermath.MAY_LAND),
    (_run(WROTE + "error: RPC failed; HTTP 413 curl 22\n"), Aftermath.SETTLED),
    (_run("Writing objects:  40% (2/4)", -15), Aftermath.CUT),
    (_run("Writing objects:  40% (2/4)", None, timed_out=True), Aftermath.CUT),
])
def test_push_aftermath_follows_what_the_server_got(run: GitRun | None,
                                                    expected: Aftermath) -> None:
    """Only a push that handed over its whole pack without an answer may still land."""
    assert push_aftermath(run) is expected


def test_couldnt_connect_is_refused_and_host_key_line_is_the_reason() -> None:
    refused = ("fatal: unable to access 'https://127.0.0.1:9/r.git/': Failed to connect to "
               "127.0.0.1 port 9 after 0 ms: Couldn't connect to server\n")
    assert classify_git_stderr(refused) is FailureKind.REFUSED
    host_key = ("No ED25519 host key is known for [10.0.0.2]:22 and you have requested strict "
                "checking.\nHost key verification failed.\nfatal: Could not read from remote "
                "repository.\n\nPlease make sure you have the correct access rights\n"
                "and the repository exists.\n")
    assert classify_git_stderr(host_key) is FailureKind.HOST_KEY
    line = failure_line(host_key)
    assert line.startswith("No ED25519 host key is known"), line
    error = error_for_failure(FailureKind.HOST_KEY, "ssh://git@h/r.git", line)
    assert error.reference == "ssh-host-key"
    assert "repository exists" not in error.message and "known_hosts" in error.hint
    assert failure_line("x\nfatal: Could not read from remote repository.\n\nPlease make sure "
                        "you have the correct access rights\nand the repository exists.\n") == "x"


def test_pack_progress_and_no_data() -> None:
    progress = parse_pack_progress(WROTE)
    assert (progress.objects, progress.written_bytes) == (4, 2 * 2**20)
    assert progress.pack_finished
    assert parse_pack_progress("Writing objects:  40% (2/4)").pack_finished is False
    nothing = parse_pack_progress("Total 0 (delta 0), reused 0 (delta 0), pack-reused 0\n")
    assert sent_too_little(nothing.objects, nothing.written_bytes, 3_800_000)
    assert sent_too_little(3, 10_000, 3_800_000)
    assert not sent_too_little(4, 2 * 2**20, 2_100_000)
    assert sent_too_little(None, None, 1000)  # "Everything up-to-date"


def test_delete_carries_a_lease_on_the_pushed_object() -> None:
    transport = Transport(protocol=TransportKind.H1, url="https://u:tok@h/r.git")
    argv = delete_argv(transport, "gitnetdiag/probe-ab", "a" * 40)
    assert f"--force-with-lease=refs/heads/gitnetdiag/probe-ab:{'a' * 40}" in argv
    assert argv[-1] == ":refs/heads/gitnetdiag/probe-ab"
    with pytest.raises(ValueError):
        delete_argv(transport, "gitnetdiag/probe-ab", "HEAD")
    command = remove_command(transport, "gitnetdiag/probe-ab", "a" * 40)
    assert "tok" not in command and command.startswith("git push --force-with-lease=")
    push = push_argv(transport, "a" * 40, "gitnetdiag/probe-ab")
    for flag in ("--no-follow-tags", "--no-recurse-submodules", "--no-verify",
                 "push.followTags=false", "push.pushOption=", "core.hooksPath=/dev/null"):
        assert flag in push


def _slow_hook(git_daemon: str, tmp_path: Path) -> None:
    hook = tmp_path / "srv" / "repo.git" / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ncat >/dev/null\nsleep {HOOK_S}\n")
    hook.chmod(0o755)


def test_cleanup_waits_for_a_push_the_server_applies_after_the_client_gave_up(
    git_daemon: str, tmp_path: Path, remote_refs: Callable[[str], dict[str, str]]
) -> None:
    """The push times out while the hook sleeps; the ref lands later and is deleted then."""
    _slow_hook(git_daemon, tmp_path)
    before = remote_refs(git_daemon)
    repo = generate_repo(tmp_path / "repo", 256 * 1024, seed=7)
    transport = Transport(protocol=TransportKind.GIT, url=git_daemon)
    branch = "gitnetdiag/probe-race1"
    push = run_git(push_argv(transport, repo.head_oid, branch), env=transport.env(),
                   cwd=repo.path, timeout_s=1.0)
    assert push.timed_out and push_aftermath(push) is Aftermath.MAY_LAND, push.stderr
    assert f"refs/heads/{branch}" not in remote_refs(git_daemon)  # not yet
    started = time.monotonic()
    result = remove_probe_ref(transport, branch, repo.head_oid, push_aftermath(push),
                              runner=run_git, cwd=repo.path, wait_s=15.0)
    assert result.status is RefCleanup.DELETED, result
    # The create lands ~HOOK_S after the push started; the delete runs the hook again.
    assert HOOK_S <= time.monotonic() - started + 1.0 < 3 * HOOK_S + 5
    assert remote_refs(git_daemon) == before


def test_cleanup_leaves_a_branch_at_another_object_alone(
    git_daemon: str, tmp_path: Path, remote_refs: Callable[[str], dict[str, str]]
) -> None:
    """The lease: a branch that is not our push is reported leftover, never deleted."""
    repo = generate_repo(tmp_path / "repo", 4096, seed=8)
    transport = Transport(protocol=TransportKind.GIT, url=git_daemon)
    branch = "gitnetdiag/probe-other1"
    pushed = run_git(push_argv(transport, repo.head_oid, branch), env=transport.env(),
                     cwd=repo.path, timeout_s=30.0)
    assert pushed.ok, pushed.stderr
    for aftermath in (Aftermath.SETTLED, Aftermath.CREATED):
        result = remove_probe_ref(transport, branch, "b" * 40, aftermath, runner=run_git,
                                  cwd=repo.path, wait_s=0.0)
        assert result.status is RefCleanup.LEFTOVER and "left alone" in result.detail, result
    assert remote_refs(git_daemon)[f"refs/heads/{branch}"] == repo.head_oid
    done = remove_probe_ref(transport, branch, repo.head_oid, Aftermath.CREATED, runner=run_git,
                            cwd=repo.path, wait_s=0.0)
    assert done.status is RefCleanup.DELETED and done.remove_command is None


def test_cut_push_is_never_created_after_one_look(git_daemon: str, tmp_path: Path) -> None:
    repo = generate_repo(tmp_path / "repo", 4096, seed=9)
    transport = Transport(protocol=TransportKind.GIT, url=git_daemon)
    result = remove_probe_ref(transport, "gitnetdiag/probe-cut1", repo.head_oid, Aftermath.CUT,
                              runner=run_git, cwd=repo.path, wait_s=30.0)
    assert result.status is RefCleanup.NEVER_CREATED and result.waited_s < 5


def test_refused_push_needs_no_network_to_clean_up(tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def runner(argv: object, **_: object) -> GitRun:
        calls.append(list(argv))  # type: ignore[call-overload]
        raise AssertionError("no git run expected")

    refused = _run("fatal: unable to access 'https://127.0.0.1:9/r.git/': Failed to connect to "
                   "127.0.0.1 port 9 after 0 ms: Couldn't connect to server")
    result = remove_probe_ref(Transport(protocol=TransportKind.H1, url="https://127.0.0.1:9/r.git"),
                              "gitnetdiag/probe-x", "a" * 40, push_aftermath(refused),
                              runner=runner, cwd=tmp_path)
    assert result.status is RefCleanup.NEVER_CREATED and calls == []


def test_receive_packs_word_ends_the_clean_up_without_another_look(tmp_path: Path) -> None:
    """An ``ng`` for our ref (a cut native pack) needs no ls-remote; a delete that
    receive-pack reported as ``- [deleted]`` needs no second one."""
    calls: list[list[str]] = []
    branch, oid = "gitnetdiag/probe-0123abcd", "b" * 40
    transport = Transport(protocol=TransportKind.SSH, url="ssh://git@127.0.0.1:9/r.git")

    def runner(argv: object, **_: object) -> GitRun:
        calls.append(list(argv))  # type: ignore[call-overload]
        return GitRun(argv=tuple(calls[-1]), exit_code=0, wall_s=0.1, timed_out=False,
                      stderr=f"To ssh://127.0.0.1:9/r.git\n - [deleted]         {branch}\n",
                      stdout="")

    refused = remove_probe_ref(transport, branch, oid, Aftermath.REFUSED, runner=runner,
                               cwd=tmp_path)
    assert refused.status is RefCleanup.NEVER_CREATED and calls == []
    deleted = remove_probe_ref(transport, branch, oid, Aftermath.CREATED, runner=runner,
                               cwd=tmp_path)
    assert deleted.status is RefCleanup.DELETED
    assert len(calls) == 1 and "push" in calls[0]  # the delete only, no ls-remote after it


def test_unanswered_push_absent_at_the_deadline_is_unconfirmed(tmp_path: Path) -> None:
    clock = [0.0]

    def runner(argv: object, **_: object) -> GitRun:
        clock[0] += 0.1
        return _run("", 0)

    result = remove_probe_ref(
        Transport(protocol=TransportKind.GIT, url="git://h/r.git"), "gitnetdiag/probe-x", "a" * 40,
        Aftermath.MAY_LAND, runner=runner, cwd=tmp_path, wait_s=5.0,
        clock=lambda: clock[0], sleep=lambda s: clock.__setitem__(0, clock[0] + s),
    )
    assert result.status is RefCleanup.UNCONFIRMED
    assert result.remove_command is not None and 5.0 <= result.waited_s < 6.0


def test_push_safety_options_beat_the_users_command_line_config() -> None:
    """Even ``git -c push.followTags=true`` (GIT_CONFIG_PARAMETERS) loses: later -c wins."""
    args = Transport(protocol=TransportKind.GIT, url="git://h/r.git").config_args()
    for key, expected in (("push.followTags", "false"), ("core.hooksPath", "/dev/null"),
                          ("push.recurseSubmodules", "no")):
        out = subprocess.run(["git", "-c", f"{key}=true", *args, "config", key],
                             capture_output=True, text=True, timeout=30)
        assert out.stdout.strip() == expected, out.stderr


def test_refused_https_probe_records_never_created_and_no_cleanup_error(tmp_path: Path) -> None:
    """curl's "Couldn't connect to server" is refused: no delete, no false cleanup-failed."""
    import socket

    from gitnetdiag.probe.runner import ProbeOptions, run_probe

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"https://127.0.0.1:{port}/r.git"
    outcome = run_probe(ProbeOptions(
        urls={TransportKind.H1: url}, protocols=(TransportKind.H1,),
        size_bytes=4096, seed=1, repo=None,
        repeat=2, ca_file=None, insecure=False, ssh_command=None, out_dir=tmp_path / "run",
        full=False, burst=0, timeout_s=30.0, capture=False,
    ))
    (push,) = outcome.manifest.protocols[0].pushes  # refused is fatal: no second push
    assert push.failure_kind == "refused" and push.cleanup == "never-created", push
    assert [(e.stage, e.reference) for e in outcome.manifest.errors] == [("push", "refused")]
    assert not (tmp_path / "run" / push.artifacts.get("cleanup_stderr", "-")).is_file()


def test_a_delete_cut_by_an_edge_that_lands_later_is_deleted(tmp_path: Path) -> None:
    """Issue 33's edge-idle-timeout: the branch lands after the edge cut the push; the
    delete under lease is cut too (its hook runs as long), lands later, and the branch is
    gone: ``deleted``, after one delete, not a second one sent into the running hook."""
    clock = [0.0]
    branch, oid = "gitnetdiag/probe-0123abcd", "c" * 40
    deletes: list[float] = []
    landed_at: list[float] = []

    def runner(argv: object, **_: object) -> GitRun:
        args = list(argv)  # type: ignore[call-overload]
        clock[0] += 0.2
        if "ls-remote" in args:
            gone = bool(landed_at) and clock[0] >= landed_at[0]
            listing = "" if gone else f"{oid}\trefs/heads/{branch}\n"
            return GitRun(argv=tuple(args), exit_code=0, wall_s=0.2, timed_out=False,
                          stderr="", stdout=listing)
        deletes.append(clock[0])
        landed_at.append(clock[0] + 3.0)  # its hook ends 3 s later
        return _run("error: RPC failed; curl 18 transfer closed with outstanding read data "
                    "remaining\nsend-pack: unexpected disconnect while reading sideband packet")

    result = remove_probe_ref(
        Transport(protocol=TransportKind.H1, url="https://h/r.git"), branch, oid,
        Aftermath.MAY_LAND, runner=runner, cwd=tmp_path, wait_s=20.0,
        clock=lambda: clock[0], sleep=lambda s: clock.__setitem__(0, clock[0] + s))
    assert result.status is RefCleanup.DELETED, result
    assert len(deletes) <= 2, deletes
    assert result.waited_s < 10.0


def _hanging(clock: list[float], calls: list[float]) -> object:
    """A runner for a server that answers nothing: every git run lasts its whole timeout."""
    def runner(argv: object, *, timeout_s: float, **_: object) -> GitRun:
        calls.append(timeout_s)
        clock[0] += timeout_s
        return _run("", None, timed_out=True)
    return runner


@pytest.mark.parametrize("protocol", [TransportKind.H1, TransportKind.GIT])
def test_a_server_that_answers_nothing_holds_the_cleanup_no_longer_than_its_wait(
    tmp_path: Path, protocol: TransportKind
) -> None:
    """Issue 34: no status, and no ls-remote either. The wait promised (30 s) bounds the
    whole clean-up, each look included: ``unconfirmed`` after 30 s, with both commands.
    Before: four looks of at least 10 s each after a first of 30 s (60 s)."""
    clock: list[float] = [0.0]
    calls: list[float] = []
    result = remove_probe_ref(
        Transport(protocol=protocol, url="http://h/r.git" if protocol.is_http else "git://h/r"),
        "gitnetdiag/probe-x", "a" * 40, Aftermath.MAY_LAND, runner=_hanging(clock, calls),
        cwd=tmp_path, wait_s=30.0, clock=lambda: clock[0],
        sleep=lambda s: clock.__setitem__(0, clock[0] + s))
    assert result.status is RefCleanup.UNCONFIRMED, result
    assert result.check_command and result.remove_command
    assert "cannot be listed" in result.detail or "could not be listed" in result.detail
    assert result.waited_s <= 30.0 + STEP_MIN_S, (result.waited_s, calls)


def test_the_callers_end_bounds_every_step_and_a_branch_seen_late(tmp_path: Path) -> None:
    """``until`` (watch's deadline) beats ``wait_s``; a branch seen just before it is not
    given a delete's 60 s more: it is ``leftover`` with its command at the end."""
    clock: list[float] = [0.0]
    oid, branch = "d" * 40, "gitnetdiag/probe-late"

    def runner(argv: object, *, timeout_s: float, **_: object) -> GitRun:
        args = list(argv)  # type: ignore[call-overload]
        if "ls-remote" in args:
            clock[0] += 0.1
            return GitRun(argv=tuple(args), exit_code=0, wall_s=0.1, timed_out=False,
                          stderr="", stdout=f"{oid}\trefs/heads/{branch}\n")
        clock[0] += timeout_s  # the delete hangs in the server's hook
        return _run("", None, timed_out=True)

    result = remove_probe_ref(
        Transport(protocol=TransportKind.GIT, url="git://h/r"), branch, oid,
        Aftermath.MAY_LAND, runner=runner, cwd=tmp_path, wait_s=30.0, until=8.0,
        clock=lambda: clock[0], sleep=lambda s: clock.__setitem__(0, clock[0] + s))
    assert result.status is RefCleanup.LEFTOVER and result.remove_command, result
    assert result.waited_s <= 8.0 + STEP_MIN_S, result


@pytest.mark.parametrize(("stderr", "expected"), [
    (WROTE + "error: RPC failed; HTTP 503 curl 22 The requested URL returned error: 503\n",
     Aftermath.SETTLED),
    (WROTE + "error: RPC failed; HTTP 502 curl 22 The requested URL returned error: 502\n",
     Aftermath.SETTLED),
    ("Writing objects:  40% (2/4)\nerror: RPC failed; HTTP 413 curl 22\n", Aftermath.SETTLED),
    ("Writing objects:  40% (2/4)\nerror: RPC failed; HTTP 411 curl 22\n", Aftermath.SETTLED),
    (WROTE + "error: RPC failed; HTTP 504 curl 22 The requested URL returned error: 504\n",
     Aftermath.MAY_LAND),
    (WROTE + "error: RPC failed; curl 18 transfer closed with outstanding read data "
     "remaining\nsend-pack: unexpected disconnect while reading sideband packet\n",
     Aftermath.MAY_LAND),
    ("fatal: unable to access 'https://h/r.git/': The requested URL returned error: 503\n",
     Aftermath.CUT),
])
def test_an_error_status_to_the_pack_post_is_looked_at_once_not_waited_for(
        stderr: str, expected: Aftermath) -> None:
    """An error status answered the pack POST in receive-pack's place (an edge's 502/503, a
    413/411): nothing can land later, one look checks. A 504 (the edge gave up while the
    backend may work) and a 200 then cut by an edge keep the wait; a 503 to the first GET
    never reached receive-pack at all."""
    assert push_aftermath(_run(stderr)) is expected


@pytest.mark.parametrize(("run", "landed"), [
    (_run("", None, timed_out=True), True),
    (_run("error: RPC failed; curl 18 transfer closed with outstanding read data remaining"),
     True),
    (_run("error: RPC failed; HTTP 504 curl 22 The requested URL returned error: 504"), True),
    (_run("error: RPC failed; HTTP 503 curl 22 The requested URL returned error: 503"), False),
    (_run("fatal: unable to access 'https://h/r.git/': Failed to connect to h port 443 after "
          "2 ms: Couldn't connect to server"), False),
    (_run("To h:r\n ! [remote rejected] gitnetdiag/probe-1 (pre-receive hook declined)\n"),
     False),
])
def test_a_delete_may_have_landed_only_when_its_answer_was_lost(run: GitRun,
                                                                landed: bool) -> None:
    assert delete_may_have_landed(run) is landed


class _LossyPath:
    """Fakes a server behind a path that loses every delete's answer: the delete lasts its
    whole timeout (``lands``: it was applied meanwhile), while ls-remote, on a new
    connection, works (or, ``listing_fails_after_delete``, fails too)."""

    def __init__(self, branch: str, oid: str, *, lands: bool,
                 listing_fails_after_delete: bool = False) -> None:
        self.clock = [0.0]
        self.branch, self.oid, self.lands = branch, oid, lands
        self.listing_fails = listing_fails_after_delete
        self.present = True
        self.steps: list[tuple[str, float]] = []

    def runner(self, argv: object, *, timeout_s: float, **_: object) -> GitRun:
        args = list(argv)  # type: ignore[call-overload]
        step = "ls-remote" if "ls-remote" in args else "delete"
        self.steps.append((step, timeout_s))
        if step == "delete":
            self.clock[0] += timeout_s
            self.present = self.present and not self.lands
            return _run("", None, timed_out=True)
        self.clock[0] += 0.2
        if self.listing_fails and any(s == "delete" for s, _ in self.steps):
            return _run("fatal: unable to access 'https://h/r.git/': Failed to connect to h "
                        "port 443 after 3 ms: Couldn't connect to server")
        listing = f"{self.oid}\trefs/heads/{self.branch}\n" if self.present else ""
        return GitRun(argv=tuple(args), exit_code=0, wall_s=0.2, timed_out=False, stderr="",
                      stdout=listing)

    def remove(self, tmp_path: Path, aftermath: Aftermath, **kwargs: Any) -> CleanupResult:
        return remove_probe_ref(
            Transport(protocol=TransportKind.H1, url="https://u:tok@h/r.git"), self.branch,
            self.oid, aftermath, runner=self.runner, cwd=tmp_path, clock=lambda: self.clock[0],
            sleep=lambda s: self.clock.__setitem__(0, self.clock[0] + s), **kwargs)


@pytest.mark.parametrize("aftermath", [Aftermath.MAY_LAND, Aftermath.CREATED])
def test_a_lost_delete_answer_is_no_leftover_when_ls_remote_shows_it_gone(
        tmp_path: Path, aftermath: Aftermath) -> None:
    """Issue 42: behind a firewall that forgot the silent connection, the delete went
    through and only its answer was lost. Before: "still on the server: the clean-up's
    61 s ran out". Now ls-remote on a new connection, within the same 60 s, says gone."""
    path = _LossyPath("gitnetdiag/probe-lost1", "e" * 40, lands=True)
    result = path.remove(tmp_path, aftermath, wait_s=30.0)
    assert result.status is RefCleanup.DELETED, result
    assert "answer was lost" in result.detail
    assert result.remove_command is None
    assert [s for s, _ in path.steps][-2:] == ["delete", "ls-remote"], path.steps
    assert result.waited_s <= DELETE_TIMEOUT_S + 1.0, path.steps


def test_a_lost_delete_answer_is_checked_even_when_the_callers_end_has_come(
        tmp_path: Path) -> None:
    """watch's deadline: the delete gets what is left; the look after it runs anyway (a
    look's shortest time past the end, no more) and the branch is ``deleted``."""
    path = _LossyPath("gitnetdiag/probe-lost2", "e" * 40, lands=True)
    result = path.remove(tmp_path, Aftermath.CREATED, until=4.0)
    assert result.status is RefCleanup.DELETED, (result, path.steps)
    assert [s for s, _ in path.steps] == ["delete", "ls-remote"]
    assert result.waited_s <= 4.0 + STEP_MIN_S


def test_a_branch_ls_remote_still_shows_after_unanswered_deletes_is_left(
        tmp_path: Path) -> None:
    """The server says it is there: ``leftover`` with its command, in the server's words."""
    path = _LossyPath("gitnetdiag/probe-lost3", "e" * 40, lands=False)
    result = path.remove(tmp_path, Aftermath.CREATED, wait_s=30.0)
    assert result.status is RefCleanup.LEFTOVER, result
    assert "ls-remote still shows it" in result.detail
    assert result.remove_command and "tok" not in result.remove_command
    assert path.steps[-1][0] == "ls-remote"
    assert result.waited_s <= DELETE_TIMEOUT_S + STEP_MIN_S, path.steps


def test_a_lost_delete_answer_with_no_listing_either_is_unconfirmed(tmp_path: Path) -> None:
    """Neither the delete's answer nor ls-remote: ``unconfirmed`` (not ``leftover``), saying
    the delete was sent, with the commands that check and remove it."""
    path = _LossyPath("gitnetdiag/probe-lost4", "e" * 40, lands=True,
                      listing_fails_after_delete=True)
    result = path.remove(tmp_path, Aftermath.MAY_LAND, wait_s=30.0)
    assert result.status is RefCleanup.UNCONFIRMED, result
    assert "the delete was sent and its answer lost" in result.detail
    assert "Couldn't connect" in result.detail
    assert result.check_command and result.remove_command
    assert result.waited_s <= DELETE_TIMEOUT_S + STEP_MIN_S, path.steps


@pytest.fixture()
def lossy_remote(tmp_path: Path) -> Iterator[LossyRemote]:
    yield from serve_lossy_remote(tmp_path)


def _server_refs(bare: Path) -> str:
    """The bare repository's refs as the server holds them (no network)."""
    return subprocess.run(["git", "-C", str(bare), "for-each-ref", "--format=%(refname)"],
                          capture_output=True, text=True, check=True, timeout=30).stdout


def _recording(steps: list[str]) -> Callable[..., GitRun]:
    def runner(argv: Sequence[str], **kwargs: Any) -> GitRun:
        assert TOKEN not in " ".join(argv)  # the credentials go by the environment
        steps.append("ls-remote" if "ls-remote" in argv else "delete")
        return run_git(argv, **kwargs)
    return runner


def test_a_real_delete_whose_answer_the_path_loses_is_deleted_not_left(
        lossy_remote: LossyRemote, tmp_path: Path) -> None:
    """git http-backend applies the delete, its answer never comes back (the connection
    held silent); the clean-up asks again with ls-remote on a new connection."""
    repo = generate_repo(tmp_path / "repo", 64 * 1024, seed=11)
    transport = Transport(protocol=TransportKind.H1, url=lossy_remote.url)
    branch = "gitnetdiag/probe-lost5"
    push = run_git(push_argv(transport, repo.head_oid, branch), env=transport.env(),
                   cwd=repo.path, timeout_s=30.0)
    assert push.ok, push.stderr
    assert f"refs/heads/{branch}" in _server_refs(lossy_remote.bare)
    lossy_remote.lose_answers.set()
    steps: list[str] = []
    started = time.monotonic()
    result = remove_probe_ref(transport, branch, repo.head_oid, Aftermath.CREATED,
                              runner=_recording(steps), cwd=repo.path, until=started + 5.0)
    took = time.monotonic() - started
    assert lossy_remote.lost.is_set()
    assert result.status is RefCleanup.DELETED and "answer was lost" in result.detail, result
    assert steps == ["delete", "ls-remote"]
    assert took < 5.0 + STEP_MIN_S, took
    assert f"refs/heads/{branch}" not in _server_refs(lossy_remote.bare)


def test_a_real_503_to_the_pack_post_is_checked_once_in_seconds(
        lossy_remote: LossyRemote, tmp_path: Path) -> None:
    """An edge with no backend answers the pack POST 503: receive-pack never ran, so the
    clean-up does not wait 30 s for a hook; one ls-remote checks, and it ends at once."""
    lossy_remote.status.append(503)
    repo = generate_repo(tmp_path / "repo", 256 * 1024, seed=12)
    transport = Transport(protocol=TransportKind.H1, url=lossy_remote.url)
    branch = "gitnetdiag/probe-503"
    push = run_git(push_argv(transport, repo.head_oid, branch), env=transport.env(),
                   cwd=repo.path, timeout_s=30.0)
    assert not push.ok and "HTTP 503" in push.stderr, push.stderr
    assert push_aftermath(push) is Aftermath.SETTLED
    steps: list[str] = []
    started = time.monotonic()
    result = remove_probe_ref(transport, branch, repo.head_oid, push_aftermath(push),
                              runner=_recording(steps), cwd=repo.path, wait_s=30.0)
    took = time.monotonic() - started
    assert result.status is RefCleanup.NEVER_CREATED, result
    assert "hook" not in result.detail
    assert steps == ["ls-remote"] and took < 5.0, (steps, took)
