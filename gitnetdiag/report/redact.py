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


def _safe_user(user: str) -> bool:
    """A plain login name (``git``, ``alice``) may stay; anything token-like goes."""
    return (
        len(user) <= 16
        and re.fullmatch(r"[A-Za-z0-9._-]+", user) is not None
        and not _TOKEN_PREFIX.match(user)
    )


def redact_url(url: str) -> str:
    """``https://user:pass@host/p?token=x`` -> ``https://***:***@host/p?token=***``.

    A user name without password is kept when it looks like a login (``ssh://git@host``);
    query parameters whose name suggests a secret get their value masked.
    Strings that are not URLs are returned unchanged.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not parts.scheme or not parts.netloc:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = f"{MASK}:{MASK}"
        elif not _safe_user(userinfo):
            userinfo = MASK
        netloc = f"{userinfo}@{host}"
    query = parts.query
    if query:
        fields = []
        for item in query.split("&"):
            name, sep, value = item.partition("=")
            if sep and value and (_SECRET_PARAM.search(name) or _TOKEN_PREFIX.match(value)):
                value = MASK
            fields.append(f"{name}{sep}{value}")
        query = "&".join(fields)
    text = f"{parts.scheme}://{netloc}{parts.path}"
    if query:
        text += f"?{query}"
    if parts.fragment:
        text += f"#{parts.fragment}"
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
