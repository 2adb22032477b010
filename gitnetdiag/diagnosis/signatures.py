"""The catalogue of failure signatures (``gitnetdiag/data/failure_signatures.toml``).

How a git transfer ends when it fails, and what each ending can mean, as data: one entry
per git, libcurl or OpenSSH message family, HTTP status, HTTP/2 error code or TCP ending,
each with its causes, the evidence that tells them apart, the culprit each points to
(or none: the server's storage, its configuration) and the page each fact comes from.
:func:`load` reads and validates the file; :data:`BASE` is the catalogue loaded when
gitnetdiag starts (a broken file stops it with one line naming the entry at fault).

    what was seen of one failed transfer                      the catalogue
    git's stderr ─────────────── for_message ──┐
      (a status or an HTTP/2 code in its words) ├──> entries ──> their causes' culprits
    the failing request's status ── for_status ─┤         └──> describe(): a sentence of
    an RST_STREAM / GOAWAY code ─── for_h2_code ┤              what was seen, ending in
    who closed, after what silence  for_tcp_ending            "gitnetdiag has no entry
                                                               for it" when none matched

A failure with no entry is reported by what was seen and as unknown, never as an
unrelated culprit. :mod:`gitnetdiag.diagnosis.failuredesc` applies it to the failed pushes
of a diagnosis.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal, cast

from gitnetdiag.errors import GitnetdiagError

Family = Literal["message", "status", "h2", "tcp"]
"""What an entry matches: git's words, an HTTP status, an HTTP/2 error code, a TCP ending."""
Side = Literal["client", "server"]
"""The end that closed the connection."""
Ending = Literal["fin", "rst"]
"""How it closed it: a FIN (orderly close) or a reset."""
Direction = Literal["upload", "download"]
"""Which way the failed transfer moved the pack: a push uploads, a clone downloads."""
DIRECTIONS: tuple[Direction, ...] = ("upload", "download")

FAMILIES: tuple[Family, ...] = ("message", "status", "h2", "tcp")
NO_CULPRIT = "none"
"""What the file says for a cause that is no network culprit."""
NO_ENTRY = "gitnetdiag has no entry for it"
"""How a description ends when no entry matched what was seen."""
DATA_FILE = "failure_signatures.toml"

KNOWN_CULPRITS: frozenset[str] = frozenset({
    # DESIGN.md's culprit catalogue (gitnetdiag.diagnosis.culprits.CULPRITS registers them)
    "h2-flow-control-window", "h2-frame-settings", "tcp-receive-window-clamp",
    "tcp-window-scaling-off", "ssh-channel-window", "ssh-maxstartups",
    "listen-backlog-overflow", "syn-drop", "firewall-reset", "packet-loss",
    "bandwidth-limit", "path-latency", "server-processing", "slow-ref-advertisement",
    "client-pack-cpu", "client-http-stack", "slow-storage", "path-mtu-blackhole",
    "edge-request-buffering", "edge-backend-errors", "request-body-limit",
    "edge-idle-timeout", "streamed-body-refused", "edge-no-backend", "path-idle-timeout",
    "path-unreachable", "proxy-refused-tunnel",
    # the download direction's own (the DOWNLOAD entries of gitnetdiag.diagnosis.culprits.CULPRITS)
    "client-tcp-receive-window-clamp", "server-send-buffer", "client-http2-window",
    "server-pack-generation", "client-index-pack-cpu", "edge-response-buffering",
})
"""Culprit ids a cause may point to. A constant, not read from the culprit registry:
the detectors may use this catalogue without an import cycle (a test checks both agree)."""


class SignatureCatalogueError(GitnetdiagError):
    """The failure-signature file is malformed; the message names the entry and the field."""

    reference = "failure-signatures"

    def __init__(self, message: str) -> None:
        super().__init__(message, hint=f"gitnetdiag/data/{DATA_FILE} ships with gitnetdiag: "
                         "fix the entry named (docs/failures.md), or reinstall gitnetdiag")


