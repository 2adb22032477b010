"""Kernel log lines that matter for slow or failing git transfers.

``dmesg`` prints ``[ seconds.micro] message``; lines are kept when they name
SYN flooding / dropped open requests, firewall verdicts (iptables ``LOG``
prefixes such as ``BLOCK``/``DROP``/``REJECT``, UFW), conntrack tables or
socket memory pressure, and sshd MaxStartups throttling when a service log
is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PATTERNS = (
    r"Possible SYN flooding on port",
    r"drop open request",
    r"nf_conntrack: .*table full",
    r"\b(UFW )?(BLOCK|DROP|REJECT)(ED)?\b.*\bSRC=",
    r"TCP: out of memory",
    r"too many orphaned sockets",
    r"MaxStartups",
    r"request_sock_TCP",
)
_MATCH = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.IGNORECASE)
_STAMP = re.compile(r"^\[\s*(?P<ts>\d+\.\d+)\]\s?")


@dataclass(frozen=True, kw_only=True)
class KernelLine:
    """One kernel log line."""

    uptime_s: float | None
    """The ``[seconds]`` stamp (time since boot), ``None`` when the line has none."""
    text: str
    """The whole line as printed."""


def parse_dmesg(text: str) -> list[KernelLine]:
    """Split ``dmesg`` output into lines with their uptime stamps."""
    lines = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        stamp = _STAMP.match(raw)
        lines.append(
            KernelLine(uptime_s=float(stamp.group("ts")) if stamp else None, text=raw.rstrip())
        )
    return lines


def last_stamp(lines: list[KernelLine]) -> float | None:
    """The latest uptime stamp, the mark to take later lines from."""
    stamps = [line.uptime_s for line in lines if line.uptime_s is not None]
    return max(stamps) if stamps else None


def matching_lines(lines: list[KernelLine], *, after_s: float | None = None) -> list[str]:
    """Relevant lines, only those stamped after ``after_s`` when given."""
    kept = []
    for line in lines:
        if after_s is not None and (line.uptime_s is None or line.uptime_s <= after_s):
            continue
        if _MATCH.search(line.text):
            kept.append(line.text)
    return kept
