"""Removing a throwaway branch after a push, and saying truthfully what became of it.

receive-pack applies a ref update only after the whole pack arrived and the
pre-receive hook accepted it. A client that gives up (timeout, Ctrl-C,
SIGTERM, a proxy's 504) after sending the whole pack leaves the server
running: the branch can appear seconds later. Deleting at once would race it
("deleting a non-existent ref", then the create lands). So the clean-up first
decides from the push what can still happen (:func:`push_aftermath`), then:

    NOT_STARTED  push never reached receive-pack ---------------> never-created
    CREATED      the push succeeded ---------------> delete --> receive-pack reports it
                                                                 deleted (else: verify gone)
    SETTLED      the server answered otherwise (rejected; an error status in receive-pack's
                 place: a 4xx, or an edge's 502/503: receive-pack never ran to its end,
                 whether the pack was cut or not)
                                                  -- one look, no wait --> never-created | delete
    CUT          pack never delivered whole (git's progress has no ``Total``, no
                 report-status): receive-pack applies nothing ---> never-created, no look
    REFUSED      receive-pack's report says ``ng`` for this very ref --> never-created
    REDIRECTED   a 3xx answered the pack instead of receive-pack ---> never-created, no look
    MAY_LAND     pack sent, no answer -- poll ls-remote until the deadline:
                   appears at our object --> delete under lease --> verify gone --> deleted
                   still absent at the deadline ------------------------------> unconfirmed
                 (a 504, or a 200 then cut by an edge: the hook may still land it)

A delete whose answer is lost (it timed out, or the connection was cut: a path that
forgets a silent connection loses the delete's answer as it lost the push's) may have
landed. The server is asked again on a new connection (``ls-remote``, which runs no
hook) before the branch is called anything, also when the clean-up's end has come:

    delete unanswered --> ls-remote --> absent ----------------> deleted (its answer was lost)
                                    --> there ----------------> delete again, or leftover
                                    --> cannot list either ---> unconfirmed (delete unanswered)

Every step is bounded by the clean-up's end: ``wait_s`` for a push that may land
(the delete of a branch seen in time gets :data:`DELETE_TIMEOUT_S` more),
:data:`DELETE_TIMEOUT_S` for the others, or the caller's ``until`` (``watch``'s cycle
deadline), whichever comes first. Each git run gets what is left of it (at least
:data:`STEP_MIN_S`), and what is not confirmed then is reported as it stands
(``unconfirmed``/``leftover`` with its commands), never waited for: a server that
answers nothing at all (no status, no ``ls-remote``) cannot hold the run longer.

A delete always carries a lease on the pushed object
(``--force-with-lease=<ref>:<oid>``), so it removes our push and nothing else.
Only a branch known to be there (the push succeeded, or ls-remote showed it) and
not shown gone is ``leftover``, with the exact command to remove it. When the
refs cannot be listed for a branch never seen, or after a delete whose answer was
lost, it is ``unconfirmed``: the reason and the command that checks
(``check_command``), never "still on the server". A delete's timeout leaves
:data:`CONFIRM_LOOK_S` of the clean-up's time for the look after it.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from types import FrameType
from typing import Protocol as TypingProtocol

from gitnetdiag.probe.gitpush import (
    FailureKind,
    GitRun,
    Transport,
    classify_git_stderr,
    delete_argv,
    failure_line,
    ls_remote_argv,
    parse_ls_remote,
    parse_pack_progress,
)
from gitnetdiag.proc import ENDING_SIGNALS, note_signal
from gitnetdiag.redaction import redact_text, redact_url
from gitnetdiag.rundir.records import RefCleanup as RefCleanup  # re-exported: the probes'
from gitnetdiag.vocabulary import TransportKind

DEFAULT_CLEANUP_WAIT_S = 30.0
"""How long the clean-up waits for a push the server may still apply (a slow hook)."""
POLL_INTERVAL_S = 0.5
DELETE_TIMEOUT_S = 60.0
"""The delete runs the server's hooks too: it gets its own timeout, not the push's."""
STEP_MIN_S = 3.0
"""The shortest time a git run of the clean-up gets, even at its end (a look over TLS)."""
CONFIRM_LOOK_S = 10.0
"""Kept from a delete's timeout for the look that follows it: a delete whose answer is lost
is confirmed (or not) by ls-remote on a new connection within the clean-up's time."""
_MAX_DELETES = 3
_ERROR_STATUS = re.compile(r"RPC failed; HTTP (?!408|504)[45]\d\d")
"""An error status answered the request in receive-pack's place: a 4xx refused the request
itself; a 5xx such as an edge's 502/503 (no backend, a broken one) came from an edge or a
server that did not run receive-pack to its end. A 504 (the edge gave up waiting while the
backend may still work) and a 408 may leave receive-pack running."""
_REDIRECT = re.compile(r"RPC failed; HTTP (3\d\d)")
"""receive-pack never answers with a redirect: whatever sent one answered instead of it."""

