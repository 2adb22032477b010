"""What to do about a failed git run: the hint of each recorded failure kind.

The probe classifies (``gitnetdiag.probe.gitpush``) into
:class:`~gitnetdiag.outcomes.FailureKind`; the pipeline turns a recorded kind
into a hint offline, so both read the hints from here.
"""

from __future__ import annotations

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
OTHER_HINTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("repository", "not found"),
     "no repository answers at that path (git says so for an HTTP 404, or for one your "
     "credentials may not see): check the URL's path and the account's access to it"),
    (("protocol error: bad line length character",),
     "the server answered with something that is not git's protocol (an HTML page from a "
     f"login portal, a proxy or a wrong path): see its status and Content-Type in "
     f"{CURL_TRACE}"),
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


def failure_hint(kind: str, message: str = "") -> str:
    """The hint for a recorded failure kind (``other``: from git's ``message`` when it is
    one of :data:`OTHER_HINTS`); empty for a kind this version does not know. A message
    that says the server could not store the objects (:data:`STORAGE_WORDS`) gets
    :data:`STORAGE_HINT`, whatever the kind (git reports it as a rejected ref)."""
    try:
        known = FailureKind(kind)
    except ValueError:
        return ""
    if any(word in message.lower() for word in STORAGE_WORDS):
        return STORAGE_HINT
    if known is FailureKind.OTHER:
        lowered = message.lower()
        for words, hint in OTHER_HINTS:
            if all(word in lowered for word in words):
                return hint
    return FAILURE_HINTS.get(known, GENERIC_FAILURE)[1]
