"""How far a native push got decides how its branch is cleaned up, and the result
is told truthfully (the waiting itself is tested in test_cleanup.py and on the lab)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitnetdiag.probe.cleanup import Aftermath, CleanupResult, RefCleanup
from gitnetdiag.probe.gitpush import Transport
from gitnetdiag.probe.nativecleanup import GitBranchCleanup, end_branch, native_aftermath
from gitnetdiag.probe.receivepack import ReportStatus
from gitnetdiag.vocabulary import TransportKind

REF = "refs/heads/gitnetdiag/probe-0123abcd"
OK = ReportStatus(unpack_ok=True, unpack_message="ok", refs={REF: "ok"})
REJECTED = ReportStatus(unpack_ok=True, unpack_message="ok", refs={REF: "ng pre-receive hook"})
CUT_PACK = ReportStatus(unpack_ok=False, unpack_message="unpack-objects abnormal exit",
                        refs={REF: "ng unpacker error"})
NO_WORD = ReportStatus(unpack_ok=False, unpack_message="index-pack abnormal exit", refs={})


@pytest.mark.parametrize(("started", "sent_all", "report", "expected"), [
    (False, False, None, Aftermath.NOT_STARTED),
    (True, False, None, Aftermath.CUT),
    (True, True, None, Aftermath.MAY_LAND),
    (True, True, OK, Aftermath.CREATED),
    (True, True, REJECTED, Aftermath.REFUSED),
    (True, False, CUT_PACK, Aftermath.REFUSED),
    (True, True, NO_WORD, Aftermath.SETTLED),
])
def test_native_aftermath(started: bool, sent_all: bool, report: ReportStatus | None,
                          expected: Aftermath) -> None:
    """Only a whole pack without an answer may still land: that one is waited for."""
    assert native_aftermath(started=started, sent_all=sent_all, report=report,
                            ref=REF) is expected


def _result(status: RefCleanup, command: str | None = None) -> CleanupResult:
    return CleanupResult(status=status, detail="the delete did not take" if command else "",
                         waited_s=1.0, remove_command=command)


class _Fake(GitBranchCleanup):
    def __init__(self, result: CleanupResult) -> None:
        super().__init__(Transport(protocol=TransportKind.H2, url="https://h/r.git"), Path("."))
        self.planned = result
        self.calls: list[tuple[str, str, Aftermath]] = []

    def __call__(self, ref: str, oid: str, aftermath: Aftermath) -> CleanupResult:
        self.calls.append((ref, oid, aftermath))
        self.result = self.planned
        self.results.append(self.planned)
        return self.planned


@pytest.mark.parametrize(("status", "gone"), [
    (RefCleanup.DELETED, True), (RefCleanup.NEVER_CREATED, True),
    (RefCleanup.LEFTOVER, False), (RefCleanup.UNCONFIRMED, False),
])
def test_end_branch_reports_whether_the_branch_is_gone(status: RefCleanup, gone: bool) -> None:
    fake = _Fake(_result(status))
    assert end_branch(fake, REF, "a" * 40, started=True, sent_all=True, report=None) is gone
    assert fake.calls == [(REF, "a" * 40, Aftermath.MAY_LAND)]
    assert fake.ledger_fields()["cleanup"] == status.value


def test_leftover_is_an_error_with_the_remove_command() -> None:
    command = f"git push --force-with-lease={REF}:{'a' * 40} https://h/r.git :{REF}"
    fake = _Fake(_result(RefCleanup.LEFTOVER, command))
    fake(REF, "a" * 40, Aftermath.CREATED)
    error, warning = fake.problem("https://h/r.git")
    assert warning is None and error is not None
    assert error.reference == "probe-ref-leftover"
    assert error.message.endswith(f"remove it with: {command}")
    assert fake.ledger_fields() == {"cleanup": "leftover", "cleanup_detail":
                                    "the delete did not take", "cleanup_command": command}


def test_unconfirmed_is_a_warning_and_deleted_is_nothing() -> None:
    unconfirmed = _Fake(_result(RefCleanup.UNCONFIRMED, "git push ..."))
    unconfirmed(REF, "a" * 40, Aftermath.MAY_LAND)
    error, warning = unconfirmed.problem("https://h/r.git")
    assert error is None and warning is not None and "git push ..." in warning
    deleted = _Fake(_result(RefCleanup.DELETED))
    deleted(REF, "a" * 40, Aftermath.CREATED)
    assert deleted.problem("https://h/r.git") == (None, None)


def test_a_leftover_among_several_branches_is_not_hidden_by_a_later_deletion() -> None:
    """The HTTP/2 sweep pushes one branch per variant: an early leftover still counts."""
    fake = _Fake(_result(RefCleanup.LEFTOVER, "git push --force-with-lease=..."))
    fake(REF, "a" * 40, Aftermath.CREATED)
    fake.planned = _result(RefCleanup.DELETED)
    fake(REF, "b" * 40, Aftermath.CREATED)
    error, _warning = fake.problem("https://h/r.git")
    assert error is not None and error.reference == "probe-ref-leftover"


@pytest.mark.parametrize(("status", "expected"), [
    (503, Aftermath.SETTLED), (502, Aftermath.SETTLED), (413, Aftermath.SETTLED),
    (504, Aftermath.MAY_LAND), (None, Aftermath.MAY_LAND),
])
def test_an_error_status_to_the_native_pack_post_is_not_waited_for(
        status: int | None, expected: Aftermath) -> None:
    """Issue 42: an edge's 502/503 (or a 413) answered the native HTTP/2 pack POST in
    receive-pack's place: one look, no 30 s wait for a hook; a 504 may leave one running."""
    assert native_aftermath(started=True, sent_all=True, report=None, ref=REF,
                            status=status) is expected
    fake = _Fake(_result(RefCleanup.NEVER_CREATED))
    assert end_branch(fake, REF, "a" * 40, started=True, sent_all=True, report=None,
                      status=status)
    assert fake.calls == [(REF, "a" * 40, expected)]
