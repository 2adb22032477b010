"""``watch.yaml``: what to probe, how often, and where the run directories go.

Parsing is pure (:func:`parse_config` takes the YAML text); every mistake is a
:class:`~gitnetdiag.errors.UsageError` naming the key, e.g. ``targets[1].interval``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gitnetdiag.errors import InputError, UsageError
from gitnetdiag.inputfile import read_text_input
from gitnetdiag.remoteurl import check_url
from gitnetdiag.rundir.both import fetch_run_dir
from gitnetdiag.thresholds import MAX_GENERATED_BYTES
from gitnetdiag.vocabulary import parse_size

PROTOCOLS = ("h1", "h2", "ssh", "git")
_URL_OPTION = {"h1": "--http", "h2": "--http", "ssh": "--ssh", "git": "--git"}
"""The command-line option whose URL rules each protocol's URL follows."""
DEFAULT_LISTEN = "127.0.0.1:9718"
DEFAULT_RUNS_DIR = Path("/var/lib/gitnetdiag/watch")
DEFAULT_KEEP_RUNS = 20
DEFAULT_INTERVAL_S = 900.0
DEFAULT_SIZE = "4MiB"
DEFAULT_TIMEOUT_S = 120.0
DIRECTIONS = ("push", "fetch", "both")
"""``direction``: what a cycle measures. ``fetch`` is read-only (clones only: no push rights,
no throwaway branch, nothing written on the server); ``both`` pushes, then clones."""
FETCH_NATIVE_RUNS = 3
"""Native downloads a fetch cycle may run: HTTP/2 under two windows, SSH once."""
LAB_PROTOCOLS = ("h1", "h2", "ssh")
"""What a lab target probes unless ``protocols`` says otherwise (git:// is for bursts)."""

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}

_TARGET_KEYS = {
    "name", "urls", "lab", "lab_http", "protocols", "interval", "size", "timeout", "ca_file",
    "insecure", "ssh_key", "ssh_known_hosts", "capture", "native", "keep_runs", "deadline",
    "direction",
}
_TOP_KEYS = {"listen", "runs_dir", "keep_runs", "max_parallel", "targets"}


