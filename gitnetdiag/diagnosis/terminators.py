"""The knowledge base of HTTP/2 terminators (``gitnetdiag/data/h2_terminators.toml``).

One entry per product: how it names itself, its HTTP/2 fingerprint where distinctive,
what its own HTTP/2 server sends first in every configuration (to tell SETTINGS that are
not its own), its listening process and window directives as ``gitnetdiag host`` reports
them, its default receive windows, the setting that raises them, whether its users can change
it at all, its request-buffering and frame-size settings, and the documentation page of
each fact. :func:`load` reads and validates the file; :data:`BASE` is the base loaded when
gitnetdiag starts (a broken file stops it with one line naming the entry at fault).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gitnetdiag.data import KnowledgeBaseError as KnowledgeBaseError
from gitnetdiag.data import keyed_entries, parse_toml, read_text, require_text
from gitnetdiag.vocabulary import HTTP2_START_WINDOW_BYTES

DATA_FILE = "h2_terminators.toml"

NOT_DOCUMENTED = "not documented"
"""What the base says where a product's documentation does not give a fact."""


@dataclass(frozen=True, kw_only=True)
class Fingerprint:
    """SETTINGS a product's HTTP/2 server sends, as far as they tell it apart."""

    settings: dict[str, int] = field(default_factory=dict)
    """Settings it sends with these values."""
    absent: tuple[str, ...] = ()
    """Settings it never sends."""
    exact: bool = False
    """The whole SETTINGS set is :attr:`settings` (nothing else is sent)."""

    def matches(self, seen: dict[str, int]) -> bool:
        if not self.settings:
            return False
        if any(seen.get(k) != v for k, v in self.settings.items()):
            return False
        if any(k in seen for k in self.absent):
            return False
        return not self.exact or set(seen) == set(self.settings)


@dataclass(frozen=True, kw_only=True)
class OwnSettings:
    """What a product's HTTP/2 server sends first whatever its configuration: SETTINGS
    that break one of these facts come from another server (one in front of it)."""

    always: tuple[str, ...] = ()
    """Settings it sends in every configuration (their values may be configured)."""
    never: tuple[str, ...] = ()
    """Settings it sends in no configuration."""
    raises_connection_window: bool = False
    """Its first frames include a connection WINDOW_UPDATE: the connection window is above
    the protocol's 65535 B before any DATA arrives (False: not known to, nothing claimed)."""

    def contradictions(self, product: str, settings: dict[str, int],
                       connection_window_bytes: int | None) -> tuple[str, ...]:
        """What ``product`` (its display name) would not have sent, in words: in
        ``settings``, and in the connection window granted before the client's first DATA
        frame when known. Empty when nothing contradicts it or no SETTINGS were seen."""
        if not settings:
            return ()
        found = [f"{name} was sent, which {product} never sends"
                 for name in self.never if name in settings]
        found += [f"no {name} was sent, which {product} always sends"
                  for name in self.always if name not in settings]
        if (self.raises_connection_window and connection_window_bytes is not None
                and connection_window_bytes <= HTTP2_START_WINDOW_BYTES):
            found.append(f"the connection window was {connection_window_bytes} B until DATA "
                         f"was sent, where {product} raises it in its first frames")
        return tuple(found)


@dataclass(frozen=True, kw_only=True)
class Terminator:
    """One product that terminates HTTP/2 in front of git servers."""

    id: str
    name: str
    covers: tuple[str, ...]
    names: tuple[re.Pattern[str], ...]
    marker_headers: tuple[str, ...]
    fingerprint: Fingerprint | None
    own_settings: OwnSettings | None
    """What its own HTTP/2 server always / never sends first; None when not documented."""
    processes: tuple[str, ...]
    """Names its listening process has in ``ss -ltnp`` (``haproxy``, ``apache2``)."""
    window_directives: tuple[str, ...]
    """The configuration directives of its receive window, as ``gitnetdiag host`` reports
    them (``tune.h2.initial-window-size``)."""
    stream_window: int | None
    """Default per-stream receive window in bytes; None when not documented."""
    connection_window: int | None
    window_setting: str
    """The setting that raises the window; ``{value}`` stands for the bytes."""
    user_settable: bool
    workaround: str
    buffering_setting: str
    frame_size_setting: str
    sources: dict[str, str]

    def window_text(self, value: int) -> str:
        return self.window_setting.format(value=value)

    def called(self, text: str) -> bool:
        """Whether ``text`` (a server header, a via hop ...) names this product."""
        return any(p.search(text) for p in self.names)

    @property
    def display(self) -> str:
        if not self.covers:
            return self.name
        return f"{self.name} ({', '.join(self.covers)})"


_REQUIRED_TEXT = ("id", "name", "window_setting", "buffering_setting", "frame_size_setting")


def _window(entry: dict[str, Any], key: str, where: str) -> int | None:
    value = entry.get(key)
    if value == NOT_DOCUMENTED:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 31:
        return value
    raise KnowledgeBaseError(f"{where}: {key} must be a window in bytes or '{NOT_DOCUMENTED}'")