@dataclass(frozen=True, kw_only=True)
class Cause:
    """One cause a signature can have."""

    culprit: str | None
    """The culprit id it points to; None when it is no network culprit."""
    what: str
    """The cause, in words."""
    evidence: str
    """What tells this cause apart from the signature's other causes."""
    source: str
    """The page that documents it."""
    direction: Direction | None = None
    """The one direction this cause is met in (a push's hook, a clone's pack preparation);
    None: either."""

    def meets(self, direction: Direction | None) -> bool:
        """Whether the cause can be that of a transfer of ``direction`` (None: unknown)."""
        return direction is None or self.direction is None or self.direction == direction


@dataclass(frozen=True, kw_only=True)
class Signature:
    """One entry of the catalogue."""

    id: str
    """Stable key (reports and JSON use it)."""
    family: Family
    """What it matches."""
    words: str
    """What git (or curl, ssh) prints for it, one sample line."""
    source: str
    """Where the words or the code come from."""
    causes: tuple[Cause, ...]
    """Its causes, most common first."""
    lab: str | None = None
    """The lab fault that produces it, when a lab test exercises it."""
    needles: tuple[str, ...] = ()
    """``message``: lowercase substrings of git's stderr, any of which matches."""
    secondary: bool = False
    """``message``: git prints it after other failures too; listed only when nothing else
    matched."""
    statuses: tuple[int, ...] = ()
    """``status``: the HTTP statuses it covers."""
    code: int | None = None
    """``h2``: the error code's number."""
    name: str = ""
    """``h2``: the error code's name (``NO_ERROR``)."""
    side: Side | None = None
    """``tcp``: the end that closed the connection."""
    endings: tuple[Ending, ...] = ()
    """``tcp``: the ways of closing it covers."""
    silence_min_s: float | None = None
    """``tcp``: least silence before the close (inclusive), None for no bound."""
    silence_max_s: float | None = None
    """``tcp``: most silence before the close (exclusive), None for no bound."""
    clone_note: str = ""
    """What a clone's report adds to it: the folklore fix that does not apply to a clone
    (``http.postBuffer`` sizes request bodies only), with its page; empty when none."""

    @property
    def culprits(self) -> tuple[str, ...]:
        """The culprit ids its causes point to, in order, without repeats."""
        return self.culprits_for(None)

    def culprits_for(self, direction: Direction | None) -> tuple[str, ...]:
        """The culprit ids of its causes a transfer of ``direction`` can meet."""
        return tuple(dict.fromkeys(c.culprit for c in self.causes
                                   if c.culprit is not None and c.meets(direction)))

    def in_words(self, lowered: str) -> bool:
        """Whether lowercase text ``lowered`` holds one of its needles."""
        return any(needle in lowered for needle in self.needles)

    def covers_ending(self, side: Side, silence_s: float | None, ending: Ending | None) -> bool:
        """Whether a close by ``side`` after ``silence_s`` (None: unknown) is this entry's."""
        if self.side != side or (ending is not None and ending not in self.endings):
            return False
        if silence_s is None:
            return True
        low = self.silence_min_s if self.silence_min_s is not None else float("-inf")
        high = self.silence_max_s if self.silence_max_s is not None else float("inf")
        return low <= silence_s < high


@dataclass(frozen=True, kw_only=True)
class TcpEnding:
    """How a connection of a failed transfer ended, as far as it is known."""

    side: Side
    """The end that closed it."""
    silence_s: float | None = None
    """Seconds without a byte either way before the close; None when unknown."""
    ending: Ending | None = None
    """FIN or reset; None when unknown."""


@dataclass(frozen=True, kw_only=True)
class Description:
    """What the catalogue says about one failed transfer."""

    signatures: tuple[Signature, ...]
    """The entries that match what was seen, in order: status, HTTP/2 code, words, TCP."""
    seen: str
    """What was seen, in one sentence; ends with :data:`NO_ENTRY` when nothing matched."""
    direction: Direction | None = None
    """The failed transfer's direction, None when unknown: the causes it can meet."""

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(s.id for s in self.signatures)

    @property
    def culprits(self) -> tuple[str, ...]:
        """The candidate culprits of the matched entries (those a transfer of its direction
        can meet), in order, without repeats."""
        return tuple(dict.fromkeys(c for s in self.signatures
                                   for c in s.culprits_for(self.direction)))


