"""What an interrupted clean-up says, and when a second Ctrl-C may stop it."""

from __future__ import annotations

import signal

import pytest

from gitnetdiag.probe.cleanup import Aftermath, RefCleanup
from gitnetdiag.probe.cleanupnotice import CleanupNotice, CleanupStopped
from gitnetdiag.probe.gitpush import Transport
from gitnetdiag.vocabulary import TransportKind


class _Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def begin(self, label: str) -> None: ...
    def done(self, label: str, detail: str, *, ok: bool) -> None: ...
    def moved(self, label: str, moved_bytes: int, rate_bytes_per_s: float | None) -> None: ...
    def phase(self, label: str, text: str) -> None: ...

    def warn(self, message: str) -> None:
        self.lines.append(message)


def _notice(aftermath: Aftermath) -> tuple[CleanupNotice, _Lines]:
    lines = _Lines()
    transport = Transport(protocol=TransportKind.H1, url="https://bob:s3cr3t@git.example/r.git")
    return CleanupNotice(lines, transport, "gitnetdiag/probe-1", "a" * 40, aftermath, 30), lines


def test_the_first_signal_says_what_the_cleanup_waits_for_once() -> None:
    notice, lines = _notice(Aftermath.MAY_LAND)
    notice.on_signal(signal.SIGTERM)
    notice.on_signal(signal.SIGTERM)
    assert lines.lines == [
        "cleaning up: the server has the whole pack and has not answered: waiting up to 30 s "
        "for gitnetdiag/probe-1 to appear on https://***@git.example/r.git, to delete it"]


def test_a_second_ctrl_c_stops_only_a_running_wait() -> None:
    notice, lines = _notice(Aftermath.CREATED)
    notice.interrupted(ctrl_c=True)
    assert lines.lines[-1].endswith("; Ctrl-C again to stop waiting")
    notice.on_signal(signal.SIGINT)  # not waiting (the record is being written): held
    with notice.waiting(), pytest.raises(CleanupStopped):
        notice.on_signal(signal.SIGINT)
    result = notice.stopped()
    assert result.status is RefCleanup.LEFTOVER and result.remove_command is not None
    assert "s3cr3t" not in result.remove_command and "s3cr3t" not in "".join(lines.lines)
    assert lines.lines[-1].startswith("stopped waiting: gitnetdiag/probe-1 may be left on "
                                      "https://***@git.example/r.git; remove it with: git push")


def test_nothing_to_say_when_the_push_never_reached_the_server() -> None:
    notice, lines = _notice(Aftermath.NOT_STARTED)
    notice.on_signal(signal.SIGINT)
    assert lines.lines == []


def test_a_second_ctrl_c_on_a_wait_gives_the_check_command_not_none() -> None:
    """Issue 34: a wait stopped on a push that may land is ``unconfirmed``: the line that
    reports it says how to check, never ``check with: None``."""
    notice, lines = _notice(Aftermath.MAY_LAND)
    notice.interrupted(ctrl_c=True)
    with notice.waiting(), pytest.raises(CleanupStopped):
        notice.on_signal(signal.SIGINT)
    result = notice.stopped()
    assert result.status is RefCleanup.UNCONFIRMED
    assert result.check_command == ("git ls-remote 'https://***@git.example/r.git' "
                                    "refs/heads/gitnetdiag/probe-1")
    assert "None" not in lines.lines[-1] and "remove it with: git push" in lines.lines[-1]


class _Spinner(_Lines):
    def __init__(self) -> None:
        super().__init__()
        self.phases: list[tuple[str, str]] = []
        self.statuses: list[tuple[str, str]] = []

    def phase(self, label: str, text: str) -> None:
        self.phases.append((label, text))

    def status(self, label: str, text: str) -> None:
        self.statuses.append((label, text))


def test_the_first_signal_puts_the_wait_on_the_progress_line() -> None:
    """The push's spinner read "waiting for the server's status" through the whole clean-up;
    now it says what is waited for, on the spinner only (a log has the warning line)."""
    spinner = _Spinner()
    transport = Transport(protocol=TransportKind.H1, url="https://bob:s3cr3t@git.example/r.git")
    notice = CleanupNotice(spinner, transport, "gitnetdiag/probe-1", "a" * 40,
                           Aftermath.MAY_LAND, 30, label="push h1 #1")
    notice.on_signal(signal.SIGINT)
    assert spinner.statuses == [
        ("push h1 #1", "cleaning up: waiting up to 30 s for the branch, to delete it")]
    assert spinner.phases == [] and len(spinner.lines) == 1
