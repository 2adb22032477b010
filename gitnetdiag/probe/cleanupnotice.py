"""What the user sees while an interrupted push's clean-up runs, and a way out of it.

The clean-up of a push the server may still apply (the whole pack sent, no
answer: a slow hook) waits for the branch to appear, so that it can delete
it. Behind a server that never answers that wait is long, and held signals
made it silent. So:

    1st Ctrl-C (or SIGTERM, SIGHUP)  -> at once: what the clean-up waits for, for how long
                                        (a line, and the push's progress line says it too)
    2nd Ctrl-C                       -> stop waiting: the branch, its URL (redacted) and
                                        the commands that check and remove it

SIGTERM and SIGHUP never stop the wait: no one may be there to finish by hand.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator

from gitnetdiag.probe.cleanup import (
    DELETE_TIMEOUT_S,
    Aftermath,
    CleanupResult,
    RefCleanup,
    check_command,
    remove_command,
)
from gitnetdiag.probe.gitpush import Transport
from gitnetdiag.probe.options import Reporter
from gitnetdiag.redaction import redact_url


class CleanupStopped(Exception):
    """A second Ctrl-C stopped the clean-up's wait."""


class CleanupNotice:
    """Says what the clean-up of one branch waits for; stops it on a second Ctrl-C."""

    def __init__(self, reporter: Reporter, transport: Transport, branch: str, oid: str,
                 aftermath: Aftermath, wait_s: float, label: str | None = None) -> None:
        self.reporter = reporter
        self.label = label
        """The push's progress line (``push h1 #1``): its phase says what is waited for."""
        self.branch = branch
        self.url = redact_url(transport.url)
        self.command = remove_command(transport, branch, oid)
        self.check = check_command(transport, branch)
        self.aftermath = aftermath
        self.wait_s = wait_s
        self.asked = False
        self.active = False
        self.started = time.monotonic()

    def waiting_for(self) -> str | None:
        """What the clean-up is waiting for, in one line; None when it has nothing to do."""
        if self.aftermath in (Aftermath.NOT_STARTED, Aftermath.REFUSED):
            return None
        if self.aftermath is Aftermath.MAY_LAND:
            return (f"the server has the whole pack and has not answered: waiting up to "
                    f"{self.wait_s:.0f} s for {self.branch} to appear on {self.url}, "
                    "to delete it")
        if self.aftermath is Aftermath.CREATED:
            return f"deleting {self.branch} from {self.url} (up to {DELETE_TIMEOUT_S:.0f} s)"
        return (f"checking that {self.branch} is not on {self.url} "
                f"(up to {DELETE_TIMEOUT_S:.0f} s)")

    def show_phase(self, *, spinner_only: bool = False) -> None:
        """Put what the clean-up waits for on the push's progress line (which read "waiting
        for the server's status" until then); ``spinner_only``: not as a line of a log (a
        warning just said it)."""
        tell = getattr(self.reporter, "status" if spinner_only else "phase", None)
        if self.label is None or tell is None:
            return
        if self.aftermath is Aftermath.MAY_LAND:
            text = f"cleaning up: waiting up to {self.wait_s:.0f} s for the branch, to delete it"
        elif self.aftermath is Aftermath.CREATED:
            text = f"cleaning up: deleting the branch (up to {DELETE_TIMEOUT_S:.0f} s)"
        elif self.waiting_for() is not None:
            text = f"cleaning up: checking the branch is not there (up to {DELETE_TIMEOUT_S:.0f} s)"
        else:
            return
        with contextlib.suppress(OSError):  # the terminal is gone (SIGHUP)
            tell(self.label, text)

    def interrupted(self, *, ctrl_c: bool) -> None:
        """Say at once what the clean-up waits for (the first signal only)."""
        if self.asked:
            return
        self.asked = True
        what = self.waiting_for()
        if what is not None:
            _say(self.reporter, f"cleaning up: {what}"
                 + ("; Ctrl-C again to stop waiting" if ctrl_c else ""))
            self.show_phase(spinner_only=True)

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """While the clean-up runs, a second Ctrl-C may stop it (not after: the record
        of its end is being written then)."""
        self.active = True
        try:
            yield
        finally:
            self.active = False

    def on_signal(self, sig: signal.Signals) -> None:
        """A signal during the clean-up: the first says what it waits for, a second
        Ctrl-C raises :class:`CleanupStopped`."""
        if sig is signal.SIGINT and self.asked and self.active:
            raise CleanupStopped(self.branch)
        self.interrupted(ctrl_c=sig is signal.SIGINT)

    def stopped(self) -> CleanupResult:
        """The branch's end once the wait was stopped: left, or maybe left."""
        status = (RefCleanup.LEFTOVER if self.aftermath is Aftermath.CREATED
                  else RefCleanup.UNCONFIRMED)
        detail = "the clean-up was stopped by a second Ctrl-C"
        _say(self.reporter, f"stopped waiting: {self.branch} may be left on {self.url}; "
                            f"remove it with: {self.command}")
        return CleanupResult(status=status, detail=detail,
                             waited_s=time.monotonic() - self.started,
                             remove_command=self.command,
                             check_command=self.check if status is RefCleanup.UNCONFIRMED
                             else None)


def _say(reporter: Reporter, line: str) -> None:
    with contextlib.suppress(OSError):  # the terminal is gone (SIGHUP): the manifest keeps it
        reporter.warn(line)
