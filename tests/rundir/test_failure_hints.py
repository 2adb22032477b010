"""Hints of failures git reports with no kind of their own (``other``)."""

from __future__ import annotations

import pytest

from gitnetdiag.outcomes import FailureKind
from gitnetdiag.probe.gitpush import classify_git_stderr, error_for_failure, failure_line
from gitnetdiag.rundir.failures import FAILURE_HINTS, GENERIC_FAILURE, STORAGE_HINT, failure_hint


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


REJECTED_HINT = FAILURE_HINTS[FailureKind.REJECTED][1]
BRANCH = "gitnetdiag/probe-x -> gitnetdiag/probe-x"


@pytest.mark.parametrize("stderr", [
    f"To https://h/r.git\n ! [remote rejected] {BRANCH} (unable to migrate objects to "
    "permanent storage)\nerror: failed to push some refs to 'https://h/r.git'\n",
    "remote: error: insufficient permission for adding an object to repository database "
    "./objects\nremote: fatal: failed to write object\nerror: remote unpack failed: "
    f"unpack-objects abnormal exit\n ! [remote rejected] {BRANCH} (unpacker error)\n",
    "remote: fatal: sha1 file './objects/pack/tmp_pack_Xq3ZkL' write error: No space left on "
    "device\nerror: remote unpack failed: index-pack abnormal exit\n ! [remote rejected] "
    f"{BRANCH} (unpacker error)\n",
    "remote: error: unable to create temporary file: Permission denied\nremote: fatal: "
    "failed to write object\nerror: remote unpack failed: unpack-objects abnormal exit\n"
    f" ! [remote rejected] {BRANCH} (unpacker error)\n",
])
def test_a_push_the_server_could_not_store_gets_the_object_store_hint(stderr: str) -> None:
    """Rejected by git, but not a refused branch: the hint names the server's objects
    directory and its disk, not "allow gitnetdiag/probe-*" (no new failure kind)."""
    kind = classify_git_stderr(stderr)
    assert kind is FailureKind.REJECTED
    line = failure_line(stderr)
    hint = failure_hint(kind.value, line)
    assert hint == STORAGE_HINT != REJECTED_HINT
    assert "objects directory" in hint and "df" in hint
    error = error_for_failure(kind, "https://h/r.git", line)
    assert error.hint == STORAGE_HINT and error.reference == "push-rejected"
    # the pipeline rebuilds the hint offline from the recorded kind and message
    assert failure_hint("rejected", f"https://h/r.git: {line}") == STORAGE_HINT


def test_a_refused_branch_keeps_the_rejected_hint() -> None:
    stderr = (f" ! [remote rejected] {BRANCH} (pre-receive hook declined)\n"
              "error: failed to push some refs to 'https://h/r.git'\n")
    assert failure_hint(classify_git_stderr(stderr).value, failure_line(stderr)) == REJECTED_HINT
