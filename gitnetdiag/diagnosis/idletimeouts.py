"""Idle timeouts of stateful middleboxes (``data/path_idle_timeouts.toml``).

One entry per product: the idle timeout after which it forgets a TCP connection, whether
users can change it and how, whether it drops silently, and the page of the facts.
:func:`parse` validates; :data:`MIDDLEBOXES` is what gitnetdiag loads at start (a broken
file stops it with one line naming the entry).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gitnetdiag.data import KnowledgeBaseError, load_table, require_source, require_types

DATA_FILE = "path_idle_timeouts.toml"
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


def _entry(raw: dict[str, Any], where: str) -> Middlebox:
    require_types(raw, _FIELDS, where, exact=True)
    if raw["idle_timeout_s"] <= 0:
        raise KnowledgeBaseError(f"{where}: idle_timeout_s must be above 0")
    if raw["configurable"] != bool(raw["setting"]):
        raise KnowledgeBaseError(f"{where}: a setting is named exactly when it is configurable")
    require_source(raw["source"], where)
    return Middlebox(**raw)


def parse(text: str) -> dict[str, Middlebox]:
    """The table in ``text`` (TOML), validated; keyed by id in file order."""
    return load_table(DATA_FILE, "middlebox", _entry, text=text)


def load() -> dict[str, Middlebox]:
    """The table shipped with gitnetdiag."""
    return load_table(DATA_FILE, "middlebox", _entry)


MIDDLEBOXES: dict[str, Middlebox] = load()
"""Every middlebox of the table, keyed by id, in file order."""
