"""The words every layer shares: the transports a push goes over, and the sizes and
durations users write on the command line and in config files.

Sizes follow one rule everywhere (:data:`SIZE_RULE`, quoted in each command's ``--help``):
binary units, as fio and most storage tools read them. ``k``, ``K``, ``KB`` and ``KiB`` all
mean 1024 bytes; ``M``/``MB``/``MiB`` 1024**2, ``G`` 1024**3, ``T`` 1024**4; a bare number
is bytes. Bad input raises :class:`~gitnetdiag.errors.UsageError`: one line and a hint.
"""

from __future__ import annotations

import re
from enum import StrEnum

from gitnetdiag.errors import UsageError


class TransportKind(StrEnum):
    """The ways a probe pushes (and the values of ``--protocols``)."""

    H1 = "h1"
    H2 = "h2"
    SSH = "ssh"
    GIT = "git"

    @property
    def is_http(self) -> bool:
        return self in (TransportKind.H1, TransportKind.H2)


HTTP2_START_WINDOW_BYTES = 65_535
"""The window every HTTP/2 stream and connection starts with (RFC 9113 section 6.9.2), the
connection's until a WINDOW_UPDATE raises it (``analysis.flowcontrol`` has it as
``HTTP2_DEFAULT_WINDOW_BYTES``; this copy is for the layers below it)."""


SIZE_RULE = "binary units: 512k, 64KiB, 4M, 1GiB (k, KB and KiB all mean 1024 bytes)"
"""The size rule in the words each command's ``--help`` uses."""

_SIZE_RE = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+)\s*(?:([kmgt])(?:i?b)?|b)?\s*", re.IGNORECASE)
_SIZE_FACTORS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_DURATION_RE = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+)\s*(ms|s|m|h)?\s*", re.IGNORECASE)
_DURATION_FACTORS = {"ms": 0.001, "s": 1.0, "": 1.0, "m": 60.0, "h": 3600.0}


def parse_size(text: str) -> int:
    """``65536`` -> 65536, ``512k`` -> 524288, ``4MiB`` and ``4MB`` -> 4194304 (binary units)."""
    match = _SIZE_RE.fullmatch(text)
    size = 0 if match is None else int(
        float(match.group(1)) * _SIZE_FACTORS[(match.group(2) or "").lower()])
    if size <= 0:
        raise UsageError(f"cannot read the size {text!r} (a positive size is needed)",
                         hint=f"write it in {SIZE_RULE}")
    return size


def parse_duration_s(text: str) -> float:
    """``30s``, ``30`` (seconds), ``500ms``, ``2m``, ``1h`` -> seconds."""
    match = _DURATION_RE.fullmatch(text)
    seconds = 0.0 if match is None else (
        float(match.group(1)) * _DURATION_FACTORS[(match.group(2) or "").lower()])
    if seconds <= 0:
        raise UsageError(f"cannot read the duration {text!r} (a positive duration is needed)",
                         hint="write it like 30s, 500ms, 2m or 1h (a bare number is seconds)")
    return seconds
