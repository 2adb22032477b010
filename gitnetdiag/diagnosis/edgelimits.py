"""The limits by which a server or edge refuses or cuts a push, or slows a clone it sends
(``data/edge_limits.toml``).

One entry per product (the ids of :mod:`gitnetdiag.diagnosis.terminators`): the setting
that limits a request body and its default, the setting that closes a connection while
the server behind is silent and its default, the setting (if any) that makes it take a
body without a ``Content-Length``, the setting that fixes its sockets' send buffer (a
clone's ``server-send-buffer``), whether users can change them, and the page of each
fact. :func:`parse` validates; :data:`LIMITS` is what gitnetdiag loads at start (a broken
file stops it with one line naming the entry).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gitnetdiag.data import KnowledgeBaseError, load_table, require_source, require_text
from gitnetdiag.diagnosis.terminators import BASE

DATA_FILE = "edge_limits.toml"
NOT_DOCUMENTED = "not documented"
NO_LIMIT = "none"

_TEXT_FIELDS = ("body_limit", "idle_timeout", "send_buffer")


@dataclass(frozen=True, kw_only=True)
class EdgeLimits:
    """One product's request limits, each with its documentation page."""

    id: str
    """The product id (:data:`gitnetdiag.diagnosis.terminators.BASE` key)."""
    name: str
    """Its display name."""
    body_limit: str
    """The body-limit setting, ``{value}`` standing for bytes; ``not documented``."""
    body_limit_default_bytes: int | None
    """Its default; None when there is none or it is not documented (see the text)."""
    idle_timeout: str
    """The idle-timeout setting(s), ``{value}`` standing for seconds; ``not documented``."""
    idle_timeout_default_s: float | None
    """Its default; None when there is none or it is not documented."""
    streamed_body: str
    """The setting that takes bodies without a ``Content-Length``; empty when none is known."""
    send_buffer: str
    """The setting that fixes the send buffer of its sockets to the client; ``not
    documented``."""
    user_settable: bool
    """False where the provider fixes the limits."""
    sources: dict[str, str]
    """Fact -> documentation page."""

    def source(self, fact: str) -> str:
        return self.sources.get(fact, "")


def _default(entry: dict[str, Any], key: str, where: str) -> float | None:
    value = entry.get(key)
    if value in (NO_LIMIT, NOT_DOCUMENTED):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise KnowledgeBaseError(f"{where}: {key} must be a positive number, "
                                 f"'{NO_LIMIT}' or '{NOT_DOCUMENTED}'")
    return value


def _entry(entry: dict[str, Any], where: str) -> EdgeLimits:
    product = BASE.get(entry.get("id", ""))
    if product is None:
        raise KnowledgeBaseError(f"{where}: the id is not a product of h2_terminators.toml")
    require_text(entry, _TEXT_FIELDS, where)
    streamed = entry.get("streamed_body", "")
    settable = entry.get("user_settable")
    if not isinstance(streamed, str) or not isinstance(settable, bool):
        raise KnowledgeBaseError(f"{where}: streamed_body must be text, user_settable a bool")
    sources = entry.get("sources", {})
    if not isinstance(sources, dict):
        raise KnowledgeBaseError(f"{where}: sources must be a table")
    for key in ("body_limit", "idle_timeout", "send_buffer", "streamed_body"):
        text = streamed if key == "streamed_body" else entry[key]
        if text and text != NOT_DOCUMENTED:
            require_source(sources.get(key), where, f"sources.{key}")
    body = _default(entry, "body_limit_default", where)
    return EdgeLimits(
        id=product.id, name=product.name, body_limit=entry["body_limit"],
        body_limit_default_bytes=int(body) if body is not None else None,
        idle_timeout=entry["idle_timeout"],
        idle_timeout_default_s=_default(entry, "idle_timeout_default", where),
        send_buffer=entry["send_buffer"], streamed_body=streamed, user_settable=settable,
        sources=dict(sources))


def parse(text: str) -> dict[str, EdgeLimits]:
    """The table in ``text`` (TOML), validated; keyed by product id in file order."""
    return load_table(DATA_FILE, "product", _entry, text=text)


def load() -> dict[str, EdgeLimits]:
    """The table shipped with gitnetdiag."""
    return load_table(DATA_FILE, "product", _entry)


LIMITS: dict[str, EdgeLimits] = load()
"""Every product of the table, keyed by id, in file order."""


def with_value(setting: str, value: float) -> str:
    """``setting`` with its ``{value}`` filled in (an integer)."""
    return setting.replace("{value}", str(round(value)))


def setting_text(product: str, fact: str, value: float = 0) -> str | None:
    """``product``'s setting for ``fact`` (``body_limit``, ``idle_timeout``,
    ``streamed_body``, ``send_buffer``) with ``value`` filled in where users can set it, and
    its page; None where the table has no such setting for it."""
    limits = LIMITS.get(product)
    setting = getattr(limits, fact) if limits is not None else ""
    if limits is None or not setting or setting == NOT_DOCUMENTED:
        return None
    text = with_value(setting, value) if limits.user_settable else setting
    return f"{text} ({limits.source(fact)})"
