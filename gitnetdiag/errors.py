"""One error tree for everything a user can see.

    GitnetdiagError                 reference, message, hint, exit code
    ├── UsageError                  bad option values, bad paths        (EXIT_USAGE)
    ├── EnvironmentProblem          missing program, not root           (EXIT_ENVIRONMENT)
    ├── InputError                  a file we were given is unreadable  (EXIT_INPUT)
    │   └── CaptureFormatError      pcap/pcapng damage, with an offset
    ├── NetworkError                unreachable, refused, TLS, auth     (EXIT_NETWORK)
    │   └── AnsweredError           an HTTP error status, with its page's excerpt
    ├── ExternalCommandError        a program failed or timed out       (EXIT_EXTERNAL)
    ├── LabError                    the reproduction lab                (EXIT_LAB)
    └── VerdictError                diagnosis inconclusive              (EXIT_INCONCLUSIVE)
        └── NothingMeasured         verdict failed: nothing measured    (EXIT_NOT_MEASURED)

Lower-level exceptions are mapped at the boundary where they happen
(``raise NetworkError(...) from exc``); the CLI catches ``GitnetdiagError`` in
one place (:func:`gitnetdiag.cli.main`) and renders reference, message, hint.
"""

from __future__ import annotations

import re
from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes; stable, documented in the README."""

    OK = 0
    FAILURE = 1
    USAGE = 2
    INPUT = 3
    ENVIRONMENT = 4
    NETWORK = 5
    EXTERNAL = 6
    LAB = 7
    INCONCLUSIVE = 8
    """The diagnosis was printed, but some requested measurement failed."""
    NOT_MEASURED = 9
    """Nothing requested could be measured (the diagnosis says what failed)."""
    INTERRUPTED = 130


class GitnetdiagError(Exception):
    """Base of every error shown to a user.

    ``reference`` is a stable kebab-case id, ``hint`` says what to do next.
    """

    reference = "gitnetdiag-error"
    exit_code = ExitCode.FAILURE

    def __init__(self, message: str, *, hint: str = "", reference: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if reference is not None:
            self.reference = reference

    def one_line(self) -> str:
        """The error as a single line: ``reference: message (hint: ...)``."""
        text = f"{self.reference}: {self.message}"
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


class UsageError(GitnetdiagError):
    reference = "usage"
    exit_code = ExitCode.USAGE


class EnvironmentProblem(GitnetdiagError):
    reference = "environment"
    exit_code = ExitCode.ENVIRONMENT


class InputError(GitnetdiagError):
    reference = "bad-input"
    exit_code = ExitCode.INPUT


class CaptureFormatError(InputError):
    """A capture file is damaged or of an unsupported kind.

    ``offset`` is the byte offset of the damage; ``packets_read`` how many
    packets were read before it (they may still be analysed).
    """

    reference = "capture-format"

    def __init__(
        self,
        message: str,
        *,
        hint: str = "",
        offset: int | None = None,
        packets_read: int = 0,
        reference: str | None = None,
    ) -> None:
        if offset is not None:
            message = f"{message} at byte {offset}"
        super().__init__(message, hint=hint, reference=reference)
        self.offset = offset
        self.packets_read = packets_read


class NetworkError(GitnetdiagError):
    reference = "network"
    exit_code = ExitCode.NETWORK


class AnsweredError(NetworkError):
    """A request of gitnetdiag's own answered with an error status.

    ``page`` is a bounded excerpt of the answer's body (its text, tags stripped, at most
    :data:`PAGE_EXCERPT_CHARS` characters; '' for an empty body): who wrote the answer
    (an edge's built-in error page, a login wall) is read from it.
    """

    reference = "http-status"

    def __init__(self, message: str, *, hint: str = "", reference: str | None = None,
                 body: bytes = b"") -> None:
        super().__init__(message, hint=hint, reference=reference)
        self.page = page_excerpt(body)


PAGE_EXCERPT_CHARS = 512
"""The most of an error answer's page that is kept: an edge's own page says who it is in
its first line (HAProxy's 503 page is 107 B)."""
_TAG = re.compile(r"<[^<>]{0,2000}>")


def page_excerpt(body: bytes) -> str:
    """The text of an error answer's body, one line: tags stripped, white space collapsed,
    at most :data:`PAGE_EXCERPT_CHARS` characters (read from its first 16 KiB)."""
    text = _TAG.sub(" ", body[:16384].decode("utf-8", errors="replace"))
    return " ".join(text.split())[:PAGE_EXCERPT_CHARS]


class ExternalCommandError(GitnetdiagError):
    reference = "external-command"
    exit_code = ExitCode.EXTERNAL


class LabError(GitnetdiagError):
    reference = "lab"
    exit_code = ExitCode.LAB


class VerdictError(GitnetdiagError):
    """The diagnosis was printed, but it rests on failed measurements (``inconclusive``)."""

    reference = "inconclusive"
    exit_code = ExitCode.INCONCLUSIVE


class NothingMeasured(VerdictError):
    """Not one requested protocol was measured (verdict ``failed``)."""

    reference = "not-measured"
    exit_code = ExitCode.NOT_MEASURED
