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


NOT_GIT = ("fatal: protocol error: bad line length character: <!DO\n"
           "fatal: the remote end hung up unexpectedly\n"
           "fatal: the remote end hung up unexpectedly\n"
           "error: failed to push some refs to 'http://h/r.git'\n")
"""What git 2.39 printed here when a loopback server answered the pack POST with a 200
HTML login page (the clone's words are its first two lines)."""


@pytest.mark.parametrize("kind", ["other", "reset", "http-status"])
def test_an_answer_that_is_not_gits_protocol_is_named_so_whatever_its_kind(kind: str) -> None:
    """Issue 42: ``bad line length character`` is an HTML page from a proxy, a captive portal
    or a login wall, with the bytes git quoted, never "a firewall or proxy closed the
    connection"; a push points to its curl trace, a clone to GIT_TRACE_CURL."""
    line = failure_line(NOT_GIT)
    assert classify_git_stderr(NOT_GIT) is FailureKind.OTHER
    for message in (line, f"https://h/r.git: {line}"):
        hint = failure_hint(kind, message)
        assert hint.startswith("the answer is not git's protocol (an HTML page from a proxy, "
                               "captive portal or login wall); it began with '<!DO'"), hint
        assert "curl trace" in hint and "Content-Type" in hint
        assert "firewall" not in hint
    clone = failure_hint(kind, line, transfer="download")
    assert "'<!DO'" in clone and "GIT_TRACE_CURL=1" in clone and "curl.txt" not in clone


@pytest.mark.parametrize("line", [
    "error: RPC failed; curl 18 transfer closed with outstanding read data remaining",
    "error: 4186 bytes of body are still expected",
    "fetch-pack: unexpected disconnect while reading sideband packet",
    "fatal: early EOF",
])
def test_a_close_by_the_servers_end_is_not_hinted_as_a_firewall(line: str) -> None:
    """A server that cut its own pack (FIN, no reset, no edge between) reads as a ``reset``
    kind; its hint names the server's own process first and an edge's timeout where one
    stands between, not a firewall."""
    hint = failure_hint("reset", line, transfer="download")
    assert hint.startswith("the server's end closed the connection in the middle of the "
                           "transfer, without a reset: the git server itself cut its answer")
    assert "firewall" not in hint and "clone's stderr" in hint


def test_a_reset_keeps_the_firewall_hint() -> None:
    reset = "error: RPC failed; curl 56 Recv failure: Connection reset by peer"
    assert failure_hint("reset", reset) == FAILURE_HINTS[FailureKind.RESET][1]
    assert "firewall" in failure_hint("reset", reset)


def test_the_catalogue_names_an_answer_that_is_not_git_and_a_servers_own_close() -> None:
    """The words entry beats the secondary "remote end hung up" (no firewall candidate);
    a prompt FIN from the server lists the server's own close beside the earlier entry."""
    from gitnetdiag.diagnosis.signatures import BASE, TcpEnding

    found = BASE.for_message(NOT_GIT)
    assert [s.id for s in found] == ["not-git-protocol"]
    assert found[0].culprits == ()
    cut = BASE.describe(operation="HTTP/1.1 clone", git_line="error: RPC failed; curl 18 "
                        "transfer closed with outstanding read data remaining",
                        tcp=TcpEnding(side="server", silence_s=0.0, ending="fin"))
    assert "tcp-server-close-mid-transfer" in cut.ids
    mine = next(s for s in cut.signatures if s.id == "tcp-server-close-mid-transfer")
    assert mine.causes[0].culprit is None and "cut its own answer" in mine.causes[0].what
