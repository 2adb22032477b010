"""The host report: what ``gitnetdiag host`` found, as one JSON-ready value.

Schema ``gitnetdiag.host/1`` (docs/host.md lists every field); the diagnosis
reads it through :mod:`gitnetdiag.pipeline._host`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from gitnetdiag.model.host.configlint import ConfigChecked, LintFinding
from gitnetdiag.model.host.listeners import ListenerInfo
from gitnetdiag.rundir.files import HOST_REPORT_SCHEMA

SCHEMA = HOST_REPORT_SCHEMA


@dataclass(frozen=True, kw_only=True)
class Unreadable:
    """Something the collector could not read, and why."""

    what: str
    """``listeners``, ``kernel log``, ``listener processes``, a file path ..."""
    why: str
    """The reason in one line (``not root``, ``ss not installed``, the error text)."""


@dataclass(frozen=True, kw_only=True)
class HostReport:
    """Server-side evidence of one collection."""

    collected_at: str
    """End of the collection, ISO 8601 with time zone."""
    hostname: str
    """The server's host name."""
    via: str
    """``local`` or ``ssh user@host``."""
    during_s: float
    """Length of the counter and kernel-log interval (0: a single snapshot)."""
    is_root: bool | None
    """Whether the collection ran as root (``None``: unknown)."""
    listeners: tuple[ListenerInfo, ...] = ()
    """Listening TCP sockets."""
    counters: dict[str, int] = field(default_factory=dict)
    """Kernel counter deltas over the interval, kernel names; empty for a single snapshot."""
    counter_totals: dict[str, int] = field(default_factory=dict)
    """Counter values at the end (a later run's ``--since`` baseline)."""
    sysctls: dict[str, str] = field(default_factory=dict)
    """Relevant sysctls, name -> value."""
    kernel_log: tuple[str, ...] = ()
    """Matching kernel log lines (of the interval when there was one)."""
    kernel_log_mark_s: float | None = None
    """Timestamp of the newest kernel log line at the end (a later ``--since`` starts there)."""
    config_findings: tuple[LintFinding, ...] = ()
    """Settings that cap transfers or connection bursts (configs and sysctls)."""
    configs_checked: tuple[ConfigChecked, ...] = ()
    """Every configuration file read, with the conclusion."""
    haproxy_version: str | None = None
    """``haproxy -v`` version number when HAProxy is installed."""
    unreadable: tuple[Unreadable, ...] = ()
    """What could not be read and why."""

    @property
    def small_backlog_listeners(self) -> tuple[ListenerInfo, ...]:
        """Listeners whose backlog overflows under ordinary bursts."""
        return tuple(item for item in self.listeners if item.small_backlog)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types, ``schema`` first."""
        return {
            "schema": SCHEMA,
            "collected_at": self.collected_at,
            "hostname": self.hostname,
            "via": self.via,
            "during_s": self.during_s,
            "is_root": self.is_root,
            "listeners": [item.to_dict() for item in self.listeners],
            "counters": dict(self.counters),
            "counter_totals": dict(self.counter_totals),
            "sysctls": dict(self.sysctls),
            "kernel_log": list(self.kernel_log),
            "kernel_log_mark_s": self.kernel_log_mark_s,
            "config_findings": [item.to_dict() for item in self.config_findings],
            "configs_checked": [item.to_dict() for item in self.configs_checked],
            "haproxy_version": self.haproxy_version,
            "unreadable": [asdict(item) for item in self.unreadable],
        }
