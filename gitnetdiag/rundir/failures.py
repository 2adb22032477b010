"""What to do about a failed git run: the hint of each recorded failure kind.

The probe classifies (``gitnetdiag.probe.gitpush``) into
:class:`~gitnetdiag.outcomes.FailureKind`; the pipeline turns a recorded kind
into a hint offline, so both read the hints from here.
"""

from __future__ import annotations

import re
from typing import TypedDict

from gitnetdiag.outcomes import FailureKind

FAILURE_HINTS: dict[FailureKind, tuple[str, str]] = {
    FailureKind.REFUSED: ("refused", "nothing listens on that port, or a firewall rejects it"),
    FailureKind.UNREACHABLE: ("unreachable", "check the host name and the route to it"),
    FailureKind.TLS: (
        "tls-verification",
        "pass the server's CA with --ca-file (or --insecure to skip verification)",
    ),
    FailureKind.PLAIN_HTTP: (
        "https-to-plain-http",
        "the port speaks plain HTTP, not TLS: use an http:// URL for it, or the server's "
        "HTTPS port",
    ),
    FailureKind.AUTH: ("auth-failed", "check --ssh-key / the HTTP credentials for this remote"),
    FailureKind.HOST_KEY: (
        "ssh-host-key",
        "the server's SSH host key is not the one in known_hosts (unknown or changed): "
        "check its fingerprint with the server's owner, then add it "
        "(ssh-keyscan -p PORT HOST >> ~/.ssh/known_hosts) or pass --ssh-known-hosts FILE",
    ),
    FailureKind.RESET: ("connection-reset", "a firewall or proxy closed the connection"),
    FailureKind.TIMEOUT: ("network-timeout", "the path drops packets or the server is down"),
    FailureKind.HTTP_STATUS: (
        "http-status",
        "an HTTP server on the way answered with that status: see which request got it "
        "in the push's curl trace (<protocol>-<n>.curl.txt)",
    ),
    FailureKind.REJECTED: (
        "push-rejected", "the server refused the throwaway branch; allow gitnetdiag/probe-*"
    ),
}
"""Failure kind -> (error reference, hint)."""

GENERIC_FAILURE = ("git-failed", "run the same git command by hand")
"""Reference and hint of a kind without its own."""


CURL_TRACE = "the push's curl trace (<protocol>-<n>.curl.txt)"
CLONE_STDERR = ("the clone's curl trace (fetch-<protocol>-<n>.curl.txt, HTTPS clones) and "
                "the clone's stderr (fetch-<protocol>-<n>.stderr.txt)")
"""Where a clone's hint points in place of the push's curl trace: an HTTPS clone's own curl
trace (its requests, statuses and silences) and git's own words, HTTP status included."""
NO_REPOSITORY = ("no repository answers at that path (git says so for an HTTP 404, or for "
                 "one your credentials may not see): check the URL's path and the account's "
                 "access to it")
OTHER_HINTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("repository", "not found"), NO_REPOSITORY),
    (("does not appear to be a git repository",), NO_REPOSITORY),
    (("transfer closed with", "bytes remaining to read"),
     "the server or a proxy closed the connection before the end of its answer (it said "
     f"how long it would be): see which request and its Content-Length in {CURL_TRACE}"),
)
"""git messages of kind ``other`` whose cause is still plain: (words all in it, hint)."""


STORAGE_WORDS: tuple[str, ...] = (
    "unable to migrate objects to permanent storage",  # receive-pack's quarantine
    "unpacker error", "unpack failed",  # receive-pack's index-pack / unpack-objects
    "unable to create temporary object directory",
    "insufficient permission for adding an object",
    "unable to create temporary file", "unable to write loose object file",
    "no space left on device", "write error. out of diskspace",
)
"""git's words when the server could not store a push's objects (sources in
``gitnetdiag/data/failure_signatures.toml``: receive-pack.c, send-pack.c, object-file.c,
csum-file.c)."""

