"""Keep secrets out of reports: credentials in URLs, tokens, Authorization headers.

Every renderer passes the whole :class:`Diagnosis` through :func:`redact_diagnosis`
first, so a URL or header that slipped into any string field (an error
message, a kernel log line, a config value) is scrubbed in every format.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, TypeVar
from urllib.parse import urlsplit

MASK = "***"

_SECRET_PARAM = re.compile(
    r"token|key|secret|pass|pwd|sig|auth|credential|session|code", re.IGNORECASE
)
_TOKEN_PREFIX = re.compile(r"^(ghp_|gho_|ghu_|ghs_|github_pat_|glpat-|xox[abp]-)", re.IGNORECASE)
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>`]+")
_AUTH_HEADER = re.compile(r"(?i)\b((?:proxy-)?authorization\s*:\s*)([^\r\n]+)")
_BEARER = re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}")

T = TypeVar("T")


def redact_url(url: str) -> str:
    """The URL without secrets; the one redaction policy of the project.

    - ``https://user:pass@host`` and ``https://TOKEN@host``: the whole user part
      is masked (over HTTP a "user" is often a token);
    - ``ssh://git:pw@host``: the login stays (``git@host``), a password goes;
    - every query value is masked (remotes need none; signatures and tokens live there);
    - scp-like ``git@host:path`` and strings that are not URLs are returned unchanged.
    """
    if "://" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not parts.scheme or not parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    if parts.username and parts.scheme in ("ssh", "git+ssh", "ssh+git"):
        host = f"{parts.username}@{host}"
    elif "@" in parts.netloc:
        host = f"{MASK}@{host}"
    text = f"{parts.scheme}://{host}{parts.path}"
    if parts.query:
        text += "?" + "&".join(
            f"{item.partition('=')[0]}={MASK}" for item in parts.query.split("&") if item
        )
    return text


def redact_text(text: str) -> str:
    """Redact every URL, Authorization header and bearer/basic token inside free text."""
    text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    text = _AUTH_HEADER.sub(lambda m: f"{m.group(1)}{MASK}", text)
    return _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: _scrub(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init
        }
        return dataclasses.replace(value, **changes)
    if isinstance(value, tuple):
        return tuple(_scrub(item) for item in value)
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    if isinstance(value, dict):
        return {key: _scrub(item) for key, item in value.items()}
    return value


def redact_diagnosis(diagnosis: T) -> T:
    """A copy of a dataclass tree (a :class:`Diagnosis`) with every string redacted."""
    scrubbed: T = _scrub(diagnosis)
    return scrubbed
