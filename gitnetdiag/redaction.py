"""The one redaction policy: what counts as a secret, and how it is removed.

Two kinds of rule, applied together by :func:`redact_text`:

- **context rules** find a secret by where it stands, whatever its value:
  URL userinfo (``https://user:pw@``, ``https://TOKEN@``), every query value
  (in full URLs and in request lines such as ``GET /r.git/info/refs?...``),
  the values of ``Authorization``, ``Proxy-Authorization``, ``Cookie`` and
  ``Set-Cookie`` headers, ``http.extraHeader`` / ``http.<url>.extraHeader``
  values, and ``Bearer``/``Basic``/``token`` credentials;
- **known secrets** are the exact strings collected from what the user gave
  (:func:`secrets_from_url`, :func:`secrets_from_header`): they are replaced
  wherever they stand, also percent-encoded (``%40``), form-encoded and
  JSON-escaped, because git's trace2 and libcurl write URLs in all of these.
  Strings shorter than :data:`MIN_SECRET_CHARS` are only removed by the
  context rules: replacing ``pw`` everywhere would destroy the record.

A URL's ``#fragment`` is masked too (a token pasted after the URL stands there), except in
the documentation addresses the packaged data files cite (``gitnetdiag/data/*.toml``, such
as ``configuration.html#1.3.1``): those are public, and a fix's link must lead to its
section. Only the exact address, fragment included, is kept.

:func:`redact_run_dir` is the single pass over a run directory (text files
through :func:`redact_text`, binary captures through :func:`redact_bytes`,
which keeps their length so a pcap stays readable). Everything here depends
on the standard library and :mod:`gitnetdiag.errors` only, so any layer may
import it.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
import functools
import json
import mmap
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, quote_plus, unquote, unquote_plus, urlsplit

from gitnetdiag.errors import AnsweredError, GitnetdiagError
from gitnetdiag.safefile import read_regular_file, replace_file

MASK = "***"
MIN_SECRET_CHARS = 6
"""Known secrets shorter than this are left to the context rules."""

_SSH_SCHEMES = frozenset({"ssh", "git+ssh", "ssh+git"})
_GIT_SERVICES = frozenset({"git-upload-pack", "git-receive-pack"})
# Bounded repetitions keep every rule linear: an unbounded scan from each possible
# start makes the pass quadratic on long tokens (base64, dotted names).
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{0,31}://[^\s'\"<>`\\]+")
# The last path segment before "?" only, for the same reason.
_REQUEST_QUERY = re.compile(r"(/[^\s?\"'<>\\/]*\?)([^\s\"'<>#\\]+)")
_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization|(?:set-)?cookie)(\s*:[ \t]*)([^\r\n\"\\]+)"
)
_EXTRA_HEADER = re.compile(
    r"(?i)(\.extraheader)('?\s*=\s*'?|[ \t]+)([^\r\n\"'\\]+)"
)
_CREDENTIAL_WORD = re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}")

BINARY_SUFFIXES = (".pcap", ".pcapng", ".cap", ".gz", ".png", ".zip")
"""Files redacted byte for byte (length kept) rather than as text."""
UNTOUCHED_SUFFIXES = (".keylog",)
"""TLS keylogs are secrets by design (0600, attached only when asked): left as they are."""

T = TypeVar("T")


class SecretSet:
    """The exact secret strings of one run; probes add what they learn on the way."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._values: set[str] = set()
        self.add(*values)

    def add(self, *values: str) -> None:
        """Remember ``values`` (empty strings are ignored)."""
        self._values.update(v for v in values if v)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._values))

    def __len__(self) -> int:
        return len(self._values)


def _mask_query(query: str) -> str:
    items = []
    for item in query.split("&"):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep:
            items.append(MASK)
        elif key == "service" and value in _GIT_SERVICES:
            items.append(item)
        else:
            items.append(f"{key}={MASK}")
    return "&".join(items)