@dataclass(frozen=True, kw_only=True)
class Catalogue:
    """Every entry of the file, and where git's words carry a status or a code."""

    signatures: tuple[Signature, ...]
    """Entries in file order."""
    status_words: tuple[re.Pattern[str], ...] = ()
    """Patterns whose first group is an HTTP status in git's words."""
    h2_code_words: tuple[re.Pattern[str], ...] = ()
    """Patterns whose first group is an HTTP/2 error code's name in git's words."""
    fin_words: tuple[str, ...] = ()
    """Lowercase words of curl's for a server-side close (FIN)."""
    rst_words: tuple[str, ...] = ()
    """Lowercase words of curl's for a server-side reset."""

    def for_status(self, status: int) -> Signature | None:
        """The entry of an HTTP status, if the catalogue has one."""
        return next((s for s in self.signatures if status in s.statuses), None)

    def for_h2_code(self, code: str | int) -> Signature | None:
        """The entry of an HTTP/2 error code, by number (``8``, ``"0x8"``) or name."""
        number: int | None = code if isinstance(code, int) else None
        if isinstance(code, str):
            text = code.strip()
            try:
                number = int(text, 0)
            except ValueError:
                return next((s for s in self.signatures
                             if s.family == "h2" and s.name.lower() == text.lower()), None)
        return next((s for s in self.signatures if s.family == "h2" and s.code == number),
                    None)

    def for_tcp_ending(self, side: Side, silence_s: float | None,
                       ending: Ending | None = None) -> tuple[Signature, ...]:
        """The entries of a close by ``side`` after ``silence_s`` seconds of silence
        (None: unknown), a FIN or a reset (None: unknown)."""
        return tuple(s for s in self.signatures
                     if s.family == "tcp" and s.covers_ending(side, silence_s, ending))

    def status_in_words(self, text: str) -> int | None:
        """The HTTP status git's words carry (``RPC failed; HTTP 413``), if any."""
        found = _first_group(self.status_words, text)
        return int(found) if found is not None else None

    def h2_code_in_words(self, text: str) -> str | None:
        """The HTTP/2 error code's name git's words carry (``... CANCEL (err 8)``), if any."""
        found = _first_group(self.h2_code_words, text)
        return found.upper() if found is not None else None

    def for_message(self, stderr: str) -> tuple[Signature, ...]:
        """The entries git's stderr matches: the status and HTTP/2 code its words carry,
        then the message entries (a ``secondary`` one only when nothing else matched)."""
        lowered = stderr.lower()
        found = self._coded(self.status_in_words(stderr), self.h2_code_in_words(stderr))
        words = [s for s in self.signatures if s.family == "message" and s.in_words(lowered)]
        found += [s for s in words if not s.secondary]
        if not found:
            found += [s for s in words if s.secondary]
        return tuple(found)

    def ending_in_words(self, text: str) -> Ending | None:
        """FIN or reset, as curl's words for how a request ended say; None if they do not."""
        lowered = text.lower()
        if any(w in lowered for w in self.rst_words):
            return "rst"
        if any(w in lowered for w in self.fin_words):
            return "fin"
        return None

    def describe(self, *, operation: str, git_line: str = "", status: int | None = None,
                 request: str | None = None, h2_code: str | int | None = None,
                 tcp: TcpEnding | None = None,
                 direction: Direction | None = None) -> Description:
        """What the catalogue says about one failed transfer (``operation``: ``HTTP/2
        push``), given git's stderr line, the failing request (``POST git-receive-pack``)
        and its status, an HTTP/2 error code and how the connection ended, where known.
        ``direction`` keeps the causes a transfer of that way can meet; a clone's sentence
        ends with the entries' :attr:`Signature.clone_note`."""
        found = self._coded(status, h2_code)
        found += self.for_message(git_line) if git_line else ()
        if tcp is not None:
            found += self.for_tcp_ending(tcp.side, tcp.silence_s, tcp.ending)
        unique = tuple({s.id: s for s in found}.values())  # first place of each entry
        seen = _seen(operation, git_line=git_line, status=status, request=request,
                     h2_name=self._h2_name(h2_code), tcp=tcp)
        notes = dict.fromkeys(s.clone_note for s in unique if s.clone_note) \
            if direction == "download" else {}
        seen += "".join(f"; {note}" for note in notes)
        return Description(signatures=unique, seen=seen if unique else f"{seen}; {NO_ENTRY}",
                           direction=direction)

    def _coded(self, status: int | None, h2_code: str | int | None) -> list[Signature]:
        """The entries of an HTTP status and of an HTTP/2 error code, where known."""
        entries = (self.for_status(status) if status is not None else None,
                   self.for_h2_code(h2_code) if h2_code is not None else None)
        return [entry for entry in entries if entry is not None]

    def _h2_name(self, code: str | int | None) -> str | None:
        if code is None:
            return None
        entry = self.for_h2_code(code)
        return entry.name if entry is not None else str(code)


