"""The sysctls that shape listen queues and TCP windows, read and linted.

Values are read from ``/proc/sys`` (``net.core.somaxconn`` is
``/proc/sys/net/core/somaxconn``); whitespace inside a value (``tcp_rmem``'s
three numbers) is normalised to single spaces.
"""

from __future__ import annotations

from collections.abc import Mapping

from gitnetdiag.model.host.configlint import LintFinding
from gitnetdiag.model.host.effect import FLAG_BELOW_BYTES, hurts_from_rtt_s, window_effect

SYSCTLS = (
    "net.core.somaxconn",
    "net.ipv4.tcp_max_syn_backlog",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.ipv4.tcp_window_scaling",
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_adv_win_scale",
)
"""The sysctls every report carries."""

SMALL_SOMAXCONN = 1024
"""``net.core.somaxconn`` below this caps busy services' backlogs (kernels before 5.4 had 128)."""
SMALL_SYN_BACKLOG = 128
"""``net.ipv4.tcp_max_syn_backlog`` below this fills under a modest SYN burst."""


def proc_path(name: str) -> str:
    """``net.core.somaxconn`` -> ``/proc/sys/net/core/somaxconn``."""
    return "/proc/sys/" + name.replace(".", "/")


def normalise(value: str) -> str:
    """Collapse the tabs and newlines of a ``/proc/sys`` value."""
    return " ".join(value.split())


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _finding(name: str, value: str, effect: str, window: int | None = None) -> LintFinding:
    return LintFinding(
        product="sysctl",
        file=proc_path(name),
        line=1,
        setting=name,
        value=value,
        effect=effect,
        window_bytes=window,
        hurts_from_rtt_s=round(hurts_from_rtt_s(window), 6) if window is not None else None,
    )


def lint_sysctls(values: Mapping[str, str]) -> list[LintFinding]:
    """Flag receive buffers below the reference BDP, window scaling off, tiny queues."""
    findings: list[LintFinding] = []
    rmem = values.get("net.ipv4.tcp_rmem", "").split()
    if len(rmem) == 3 and rmem[2].isdigit() and int(rmem[2]) < FLAG_BELOW_BYTES:
        top = int(rmem[2])
        findings.append(
            _finding(
                "net.ipv4.tcp_rmem",
                values["net.ipv4.tcp_rmem"],
                window_effect(top, "the TCP receive window of every connection to this host")
                + " (the advertised window is at most this buffer, in practice about half of it)",
                top,
            )
        )
    if values.get("net.ipv4.tcp_window_scaling") == "0":
        findings.append(
            _finding(
                "net.ipv4.tcp_window_scaling",
                "0",
                window_effect(65535, "every TCP connection (no window scaling)"),
                65535,
            )
        )
    somaxconn = _int(values.get("net.core.somaxconn"))
    if somaxconn is not None and somaxconn < SMALL_SOMAXCONN:
        findings.append(
            _finding(
                "net.core.somaxconn",
                str(somaxconn),
                f"caps every listen backlog at {somaxconn} connections waiting for accept(), "
                "not bytes per round trip; bursts of clones overflow the accept queue",
            )
        )
    syn_backlog = _int(values.get("net.ipv4.tcp_max_syn_backlog"))
    if syn_backlog is not None and syn_backlog < SMALL_SYN_BACKLOG:
        findings.append(
            _finding(
                "net.ipv4.tcp_max_syn_backlog",
                str(syn_backlog),
                f"caps half-open connections at {syn_backlog}, not bytes per round trip; "
                "further SYNs are dropped or answered with cookies",
            )
        )
    if values.get("net.ipv4.tcp_syncookies") == "0":
        findings.append(
            _finding(
                "net.ipv4.tcp_syncookies",
                "0",
                "a full SYN queue drops SYNs instead of answering with cookies: each drop costs "
                "the client a 1 s SYN retransmission timeout, not bytes per round trip",
            )
        )
    return findings