def redact_url(url: str) -> str:
    """The URL without secrets.

    - ``https://user:pass@host`` and ``https://TOKEN@host``: the whole user part
      is masked (over HTTP a "user" is often a token);
    - ``ssh://git:pw@host``: the login stays (``git@host``), a password goes;
    - every query value is masked (remotes need none; signatures and tokens
      live there), except git's own ``service=git-receive-pack``;
    - scp-like ``git@host:path`` and strings that are not URLs are returned unchanged.
    """
    if "://" not in url:
        return url
    try:
        parts = urlsplit(url)
        username = parts.username
    except ValueError:
        # Unparsable (``http://u:pw@[::1/x``) is no reason to show the userinfo.
        scheme, _, rest = url.partition("://")
        authority, slash, tail = rest.partition("/")
        if "@" in authority:
            authority = f"{MASK}@{authority.rsplit('@', 1)[-1]}"
        path, question, query = tail.partition("?")
        return (f"{scheme}://{authority}{slash}{path}"
                + (f"?{_mask_query(query)}" if question else ""))
    if not parts.scheme or not parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    if username and parts.scheme in _SSH_SCHEMES:
        host = f"{username}@{host}"
    elif "@" in parts.netloc:
        host = f"{MASK}@{host}"
    text = f"{parts.scheme}://{host}{parts.path}"
    if parts.query:
        text += "?" + _mask_query(parts.query)
    if parts.fragment:
        text += "#" + (parts.fragment if url in documentation_urls() else MASK)
    return text


@functools.cache
def documentation_urls() -> frozenset[str]:
    """Every https:// address written in the packaged data files (their ``source`` pages):
    public documentation, whose fragments :func:`redact_url` keeps."""
    folder = resources.files("gitnetdiag").joinpath("data")
    return frozenset(url for entry in folder.iterdir() if entry.name.endswith(".toml")
                     for url in _URL.findall(entry.read_text(encoding="utf-8"))
                     if url.startswith("https://"))


def without_fragment(url: str) -> str:
    """The URL without its ``#fragment``: git never needs one (curl leaves it out of the
    request), and whatever stands there (a token pasted with the URL) must not reach git's
    or its remote helper's command line. Not a URL (scp-like ``host:path``): unchanged."""
    return url.split("#", 1)[0] if "://" in url else url


def secrets_from_url(url: str) -> set[str]:
    """The exact secrets a remote URL carries: its password (or a user that is a
    token), the ``user:password`` Basic credential, every query value."""
    found: set[str] = set()
    if "://" not in url:
        return found
    # A byte that is not UTF-8 (a lone surrogate in argv) is kept as its \xNN escape.
    url = url.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    scheme, _, rest = url.partition("://")
    netloc = re.split(r"[/?#]", rest, maxsplit=1)[0]
    query = rest.partition("?")[2].partition("#")[0]
    userinfo, at, _host = netloc.rpartition("@")
    if at and userinfo:
        user, colon, password = userinfo.partition(":")
        if colon and password:
            found |= {password, unquote(password)}
            basic = f"{unquote(user)}:{unquote(password)}".encode()
            found.add(base64.b64encode(basic).decode())
        elif not colon and scheme.lower() not in _SSH_SCHEMES:
            found |= {user, unquote(user)}
    for item in query.split("&"):
        key, sep, value = item.partition("=")
        if sep and value and not (key == "service" and value in _GIT_SERVICES):
            found |= {value, unquote_plus(value)}
    return {s for s in found if s}


def secrets_from_argv(argv: Iterable[str]) -> set[str]:
    """The exact secrets of every URL on a command line (``--http=URL`` included):
    what the CLI's last-resort error printer needs to redact any message."""
    found: set[str] = set()
    for arg in argv:
        option, equals, value = arg.partition("=")
        if equals and option.startswith("--") and "://" not in option:
            arg = value
        found |= secrets_from_url(arg)
    return found