NEVER_CONNECTED = frozenset({
    FailureKind.REFUSED, FailureKind.UNREACHABLE, FailureKind.TLS, FailureKind.PLAIN_HTTP,
    FailureKind.AUTH, FailureKind.HOST_KEY,
})
"""Failures that happen before receive-pack runs, so no ref can have been created."""


class Aftermath(Enum):
    """What a push can still do to the server once the client stopped."""

    NOT_STARTED = "not-started"
    CREATED = "created"
    CUT = "cut"
    SETTLED = "settled"
    REFUSED = "refused"
    """receive-pack's own report-status refused this ref (``ng``): it updated nothing."""
    REDIRECTED = "redirected"
    """A redirect answered the request that carried the pack: receive-pack never got it."""
    MAY_LAND = "may-land"


def push_aftermath(run: GitRun | None) -> Aftermath:
    """Decide from the push's own output what the server may still do (pure)."""
    if run is None:
        return Aftermath.NOT_STARTED
    if run.ok:
        return Aftermath.CREATED
    if not run.timed_out and classify_git_stderr(run.stderr) in NEVER_CONNECTED:
        return Aftermath.NOT_STARTED
    # Per-ref status lines come only from receive-pack's report, after it decided.
    if any(line.lstrip().startswith(("! [", "* [", "- [")) for line in run.stderr.splitlines()):
        return Aftermath.SETTLED
    # An error status in receive-pack's place: nothing to wait for, but one look (check,
    # do not assume), also when the pack was cut by it.
    if _ERROR_STATUS.search(run.stderr):
        return Aftermath.SETTLED
    if not parse_pack_progress(run.stderr).pack_finished:
        return Aftermath.CUT
    if _REDIRECT.search(run.stderr):
        return Aftermath.REDIRECTED
    return Aftermath.MAY_LAND


def answered_in_place(status: int) -> bool:
    """Whether an HTTP status that answered the pack POST came in receive-pack's place with
    nothing left running (pure): the statuses :data:`_ERROR_STATUS` finds in git's words."""
    return 400 <= status <= 599 and status not in (408, 504)


def delete_may_have_landed(run: GitRun) -> bool:
    """Whether a failed delete may still have been applied (pure): its answer was lost or
    cut (a timeout, a reset, an edge's 504), not refused before receive-pack ran (no
    connection, an error status in its place) nor refused by receive-pack itself."""
    if run.ok or run.timed_out:
        return run.timed_out
    if classify_git_stderr(run.stderr) in NEVER_CONNECTED | {FailureKind.REJECTED}:
        return False
    return not _ERROR_STATUS.search(run.stderr)


@dataclass(frozen=True, kw_only=True)
class CleanupResult:
    """The end of one throwaway branch."""

    status: RefCleanup
    """See :class:`RefCleanup`."""
    detail: str
    """Why, in one line (URLs redacted); empty for a plain ``deleted``/``never-created``."""
    waited_s: float
    """Time the clean-up took (polling, delete and verification)."""
    remove_command: str | None
    """For ``leftover``/``unconfirmed``: the command that removes it (URL redacted)."""
    check_command: str | None = None
    """For ``unconfirmed``: the command that shows whether it is there (URL redacted)."""


class CleanupCancelled(Exception):
    """The run is being torn down (the load test's Ctrl-C): the branch is left to the
    final clean-up, which runs with nothing else in flight."""


class GitRunner(TypingProtocol):
    """Runs one git command with a timeout (:func:`~gitnetdiag.probe.gitpush.run_git`,
    or the load test's :meth:`~gitnetdiag.load.operations.InFlight.run`)."""

    def __call__(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path,
                 timeout_s: float) -> GitRun: ...


def remove_command(transport: Transport, branch: str, oid: str) -> str:
    """The delete gitnetdiag runs, as a user would type it (URL redacted)."""
    ref = f"refs/heads/{branch}"
    return shlex.join(["git", "push", f"--force-with-lease={ref}:{oid}",
                       redact_url(transport.url), f":{ref}"])


def check_command(transport: Transport, branch: str) -> str:
    """The ls-remote that shows whether the branch is on the server (URL redacted)."""
    return shlex.join(["git", "ls-remote", redact_url(transport.url), f"refs/heads/{branch}"])