STORAGE_HINT = (
    "the server received the pack but could not store its objects: on the server, check "
    "that the repository's objects directory and everything under it belong to the user "
    "git runs as (git run there once as root leaves root-owned directories; "
    "core.sharedRepository for a group) and are writable, and that its filesystem has free "
    "space and inodes (df, df -i); the push's 'remote:' lines say which (\"pack exceeds "
    "maximum allowed size\" is the server's receive.maxInputSize instead)"
)
"""The hint of a push the server refused because it could not store the objects."""


CLONE_CUT = (
    "the server's answer to the clone's pack request ended before its pack did, or was not "
    "git's: see how the pack request (POST git-upload-pack) ended in the clone's curl trace "
    "(fetch-<protocol>-<n>.curl.txt): a 504 or a close after the same seconds of silence on "
    "every clone is an edge's timeout while the server prepared the pack (an SSH clone shows "
    "how long it prepares); http.postBuffer does not apply to a clone, it sizes request bodies"
)
"""The hint of a clone whose pack stream ended early or was not git's."""
CLONE_CUT_WORDS = (
    "bytes of body are still expected", "expected 'packfile'", "invalid index-pack output",
    "early eof", "unexpected disconnect while reading sideband packet",
)
"""git's words (fetch-pack, remote-curl, index-pack; sources in
``gitnetdiag/data/failure_signatures.toml``) for a clone's pack stream that ended early or
was not git's: :data:`CLONE_CUT` is their hint, on a clone only."""
WRONG_NAME = ("the server's certificate is not issued for the host name in the URL: use a name "
              "it lists (openssl s_client -connect HOST:PORT shows its subjectAltName), or fix "
              "the server's certificate (--insecure skips the check)")
"""The hint of a certificate issued for another name (libcurl's two wordings)."""
DEAD_PORT_HINT = ("the path check found the port dead, so no transfer was tried there: open "
                  "the port on the path (the firewall rule, the security group, the route) or "
                  "use another protocol; the path-unreachable culprit says what was seen")
"""The hint of a protocol not transferred over a dead port (``not started:`` in its record,
``not transferred:`` in the run's error: :mod:`gitnetdiag.probe.deadpath`)."""

WORD_HINTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("not started: ",), DEAD_PORT_HINT),
    (("not transferred: ",), DEAD_PORT_HINT),
    (("not exported",),
     "git daemon serves no repository at that path, or does not export it (git says "
     "\"access denied or repository not exported\" for both): check the URL's path against "
     "git daemon's --base-path, and that the repository holds a git-daemon-export-ok file "
     "(or git daemon runs with --export-all)"),
    (("no alternative certificate subject name",), WRONG_NAME),
    (("does not match target host name",), WRONG_NAME),
)
"""git messages whose cause is plainer than their kind, whatever it is (git daemon's refusal
reads as a rejected ref, a certificate for another name as any TLS failure)."""


NOT_GIT_PROTOCOL = ("the answer is not git's protocol (an HTML page from a proxy, captive "
                    "portal or login wall){began}: see the response's first bytes in {where}; "
                    "over SSH, text the server's shell prints (a banner, .bashrc output) does "
                    "the same")
"""The hint of git's ``protocol error: bad line length character`` whatever its kind (the
four characters git quotes are where the answer stopped being git's)."""
_BAD_LENGTH = re.compile(r"bad line length character: (.{1,4})", re.IGNORECASE)

NOT_GIT_WHERE = {
    "upload": f"{CURL_TRACE}, with its status and Content-Type",
    "download": "git's words (they quote them), and its Content-Type with GIT_TRACE_CURL=1 on "
                "the same clone",
}
"""Where a push's and a clone's run show what answered in git's place."""


def not_git_protocol(message: str) -> bool:
    """Whether git's words say the answer was not git's protocol (pure)."""
    return _BAD_LENGTH.search(message) is not None


