"""Client HTTP-stack releases with a documented git transfer bug
(``gitnetdiag/data/libcurl_bugs.toml``), by direction: a push is judged with the upload's
rows, a fetch's clones with the download's.

Pure: the data file ships with the package. A broken entry stops the load with one line
naming the entry.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from gitnetdiag.errors import UsageError

DATA_FILE = "libcurl_bugs.toml"

NOT_DOCUMENTED = "not documented"
"""``fixed_in`` of a bug whose source names no fixed release."""

_COMPONENTS = ("libcurl", "git", "nghttp2", "openssh")
_PROTOCOLS = ("h1", "h2", "ssh", "git")
DIRECTIONS = ("upload", "download")


@dataclass(frozen=True, kw_only=True)
class KnownBug:
    """A client release with a documented problem in one direction."""

    component: str
    """``libcurl``, ``git``, ``nghttp2`` or ``openssh``."""
    versions: tuple[str, ...]
    """Affected versions (exact strings)."""
    protocol: str
    """Protocol it shows on."""
    direction: str
    """``upload`` (git push) or ``download`` (git clone / fetch)."""
    what: str
    """The symptom."""
    reference: str
    """Upstream report, short."""
    fixed_in: str | None
    """First fixed version, None when the source names none."""
    source: str
    """The page the facts come from."""


def _text(row: dict[str, Any], key: str, where: str, allowed: tuple[str, ...] = ()) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value or (allowed and value not in allowed):
        hint = f"write one of {', '.join(allowed)}" if allowed else f"write the {key} as text"
        raise UsageError(f"{DATA_FILE}: {where} has no valid '{key}' ({value!r})", hint=hint)
    return value


def _entry(row: dict[str, Any], index: int) -> KnownBug:
    where = f"bug {index + 1}"
    versions = row.get("versions")
    if not isinstance(versions, list) or not versions or not all(
            isinstance(v, str) and v for v in versions):
        raise UsageError(f"{DATA_FILE}: {where} has no affected versions",
                         hint='write versions = ["8.1.0", ...], only those the source states')
    source = _text(row, "source", where)
    if not source.startswith("https://"):
        raise UsageError(f"{DATA_FILE}: {where} has no source page",
                         hint="every fact names the https:// page it comes from")
    fixed = _text(row, "fixed_in", where)
    return KnownBug(
        component=_text(row, "component", where, _COMPONENTS), versions=tuple(versions),
        protocol=_text(row, "protocol", where, _PROTOCOLS),
        direction=_text(row, "direction", where, DIRECTIONS), what=_text(row, "what", where),
        reference=_text(row, "reference", where),
        fixed_in=None if fixed == NOT_DOCUMENTED else fixed, source=source)


def parse_bugs(text: str) -> tuple[KnownBug, ...]:
    """The entries of a data file's text, in order."""
    rows = tomllib.loads(text).get("bug", [])
    return tuple(_entry(row, index) for index, row in enumerate(rows))


@cache
def load_bugs() -> tuple[KnownBug, ...]:
    """Every entry of the shipped data file, in order."""
    return parse_bugs(resources.files("gitnetdiag.data").joinpath(DATA_FILE).read_text())


def bugs_for(direction: str) -> tuple[KnownBug, ...]:
    """The entries of one direction (``upload`` or ``download``)."""
    return tuple(bug for bug in load_bugs() if bug.direction == direction)
