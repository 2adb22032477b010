"""The thin collector: read the server through a :class:`HostAccess`, parse, build the report.

Order: sysctls, counters and the kernel log mark, listeners (sampled every
``sample_interval_s`` during the interval for the peak accept queue), then
counters and kernel log again, then the configuration files. Anything that
cannot be read becomes an :class:`Unreadable` entry, never an exception.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime

from gitnetdiag.host.access import EXIT_NOT_FOUND, HostAccess
from gitnetdiag.host.kernlog import KernelLine, last_stamp, matching_lines, parse_dmesg
from gitnetdiag.host.netstat import CounterFormatError, counter_deltas, parse_proc_counters
from gitnetdiag.model.host.configlint import (
    ConfigChecked,
    ConfigFile,
    LintFinding,
    Product,
    lint_group,
    parse_haproxy_version,
    product_of,
)
from gitnetdiag.model.host.listeners import ListenerInfo, merge_samples, parse_ss_listeners
from gitnetdiag.model.host.report import HostReport, Unreadable
from gitnetdiag.model.host.sysctl import SYSCTLS, lint_sysctls, normalise, proc_path

STANDARD_FILES: tuple[tuple[Product, str], ...] = (
    ("haproxy", "/etc/haproxy/haproxy.cfg"),
    ("sshd", "/etc/ssh/sshd_config"),
    ("caddy", "/etc/caddy/Caddyfile"),
)
"""Single configuration files looked for on every server."""
STANDARD_TREES: tuple[tuple[Product, str], ...] = (
    ("nginx", "/etc/nginx"),
    ("apache", "/etc/apache2"),
    ("h2o", "/etc/h2o"),
)
"""Configuration trees read as one server each; ``*-available`` directories are inactive."""
COUNTER_FILES = ("/proc/net/netstat", "/proc/net/snmp")


class _Collector:
    def __init__(self, access: HostAccess) -> None:
        self.access = access
        self.unreadable: list[Unreadable] = []

    def miss(self, what: str, why: str) -> None:
        item = Unreadable(what=what, why=why)
        if item not in self.unreadable:
            self.unreadable.append(item)

    def sysctls(self) -> dict[str, str]:
        values: dict[str, str] = {}
        for name in SYSCTLS:
            try:
                values[name] = normalise(self.access.read_text(proc_path(name)))
            except OSError as exc:
                self.miss(f"sysctl {name}", str(exc) or type(exc).__name__)
        return values

    def counters(self) -> dict[str, int] | None:
        merged: dict[str, int] = {}
        for path in COUNTER_FILES:
            try:
                merged.update(parse_proc_counters(self.access.read_text(path)))
            except (OSError, CounterFormatError) as exc:
                self.miss(f"counters {path}", str(exc))
                return None
        return merged

    def kernel_log(self) -> list[KernelLine] | None:
        result = self.access.run(["dmesg"])
        if result.returncode == 0:
            return parse_dmesg(result.stdout)
        if result.returncode == EXIT_NOT_FOUND:
            self.miss("kernel log", "dmesg is not installed")
        else:
            why = f"dmesg: {result.reason()}"
            if re.search(r"not permitted|permission", result.stderr, re.IGNORECASE):
                why += " (kernel.dmesg_restrict=1: needs root or CAP_SYSLOG)"
            self.miss("kernel log", why)
        return None

    def listeners(self, *, note: bool) -> list[ListenerInfo] | None:
        result = self.access.run(["ss", "-ltnpH"])
        if result.returncode == 0:
            return parse_ss_listeners(result.stdout)
        reason = "ss is not installed" if result.returncode == EXIT_NOT_FOUND else result.reason()
        try:
            fallback = self.access.netlink_listeners()
        except OSError as exc:
            fallback = None
            reason += f"; netlink inet_diag failed: {exc}"
        if note:
            if fallback is None:
                self.miss("listeners", reason)
            else:
                self.miss("listeners via ss", reason + "; read the kernel's inet_diag directly")
        return fallback

    def haproxy_version(self) -> str | None:
        result = self.access.run(["haproxy", "-v"], timeout_s=10.0)
        if result.returncode != 0:
            return None
        match = re.search(r"version (\S+)", result.stdout)
        return match.group(1) if match else None

    def read_config(self, path: str) -> ConfigFile | None:
        try:
            return ConfigFile(path=path, text=self.access.read_text(path))
        except OSError as exc:
            self.miss(path, str(exc) or type(exc).__name__)
            return None

    def configs(
        self, extra: Sequence[str], standard: bool, version: tuple[int, int] | None
    ) -> tuple[list[LintFinding], list[ConfigChecked]]:
        groups: list[tuple[Product, list[ConfigFile]]] = []
        if standard:
            for product, path in STANDARD_FILES:
                if self.access.list_files(path):
                    config = self.read_config(path)
                    if config is not None:
                        groups.append((product, [config]))
            for product, root in STANDARD_TREES:
                files = [
                    f
                    for f in self.access.list_files(root)
                    if not re.search(r"/[^/]*-available/", f)
                ]
                read = [c for c in (self.read_config(f) for f in files) if c is not None]
                if read:
                    groups.append((product, read))
        for path in extra:
            extra_config = self.read_config(path)
            if extra_config is None:
                continue
            guessed = product_of(path, extra_config.text)
            if guessed is None:
                self.miss(path, "not recognised as HAProxy, nginx, Apache, h2o, Caddy or sshd "
                          "config")
                continue
            groups.append((guessed, [extra_config]))
        findings: list[LintFinding] = []
        checked: list[ConfigChecked] = []
        for product, group in groups:
            f, c = lint_group(product, group, version)
            findings.extend(f)
            checked.extend(c)
        return findings, checked


def collect_report(
    access: HostAccess,
    *,
    during_s: float = 0.0,
    config_paths: Sequence[str] = (),
    standard_configs: bool = True,
    since_totals: Mapping[str, int] | None = None,
    since_log_mark_s: float | None = None,
    sample_interval_s: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    hostname: str | None = None,
) -> HostReport:
    """Collect one report; with ``during_s`` > 0 counters and kernel log are diffed over it."""
    c = _Collector(access)
    euid = access.euid()
    sysctls = c.sysctls()
    before = since_totals if since_totals is not None else (c.counters() if during_s > 0 else None)
    log_before = c.kernel_log() if during_s > 0 else None
    first = c.listeners(note=True)
    samples: list[list[ListenerInfo]] = []
    if during_s > 0:
        end = clock() + during_s
        while (left := end - clock()) > 0:
            sleep(min(sample_interval_s, left))
            sample = c.listeners(note=False)
            if sample is not None:
                samples.append(sample)
    after = c.counters()
    log_after = c.kernel_log()
    listeners = merge_samples(first, samples) if first is not None else []
    if euid not in (0, None) and any(not item.process for item in listeners):
        c.miss("listener processes", f"not root (uid {euid}): other users' processes are hidden")

    deltas: dict[str, int] = {}
    if before is not None and after is not None:
        deltas = counter_deltas(before, after)
    kernel_log: list[str] = []
    if log_after is not None:
        mark = last_stamp(log_before) if log_before is not None else since_log_mark_s
        kernel_log = matching_lines(log_after, after_s=mark)

    raw_version = c.haproxy_version()
    version = parse_haproxy_version(f"HAProxy version {raw_version}") if raw_version else None
    findings, checked = c.configs(config_paths, standard_configs, version)
    findings = lint_sysctls(sysctls) + findings

    if hostname is None:
        result = access.run(["hostname"], timeout_s=5.0)
        hostname = result.stdout.strip() if result.returncode == 0 else ""
    return HostReport(
        collected_at=datetime.now(UTC).isoformat(timespec="seconds"),
        hostname=hostname,
        via=access.description,
        during_s=during_s,
        is_root=None if euid is None else euid == 0,
        listeners=tuple(listeners),
        counters=deltas,
        counter_totals=dict(after or {}),
        sysctls=sysctls,
        kernel_log=tuple(kernel_log),
        kernel_log_mark_s=last_stamp(log_after) if log_after is not None else None,
        config_findings=tuple(findings),
        configs_checked=tuple(checked),
        haproxy_version=raw_version,
        unreadable=tuple(c.unreadable),
    )