CLOSE_WORDS: tuple[str, ...] = (
    "transfer closed with outstanding read data remaining", "bytes of body are still expected",
    "unexpected disconnect while reading sideband packet", "early eof",
    "the remote end hung up unexpectedly",
)
"""git's and curl's words for a connection the server's end closed mid-transfer (a FIN,
no reset): the server itself as likely as anything between."""
SERVER_CLOSE_HINT = (
    "the server's end closed the connection in the middle of the transfer, without a reset: "
    "the git server itself cut its answer (its process died or was killed: see the server's "
    "log) or, where an edge or proxy stands between, its timeout (then the same silence comes "
    f"before every cut: see {CURL_TRACE})"
)
"""The hint of a ``reset``-kind failure whose words say the server's end closed (curl 18,
``early EOF``, a sideband disconnect): not a firewall's reset."""


def _words_hint(kind: FailureKind, lowered: str, message: str, transfer: str) -> str | None:
    """A hint from git's words that beats its kind's (see :func:`failure_hint`)."""
    if any(word in lowered for word in STORAGE_WORDS):
        return STORAGE_HINT
    bad_length = _BAD_LENGTH.search(message)
    if bad_length is not None:
        began = bad_length.group(1).strip()
        return NOT_GIT_PROTOCOL.format(began=f"; it began with {began!r}" if began else "",
                                       where=NOT_GIT_WHERE.get(transfer, NOT_GIT_WHERE["upload"]))
    if kind is FailureKind.RESET and any(word in lowered for word in CLOSE_WORDS):
        return SERVER_CLOSE_HINT
    if transfer == "download" and any(word in lowered for word in CLONE_CUT_WORDS):
        return CLONE_CUT
    return next((hint for words, hint in WORD_HINTS if all(w in lowered for w in words)), None)


def failure_hint(kind: str, message: str = "", *, transfer: str = "upload") -> str:
    """The hint for a recorded failure kind (``other``: from git's ``message`` when it is
    one of :data:`OTHER_HINTS`); empty for a kind this version does not know. A message
    that says the server could not store the objects (:data:`STORAGE_WORDS`) gets
    :data:`STORAGE_HINT`, whatever the kind (git reports it as a rejected ref), one that is
    not git's protocol :data:`NOT_GIT_PROTOCOL`, a ``reset`` that was a close by the
    server's end (:data:`CLOSE_WORDS`) :data:`SERVER_CLOSE_HINT`, any other clone whose
    pack stream was cut short or not git's (:data:`CLONE_CUT_WORDS`) :data:`CLONE_CUT`,
    and one of
    :data:`WORD_HINTS` its hint. ``transfer="download"``: a clone's hint, which points to
    the clone's stderr where a push's points to its curl trace."""
    try:
        known = FailureKind(kind)
    except ValueError:
        return ""
    lowered = message.lower()
    hint = _words_hint(known, lowered, message, transfer)
    if hint is None and known is FailureKind.OTHER:
        hint = next((hint for words, hint in OTHER_HINTS if all(w in lowered for w in words)),
                    None)
    if hint is None:
        hint = FAILURE_HINTS.get(known, GENERIC_FAILURE)[1]
    return hint.replace(CURL_TRACE, CLONE_STDERR) if transfer == "download" else hint


UNFINISHED_REFERENCE = "run-unfinished"
"""A run directory whose record still says ``running``: the probe is still at work, or was
killed (SIGKILL, a crash) before it could say how the run ended."""


class Unfinished(TypedDict):
    """A run problem's fields (``gitnetdiag.diagnosis.observations.RunProblem``)."""

    stage: str
    reference: str
    message: str
    hint: str


def unfinished(record: str) -> Unfinished:
    """The problem of a run whose ``record`` (``manifest.json``, ``fetch.json``) still says
    ``running``: its stage, reference, message and hint (a run problem's fields)."""
    return {"stage": "run", "reference": UNFINISHED_REFERENCE,
            "message": f"{record} says the run is still running: the probe was killed (or is "
            "still at work) before it recorded how the run ended, so its results may be partial",
            "hint": "run the probe again and let it finish (the report shows what it wrote "
            "until it stopped)"}
