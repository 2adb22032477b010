"""Lint server configurations for the knobs that cap a git upload.

Pure: every function takes file paths and their text (and the HAProxy
version when known) and returns :class:`LintFinding` and :class:`ConfigChecked`
records. What each product does by default (the sources are cited in
docs/host.md):

- HAProxy up to 3.0: ``tune.h2.initial-window-size`` defaults to 65535; 2.8+
  adds ``tune.h2.fe.initial-window-size`` (frontends, i.e. client uploads),
  which wins over the generic one; 3.1+ grows the window by itself
  (``tune.h2.fe.rxbuf``), so only an explicit small value is flagged there.
  Since 2.8 an ``ssl`` bind line without ``alpn`` offers h2 by default.
- nginx: with ``proxy_request_buffering off`` (or fastcgi/grpc/uwsgi/scgi)
  the HTTP/2 stream window is max(``http2_body_preread_size`` 64k,
  ``client_body_buffer_size`` 16k) per round trip.
- Apache mod_http2: ``H2WindowSize`` defaults to 65535.
- nginx: ``proxy_request_buffering`` defaults to ``on``: the whole request body
  is read before it is forwarded, so the git server sees a push only after its
  upload (flagged where a ``proxy_pass`` forwards without ``... off``).
- nginx: ``proxy_buffering`` defaults to ``on``: a clone's pack beyond
  ``proxy_buffers`` is written to temporary files before the client gets it,
  at the edge disk's write rate when that disk is slow (flagged where a
  ``proxy_pass`` forwards without ``proxy_buffering off`` or
  ``proxy_max_temp_file_size 0``; the download direction's
  ``edge-response-buffering``).
- h2o: ``http2-input-window-size`` defaults to 16 MiB (fine unless lowered);
  2.2 has no such directive and advertises 16 MiB (measured in the lab).
- Caddy 2.6: Go's HTTP/2 server keeps 1 MiB per stream and per connection and
  Caddy has no setting for it; flagged where a site proxies (``reverse_proxy``).
- OpenSSH sshd: ``MaxStartups`` defaults to ``10:30:100``; the channel window
  is fixed at 2 MiB, nothing to configure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import PurePosixPath
from typing import Any, Literal

from gitnetdiag.model.host.effect import FLAG_BELOW_BYTES, hurts_from_rtt_s, window_effect

Product = Literal["haproxy", "nginx", "apache", "h2o", "caddy", "sshd", "sysctl"]

HAPROXY_DEFAULT_WINDOW = 65535
HAPROXY_MIN_H2_BUFSIZE = 16384
"""``tune.bufsize`` below this (HAProxy's default) breaks HTTP/2: measured in the lab with
HAProxy 2.6, 4096, 8192 and 12288 end every HTTP/2 request (the first GET included) with
"Empty reply from server" while HTTP/1.1 through the same frontend works; 16384 and 32768
work."""
NGINX_DEFAULT_PREREAD = 64 * 1024
NGINX_DEFAULT_BODY_BUFFER = 16 * 1024
APACHE_DEFAULT_WINDOW = 65535
H2O_DEFAULT_WINDOW = 16 * 1024 * 1024
GO_H2_WINDOW = 1024 * 1024
"""Go's HTTP/2 server (Caddy): receive window per stream and connection, not configurable."""
SSHD_DEFAULT_MAXSTARTUPS = "10:30:100"
SSH_CHANNEL_WINDOW = 2 * 1024 * 1024
MAXSTARTUPS_BURST = 100
"""sshd ``MaxStartups`` whose start is below this refuses part of a burst of concurrent clones."""


@dataclass(frozen=True, kw_only=True)
class LintFinding:
    """A setting (explicit or default) that limits git transfers."""

    product: Product
    """Which server the setting belongs to."""
    file: str
    """The configuration file (for sysctls the ``/proc/sys`` path)."""
    line: int | None
    """1-based line number; ``None`` when the value is the product's default."""
    setting: str
    """The directive, e.g. ``tune.h2.initial-window-size``."""
    value: str
    """The value as written, or ``<default> (default)``."""
    effect: str
    """What it caps (bytes per round trip, the rate at a few RTTs) and from which RTT it hurts."""
    window_bytes: int | None = None
    """The window the setting gives a transfer, bytes per round trip (``None``: not a window)."""
    hurts_from_rtt_s: float | None = None
    """RTT from which that window is slower than a 100 Mbit/s path."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class ConfigChecked:
    """A configuration file that was read, with what was concluded."""

    product: Product
    """Which server it configures."""
    file: str
    """Path."""
    note: str
    """One line: fine, or why nothing applies."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class ConfigFile:
    """A configuration file and its text."""

    path: str
    """Path on the server."""
    text: str
    """Its contents."""


def _window_finding(
    product: Product, file: str, line: int | None, setting: str, value: str, window: int, what: str
) -> LintFinding:
    return LintFinding(
        product=product,
        file=file,
        line=line,
        setting=setting,
        value=value,
        effect=window_effect(window, what),
        window_bytes=window,
        hurts_from_rtt_s=round(hurts_from_rtt_s(window), 6),
    )


def _lines(text: str) -> list[tuple[int, str]]:
    """(1-based number, line without comment) for non-empty lines."""
    result = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if line:
            result.append((number, line))
    return result


def parse_size(text: str) -> int | None:
    """``65535``, ``64k``, ``1m``, ``16M``, ``1g`` -> bytes; ``None`` when not a size."""
    match = re.fullmatch(r"(\d+)\s*([kKmMgG]?)[bB]?", text.strip().rstrip(";"))
    if match is None:
        return None
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[match.group(2).lower()]
    return int(match.group(1)) * scale


def parse_haproxy_version(text: str) -> tuple[int, int] | None:
    """``HAProxy version 2.6.12-1+deb12u4 ...`` -> (2, 6)."""
    match = re.search(r"(?:HAProxy|HA-Proxy) version (\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


# ---------------------------------------------------------------------- HAProxy


def lint_haproxy(
    config: ConfigFile, version: tuple[int, int] | None
) -> tuple[list[LintFinding], ConfigChecked]:
    """The frontend HTTP/2 window HAProxy gives uploads, explicit or default, and a
    ``tune.bufsize`` too small for one HTTP/2 frame."""
    findings, checked = _lint_haproxy_window(config, version)
    small = _haproxy_small_bufsize(config)
    if small is None:
        return findings, checked
    return [*findings, small], replace(
        checked, note=f"{checked.note}; tune.bufsize {small.value} is below one HTTP/2 frame")


def _haproxy_small_bufsize(config: ConfigFile) -> LintFinding | None:
    for number, line in _lines(config.text):
        words = line.split()
        if words[0] != "tune.bufsize" or len(words) < 2:
            continue
        size = parse_size(words[1])
        if size is not None and size < HAPROXY_MIN_H2_BUFSIZE:
            return LintFinding(
                product="haproxy", file=config.path, line=number, setting="tune.bufsize",
                value=words[1],
                effect=(f"each stream's buffer holds {size} B, less than one full HTTP/2 "
                        f"DATA frame ({HAPROXY_MIN_H2_BUFSIZE} B, the protocol's default "
                        "maximum frame size): HTTP/2 requests through this HAProxy fail "
                        "(\"Empty reply from server\")"),
            )
    return None


def _lint_haproxy_window(
    config: ConfigFile, version: tuple[int, int] | None
) -> tuple[list[LintFinding], ConfigChecked]:
    settings: dict[str, tuple[int, str]] = {}
    bind_lines = 0
    h2_binds = 0
    for number, line in _lines(config.text):
        words = line.split()
        if (
            words[0]
            in (
                "tune.h2.initial-window-size",
                "tune.h2.fe.initial-window-size",
                "tune.h2.fe.rxbuf",
            )
            and len(words) > 1
        ):
            settings[words[0]] = (number, words[1])
        if words[0] == "bind":
            bind_lines += 1
            alpn = re.search(r"\balpn\s+(\S+)", line)
            if (
                (alpn and "h2" in alpn.group(1).split(","))
                or re.search(r"\bproto\s+h2\b", line)
                or (alpn is None and "ssl" in words and version is not None and version >= (2, 8))
            ):
                h2_binds += 1
    version_text = f"HAProxy {version[0]}.{version[1]}" if version else "HAProxy <= 3.0 assumed"
    if bind_lines and not h2_binds:
        return [], ConfigChecked(
            product="haproxy", file=config.path, note="no bind line offers HTTP/2 (alpn h2)"
        )
    fe_name = "tune.h2.fe.initial-window-size"
    generic = "tune.h2.initial-window-size"
    chosen = None
    if fe_name in settings and (version is None or version >= (2, 8)):
        chosen = fe_name
    elif generic in settings:
        chosen = generic
    what = "each HTTP/2 upload stream through this HAProxy frontend"
    if chosen is not None:
        number, raw = settings[chosen]
        window = parse_size(raw)
        if window is None:
            return [], ConfigChecked(
                product="haproxy", file=config.path, note=f"{chosen} '{raw}' is not a size"
            )
        if window >= FLAG_BELOW_BYTES:
            return [], ConfigChecked(
                product="haproxy", file=config.path, note=f"{chosen} {window}: large enough"
            )
        return [
            _window_finding("haproxy", config.path, number, chosen, raw, window, what)
        ], ConfigChecked(product="haproxy", file=config.path, note=f"{chosen} {raw} is small")
    if version is not None and version >= (3, 1):
        return [], ConfigChecked(
            product="haproxy",
            file=config.path,
            note=f"{version_text}: the HTTP/2 receive window grows by itself (tune.h2.fe.rxbuf)",
        )
    setting = fe_name if version is not None and version >= (2, 8) else generic
    finding = _window_finding(
        "haproxy",
        config.path,
        None,
        setting,
        f"{HAPROXY_DEFAULT_WINDOW} (default)",
        HAPROXY_DEFAULT_WINDOW,
        what,
    )
    finding = replace(
        finding,
        effect=f"no {generic} line, so the default of {version_text} applies; {finding.effect}",
    )
    return [finding], ConfigChecked(
        product="haproxy", file=config.path, note=f"{setting} unset: default 65535"
    )


# ------------------------------------------------------------------------ nginx


def lint_nginx(configs: Sequence[ConfigFile]) -> tuple[list[LintFinding], list[ConfigChecked]]:
    """nginx's HTTP/2 request-body window when request buffering is off (one server's files)."""
    h2_on = False
    buffering_off: tuple[str, int, str] | None = None
    preread: tuple[str, int, str] | None = None
    body_buffer: tuple[str, int, str] | None = None
    for config in configs:
        for number, line in _lines(config.text):
            words = line.rstrip(";").split()
            if (words[0] == "listen" and "http2" in words[1:]) or (
                words[0] == "http2" and len(words) > 1 and words[1] == "on"
            ):
                h2_on = True
            elif re.fullmatch(r"(proxy|fastcgi|grpc|uwsgi|scgi)_request_buffering", words[0]):
                if len(words) > 1 and words[1] == "off" and buffering_off is None:
                    buffering_off = (config.path, number, f"{words[0]} off")
            elif words[0] == "http2_body_preread_size" and len(words) > 1:
                preread = (config.path, number, words[1])
            elif words[0] == "client_body_buffer_size" and len(words) > 1:
                body_buffer = (config.path, number, words[1])
    files = [c.path for c in configs]
    buffering = _nginx_proxy_buffering(configs, _REQUEST_BUFFERING)
    if not h2_on or buffering_off is None:
        why = "HTTP/2 not enabled" if not h2_on else "request buffering on (nginx reads the body)"
        return buffering, [ConfigChecked(product="nginx", file=f, note=why) for f in files]
    preread_bytes = parse_size(preread[2]) if preread else NGINX_DEFAULT_PREREAD
    buffer_bytes = parse_size(body_buffer[2]) if body_buffer else NGINX_DEFAULT_BODY_BUFFER
    window = max(preread_bytes or NGINX_DEFAULT_PREREAD, buffer_bytes or 0)
    checked = [ConfigChecked(product="nginx", file=f, note="read") for f in files]
    if window >= FLAG_BELOW_BYTES:
        return buffering, checked
    where = f"{buffering_off[2]} ({buffering_off[0]} line {buffering_off[1]})"
    what = (
        f"each HTTP/2 upload stream (with {where} the stream window is "
        "max(http2_body_preread_size, client_body_buffer_size))"
    )
    if preread is not None:
        finding = _window_finding(
            "nginx", preread[0], preread[1], "http2_body_preread_size", preread[2], window, what
        )
    else:
        finding = _window_finding(
            "nginx",
            buffering_off[0],
            None,
            "http2_body_preread_size",
            "64k (default)",
            window,
            what,
        )
    return [finding, *buffering], checked


@dataclass(frozen=True, kw_only=True)
class _ProxyBuffering:
    """An nginx buffering directive that is on by default and costs a transfer where a
    ``proxy_pass`` forwards, unless a line turns it off."""

    setting: str
    """The directive flagged, explicit or by default (``on``)."""
    turns_off: Callable[[str, str], bool]
    """(directive, its first value) -> that line turns the cost off: nothing is flagged."""
    effect: str
    """What it costs."""


_REQUEST_BUFFERING = _ProxyBuffering(
    setting="proxy_request_buffering",
    turns_off=lambda name, value: name == "proxy_request_buffering" and value == "off",
    effect=("nginx reads each whole request body before forwarding it: the git server "
            "sees a push only after the upload, and forwarding adds time that grows with "
            "the pack"),
)
"""``proxy_request_buffering``: the git server sees each push only after its whole upload."""

_RESPONSE_BUFFERING = _ProxyBuffering(
    setting="proxy_buffering",
    turns_off=lambda name, value: ((name == "proxy_buffering" and value == "off")
                                   or (name == "proxy_max_temp_file_size"
                                       and parse_size(value) == 0)),
    effect=("nginx reads each response into proxy_buffers (eight memory pages) and writes "
            "what the client has not taken yet to temporary files under proxy_temp_path: a "
            "clone's pack goes through the edge's disk, at that disk's write rate when it is "
            "slow (costs nothing on a fast one); unless the git server sends "
            "'X-Accel-Buffering: no', which git-http-backend does not"),
)
"""``proxy_buffering`` with temporary files allowed: a clone's pack goes through the edge's
disk."""


def _nginx_proxy_buffering(configs: Sequence[ConfigFile],
                           rule: _ProxyBuffering) -> list[LintFinding]:
    """``rule``'s setting on (its last explicit value, or nginx's default) where a
    ``proxy_pass`` forwards, and no line turns it off."""
    explicit: tuple[str, int, str] | None = None
    proxy: tuple[str, int] | None = None
    for config in configs:
        for number, line in _lines(config.text):
            words = line.rstrip(";").split()
            if len(words) > 1 and rule.turns_off(words[0], words[1]):
                return []
            if words[0] == rule.setting and len(words) > 1:
                explicit = (config.path, number, words[1])
            elif words[0] == "proxy_pass" and proxy is None:
                proxy = (config.path, number)
    if proxy is None:
        return []
    if explicit is not None:
        return [LintFinding(product="nginx", file=explicit[0], line=explicit[1],
                            setting=rule.setting, value=explicit[2], effect=rule.effect)]
    return [LintFinding(product="nginx", file=proxy[0], line=None,
                        setting=rule.setting, value="on (default)", effect=rule.effect)]


def lint_nginx_response_buffering(configs: Sequence[ConfigFile]) -> list[LintFinding]:
    """``proxy_buffering`` on (explicit or nginx's default) with temporary files allowed, where
    a ``proxy_pass`` forwards: a clone's pack goes through the edge's disk."""
    return _nginx_proxy_buffering(configs, _RESPONSE_BUFFERING)


# ------------------------------------------------------------------------ Caddy


def lint_caddy(config: ConfigFile) -> tuple[list[LintFinding], ConfigChecked]:
    """Caddy 2.6 proxies HTTP/2 uploads through Go's fixed 1 MiB window."""
    proxies = [number for number, line in _lines(config.text)
               if line.split()[0] == "reverse_proxy"]
    if not proxies:
        return [], ConfigChecked(product="caddy", file=config.path, note="no reverse_proxy")
    finding = _window_finding(
        "caddy", config.path, proxies[0], "HTTP/2 receive window (Go, built in)",
        f"{GO_H2_WINDOW} (no setting in Caddy 2.6)", GO_H2_WINDOW,
        "each HTTP/2 upload stream and connection to this Caddy",
    )
    return [finding], ConfigChecked(product="caddy", file=config.path, note="Go's 1 MiB window")


# ----------------------------------------------------------------------- Apache


def lint_apache(configs: Sequence[ConfigFile]) -> tuple[list[LintFinding], list[ConfigChecked]]:
    """``H2WindowSize`` of Apache mod_http2 when some ``Protocols`` line offers h2."""
    h2_on = False
    window: tuple[str, int, str] | None = None
    for config in configs:
        for number, line in _lines(config.text):
            words = line.split()
            if words[0].lower() == "protocols" and any(w in ("h2", "h2c") for w in words[1:]):
                h2_on = True
            elif words[0].lower() == "h2windowsize" and len(words) > 1:
                window = (config.path, number, words[1])
    files = [c.path for c in configs]
    if not h2_on:
        return [], [ConfigChecked(product="apache", file=f, note="no Protocols h2") for f in files]
    what = "each HTTP/2 upload stream to this Apache"
    checked = [ConfigChecked(product="apache", file=f, note="read") for f in files]
    if window is None:
        finding = _window_finding(
            "apache",
            files[0],
            None,
            "H2WindowSize",
            f"{APACHE_DEFAULT_WINDOW} (default)",
            APACHE_DEFAULT_WINDOW,
            what,
        )
        return [finding], checked
    size = parse_size(window[2])
    if size is None or size >= FLAG_BELOW_BYTES:
        return [], checked
    return [
        _window_finding("apache", window[0], window[1], "H2WindowSize", window[2], size, what)
    ], checked


# -------------------------------------------------------------------------- h2o


def lint_h2o(config: ConfigFile) -> tuple[list[LintFinding], ConfigChecked]:
    """``http2-input-window-size`` of h2o (YAML); the 16 MiB default is fine."""
    for number, line in _lines(config.text):
        match = re.fullmatch(r"http2-input-window-size\s*:\s*(\S+)", line)
        if match is None:
            continue
        size = parse_size(match.group(1))
        if size is not None and size < FLAG_BELOW_BYTES:
            finding = _window_finding(
                "h2o",
                config.path,
                number,
                "http2-input-window-size",
                match.group(1),
                size,
                "each HTTP/2 upload stream to this h2o",
            )
            return [finding], ConfigChecked(product="h2o", file=config.path, note="small window")
        return [], ConfigChecked(product="h2o", file=config.path, note="window large enough")
    return [], ConfigChecked(
        product="h2o", file=config.path, note="http2-input-window-size unset: 16 MiB default"
    )


# ------------------------------------------------------------------------- sshd


def _maxstartups_start(value: str) -> int | None:
    match = re.fullmatch(r"(\d+)(?::\d+:\d+)?", value)
    return int(match.group(1)) if match else None


def lint_sshd(config: ConfigFile) -> tuple[list[LintFinding], ConfigChecked]:
    """sshd ``MaxStartups``: refuses unauthenticated connections beyond its start value."""
    found: tuple[int, str] | None = None
    for number, line in _lines(config.text):
        words = line.split()
        if words[0].lower() == "match":
            break  # MaxStartups is global only; the first value before any Match wins
        if words[0].lower() == "maxstartups" and len(words) > 1 and found is None:
            found = (number, words[1])
    value = found[1] if found else SSHD_DEFAULT_MAXSTARTUPS
    start = _maxstartups_start(value)
    if start is None or start >= MAXSTARTUPS_BURST:
        return [], ConfigChecked(product="sshd", file=config.path, note=f"MaxStartups {value}")
    parts = value.split(":")
    refusing = (
        f"refuses {parts[1]}% of new unauthenticated connections once {parts[0]} are pending "
        f"and all of them at {parts[2]}"
        if len(parts) == 3
        else f"refuses every new unauthenticated connection beyond {parts[0]} pending"
    )
    effect = (
        f"caps concurrent connection setup, not bytes per round trip: sshd {refusing}, so a burst "
        "of concurrent clones or fetches over SSH sees 'Connection closed by remote host'. "
        f"(The SSH channel window itself is fixed at {SSH_CHANNEL_WINDOW} B per round trip: "
        f"{SSH_CHANNEL_WINDOW * 8 / 0.1 / 1e6:.0f} Mbit/s at 100 ms, slower than a 100 Mbit/s "
        f"path from {hurts_from_rtt_s(SSH_CHANNEL_WINDOW) * 1000:.0f} ms RTT on.)"
    )
    finding = LintFinding(
        product="sshd",
        file=config.path,
        line=found[0] if found else None,
        setting="MaxStartups",
        value=value if found else f"{value} (default)",
        effect=effect,
    )
    return [finding], ConfigChecked(product="sshd", file=config.path, note=f"MaxStartups {value}")


# ----------------------------------------------------------------- dispatching


def product_of(path: str, text: str) -> Product | None:
    """Guess which server a file configures from its path, else from its contents."""
    p = PurePosixPath(path)
    parts = {part.lower() for part in p.parts}
    name = p.name.lower()
    if "haproxy" in name or "haproxy" in parts:
        return "haproxy"
    if "sshd_config" in name or "sshd_config.d" in parts:
        return "sshd"
    if "nginx" in parts or "nginx" in name:
        return "nginx"
    if parts & {"apache2", "httpd"} or name in ("apache2.conf", "httpd.conf"):
        return "apache"
    if "h2o" in parts or "h2o" in name:
        return "h2o"
    if "caddy" in parts or name.startswith("caddyfile"):
        return "caddy"
    heads = {line.split()[0].lower() for _, line in _lines(text)}
    if heads & {"frontend", "backend", "listen"} and "global" in heads | {"defaults"}:
        return "haproxy"
    if heads & {"h2windowsize", "protocols", "loadmodule", "<virtualhost"}:
        return "apache"
    if heads & {"maxstartups", "permitrootlogin", "pubkeyauthentication", "usepam"}:
        return "sshd"
    if heads & {"server", "http", "location", "worker_processes", "events"}:
        return "nginx"
    if any(h.startswith("http2-") or h == "hosts:" for h in heads):
        return "h2o"
    return None


def lint_group(
    product: Product, configs: Sequence[ConfigFile], haproxy_version: tuple[int, int] | None
) -> tuple[list[LintFinding], list[ConfigChecked]]:
    """Lint the files of one server (nginx and Apache read their files together)."""
    findings: list[LintFinding] = []
    checked: list[ConfigChecked] = []
    if product == "nginx":
        findings, checked = lint_nginx(configs)
        return findings + lint_nginx_response_buffering(configs), checked
    if product == "apache":
        return lint_apache(configs)
    for config in configs:
        if product == "haproxy":
            f, c = lint_haproxy(config, haproxy_version)
        elif product == "h2o":
            f, c = lint_h2o(config)
        elif product == "caddy":
            f, c = lint_caddy(config)
        elif product == "sshd":
            f, c = lint_sshd(config)
        else:
            continue
        findings.extend(f)
        checked.append(c)
    return findings, checked