def _alternatives(transport: Transport) -> tuple[Transport, ...]:
    # A broken HTTP version (an HTTP/2 stall) must not strand the branch: try the other.
    if transport.protocol is TransportKind.H2:
        return (transport, replace(transport, protocol=TransportKind.H1))
    if transport.protocol is TransportKind.H1:
        return (transport, replace(transport, protocol=TransportKind.H2))
    return (transport,)


NOTHING_TO_ASK: dict[Aftermath, str] = {
    Aftermath.NOT_STARTED: "the push never reached the server",
    Aftermath.REFUSED: "",
    # receive-pack applies a ref update only once the whole pack arrived and was checked.
    Aftermath.CUT: "the push never delivered its whole pack",
    Aftermath.REDIRECTED: "a redirect answered the pack: receive-pack never got it",
}
"""Pushes that cannot have created the branch, so the server is not asked: why."""


def remove_probe_ref(
    transport: Transport,
    branch: str,
    oid: str,
    aftermath: Aftermath,
    *,
    runner: GitRunner,
    cwd: Path,
    wait_s: float = DEFAULT_CLEANUP_WAIT_S,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    cancelled: Callable[[], bool] = lambda: False,
    until: float | None = None,
) -> CleanupResult:
    """Wait until the server is done with the push, delete the branch if it points at
    ``oid``, verify it is gone; every step bounded (see the module docstring).

    ``until`` (on ``clock``'s scale): no step runs past it, whatever ``wait_s`` says.
    Raises CleanupCancelled as soon as ``cancelled()`` is true."""
    started = clock()
    deadline = started + (wait_s if aftermath is Aftermath.MAY_LAND else 0.0)
    end = deadline if aftermath is Aftermath.MAY_LAND else started + DELETE_TIMEOUT_S
    removal = _Removal(transport=transport, branch=branch, oid=oid, aftermath=aftermath,
                       runner=runner, cwd=cwd, clock=clock, started=started,
                       deadline=deadline if until is None else min(deadline, until),
                       end=end if until is None else min(end, until), hard_end=until is not None,
                       transports=_alternatives(transport),
                       known_present=aftermath is Aftermath.CREATED)
    if aftermath in NOTHING_TO_ASK:
        return removal.result(RefCleanup.NEVER_CREATED, NOTHING_TO_ASK[aftermath])
    # A successful push created the branch: delete at once, the lease guards the rest.
    look_first = aftermath is not Aftermath.CREATED
    while True:
        if cancelled():
            raise CleanupCancelled(branch)
        if removal.runs and removal.clock() >= removal.end and not removal.owes_look:
            return removal.ran_out()
        current = removal.transports[removal.failures % len(removal.transports)]
        on_server: str | None = oid
        if look_first:
            listed, on_server = removal.look(current)
            if not listed:
                done = removal.unlisted()
                if done is not None:
                    return done
                sleep(POLL_INTERVAL_S)
                continue
        look_first = True
        done = removal.absent() if on_server is None else removal.present(current, on_server)
        if done is not None:
            return done
        sleep(POLL_INTERVAL_S)


