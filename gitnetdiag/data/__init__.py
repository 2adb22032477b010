"""The data files gitnetdiag ships (``*.toml``: facts about products, each with the page it
comes from), and the one loader of their tables of entries.

:func:`load_table` reads a packaged file (or the text given), builds each entry of one array
of tables (``[[product]]``, ``[[middlebox]]``) with the caller's constructor and keys them by
id in file order; it refuses a file that is not TOML, an entry that is not a table, an id given
twice and a table with no entries. :func:`require_text`, :func:`require_types` and
:func:`require_source` are the field checks the constructors share. Every refusal is one
:class:`KnowledgeBaseError` line naming the file, the entry and the field: the tables load
when gitnetdiag starts, so a broken file stops it there.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Iterable, Mapping
from importlib import resources
from typing import Any, Protocol, TypeVar


class KnowledgeBaseError(ValueError):
    """A data file is malformed; the message names the file, the entry and the field."""


class _Keyed(Protocol):
    @property
    def id(self) -> str: ...


Entry = TypeVar("Entry", bound=_Keyed)


def read_text(name: str) -> str:
    """The text of the packaged data file ``name`` (``edge_limits.toml``)."""
    return resources.files(__name__).joinpath(name).read_text()


def parse_toml(text: str, file: str) -> dict[str, Any]:
    """``text`` (the contents of ``file``) as TOML; one line naming the file when it is not."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KnowledgeBaseError(f"{file}: not valid TOML ({exc})") from None


def keyed_entries(data: Mapping[str, Any], file: str, array: str,
                  entry: Callable[[dict[str, Any], str], Entry]) -> dict[str, Entry]:
    """The entries of ``data[array]`` built by ``entry(raw, where)``, keyed by id in file
    order; ``where`` (``edge_limits.toml entry 'nginx'``) starts the entry's error lines."""
    table: dict[str, Entry] = {}
    for index, raw in enumerate(data.get(array, ()), 1):
        if not isinstance(raw, dict):
            raise KnowledgeBaseError(f"{file} entry #{index} of [[{array}]] is not a table")
        where = f"{file} entry {raw['id']!r}" if "id" in raw else f"{file} entry #{index}"
        built = entry(raw, where)
        if built.id in table:
            raise KnowledgeBaseError(f"{file}: {array} id {built.id!r} appears twice")
        table[built.id] = built
    if not table:
        raise KnowledgeBaseError(f"{file}: no [[{array}]] entries")
    return table


def load_table(file: str, array: str, entry: Callable[[dict[str, Any], str], Entry], *,
               text: str | None = None) -> dict[str, Entry]:
    """The ``[[array]]`` entries of the packaged data file ``file`` (or of ``text``, its
    contents), validated by ``entry``; keyed by id in file order."""
    data = parse_toml(read_text(file) if text is None else text, file)
    return keyed_entries(data, file, array, entry)


def require_text(raw: Mapping[str, Any], keys: Iterable[str], where: str) -> None:
    """Each of ``keys`` is a non-empty string in the entry."""
    for key in keys:
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise KnowledgeBaseError(f"{where}: missing text field `{key}`")


def require_types(raw: Mapping[str, Any], fields: Mapping[str, type], where: str, *,
                  exact: bool = False) -> None:
    """Each of ``fields`` has its type in the entry (a bool is no int); with ``exact``, the
    entry has no other field."""
    for name, kind in fields.items():
        value = raw.get(name)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise KnowledgeBaseError(f"{where}: {name} must be a {kind.__name__}")
    if exact and (unknown := sorted(set(raw) - set(fields))):
        raise KnowledgeBaseError(f"{where}: unknown field {unknown[0]!r}")


def require_source(url: object, where: str, field: str = "source") -> str:
    """``url``, the documentation page of a fact, when it is an https:// address."""
    if not isinstance(url, str) or not url.startswith("https://"):
        raise KnowledgeBaseError(f"{where}: {field} must be an https:// page")
    return url
