"""One file for the ticket: a run directory as a bounded, redacted ``.tgz`` (``--bundle``).

A support engineer asks for one attachment, not a directory of 20-30 files whose safety the
customer cannot judge. The bundle holds, in this order while its size bound allows:

1. the reports the command rendered (``report.md``, self-contained ``report.html``,
   ``report.json``), the run's own records (``manifest.json``, ``fetch.json``,
   ``observations.json``, ``host.json``, the native ledgers): what ``gitnetdiag report`` needs
   to give the same diagnosis offline, from the unpacked archive;
2. git's and curl's text records (trace2, curl traces, stderr, TCP_INFO samples);
3. the captures, headers only: each packet cut to :data:`HEADER_SNAPLEN` bytes with
   ``editcap -s`` (TCP/IP headers, the TLS record header; no payload), run by the caller's
   ``cut`` (:mod:`gitnetdiag.tools.editcap`).

Left out, and said in the archive's ``index.md``: TLS key logs and decryptable ``.pcapng``
files unless ``--full`` asked for them (they decrypt the whole transfer), symbolic links and
anything past the bound. Every text file passes :func:`~gitnetdiag.redaction.redact_text`'s
context rules once more (URL userinfo, query values, ``Authorization`` values), on top of the
run directory's own redaction of the secrets the probe knew.
"""

from __future__ import annotations

import io
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gitnetdiag.errors import UsageError
from gitnetdiag.redaction import redact_text
from gitnetdiag.rundir.both import fetch_half_of
from gitnetdiag.rundir.files import FETCH_FILE, MANIFEST_NAME, REPORT_FILES
from gitnetdiag.safefile import open_new_file

MAX_BUNDLE_BYTES = 20 * 2**20
"""The bound on what goes in (before compression): a ticket system's usual attachment limit
is of this order, and a run's records and headers-only captures are far below it."""
HEADER_SNAPLEN = 128
"""Bytes kept of each captured packet: Ethernet, IP and TCP headers with options (at most
94 B) and a TLS record header."""
INDEX_NAME = "index.md"

_SECRET_SUFFIXES = (".keylog",)
_DECRYPTABLE_SUFFIXES = (".pcapng",)
_CAPTURE_SUFFIXES = (".pcap",)
_RECORD_NAMES = frozenset({MANIFEST_NAME, FETCH_FILE, "observations.json", "host.json",
                           "storage.json"})


@dataclass(frozen=True, kw_only=True)
class Member:
    """One file of the bundle."""

    name: str
    """Its path in the archive."""
    size_bytes: int
    what: str
    """``report``, ``record``, ``text``, ``capture (headers only)``, ``keys``, ``index``."""


@dataclass(frozen=True, kw_only=True)
class Bundle:
    """What was written."""

    path: Path
    size_bytes: int
    """The archive's size on disk."""
    members: tuple[Member, ...]
    left_out: tuple[tuple[str, str], ...] = field(default=())
    """(file, why) of every file of the run directory not in the bundle."""


@dataclass
class _Plan:
    members: list[tuple[Member, bytes]] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)
    total: int = 0

    def add(self, name: str, data: bytes, what: str, bound: int) -> None:
        if self.total + len(data) > bound:
            self.left_out.append((name, f"over the bundle's {bound // 2**20} MiB bound"))
            return
        self.members.append((Member(name=name, size_bytes=len(data), what=what), data))
        self.total += len(data)


def _rank(path: Path) -> int:
    """Order of inclusion: records and reports, then text, then captures."""
    if path.name in _RECORD_NAMES or path.name.startswith("native-"):
        return 0
    return 2 if path.suffix in _CAPTURE_SUFFIXES else 1


def _files(run_dir: Path) -> Iterator[Path]:
    for path in sorted(run_dir.rglob("*"), key=lambda p: (_rank(p), str(p))):
        if path.is_file() or path.is_symlink():
            yield path


HeadersOnly = Callable[[Path, Path, int], None]
"""Writes a capture (first path) to the second with each packet cut to N bytes
(:func:`gitnetdiag.tools.editcap.headers_only`: ``editcap -s``, a program this layer does
not run itself)."""


def _headers_only(path: Path, scratch: Path, cut: HeadersOnly) -> bytes:
    """The capture with each packet cut to :data:`HEADER_SNAPLEN` bytes."""
    out = scratch / (path.name + ".headers")
    cut(path, out, HEADER_SNAPLEN)
    return out.read_bytes()


