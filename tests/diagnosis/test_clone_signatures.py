"""The failure catalogue on clones: each message family of a failing clone has its entry,
with the causes a clone can meet (a push's own causes left out), and a clone's sentence
says that http.postBuffer does not apply to it. The words are git's own: from the lab
(docs/lab.md, ``clone-edge-504``, ``clone-edge-cut``) and from the public threads the
entries cite."""

from __future__ import annotations

import pytest

from gitnetdiag.diagnosis.signatures import BASE, describe
from gitnetdiag.rundir.failures import CLONE_CUT, SERVER_CLOSE_HINT, failure_hint

POST_BUFFER = "http.postBuffer, the usual advice for this error, does not apply to a clone"

CLONE_WORDS: list[tuple[str, str, tuple[str, ...]]] = [
    # (git's stderr, the entry it must find first, culprits a clone's description names)
    ("error: RPC failed; curl 18 transfer closed with outstanding read data remaining",
     "curl-18-partial-file", ("edge-idle-timeout", "firewall-reset")),
    ("error: 6711 bytes of body are still expected", "body-still-expected",
     ("edge-idle-timeout", "firewall-reset")),
    ("error: RPC failed; curl 56 Failure when receiving data from the peer",
     "curl-56-recv-failure", ("firewall-reset", "edge-idle-timeout")),
    ("error: RPC failed; curl 92 Stream error in the HTTP/2 framing layer",
     "curl-92-h2-stream-error", ("client-http-stack", "edge-idle-timeout",
                                 "edge-backend-errors")),
    # the code in git's words selects its HTTP/2 entry first
    ("error: RPC failed; curl 92 HTTP/2 stream 5 was not closed cleanly: CANCEL (err 8)",
     "h2-cancel", ("edge-idle-timeout", "edge-backend-errors", "client-http-stack")),
    ("fatal: early EOF", "early-eof", ("edge-idle-timeout", "firewall-reset")),
    ("fetch-pack: unexpected disconnect while reading sideband packet",
     "sideband-unexpected-disconnect", ("edge-idle-timeout", "firewall-reset")),
    ("fatal: fetch-pack: invalid index-pack output", "invalid-index-pack-output",
     ("edge-idle-timeout", "firewall-reset")),
    ("fatal: expected 'packfile'", "expected-packfile", ("edge-idle-timeout",)),
    ("fatal: the remote end hung up unexpectedly", "remote-end-hung-up",
     ("firewall-reset", "edge-idle-timeout")),
    ("error: RPC failed; HTTP 504 curl 22 The requested URL returned error: 504",
     "http-504", ("edge-idle-timeout", "server-pack-generation")),
    ("error: RPC failed; HTTP 502 curl 22 The requested URL returned error: 502",
     "http-502", ("edge-backend-errors", "edge-no-backend")),
]


@pytest.mark.parametrize(("stderr", "entry", "culprits"), CLONE_WORDS,
                         ids=[f"{n}-{case[1]}" for n, case in enumerate(CLONE_WORDS)])
def test_each_clone_message_family_has_its_entry(stderr: str, entry: str,
                                                 culprits: tuple[str, ...]) -> None:
    found = describe(operation="HTTP/1.1 clone", git_line=stderr, direction="download")
    assert found.ids[0] == entry, found.ids
    assert found.culprits == culprits
    assert found.seen.endswith("(https://git-scm.com/docs/git-config#Documentation/"
                               "git-config.txt-httppostBuffer)")
    assert POST_BUFFER in found.seen
    signature = BASE.signatures[[s.id for s in BASE.signatures].index(entry)]
    assert all(c.source.startswith("https://") for c in signature.causes)
    download = [c for c in signature.causes if c.meets("download")]
    assert all(c.evidence for c in download)


def test_a_push_keeps_its_own_causes_and_no_clone_note() -> None:
    """The same 504 on a push names the push's causes (server-processing), not the clone's
    pack preparation, and says nothing of clones."""
    line = "error: RPC failed; HTTP 504 curl 22 The requested URL returned error: 504"
    push = describe(operation="HTTP/1.1 push", git_line=line, direction="upload")
    assert push.culprits == ("edge-idle-timeout", "server-processing")
    assert POST_BUFFER not in push.seen
    either = describe(operation="HTTP/1.1 push", git_line=line)
    assert set(either.culprits) == {"edge-idle-timeout", "server-processing",
                                    "server-pack-generation"}


def test_a_whole_cut_clone_names_every_family_git_printed() -> None:
    """git's lines of a clone cut after the headers (HTTP/1.1, the lab's clone-edge-cut):
    the primary entries, the secondary ones left for when nothing else matched."""
    stderr = " | ".join((
        "error: RPC failed; curl 18 transfer closed with outstanding read data remaining",
        "error: 5 bytes of body are still expected",
        "fetch-pack: unexpected disconnect while reading sideband packet",
        "fatal: early EOF", "fatal: fetch-pack: invalid index-pack output"))
    found = describe(operation="HTTP/1.1 clone", git_line=stderr, direction="download")
    assert found.ids == ("curl-18-partial-file", "body-still-expected")
    h2 = describe(operation="HTTP/2 clone", direction="download",
                  git_line="fatal: early EOF | fatal: fetch-pack: invalid index-pack output")
    assert h2.ids == ("early-eof", "invalid-index-pack-output")
    assert h2.seen.count(POST_BUFFER) == 1  # said once, whatever the entries


def test_a_clone_cut_gets_the_clone_hint_a_push_does_not() -> None:
    """A clone whose answer was not git's or whose pack index-pack never had gets the clone's
    hint (the pack request in its curl trace; http.postBuffer does not apply); a reset-kind
    close by the server's end keeps the server-close hint, in either direction."""
    for kind, line in (("http-status", "fatal: expected 'packfile'"),
                       ("other", "fatal: fetch-pack: invalid index-pack output")):
        assert failure_hint(kind, line, transfer="download") == CLONE_CUT
        assert failure_hint(kind, line) != CLONE_CUT
    assert "http.postBuffer does not apply to a clone" in CLONE_CUT
    assert failure_hint("reset", "fatal: early EOF", transfer="download").startswith(
        SERVER_CLOSE_HINT.split(":", 1)[0])