@dataclass(frozen=True, kw_only=True)
class Target:
    """One remote (or lab instance) the exporter probes."""

    name: str
    """The ``target`` label: letters, digits, ``_.-`` (never a URL: URLs may hold tokens)."""
    urls: dict[str, str]
    """Remote URL per protocol (``h1``, ``h2``, ``ssh``, ``git``); empty for a lab target."""
    protocols: tuple[str, ...]
    """Protocols pushed each cycle, in order."""
    lab: str | None = None
    """Lab instance whose URLs, CA and keys to use; the probe runs in its client namespace."""
    lab_http: str = "edge"
    """Lab HTTPS way in: ``edge`` (HAProxy) or ``direct`` (Apache)."""
    interval_s: float = DEFAULT_INTERVAL_S
    """Seconds from one cycle's start to the next; 0 probes only on ``/probe?target=``."""
    size_bytes: int = 4 << 20
    """Size of the generated repository pushed each cycle (a clone takes what the URL
    serves)."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    """Timeout of each git run (and native probe) of a cycle."""
    ca_file: str | None = None
    insecure: bool = False
    ssh_key: str | None = None
    ssh_known_hosts: str | None = None
    capture: bool = True
    """Capture the pushes with tcpdump (needs root; skipped with a warning otherwise)."""
    native: bool = True
    """Also push with the native HTTP/2 and SSH probes: the flow-control window metrics."""
    keep_runs: int = DEFAULT_KEEP_RUNS
    """Run directories kept for this target, newest first."""
    deadline_s: float | None = None
    """When a whole cycle is stopped (SIGTERM: it still deletes its branch); None: computed."""
    direction: str = "push"
    """``push``, ``fetch`` (read-only) or ``both`` (:data:`DIRECTIONS`)."""

    @property
    def directions(self) -> tuple[str, ...]:
        """The directions of a cycle, in order: ``push``, ``fetch`` or both (push first)."""
        return ("push", "fetch") if self.direction == "both" else (self.direction,)

    @property
    def cycle_deadline_s(self) -> float:
        """The configured deadline, or every git run at its timeout plus a minute of set-up.

        A push cycle pushes and deletes once per protocol and runs up to two native probes;
        a fetch cycle clones once per protocol and runs up to three native downloads.
        """
        if self.deadline_s is not None:
            return self.deadline_s
        runs = 0
        if "push" in self.directions:
            runs += 2 * len(self.protocols) + 2
        if "fetch" in self.directions:
            runs += len(self.protocols) + FETCH_NATIVE_RUNS
        return self.timeout_s * runs + 60.0

    def run_dirs(self, run_dir: Path) -> dict[str, Path]:
        """Direction -> its run directory for a cycle in ``run_dir``: the first direction
        writes there, the clones of a ``both`` cycle beside it in ``<run_dir>-fetch`` (as
        ``diagnose --direction both`` does: ``report RUN`` joins them)."""
        return {direction: run_dir if i == 0 else fetch_run_dir(run_dir)
                for i, direction in enumerate(self.directions)}


@dataclass(frozen=True, kw_only=True)
class WatchConfig:
    """The whole ``watch.yaml``."""

    listen_host: str
    listen_port: int
    runs_dir: Path
    """Run directories land in ``runs_dir/<target>/<time>``."""
    max_parallel: int = 1
    """Cycles running at once over all targets; 1 keeps probes from disturbing each other."""
    targets: tuple[Target, ...] = field(default_factory=tuple)

    def target(self, name: str) -> Target | None:
        return next((t for t in self.targets if t.name == name), None)


def parse_duration_s(value: object, where: str) -> float:
    """``90``, ``90s``, ``15m``, ``1h``, ``500ms`` -> seconds."""
    match = _DURATION_RE.match(str(value)) if isinstance(value, (int, float, str)) else None
    if match is None or isinstance(value, bool):
        raise UsageError(f"{where}: cannot read the duration {value!r}",
                         hint="write it like 30s, 15m or 1h")
    return float(match.group(1)) * _DURATION_UNITS[match.group(2)]


def _str(data: dict[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise UsageError(f"{where}.{key}: expected text, got {value!r}")
    return value


def _bool(data: dict[str, Any], key: str, where: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise UsageError(f"{where}.{key}: expected true or false, got {value!r}")
    return value


def _count(data: dict[str, Any], key: str, where: str, default: int) -> int:
    value = data.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise UsageError(f"{where}.{key}: expected a whole number >= 1, got {value!r}")
    return value


def _unknown(data: dict[str, Any], known: set[str], where: str) -> None:
    extra = sorted(set(data) - known)
    if extra:
        raise UsageError(f"{where}: unknown key {extra[0]!r}",
                         hint="known keys: " + ", ".join(sorted(known)))


def _protocols(data: dict[str, Any], where: str, available: tuple[str, ...]) -> tuple[str, ...]:
    raw = data.get("protocols")
    if raw is None:
        return available
    if not isinstance(raw, list) or not raw:
        raise UsageError(f"{where}.protocols: expected a list such as [h1, h2, ssh]")
    chosen: list[str] = []
    for item in raw:
        if item not in PROTOCOLS:
            raise UsageError(f"{where}.protocols: unknown protocol {item!r}",
                             hint="use h1, h2, ssh, git")
        if item not in available:
            raise UsageError(f"{where}.protocols: {item} has no URL",
                             hint=f"add it under {where}.urls (or use lab:)")
        if item not in chosen:
            chosen.append(item)
    return tuple(chosen)


def _urls(data: dict[str, Any], where: str) -> dict[str, str]:
    raw = data.get("urls") or {}
    if not isinstance(raw, dict):
        raise UsageError(f"{where}.urls: expected a mapping protocol -> URL")
    urls: dict[str, str] = {}
    for protocol, url in raw.items():
        if protocol not in PROTOCOLS:
            raise UsageError(f"{where}.urls: unknown protocol {protocol!r}",
                             hint="use h1, h2, ssh, git")
        if not isinstance(url, str) or not url:
            raise UsageError(f"{where}.urls.{protocol}: expected a URL")
        # The command line's checks (scheme, host, no password where the protocol takes none,
        # no #fragment: git never sends one, a token there would only reach its argv).
        urls[protocol] = check_url(_URL_OPTION[protocol], url, f"{where}.urls.{protocol}")
    return urls


def _target(data: object, index: int, keep_default: int) -> Target:
    where = f"targets[{index}]"
    if not isinstance(data, dict):
        raise UsageError(f"{where}: expected a mapping with at least name and urls (or lab)")
    _unknown(data, _TARGET_KEYS, where)
    name = _str(data, "name", where)
    if name is None or not _NAME_RE.match(name):
        raise UsageError(f"{where}.name: {name!r} is not a target name",
                         hint="letters, digits, '_', '.', '-' (it becomes a label)")
    urls = _urls(data, where)
    lab = _str(data, "lab", where)
    if lab is not None and urls:
        raise UsageError(f"{where}: give either urls or lab, not both")
    if lab is None and not urls:
        raise UsageError(f"{where}: no remote to probe", hint="give urls: {h1: ..., ssh: ...} "
                         "or lab: INSTANCE")
    lab_http = _str(data, "lab_http", where) or "edge"
    if lab_http not in ("edge", "direct"):
        raise UsageError(f"{where}.lab_http: expected edge or direct, got {lab_http!r}")
    if lab is not None:
        protocols = _protocols(data, where, PROTOCOLS) if "protocols" in data else LAB_PROTOCOLS
    else:
        protocols = _protocols(data, where, tuple(p for p in PROTOCOLS if p in urls))
    interval_s = parse_duration_s(data.get("interval", DEFAULT_INTERVAL_S), f"{where}.interval")
    timeout_s = parse_duration_s(data.get("timeout", DEFAULT_TIMEOUT_S), f"{where}.timeout")
    if timeout_s <= 0:
        raise UsageError(f"{where}.timeout: must be positive")
    deadline = data.get("deadline")
    deadline_s = None if deadline is None else parse_duration_s(deadline, f"{where}.deadline")
    if deadline_s is not None and deadline_s <= 0:
        raise UsageError(f"{where}.deadline: must be positive")
    direction = data.get("direction", "push")
    if direction not in DIRECTIONS:
        raise UsageError(f"{where}.direction: expected push, fetch or both, got {direction!r}",
                         hint="fetch clones only (read-only); both pushes, then clones")
    size = data.get("size", DEFAULT_SIZE)
    try:
        size_bytes = parse_size(str(size))
    except UsageError as exc:
        raise UsageError(f"{where}.size: {exc.message}", hint=exc.hint) from exc
    if size_bytes > MAX_GENERATED_BYTES:
        raise UsageError(f"{where}.size: {size} is more than the "
                         f"{MAX_GENERATED_BYTES // 1024**3} GiB a probe generates",
                         hint="give 4GiB or less (a push stops at its time budget long before)")
    return Target(
        name=name, urls=urls, protocols=protocols, lab=lab, lab_http=lab_http,
        interval_s=interval_s, size_bytes=size_bytes, timeout_s=timeout_s,
        ca_file=_str(data, "ca_file", where), insecure=_bool(data, "insecure", where, False),
        ssh_key=_str(data, "ssh_key", where),
        ssh_known_hosts=_str(data, "ssh_known_hosts", where),
        capture=_bool(data, "capture", where, True), native=_bool(data, "native", where, True),
        keep_runs=_count(data, "keep_runs", where, keep_default), deadline_s=deadline_s,
        direction=direction,
    )


def parse_listen(value: object) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9718``, ``:9718`` for every address) -> (host, port)."""
    text = str(value)
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(f"listen: cannot read {text!r}", hint="write it like 127.0.0.1:9718")
    return host.strip("[]") or "0.0.0.0", int(port)