def _plan_dir(plan: _Plan, run_dir: Path, prefix: str, *, full: bool, bound: int,
              reports: Mapping[str, str], scratch: Path, cut: HeadersOnly) -> None:
    for kind, text in reports.items():
        plan.add(f"{prefix}/{REPORT_FILES[kind]}", text.encode(), "report", bound)
    rendered = {REPORT_FILES[kind] for kind in reports}
    for path in _files(run_dir):
        rel = path.relative_to(run_dir).as_posix()
        name = f"{prefix}/{rel}"
        if rel in rendered:
            continue
        if path.is_symlink():
            plan.left_out.append((name, "a symbolic link"))
        elif path.suffix in _SECRET_SUFFIXES + _DECRYPTABLE_SUFFIXES and not full:
            plan.left_out.append((name, "TLS keys or a decryptable capture: only with --full"))
        elif path.suffix in _CAPTURE_SUFFIXES:
            plan.add(name, _headers_only(path, scratch, cut), "capture (headers only)", bound)
        elif path.suffix in _SECRET_SUFFIXES + _DECRYPTABLE_SUFFIXES:
            plan.add(name, path.read_bytes(), "keys (--full)", bound)
        else:
            plan.add(name, _redacted(path.read_bytes()), "record" if _rank(path) == 0
                     else "report" if rel in REPORT_FILES.values() else "text", bound)


def _redacted(data: bytes) -> bytes:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    return redact_text(text).encode("utf-8")


def _index(run_name: str, members: Sequence[Member], left_out: Sequence[tuple[str, str]]
           ) -> bytes:
    lines = [f"# gitnetdiag bundle of run `{run_name}`", "",
             f"Re-render offline: `tar xzf BUNDLE && gitnetdiag report {run_name}` "
             "(no network, no root).", "",
             "Captures hold packet headers only "
             f"({HEADER_SNAPLEN} B of each packet); every text file is redacted "
             "(credentials in URLs, query values, Authorization headers).", "",
             "| file | bytes | what |", "|---|---|---|",
             *(f"| `{m.name}` | {m.size_bytes} | {m.what} |" for m in members)]
    if left_out:
        lines += ["", "Left out:", "", *(f"- `{name}`: {why}" for name, why in left_out)]
    return ("\n".join(lines) + "\n").encode()


def write_bundle(run_dir: Path, out: Path, *, reports: Mapping[str, str], cut: HeadersOnly,
                 fetch_reports: Mapping[str, str] | None = None, full: bool = False,
                 max_bytes: int = MAX_BUNDLE_BYTES) -> Bundle:
    """Write ``out`` (a new ``.tgz``) from ``run_dir`` and, for a ``both`` run, its
    ``RUN-fetch``; ``reports`` are the rendered reports by format (``md``, ``html``,
    ``json``) put in place of the run directory's copies."""
    if out.exists() or out.is_symlink():
        raise UsageError(f"{out} exists: the bundle is written to a new file",
                         reference="bundle-exists", hint="remove it or give another name")
    plan = _Plan()
    with tempfile.TemporaryDirectory(prefix="gitnetdiag-bundle-") as scratch:
        _plan_dir(plan, run_dir, run_dir.name, full=full, bound=max_bytes, reports=reports,
                  scratch=Path(scratch), cut=cut)
        fetch = fetch_half_of(run_dir)
        if fetch is not None:
            _plan_dir(plan, fetch, fetch.name, full=full, bound=max_bytes,
                      reports=fetch_reports or {}, scratch=Path(scratch), cut=cut)
    members = [member for member, _ in plan.members]
    index = _index(run_dir.name, members, plan.left_out)
    entries = [(Member(name=INDEX_NAME, size_bytes=len(index), what="index"), index),
               *plan.members]
    fd = open_new_file(out)
    with open(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for member, data in entries:
            info = tarfile.TarInfo(member.name)
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
            tar.addfile(info, io.BytesIO(data))
    return Bundle(path=out, size_bytes=out.stat().st_size,
                  members=tuple(m for m, _ in entries), left_out=tuple(plan.left_out))


__all__ = ["MAX_BUNDLE_BYTES", "Bundle", "Member", "write_bundle"]