@dataclass(kw_only=True)
class _Removal:
    """One branch removal in progress (:func:`remove_probe_ref`): what is known so far, and
    each step's verdict, None while it must go on."""

    transport: Transport
    branch: str
    oid: str
    aftermath: Aftermath
    runner: GitRunner
    cwd: Path
    clock: Callable[[], float]
    started: float
    deadline: float
    """Until when a push that may still land is waited for."""
    end: float
    """When the clean-up stops, done or not (see the module docstring)."""
    hard_end: bool
    """``end`` is the caller's: a branch seen late gets no more time to be deleted."""
    transports: tuple[Transport, ...]
    """The ways to the server, tried in turn after a failure."""
    known_present: bool
    """Known to be there: created by the push, or seen by ls-remote."""
    failures: int = 0
    runs: int = 0
    """git runs so far (the first look runs even when the end has come)."""
    listed: bool = False
    """The last look listed the refs (an absent branch is really absent)."""
    deletes: int = 0
    deleted: bool = False
    """git's delete exited 0: receive-pack took it."""
    detail: str = ""
    """The last failure, as git said it."""
    failed_delete_at: float | None = None
    """When the last delete failed (its answer lost: it may still be running)."""
    unanswered: str = ""
    """A delete whose answer was lost may have landed (:func:`delete_may_have_landed`), and
    no listing of the refs since said: how it failed, as git said it; else empty."""
    owes_look: bool = False
    """Such a delete ended and no look ran since: one runs even when the end has come."""
    last_delete: str = ""
    """How the last failed delete failed, as git said it."""
    seen_since_delete: bool = False
    """A look showed it there with our object after the last delete."""

    @property
    def ref(self) -> str:
        return f"refs/heads/{self.branch}"

    def result(self, status: RefCleanup, detail: str = "") -> CleanupResult:
        command = check = None
        if status in (RefCleanup.LEFTOVER, RefCleanup.UNCONFIRMED):
            command = remove_command(self.transport, self.branch, self.oid)
        if status is RefCleanup.UNCONFIRMED:
            check = check_command(self.transport, self.branch)
        return CleanupResult(status=status, detail=redact_text(detail),
                             waited_s=self.clock() - self.started, remove_command=command,
                             check_command=check)

    def step_s(self, cap_s: float, reserve_s: float = 0.0) -> float:
        """The timeout of the next git run: ``cap_s``, within what is left of the end once
        ``reserve_s`` is kept for what must follow it."""
        return min(cap_s, max(STEP_MIN_S, self.end - self.clock() - reserve_s))

    def look(self, current: Transport) -> tuple[bool, str | None]:
        """ls-remote of the branch: (listed, the object it points at or None)."""
        self.runs += 1
        self.owes_look = False
        listing = self.runner(ls_remote_argv(current, self.ref), env=current.env(), cwd=self.cwd,
                              timeout_s=self.step_s(min(DELETE_TIMEOUT_S,
                                                        max(10.0, self.deadline - self.clock()))))
        self.listed = listing.ok
        if listing.ok:
            self.unanswered = ""  # the server said: absent (landed) or there (not yet)
            on_server = parse_ls_remote(listing.stdout).get(self.ref)
            self.seen_since_delete = on_server == self.oid
            return True, on_server
        self.failures += 1
        self.detail = "ls-remote: " + ("timed out" if listing.timed_out
                                       else failure_line(listing.stderr))
        return False, None

    def unlisted(self) -> CleanupResult | None:
        """The refs could not be listed: give up once every way failed twice and the
        deadline passed."""
        if self.clock() < self.end and (self.failures < 2 * len(self.transports)
                                         or self.clock() < self.deadline):
            return None
        if self.deleted:
            return self.result(RefCleanup.DELETED)
        if self.unanswered:
            return self.unconfirmed_delete()
        if self.known_present:
            return self.result(RefCleanup.LEFTOVER, "it was there and the server's refs cannot "
                               f"be listed to see it gone ({self.detail})")
        return self.result(RefCleanup.UNCONFIRMED,
                           f"the server's refs cannot be listed ({self.detail})")

    def unconfirmed_delete(self) -> CleanupResult:
        """A delete was sent and its answer lost, and the refs could not be listed since."""
        return self.result(RefCleanup.UNCONFIRMED,
                           f"the delete was sent and its answer lost ({self.unanswered}); "
                           "ls-remote on a new connection could not list the server's refs to "
                           f"see whether it landed ({self.detail})")

    def settling(self) -> bool:
        """A delete whose answer was lost may still be running on the server (its hooks run
        as long as the push's did): no second delete until it had time to land."""
        return (self.failed_delete_at is not None
                and self.clock() - self.failed_delete_at < _delete_settle_s(self.deletes))

    def absent(self) -> CleanupResult | None:
        """Not on the server: deleted, never created, or (a push that may land) not yet."""
        if self.deleted:
            return self.result(RefCleanup.DELETED)
        if self.deletes and self.known_present:
            # It was there with our object and only a delete under our lease removes it:
            # that delete landed after the way to the server lost its answer.
            lost = self.last_delete or self.detail
            return self.result(RefCleanup.DELETED, "the delete landed, its answer was lost "
                               f"({lost}): ls-remote shows the branch gone" if lost else "")
        if self.aftermath is Aftermath.CREATED:
            return self.result(RefCleanup.NEVER_CREATED,
                               "the push succeeded, but the branch was gone before the delete")
        if self.aftermath is not Aftermath.MAY_LAND:
            return self.result(RefCleanup.NEVER_CREATED)
        if self.clock() >= self.deadline:
            return self.result(
                RefCleanup.UNCONFIRMED,
                f"not on the server {self.clock() - self.started:.0f} s after the push ended, "
                "but the server had the whole pack and never answered: a hook still running "
                "could create it later",
            )
        return None

    def present(self, current: Transport, on_server: str) -> CleanupResult | None:
        """On the server: delete it under the lease when it is our object."""
        if not self.known_present and not self.hard_end and on_server == self.oid:
            # Seen in time: its delete gets a delete's time (the hooks run again).
            self.end = max(self.end, self.clock() + DELETE_TIMEOUT_S)
        self.known_present = True
        if on_server != self.oid:
            return self.result(RefCleanup.LEFTOVER, f"{self.ref} points at {on_server[:12]}, "
                               f"not the pushed {self.oid[:12]}: left alone")
        if self.runs and self.clock() >= self.end:
            return self.ran_out()  # ls-remote shows it there, and no time for another delete
        if self.settling():
            return None
        if self.deletes and self.end - self.clock() < CONFIRM_LOOK_S + STEP_MIN_S:
            return None  # no time left for another delete and the look after it: look on
        if self.deletes >= _MAX_DELETES:
            if self.clock() < self.deadline:
                return None  # the last delete may still land: look until the deadline
            return self.result(RefCleanup.LEFTOVER, self.detail or "the delete did not take")
        self.deletes += 1
        self.runs += 1
        self.seen_since_delete = False
        removal = self.runner(delete_argv(current, self.branch, self.oid), env=current.env(),
                              cwd=self.cwd,
                              timeout_s=self.step_s(DELETE_TIMEOUT_S, reserve_s=CONFIRM_LOOK_S))
        if removal.ok:
            self.deleted = True
            if _server_deleted(removal.stderr, self.branch):
                # receive-pack's own report: the ref is gone (a push that succeeded can
                # create nothing more), no second look needed.
                return self.result(RefCleanup.DELETED)
        else:
            self.failures += 1
            self.failed_delete_at = self.clock()
            self.detail = self.last_delete = "delete: " + (
                "timed out" if removal.timed_out else failure_line(removal.stderr))
            if delete_may_have_landed(removal):
                self.unanswered, self.owes_look = self.detail, True
        return None

    def ran_out(self) -> CleanupResult:
        """The clean-up's end came: the branch as it stands, with the commands."""
        took = f"{self.clock() - self.started:.0f} s"
        if self.deleted:
            return self.result(RefCleanup.DELETED)
        if self.unanswered:
            return self.unconfirmed_delete()
        if self.known_present and self.deletes and self.seen_since_delete:
            return self.result(RefCleanup.LEFTOVER, f"ls-remote still shows it after "
                               f"{self.deletes} delete(s), and the clean-up's {took} ran out"
                               + (f" ({self.last_delete})" if self.last_delete else ""))
        if self.known_present:
            return self.result(RefCleanup.LEFTOVER, f"it was there and the clean-up's {took} ran "
                               "out before it was gone" + (f" ({self.detail})" if self.detail
                                                           else ""))
        if not self.listed:
            return self.result(RefCleanup.UNCONFIRMED, f"the server's refs could not be listed "
                               f"within the clean-up's {took} ({self.detail})")
        if self.aftermath is Aftermath.MAY_LAND:
            return self.result(
                RefCleanup.UNCONFIRMED,
                f"not on the server {took} after the push ended, but the server had the whole "
                "pack and never answered: a hook still running could create it later")
        return self.result(RefCleanup.UNCONFIRMED, f"the clean-up's {took} ran out")


