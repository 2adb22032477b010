"""libcurl's HTTP/2 download window by release (``gitnetdiag/data/libcurl_h2_windows.toml``).

Pure: the data file ships with the package; :func:`window_for` answers for one
version string (``7.88.1``, ``8.10.1-DEV``), None when the version is unknown
or unreadable. Unknown windows stay None ("not documented" in the file).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from gitnetdiag.errors import UsageError

DATA_FILE = "libcurl_h2_windows.toml"


@dataclass(frozen=True, kw_only=True)
class LibcurlWindow:
    """One range of libcurl releases and the HTTP/2 stream window they advertise."""

    since: tuple[int, ...]
    """First version covered."""
    until: tuple[int, ...] | None
    """First version not covered, None when open."""
    initial_window: int | None
    """Bytes in the first SETTINGS, None when not documented."""
    steady_window: int | None
    """Bytes once the response flows, None when not documented."""
    slow_downloads: bool
    """The releases are known to download slowly over HTTP/2."""
    fact: str
    """What changed and what was measured."""
    source: str
    """The page the fact comes from."""


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """``8.10.1`` (or ``libcurl/8.10.1``, ``8.10.1-DEV``) -> (8, 10, 1); None when unreadable."""
    if not text:
        return None
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if match is None:
        return None
    return tuple(int(part or 0) for part in match.groups())


def _window(value: Any, where: str) -> int | None:
    if value == "not documented":
        return None
    if isinstance(value, int) and value > 0:
        return value
    raise UsageError(f"{DATA_FILE}: {where} is {value!r}",
                     hint="write a number of bytes or \"not documented\"")


def _entry(row: dict[str, Any], index: int) -> LibcurlWindow:
    where = f"window {index + 1}"
    since = parse_version(str(row.get("from", "")))
    until_text = str(row.get("until", ""))
    until = parse_version(until_text) if until_text else None
    if since is None and row.get("from") != "0":
        raise UsageError(f"{DATA_FILE}: {where} has no readable 'from'",
                         hint="write a version like 7.52.0")
    if not str(row.get("source", "")).startswith("https://") or not row.get("fact"):
        raise UsageError(f"{DATA_FILE}: {where} has no source page or fact",
                         hint="every fact names the page it comes from")
    return LibcurlWindow(
        since=since or (0,), until=until,
        initial_window=_window(row.get("initial_window"), f"{where} initial_window"),
        steady_window=_window(row.get("steady_window"), f"{where} steady_window"),
        slow_downloads=bool(row.get("slow_downloads", False)), fact=str(row["fact"]),
        source=str(row["source"]))


@cache
def load_windows() -> tuple[LibcurlWindow, ...]:
    """Every entry of the data file, in order."""
    text = resources.files("gitnetdiag.data").joinpath(DATA_FILE).read_text()
    rows = tomllib.loads(text).get("window", [])
    return tuple(_entry(row, index) for index, row in enumerate(rows))


def _pad(version: tuple[int, ...]) -> tuple[int, ...]:
    return (*version, 0, 0, 0)[:3]


def window_for(version: str | None) -> LibcurlWindow | None:
    """The entry covering ``version``, None when unknown."""
    parsed = parse_version(version)
    if parsed is None:
        return None
    for entry in load_windows():
        if _pad(entry.since) <= _pad(parsed) and (
                entry.until is None or _pad(parsed) < _pad(entry.until)):
            return entry
    return None
