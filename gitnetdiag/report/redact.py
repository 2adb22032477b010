"""Keep secrets out of reports: the policy lives in :mod:`gitnetdiag.redaction`.

Every renderer passes the whole :class:`Diagnosis` through :func:`redact_diagnosis`
first, so a URL or header that slipped into any string field (an error
message, a kernel log line, a config value) is scrubbed in every format.
"""

from __future__ import annotations

from typing import TypeVar

from gitnetdiag.redaction import MASK, redact_text, redact_tree, redact_url

__all__ = ["MASK", "redact_diagnosis", "redact_text", "redact_url"]

T = TypeVar("T")


def redact_diagnosis(diagnosis: T) -> T:
    """A copy of a dataclass tree (a :class:`Diagnosis`) with every string redacted."""
    return redact_tree(diagnosis)
