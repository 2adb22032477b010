"""Idle timeouts of stateful middleboxes (``data/path_idle_timeouts.toml``).

One entry per product: the idle timeout after which it forgets a TCP connection, whether
users can change it and how, whether it drops silently, and the page of the facts.
:func:`parse` validates; :data:`MIDDLEBOXES` is what gitnetdiag loads at start (a broken
file stops it with one line naming the entry).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from gitnetdiag.diagnosis.terminators import KnowledgeBaseError

_FIELDS = {"id": str, "name": str, "idle_timeout_s": int, "configurable": bool,
           "setting": str, "silent": bool, "source": str}


@dataclass(frozen=True, kw_only=True)
class Middlebox:
    """One product's idle timeout, with its documentation page."""

    id: str
    """A stable id."""
    name: str
    """What its users call it."""
    idle_timeout_s: int
    """The idle timeout (the default where it is configurable)."""
    configurable: bool
    """False where the provider fixes it."""
    setting: str
    """How to change it; empty when it cannot be changed."""
    silent: bool
    """It drops silently by default (no RST to either end)."""
    source: str
    """The page of the facts."""


def _entry(raw: Any, index: int) -> Middlebox:
    where = f"path_idle_timeouts: middlebox #{index + 1}"
    if not isinstance(raw, dict):
        raise KnowledgeBaseError(f"{where} is not a table")
    where = f"path_idle_timeouts: middlebox {raw.get('id', index + 1)!r}"
    for name, kind in _FIELDS.items():
        value = raw.get(name)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise KnowledgeBaseError(f"{where}: {name} must be a {kind.__name__}")
    if unknown := sorted(set(raw) - set(_FIELDS)):
        raise KnowledgeBaseError(f"{where}: unknown field {unknown[0]!r}")
    if raw["idle_timeout_s"] <= 0:
        raise KnowledgeBaseError(f"{where}: idle_timeout_s must be above 0")
    if raw["configurable"] != bool(raw["setting"]):
        raise KnowledgeBaseError(f"{where}: a setting is named exactly when it is configurable")
    if not raw["source"].startswith("https://"):
        raise KnowledgeBaseError(f"{where}: source must be an https:// page")
    return Middlebox(**raw)


def parse(text: str) -> dict[str, Middlebox]:
    """The table in ``text`` (TOML), validated; keyed by id in file order."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KnowledgeBaseError(f"path_idle_timeouts: not valid TOML ({exc})") from None
    table: dict[str, Middlebox] = {}
    for index, raw in enumerate(data.get("middlebox", ())):
        entry = _entry(raw, index)
        if entry.id in table:
            raise KnowledgeBaseError(f"path_idle_timeouts: id {entry.id!r} appears twice")
        table[entry.id] = entry
    if not table:
        raise KnowledgeBaseError("path_idle_timeouts: no [[middlebox]] entries")
    return table


def load() -> dict[str, Middlebox]:
    """The table shipped with gitnetdiag."""
    return parse(resources.files("gitnetdiag.data").joinpath("path_idle_timeouts.toml")
                 .read_text())


MIDDLEBOXES: dict[str, Middlebox] = load()
"""Every middlebox of the table, keyed by id, in file order."""