def _delete_settle_s(deletes: int) -> float:
    """How long a failed delete is given to land before the next: 2, 4, 8 s."""
    return float(min(8, 2 ** deletes))


def _server_deleted(stderr: str, branch: str) -> bool:
    """True when git's push output carries receive-pack's ``- [deleted] <branch>`` status."""
    return any(line.split()[:3] == ["-", "[deleted]", branch] for line in stderr.splitlines())


class Deferred:
    """Set by :func:`interrupts_deferred` when Ctrl-C, SIGTERM or SIGHUP arrived inside it."""

    signalled = False


@contextlib.contextmanager
def interrupts_deferred(
    on_signal: Callable[[signal.Signals], None] | None = None,
) -> Iterator[Deferred]:
    """Hold Ctrl-C, SIGTERM and SIGHUP (main thread only) while a branch is being removed:
    the clean-up is bounded, and a second signal must not strand the branch unnoticed.
    ``on_signal`` is told each one as it arrives (it may say what the clean-up waits for,
    or raise to stop waiting). The caller reads ``signalled`` afterwards and stops the
    run then."""
    deferred = Deferred()
    if threading.current_thread() is not threading.main_thread():
        yield deferred
        return

    def hold(signum: int, frame: FrameType | None) -> None:
        note_signal(signum)
        deferred.signalled = True
        if on_signal is not None:
            on_signal(signal.Signals(signum))

    previous = {sig: signal.signal(sig, hold) for sig in ENDING_SIGNALS}
    try:
        yield deferred
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