def parse_config(text: str) -> WatchConfig:
    """The configuration in ``text`` (YAML), checked."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UsageError(f"the watch configuration is not valid YAML: {exc}".splitlines()[0],
                         hint="check the indentation and quoting") from exc
    if not isinstance(data, dict):
        raise UsageError("the watch configuration must be a mapping with a targets list")
    _unknown(data, _TOP_KEYS, "config")
    raw_targets = data.get("targets")
    if not isinstance(raw_targets, list) or not raw_targets:
        raise UsageError("config: no targets", hint="add a targets: list (see docs/watch.md)")
    keep = _count(data, "keep_runs", "config", DEFAULT_KEEP_RUNS)
    targets = tuple(_target(item, i, keep) for i, item in enumerate(raw_targets))
    names = [t.name for t in targets]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise UsageError(f"config: two targets are named {duplicate!r}",
                         hint="target names are labels: make them unique")
    host, port = parse_listen(data.get("listen", DEFAULT_LISTEN))
    runs_dir = data.get("runs_dir", str(DEFAULT_RUNS_DIR))
    if not isinstance(runs_dir, str):
        raise UsageError(f"config.runs_dir: expected a path, got {runs_dir!r}")
    return WatchConfig(
        listen_host=host, listen_port=port, runs_dir=Path(runs_dir),
        max_parallel=_count(data, "max_parallel", "config", 1), targets=targets,
    )


def load_config(path: Path) -> WatchConfig:
    """Read and check ``path``."""
    def bad(message: str) -> InputError:
        return InputError(f"watch configuration: {message}",
                          hint="give --config a YAML file in UTF-8")

    try:
        text = read_text_input(path, error=bad)
    except FileNotFoundError as exc:
        raise InputError(f"cannot read the watch configuration {path}: {exc.strerror}",
                         hint="give --config an existing YAML file") from exc
    return parse_config(text)
