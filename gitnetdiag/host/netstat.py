"""Kernel TCP counters from ``/proc/net/netstat`` and ``/proc/net/snmp``, and their deltas.

Both files hold pairs of lines, a header and its values, per section
(``TcpExt:``, ``IpExt:``, ``Tcp:``, ``Udp:`` ...). Counters are reported under
the kernel's own names; the ``TcpExt`` and ``Tcp`` sections do not share a
name, so those two are kept bare (``ListenOverflows``, ``RetransSegs``) and
the other sections' counters carry their section (``IpExt.InOctets``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

BARE_SECTIONS = ("TcpExt", "Tcp")
"""Sections whose counters are keyed by their bare kernel name."""

GAUGES = frozenset({"Tcp.CurrEstab", "Tcp.RtoAlgorithm", "Tcp.RtoMin", "Tcp.RtoMax", "Tcp.MaxConn"})
"""Values in the files that are settings or current levels, not counters."""

KEY_COUNTERS = (
    "ListenOverflows",
    "ListenDrops",
    "TCPReqQFullDrop",
    "TCPReqQFullDoCookies",
    "SyncookiesSent",
    "SyncookiesRecv",
    "SyncookiesFailed",
    "TCPTimeouts",
    "TCPSynRetrans",
    "RetransSegs",
    "TCPLostRetransmit",
    "TCPAbortOnTimeout",
    "TCPAbortOnData",
    "TCPBacklogDrop",
    "TCPRcvQDrop",
    "TCPZeroWindowDrop",
    "TCPToZeroWindowAdv",
    "TCPWantZeroWindowAdv",
    "AttemptFails",
    "EstabResets",
    "OutRsts",
)
"""Counters always present in a report's deltas (even when zero): queue overflows, SYN
cookies, retransmissions and timeouts, zero windows, resets."""


class CounterFormatError(ValueError):
    """The text is not in the ``/proc/net/netstat`` / ``snmp`` layout."""


def parse_proc_counters(text: str) -> dict[str, int]:
    """Parse one ``/proc/net/netstat`` or ``/proc/net/snmp`` text into name -> value."""
    lines = [line for line in text.splitlines() if line.strip()]
    counters: dict[str, int] = {}
    if len(lines) % 2:
        raise CounterFormatError(f"{len(lines)} lines: headers and values do not pair up")
    for header, values in zip(lines[::2], lines[1::2], strict=True):
        section, _, names = header.partition(":")
        value_section, _, numbers = values.partition(":")
        if section != value_section or not section:
            raise CounterFormatError(f"header '{section}' followed by values of '{value_section}'")
        keys, vals = names.split(), numbers.split()
        if len(keys) != len(vals):
            raise CounterFormatError(f"section {section}: {len(keys)} names but {len(vals)} values")
        for key, val in zip(keys, vals, strict=True):
            name = key if section in BARE_SECTIONS else f"{section}.{key}"
            if f"{section}.{key}" in GAUGES:
                continue
            try:
                counters[name] = int(val)
            except ValueError as exc:
                raise CounterFormatError(f"{section}.{key}: '{val}' is not a number") from exc
    return counters


def counter_deltas(before: Mapping[str, int], after: Mapping[str, int], *,
                   always: Sequence[str] = KEY_COUNTERS) -> dict[str, int]:
    """``after - before`` for the ``always`` counters (even when zero: a host report shows
    that nothing overflowed) and every other counter that moved.

    A counter missing from either snapshot (an older kernel) is left out.
    """
    deltas: dict[str, int] = {}
    for name in always:
        if name in before and name in after:
            deltas[name] = after[name] - before[name]
    for name in sorted(after):
        if name in before and name not in deltas and after[name] != before[name]:
            deltas[name] = after[name] - before[name]
    return deltas