def _first_group(patterns: Sequence[re.Pattern[str]], text: str) -> str | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match is not None:
            return match.group(1)
    return None


def _seen(operation: str, *, git_line: str, status: int | None, request: str | None,
          h2_name: str | None, tcp: TcpEnding | None) -> str:
    """``HTTP/2 push: POST git-receive-pack answered 411; git said: ...``."""
    parts = []
    if request is not None:
        parts.append(f"{request} answered {status}" if status is not None
                     else f"{request} got no status")
    elif status is not None:
        parts.append(f"a request answered {status}")
    if h2_name is not None:
        parts.append(f"HTTP/2 error code {h2_name}")
    if tcp is not None:
        how = {"fin": "closed the connection (FIN)", "rst": "reset the connection",
               None: "ended the connection"}[tcp.ending]
        after = f" after {tcp.silence_s:.1f} s of silence" if tcp.silence_s is not None else ""
        parts.append(f"the {tcp.side} {how}{after}")
    if git_line:
        parts.append(f"git said: {git_line}")
    return f"{operation}: {'; '.join(parts) if parts else 'nothing was recorded'}"


# --- loading ---------------------------------------------------------------------------

_TEXT = ("id", "words", "source")
_CAUSE_TEXT = ("what", "evidence", "source")
_FAMILY_KEYS: dict[str, frozenset[str]] = {
    "message": frozenset({"needles", "secondary"}),
    "status": frozenset({"statuses"}),
    "h2": frozenset({"code", "name"}),
    "tcp": frozenset({"side", "endings", "silence_min_s", "silence_max_s"}),
}
_COMMON_KEYS = frozenset({"id", "family", "words", "source", "lab", "cause", "clone_note"})


