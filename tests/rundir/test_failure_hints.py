"""Hints of failures git reports with no kind of their own (``other``)."""

from __future__ import annotations

from gitnetdiag.rundir.failures import GENERIC_FAILURE, failure_hint


def test_other_gets_a_hint_from_what_git_said() -> None:
    assert failure_hint("other", "fatal: repository 'http://h/r.git/' not found").startswith(
        "no repository answers at that path")
    assert "not git's protocol" in failure_hint(
        "other", "fatal: protocol error: bad line length character: <htm")
    assert "closed the connection before the end of its answer" in failure_hint(
        "other", "fatal: unable to access 'http://h/r.git/': transfer closed with 4058 bytes "
        "remaining to read")
    assert failure_hint("other", "fatal: something new") == GENERIC_FAILURE[1]
    assert failure_hint("other") == GENERIC_FAILURE[1]


def test_a_kind_of_its_own_keeps_its_hint_whatever_git_said() -> None:
    assert failure_hint("rejected", "remote: repository not found") == (
        "the server refused the throwaway branch; allow gitnetdiag/probe-*")
    assert failure_hint("no-such-kind", "repository not found") == ""
