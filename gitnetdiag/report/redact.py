"""Keep secrets out of reports: the policy lives in :mod:`gitnetdiag.redaction`.

Every renderer passes the whole :class:`Diagnosis` through :func:`redact_diagnosis`
first, so a URL or header that slipped into any string field (an error
message, a kernel log line, a config value) is scrubbed in every format.
"""

from __future__ import annotations

from gitnetdiag.redaction import MASK, redact_text, redact_url
from gitnetdiag.redaction import redact_tree as redact_diagnosis

__all__ = ["MASK", "redact_diagnosis", "redact_text", "redact_url"]