def _url(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise SignatureCatalogueError(f"{where}: missing {key} (an https URL)")
    if not value.startswith("https://"):
        raise SignatureCatalogueError(f"{where}: {key} must be an https URL, not {value!r}")
    return value


def _text(raw: dict[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if key == "source":
        return _url(value, where, key)
    if not isinstance(value, str) or not value.strip():
        raise SignatureCatalogueError(f"{where}: missing text field `{key}`")
    return value


def _cause(raw: Any, where: str) -> Cause:
    if not isinstance(raw, dict):
        raise SignatureCatalogueError(f"{where}: must be a [[signature.cause]] table")
    culprit = raw.get("culprit")
    if culprit != NO_CULPRIT and culprit not in KNOWN_CULPRITS:
        raise SignatureCatalogueError(
            f"{where}: culprit {culprit!r} is not a known culprit id (or \"{NO_CULPRIT}\")")
    what, evidence, source = (_text(raw, key, where) for key in _CAUSE_TEXT)
    direction = raw.get("direction")
    if direction is not None and direction not in DIRECTIONS:
        raise SignatureCatalogueError(
            f"{where}: direction must be upload or download, not {direction!r}")
    return Cause(culprit=None if culprit == NO_CULPRIT else culprit, what=what,
                 evidence=evidence, source=source, direction=direction)


def _strings(raw: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = raw.get(key)
    if not isinstance(value, list) or not value or not all(
            isinstance(v, str) and v.strip() for v in value):
        raise SignatureCatalogueError(f"{where}: `{key}` must be a list of words")
    return tuple(value)


def _seconds(raw: dict[str, Any], key: str, where: str) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise SignatureCatalogueError(f"{where}: `{key}` must be seconds (a number >= 0)")
    return float(value)


def _match(raw: dict[str, Any], family: Family, where: str) -> dict[str, Any]:
    """The family's own fields of an entry, checked."""
    if family == "message":
        secondary = raw.get("secondary", False)
        if not isinstance(secondary, bool):
            raise SignatureCatalogueError(f"{where}: `secondary` must be true or false")
        needles = tuple(n.lower() for n in _strings(raw, "needles", where))
        return {"needles": needles, "secondary": secondary}
    if family == "status":
        statuses = raw.get("statuses")
        if not isinstance(statuses, list) or not statuses or not all(
                isinstance(s, int) and not isinstance(s, bool) and 100 <= s <= 599
                for s in statuses):
            raise SignatureCatalogueError(f"{where}: `statuses` must list HTTP statuses")
        return {"statuses": tuple(statuses)}
    if family == "h2":
        code, name = raw.get("code"), raw.get("name")
        if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code < 1 << 32:
            raise SignatureCatalogueError(f"{where}: `code` must be an HTTP/2 error code")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Z0-9_]+", name):
            raise SignatureCatalogueError(f"{where}: `name` must be the code's NAME")
        return {"code": code, "name": name}
    side, endings = raw.get("side"), _strings(raw, "endings", where)
    if side not in ("client", "server") or not set(endings) <= {"fin", "rst"}:
        raise SignatureCatalogueError(
            f"{where}: `side` must be client or server, `endings` fin and/or rst")
    low, high = _seconds(raw, "silence_min_s", where), _seconds(raw, "silence_max_s", where)
    if low is not None and high is not None and low >= high:
        raise SignatureCatalogueError(f"{where}: silence_min_s must be below silence_max_s")
    return {"side": side, "endings": endings, "silence_min_s": low, "silence_max_s": high}


def _entry(raw: Any, index: int) -> Signature:
    if not isinstance(raw, dict):
        raise SignatureCatalogueError(f"failure_signatures entry #{index}: not a table")
    where = f"failure_signatures entry {raw.get('id', f'#{index}')!r}"
    family = raw.get("family")
    if family not in FAMILIES:
        raise SignatureCatalogueError(
            f"{where}: unknown family {family!r} (one of {', '.join(FAMILIES)})")
    family = cast(Family, family)
    unknown = set(raw) - _COMMON_KEYS - _FAMILY_KEYS[family]
    if unknown:
        raise SignatureCatalogueError(
            f"{where}: {', '.join(sorted(unknown))} not a field of a {family} entry")
    ident, words, source = (_text(raw, key, where) for key in _TEXT)
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", ident):
        raise SignatureCatalogueError(f"{where}: id must be kebab-case")
    lab = raw.get("lab")
    if lab is not None and (not isinstance(lab, str) or not lab):
        raise SignatureCatalogueError(f"{where}: `lab` must name a lab fault")
    note = raw.get("clone_note", "")
    if not isinstance(note, str) or (note and "https://" not in note):
        raise SignatureCatalogueError(f"{where}: `clone_note` must be text citing its page")
    causes = raw.get("cause")
    if not isinstance(causes, list) or not causes:
        raise SignatureCatalogueError(f"{where}: needs at least one [[signature.cause]]")
    return Signature(
        id=ident, family=family, words=words, source=source, lab=lab, clone_note=note,
        causes=tuple(_cause(c, f"{where} cause {n}") for n, c in enumerate(causes, 1)),
        **_match(raw, family, where))


def _patterns(words: dict[str, Any], key: str) -> tuple[re.Pattern[str], ...]:
    try:
        patterns = tuple(re.compile(p, re.I) for p in words.get(key, ()))
    except (re.error, TypeError) as exc:
        raise SignatureCatalogueError(f"failure_signatures [words]: bad {key} ({exc})") from None
    if any(p.groups < 1 for p in patterns):
        raise SignatureCatalogueError(f"failure_signatures [words]: each {key} needs a group")
    return patterns


def _words(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise SignatureCatalogueError("failure_signatures: a [words] table is required")
    sources = raw.get("sources", {})
    for key in ("status", "h2_code", "tcp_fin", "tcp_rst"):
        if raw.get(key):
            _url(sources.get(key) if isinstance(sources, dict) else None,
                 "failure_signatures [words]", f"sources.{key}")
    return {
        "status_words": _patterns(raw, "status"), "h2_code_words": _patterns(raw, "h2_code"),
        "fin_words": tuple(w.lower() for w in raw.get("tcp_fin", ())),
        "rst_words": tuple(w.lower() for w in raw.get("tcp_rst", ())),
    }


def _check_overlaps(entries: Sequence[Signature]) -> None:
    """One entry per status and per HTTP/2 code: a second one would never be found."""
    seen: dict[tuple[str, object], str] = {}
    for entry in entries:
        keys: list[tuple[str, object]] = [("status", s) for s in entry.statuses]
        keys += [("h2", entry.code), ("h2", entry.name)] if entry.family == "h2" else []
        for key in keys:
            if key in seen:
                raise SignatureCatalogueError(
                    f"failure_signatures entry {entry.id!r}: {key[0]} {key[1]} is already "
                    f"entry {seen[key]!r}'s")
            seen[key] = entry.id


def parse(text: str) -> Catalogue:
    """The catalogue in ``text`` (TOML), validated."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SignatureCatalogueError(f"failure_signatures: not valid TOML ({exc})") from None
    entries: list[Signature] = []
    for index, raw in enumerate(data.get("signature", ()), 1):
        entry = _entry(raw, index)
        if any(e.id == entry.id for e in entries):
            raise SignatureCatalogueError(
                f"failure_signatures entry {entry.id!r}: the id appears twice")
        entries.append(entry)
    if not entries:
        raise SignatureCatalogueError("failure_signatures: no [[signature]] entries")
    _check_overlaps(entries)
    return Catalogue(signatures=tuple(entries), **_words(data.get("words")))


def load(path: Path | None = None) -> Catalogue:
    """The catalogue in ``path``, or the one shipped with gitnetdiag."""
    if path is None:
        return parse(resources.files("gitnetdiag.data").joinpath(DATA_FILE).read_text())
    try:
        text = path.read_text()
    except OSError as exc:
        raise SignatureCatalogueError(f"failure_signatures: cannot read {path} ({exc})") from None
    return parse(text)


BASE: Catalogue = load()
"""The catalogue shipped with gitnetdiag, loaded (and validated) at start."""


def without_notes(seen: str, catalogue: Catalogue = BASE) -> str:
    """A description's sentence without the notes a clone's adds (:attr:`Signature.clone_note`):
    what was seen alone (a headline's words)."""
    for note in dict.fromkeys(s.clone_note for s in catalogue.signatures if s.clone_note):
        seen = seen.replace(f"; {note}", "")
    return seen


for_message, for_status, for_h2_code = BASE.for_message, BASE.for_status, BASE.for_h2_code
for_tcp_ending, describe = BASE.for_tcp_ending, BASE.describe
"""The lookups of :class:`Catalogue` on :data:`BASE`, as module functions."""
