"""git's receive-pack protocol, the part a push speaks (pure: bytes in, values out).

pkt-lines, the ref advertisement, the ref-update command and the report-status
answer; shared by the native HTTP/2 and SSH probes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gitnetdiag.errors import NetworkError

# The parsed answer is a run-directory record (the native files keep it); re-exported here.
from gitnetdiag.rundir.native import ReportStatus as ReportStatus

ZERO_OID = "0" * 40
FLUSH_PKT = b"0000"


def pkt_line(payload: bytes) -> bytes:
    """One pkt-line: 4 hex digits of total length, then the payload."""
    if len(payload) > 65_516:
        raise ValueError("pkt-line payload too long")
    return f"{len(payload) + 4:04x}".encode() + payload


def split_pkt_lines(data: bytes) -> tuple[list[bytes | None], bytes]:
    """Split ``data`` into pkt-lines (``None`` for a flush) and the incomplete rest."""
    lines: list[bytes | None] = []
    offset = 0
    while len(data) - offset >= 4:
        try:
            length = int(data[offset : offset + 4], 16)
        except ValueError as exc:
            raise NetworkError(
                f"the server sent a malformed pkt-line: {data[offset : offset + 8]!r}",
                hint="the URL may not be a git repository, or a proxy rewrote the answer",
                reference="bad-pkt-line",
            ) from exc
        if length in (0, 1, 2):  # flush, delimiter, response-end
            lines.append(None)
            offset += 4
            continue
        if length < 4:
            raise NetworkError(f"invalid pkt-line length {length}", reference="bad-pkt-line")
        if len(data) - offset < length:
            break
        lines.append(data[offset + 4 : offset + length])
        offset += length
    return lines, data[offset:]


@dataclass(frozen=True, kw_only=True)
class RefAdvertisement:
    """What receive-pack advertised before the push."""

    refs: dict[str, str]
    """Ref name -> object id (empty for an empty repository)."""
    capabilities: frozenset[str]
    """Capabilities from the first line (``report-status``, ``delete-refs``, ...)."""

    def to_dict(self) -> dict[str, Any]:
        return {"ref_count": len(self.refs), "capabilities": sorted(self.capabilities)}


def parse_advertisement(lines: Sequence[bytes | None]) -> RefAdvertisement:
    """Parse receive-pack's ref advertisement (smart-HTTP service header allowed)."""
    refs: dict[str, str] = {}
    capabilities: frozenset[str] = frozenset()
    first = True
    for line in lines:
        if line is None:
            continue
        text = line.rstrip(b"\n")
        if text.startswith(b"# service="):
            continue
        if first:
            text, _, caps = text.partition(b"\0")
            capabilities = frozenset(caps.decode(errors="replace").split())
            first = False
        oid, _, name = text.decode(errors="replace").partition(" ")
        if name and name != "capabilities^{}":
            refs[name] = oid
    return RefAdvertisement(refs=refs, capabilities=capabilities)


def ref_update_request(
    old_oid: str, new_oid: str, ref: str, capabilities: Iterable[str], pack: bytes = b""
) -> bytes:
    """The receive-pack request body: one command, a flush, then the pack (if any)."""
    caps = " ".join(capabilities)
    return pkt_line(f"{old_oid} {new_oid} {ref}\0 {caps}\n".encode()) + FLUSH_PKT + pack


def parse_report_status(lines: Sequence[bytes | None]) -> ReportStatus:
    """Parse ``unpack ok`` / ``ok <ref>`` / ``ng <ref> <reason>`` lines (no side-band)."""
    unpack = ""
    refs: dict[str, str] = {}
    for line in lines:
        if line is None:
            continue
        text = line.decode(errors="replace").rstrip("\n")
        if text.startswith("unpack "):
            unpack = text[len("unpack ") :]
        elif text.startswith("ok "):
            refs[text[3:]] = "ok"
        elif text.startswith("ng "):
            ref, _, reason = text[3:].partition(" ")
            refs[ref] = f"ng {reason}"
    return ReportStatus(unpack_ok=unpack == "ok", unpack_message=unpack, refs=refs)