def secrets_from_header(header: str) -> set[str]:
    """The exact secrets of an ``http.extraHeader`` value such as
    ``Authorization: Bearer TOKEN``: the header value, its credential and, for
    Basic, the decoded password."""
    _name, colon, value = header.partition(":")
    value = value.strip() if colon else header.strip()
    found = {value}
    words = value.split()
    if len(words) >= 2:
        found.add(words[-1])
        if words[0].lower() == "basic":
            try:
                decoded = base64.b64decode(words[-1], validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                decoded = ""
            if decoded:
                found |= {decoded, decoded.partition(":")[2]}
    return {s for s in found if s}


def _variants(secret: str) -> set[str]:
    """The forms a secret takes in URLs, form bodies and JSON."""
    forms = {
        secret, quote(secret, safe=""), quote(secret, safe="/:@!$&'()*+,;="),
        quote_plus(secret), secret.replace("/", "\\/"),
    }
    forms |= {json.dumps(form)[1:-1] for form in list(forms)}
    forms.add(json.dumps(secret, ensure_ascii=False)[1:-1])
    return forms


@functools.lru_cache(maxsize=64)
def _secret_pattern(secrets: frozenset[str]) -> re.Pattern[str] | None:
    variants = {v for s in secrets if len(s) >= MIN_SECRET_CHARS for v in _variants(s)}
    if not variants:
        return None
    # Longest first, so a secret's encoded form is replaced whole, not in pieces.
    ordered = sorted(variants, key=lambda v: (-len(v), v))
    return re.compile("|".join(re.escape(v) for v in ordered), re.IGNORECASE)


@functools.lru_cache(maxsize=64)
def _secret_bytes_pattern(secrets: frozenset[str]) -> re.Pattern[bytes] | None:
    text = _secret_pattern(secrets)
    if text is None:
        return None
    return re.compile(text.pattern.encode("utf-8", "surrogateescape"), re.IGNORECASE)


_TRAILING = ").,;:!?"


def _split_trailing(text: str) -> tuple[str, str]:
    # Prose closes a URL with punctuation ("(http://h/r.git?t=X)"): it stays outside the
    # URL, or masking the query would swallow it and a second pass would differ.
    tail = ""
    while text and text[-1] in _TRAILING and not (
            text[-1] == ")" and text.count("(") >= text.count(")")):
        text, tail = text[:-1], text[-1] + tail
    return text, tail


def _redact_url_match(match: re.Match[str]) -> str:
    url, tail = _split_trailing(match.group(0))
    return redact_url(url) + tail


def _redact_query_match(match: re.Match[str]) -> str:
    query, tail = _split_trailing(match.group(2))
    return match.group(1) + _mask_query(query) + tail


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every known secret and every secret found by context masked.

    Use it for every line gitnetdiag prints or stores; it is idempotent.
    """
    pattern = _secret_pattern(frozenset(secrets))
    if pattern is not None:
        text = pattern.sub(MASK, text)
    text = _EXTRA_HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    text = _HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    text = _URL.sub(_redact_url_match, text)
    text = _REQUEST_QUERY.sub(_redact_query_match, text)
    return _CREDENTIAL_WORD.sub(lambda m: f"{m.group(1)} {MASK}", text)


def redact_bytes(data: bytes, secrets: Iterable[str]) -> bytes:
    """``data`` with every known secret overwritten by ``*`` of the same length.

    Only exact secrets (and their encoded forms): binary records have no lines to
    read context from, and keeping lengths keeps a capture's framing valid.
    """
    pattern = _secret_bytes_pattern(frozenset(secrets))
    if pattern is None:
        return data
    return pattern.sub(lambda m: b"*" * len(m.group(0)), data)


def redact_error(error: GitnetdiagError, secrets: Iterable[str] = ()) -> GitnetdiagError:
    """The same error with its message, hint and page excerpt redacted (changed in place)."""
    values = frozenset(secrets)
    error.message = redact_text(error.message, values)
    error.hint = redact_text(error.hint, values)
    if isinstance(error, AnsweredError):
        error.page = redact_text(error.page, values)
    error.args = (error.message, *error.args[1:])
    return error


def _scrub(value: Any, secrets: frozenset[str]) -> Any:
    if isinstance(value, enum.Enum):  # a fixed vocabulary holds no secret: keep it typed
        return value
    if isinstance(value, str):
        return redact_text(value, secrets)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: _scrub(getattr(value, f.name), secrets)
            for f in dataclasses.fields(value) if f.init
        }
        return dataclasses.replace(value, **changes)
    if isinstance(value, tuple):
        return tuple(_scrub(item, secrets) for item in value)
    if isinstance(value, list):
        return [_scrub(item, secrets) for item in value]
    if isinstance(value, dict):
        return {key: _scrub(item, secrets) for key, item in value.items()}
    return value


def redact_tree(value: T, secrets: Iterable[str] = ()) -> T:
    """A copy of a tree of dataclasses, tuples, lists and dicts with every string redacted."""
    scrubbed: T = _scrub(value, frozenset(secrets))
    return scrubbed


@dataclass(frozen=True, kw_only=True)
class RedactionResult:
    """What :func:`redact_run_dir` did (paths relative to the run directory)."""

    rewritten: tuple[str, ...]
    """Files that held a secret and were rewritten."""
    skipped: tuple[str, ...]
    """Symlinks and special files: never opened, never followed."""
    failed: tuple[str, ...]
    """Files that could not be read or rewritten, with the reason (they may hold secrets)."""


def _is_binary(path: Path, head: bytes) -> bool:
    return path.name.endswith(BINARY_SUFFIXES) or b"\0" in head[:8192]


def _redact_binary_file(path: Path, pattern: re.Pattern[bytes]) -> bool:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
            return False
        # A whole-packet capture can be large: scan it mapped, copy only when needed.
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            if pattern.search(mapped) is None:
                return False
            data = pattern.sub(lambda m: b"*" * len(m.group(0)), mapped)
    replace_file(path, data, stat.S_IMODE(info.st_mode))
    return True


def _redact_file(path: Path, secrets: frozenset[str]) -> bool:
    """Redact one regular file in place (atomically); True when it changed."""
    if path.name.endswith(BINARY_SUFFIXES):
        bytes_pattern = _secret_bytes_pattern(secrets)
        return bytes_pattern is not None and _redact_binary_file(path, bytes_pattern)
    data = read_regular_file(path)
    if data is None:
        return False
    if _is_binary(path, data):
        redacted = redact_bytes(data, secrets)
    else:
        text = data.decode("utf-8", "surrogateescape")
        redacted = redact_text(text, secrets).encode("utf-8", "surrogateescape")
    if redacted == data:
        return False
    replace_file(path, redacted)
    return True


def _walk(directory: Path) -> Iterator[tuple[Path, bool]]:
    """(path, is a regular file) of everything under ``directory``, symlinks not followed."""
    with os.scandir(directory) as entries:
        listed = sorted(entries, key=lambda e: e.name)
    for entry in listed:
        path = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(path)
        else:
            yield path, entry.is_file(follow_symlinks=False)


def redact_run_dir(run_dir: Path, secrets: Iterable[str]) -> RedactionResult:
    """The redaction pass: every file under ``run_dir`` loses the secrets it holds.

    Text files (manifest, trace2, curl traces, git's stderr, native ledgers,
    reports) go through :func:`redact_text`; captures through
    :func:`redact_bytes`; keylogs are left alone. Files are rewritten
    atomically and only when they change; symlinks are never followed.
    Never raises for a single file: failures are listed in the result.
    """
    values = frozenset(secrets)
    rewritten: list[str] = []
    skipped: list[str] = []
    failed: list[str] = []
    try:
        found = list(_walk(run_dir))
    except OSError as exc:
        return RedactionResult(rewritten=(), skipped=(), failed=(f".: {exc.strerror}",))
    for path, regular in found:
        relative = str(path.relative_to(run_dir))
        if not regular:
            skipped.append(relative)
            continue
        if path.name.endswith(UNTOUCHED_SUFFIXES):
            continue
        try:
            if _redact_file(path, values):
                rewritten.append(relative)
        except (OSError, GitnetdiagError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            failed.append(f"{relative}: {reason}")
    return RedactionResult(
        rewritten=tuple(rewritten), skipped=tuple(skipped), failed=tuple(failed)
    )