def _fingerprint(raw: Any, where: str) -> Fingerprint | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("settings", {}), dict):
        raise KnowledgeBaseError(f"{where}: fingerprint must be a table with `settings`")
    settings = raw.get("settings", {})
    if not settings or not all(isinstance(v, int) for v in settings.values()):
        raise KnowledgeBaseError(f"{where}: fingerprint settings must be names = integers")
    return Fingerprint(settings=dict(settings), absent=tuple(raw.get("absent", ())),
                       exact=bool(raw.get("exact", False)))


def _own_settings(raw: Any, where: str) -> OwnSettings | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) - {"always", "never", "raises_connection_window"}:
        raise KnowledgeBaseError(f"{where}: own_settings must be a table of `always`, `never`"
                                 " and `raises_connection_window`")
    names = (*raw.get("always", ()), *raw.get("never", ()))
    if not all(isinstance(n, str) and n for n in names):
        raise KnowledgeBaseError(f"{where}: own_settings `always` / `never` must name settings")
    raises = raw.get("raises_connection_window", False)
    if not isinstance(raises, bool):
        raise KnowledgeBaseError(f"{where}: own_settings.raises_connection_window must be a bool")
    return OwnSettings(always=tuple(raw.get("always", ())), never=tuple(raw.get("never", ())),
                       raises_connection_window=raises)


def _names(entry: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise KnowledgeBaseError(f"{where}: {key} must be a list of names")
    return tuple(value)


def _entry(entry: dict[str, Any], where: str, default_workaround: str) -> Terminator:
    require_text(entry, _REQUIRED_TEXT, where)
    settable = entry.get("user_settable")
    if not isinstance(settable, bool):
        raise KnowledgeBaseError(f"{where}: user_settable must be true or false")
    if settable and "{value}" not in entry["window_setting"]:
        raise KnowledgeBaseError(f"{where}: a settable window_setting must contain {{value}}")
    sources = entry.get("sources", {})
    if not isinstance(sources, dict) or "window" not in sources:
        raise KnowledgeBaseError(f"{where}: sources.window (a documentation URL) is required")
    for key, url in sources.items():
        if not (isinstance(url, str) and (url.startswith("https://") or url.startswith("lab:"))):
            raise KnowledgeBaseError(f"{where}: sources.{key} must be an https URL or 'lab: ...'")
    try:
        names = tuple(re.compile(p, re.I) for p in entry.get("names", ()))
    except re.error as exc:
        raise KnowledgeBaseError(f"{where}: bad name pattern ({exc})") from None
    markers = tuple(h.lower() for h in entry.get("marker_headers", ()))
    if not names and not markers:
        raise KnowledgeBaseError(f"{where}: needs `names` or `marker_headers`")
    own = _own_settings(entry.get("own_settings"), where)
    if own is not None and "own_settings" not in sources:
        raise KnowledgeBaseError(f"{where}: sources.own_settings is required with own_settings")
    return Terminator(
        id=entry["id"], name=entry["name"], covers=tuple(entry.get("covers", ())),
        names=names, marker_headers=markers,
        fingerprint=_fingerprint(entry.get("fingerprint"), where), own_settings=own,
        processes=_names(entry, "processes", where),
        window_directives=_names(entry, "window_directives", where),
        stream_window=_window(entry, "stream_window", where),
        connection_window=_window(entry, "connection_window", where),
        window_setting=entry["window_setting"], user_settable=settable,
        workaround=entry.get("workaround", default_workaround),
        buffering_setting=entry["buffering_setting"],
        frame_size_setting=entry["frame_size_setting"], sources=dict(sources),
    )


def parse(text: str) -> dict[str, Terminator]:
    """The base in ``text`` (TOML), validated; keyed by product id in file order."""
    data = parse_toml(text, DATA_FILE)
    default_workaround = data.get("workaround_default", "")
    if not isinstance(default_workaround, str) or not default_workaround:
        raise KnowledgeBaseError(f"{DATA_FILE}: workaround_default is required")
    return keyed_entries(data, DATA_FILE, "product",
                         lambda raw, where: _entry(raw, where, default_workaround))


def load() -> dict[str, Terminator]:
    """The base shipped with gitnetdiag."""
    return parse(read_text(DATA_FILE))


BASE: dict[str, Terminator] = load()
"""Every product of the base, keyed by id, in file order."""


def by_marker(header: str) -> Terminator | None:
    """The product that alone adds response header ``header``, if any."""
    return next((t for t in BASE.values() if header.lower() in t.marker_headers), None)


def by_name(text: str) -> Terminator | None:
    """The product ``text`` (what a hop calls itself) names, if the base has it."""
    return next((t for t in BASE.values() if t.called(text)), None)


def by_process(process: str) -> Terminator | None:
    """The product whose listening process this is (``ss -ltnp``'s name), if the base has it."""
    return next((t for t in BASE.values() if process.lower() in t.processes), None)


def by_window_directive(setting: str) -> Terminator | None:
    """The product whose receive window ``setting`` (a host configuration directive) sets."""
    lowered = setting.lower()
    return next((t for t in BASE.values()
                 if lowered in (d.lower() for d in t.window_directives)), None)


def by_fingerprint(settings: dict[str, int]) -> Terminator | None:
    """The product whose documented or measured SETTINGS these are, if distinctive."""
    return next((t for t in BASE.values()
                 if t.fingerprint is not None and t.fingerprint.matches(settings)), None)
