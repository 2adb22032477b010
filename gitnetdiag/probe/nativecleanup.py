"""The clean-up of the native probes' throwaway branches, shared with git's pushes.

The native HTTP/2 and SSH probes speak receive-pack themselves, but their
branch ends the same way as a git push's (:mod:`gitnetdiag.probe.cleanup`):
a push cut after its whole pack was sent may still be applied by a slow
pre-receive hook, so the clean-up waits for it, deletes under a lease with
git (the run's isolated config) and says truthfully what became of the
branch. The probes only tell how far their push got (:func:`native_aftermath`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from gitnetdiag.errors import NetworkError
from gitnetdiag.probe.cleanup import (
    DEFAULT_CLEANUP_WAIT_S,
    Aftermath,
    CleanupResult,
    RefCleanup,
    answered_in_place,
    interrupts_deferred,
    remove_probe_ref,
)
from gitnetdiag.probe.gitpush import Transport, run_git
from gitnetdiag.probe.receivepack import ReportStatus

BRANCH_PREFIX = "refs/heads/"


class BranchCleanup(Protocol):
    """What a native probe calls once its push is over, whatever happened to it."""

    def __call__(self, ref: str, oid: str, aftermath: Aftermath) -> CleanupResult: ...


def native_aftermath(*, started: bool, sent_all: bool, report: ReportStatus | None,
                     ref: str, status: int | None = None) -> Aftermath:
    """What a native push can still do to the server (pure).

    ``started``: the ref update was about to be sent; ``sent_all``: every byte
    of it (command and pack) left; ``report``: receive-pack's answer, if one came;
    ``status``: the HTTP status that answered the pack POST, if one did.
    """
    if not started:
        return Aftermath.NOT_STARTED
    if report is None and status is not None and answered_in_place(status):
        return Aftermath.SETTLED  # an edge's 502/503, a 413: nothing to wait for, one look
    if report is not None:
        if report.ok_for(ref):
            return Aftermath.CREATED
        # receive-pack updates a ref only after "unpack ok" and then reports "ok <ref>":
        # its "ng <ref>" is the server's own word that nothing was created.
        return Aftermath.REFUSED if report.refs.get(ref, "").startswith("ng") else (
            Aftermath.SETTLED)
    # A pack cut short cannot be applied; a whole one may be, once the hook is done.
    return Aftermath.MAY_LAND if sent_all else Aftermath.CUT


@dataclass
class GitBranchCleanup:
    """A :class:`BranchCleanup` that removes the branch with git, and keeps the result."""

    transport: Transport
    """git's way to the same remote (the run's isolated config)."""
    cwd: Path
    """A repository holding the pushed object (git needs one to push a lease)."""
    wait_s: float = DEFAULT_CLEANUP_WAIT_S
    """How long to wait for a push the server may still apply."""
    until: float | None = None
    """No clean-up step runs past this ``time.monotonic()`` (``ProbeOptions.cleanup_until``)."""
    result: CleanupResult | None = None
    """The last clean-up's result, also when the probe then raised."""
    results: list[CleanupResult] = field(default_factory=list)
    """Every clean-up's result (the HTTP/2 sweep pushes several branches)."""
    signalled: bool = False
    """Ctrl-C or SIGTERM arrived while the clean-up held them."""

    def __call__(self, ref: str, oid: str, aftermath: Aftermath) -> CleanupResult:
        branch = ref.removeprefix(BRANCH_PREFIX)
        with interrupts_deferred() as deferred:
            self.result = remove_probe_ref(self.transport, branch, oid, aftermath,
                                           runner=run_git, cwd=self.cwd, wait_s=self.wait_s,
                                           until=self.until)
        self.results.append(self.result)
        self.signalled = self.signalled or deferred.signalled
        return self.result

    def ledger_fields(self) -> dict[str, Any]:
        """The clean-up as the native ledger JSON records it."""
        if self.result is None:
            return {"cleanup": RefCleanup.NEVER_CREATED.value, "cleanup_detail": "",
                    "cleanup_command": None}
        return {"cleanup": self.result.status.value, "cleanup_detail": self.result.detail,
                "cleanup_command": self.result.remove_command}

    def problem(self, url: str) -> tuple[NetworkError | None, str | None]:
        """A leftover branch as an error (with the command that removes it), an
        unconfirmed one as a warning; ``(None, None)`` when every branch is gone."""
        error = warning = None
        for result in self.results or ([self.result] if self.result else []):
            if result.status is RefCleanup.LEFTOVER and error is None:
                error = NetworkError(
                    f"the native probe's branch is still on {url}: {result.detail}; "
                    f"remove it with: {result.remove_command}",
                    hint=f"delete it by hand: {result.remove_command}",
                    reference="probe-ref-leftover",
                )
            elif result.status is RefCleanup.UNCONFIRMED and warning is None:
                warning = (f"the native probe's branch on {url} unconfirmed: "
                           f"{result.detail}; check with: {result.check_command}; if it is "
                           f"there, remove it with: {result.remove_command}")
        return error, warning


def end_branch(cleanup: BranchCleanup, ref: str, oid: str, *, started: bool, sent_all: bool,
               report: ReportStatus | None, status: int | None = None) -> bool:
    """Run ``cleanup`` for a native push that got this far; True when the branch is gone."""
    aftermath = native_aftermath(started=started, sent_all=sent_all, report=report, ref=ref,
                                 status=status)
    return cleanup(ref, oid, aftermath).status in (RefCleanup.DELETED, RefCleanup.NEVER_CREATED)
