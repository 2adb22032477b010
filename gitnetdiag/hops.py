"""The first hop of each protocol's path: direct, or a forward proxy, and what the proxy said.

git reaches an HTTPS remote through ``http[.<url>].proxy`` / ``https_proxy`` (a CONNECT
tunnel: the TCP connection the pushes' captures see ends at the proxy), and an SSH remote
through the ``ProxyCommand`` / ``ProxyJump`` of ``ssh -G`` (``core.sshCommand`` may add
``-J``/``-o ProxyCommand``). The probe records the hop per protocol; the diagnosis names the
proxy as the hop holding the knob of a TCP-level culprit measured on that leg. Pure: the
records and the parsers of ``ssh -G`` output and of the proxy's answer to a plain request.

    client --(captured leg)--> proxy host:port --(CONNECT tunnel)--> server    http-proxy
    client --(captured leg)--> SOCKS proxy host:port ---------------> server    socks-proxy
    client --ssh ProxyJump/ProxyCommand-------> jump host ---------> sshd      ssh-proxy
    client --core.gitProxy command------------> its first hop -----> daemon    git-proxy
    client ------------------------------------------------------> server    direct

A ``ProxyCommand`` (and the script ``core.gitProxy`` names) is a program, not an address:
:func:`parse_proxy_command` reads the common ones (``nc -X connect -x proxy:3128 %h %p``,
``ncat --proxy``, ``corkscrew proxy 8080 %h %p``, ``connect-proxy -H proxy:3128 %h %p``,
``ssh -W %h:%p jump``; ``data/proxy_commands.toml``, each from its manual) for the first hop
its TCP connection goes to. Any other command is said to be unrecognised: its first hop is
unknown, and the probe does not capture the server's address as if it were the leg.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from typing import Any, Literal

from gitnetdiag.data import KnowledgeBaseError, load_table, require_source, require_text

HopKind = Literal["direct", "http-proxy", "socks-proxy", "ssh-proxy", "git-proxy"]
"""How a protocol's connections leave the client: straight, through an HTTP (CONNECT) proxy or
a SOCKS proxy (``http.proxy`` / ``https_proxy`` / ``all_proxy``), through ssh's
``ProxyJump`` / ``ProxyCommand``, through git's ``core.gitProxy`` command (git://)."""

BODY_EXCERPT_CHARS = 200
"""Characters of the proxy's error page kept (tags stripped): its own words, one line."""


@dataclass(frozen=True, kw_only=True)
class ProxyAnswer:
    """The proxy's answer to a plain ``GET http://<proxy>/`` (not a CONNECT): how it names
    itself. Squid answers 400 with ``Server: squid/5.7``, tinyproxy 400 with
    ``Server: tinyproxy/1.11.1``; either may add ``Via``."""

    status: int | None = None
    """HTTP status code, None when no status line came back."""
    status_line: str = ""
    """The status line as received (``HTTP/1.1 400 Bad Request``)."""
    server: str = ""
    """Its ``Server`` header, "" when none."""
    via: str = ""
    """Its ``Via`` header, "" when none."""
    body: str = ""
    """The first characters of its error page, tags stripped, whitespace collapsed."""
    error: str = ""
    """Why no answer was read (refused, timed out), "" when one was."""


@dataclass(frozen=True, kw_only=True)
class FirstHop:
    """Where one protocol's connections go first, as git resolves it."""

    protocol: str
    """``h1``, ``h2``, ``ssh`` or ``git``."""
    kind: HopKind = "direct"
    """See :data:`HopKind`."""
    proxy: str = ""
    """The proxy as ``host:port`` (``http-proxy``), the jump host or command (``ssh-proxy``);
    "" when direct."""
    source: str = ""
    """The setting it came from (``http.proxy``, ``https_proxy``, ``ssh -G proxyjump``,
    ``core.sshCommand``), "" when direct."""
    answer: ProxyAnswer | None = None
    """What an HTTP proxy said of itself; None when it was not asked (SSH, direct)."""
    leg_endpoint: str = ""
    """The ``host:port`` the path check timed for this leg (:func:`leg_endpoint`); "" when
    direct or not measured."""
    leg_rtt_s: float | None = None
    """The smallest TCP connect time to it (the leg client -> proxy); None when direct or not
    measured. Both are filled from the run's path checks when the run is read
    (``PathMeasurement.first_hop_of``), not recorded with the hop."""
    """What an HTTP proxy said of itself; None when it was not asked (SSH, SOCKS, direct)."""
    leg: str = ""
    """``host:port`` the protocol's TCP connection goes to first (the proxy's, the jump
    host's, the one a recognised proxy command names); "" when direct or not known."""
    proxy_type: str = ""
    """What that first hop speaks: ``http`` (CONNECT), ``https``, ``socks4``, ``socks4a``,
    ``socks5``, ``socks5h``, ``ssh`` (a jump host), ``telnet``, ``relay`` (the command
    connects to the server itself); "" when not known."""
    program: str = ""
    """The recognised proxy command's program (``OpenBSD netcat``), "" when none."""
    unplaced: str = ""
    """Why the first hop is not known (an unrecognised command): the capture could not be
    placed; "" when it is known or direct."""

    @property
    def proxied(self) -> bool:
        return self.kind != "direct"


def ssh_proxy_of(ssh_g_output: str) -> tuple[str, str] | None:
    """``(proxy, setting)`` from ``ssh -G host`` output: its ``proxyjump`` or
    ``proxycommand`` line (``none`` means none), else None."""
    settings: dict[str, str] = {}
    for line in ssh_g_output.splitlines():
        key, _, value = line.strip().partition(" ")
        settings.setdefault(key.lower(), value.strip())
    for key in ("proxyjump", "proxycommand"):
        value = settings.get(key, "")
        if value and value.lower() != "none":
            return value, key
    return None


def _header(lines: list[str], name: str) -> str:
    return ", ".join(value.strip() for line in lines
                     for key, sep, value in [line.partition(":")]
                     if sep and key.strip().lower() == name)


def parse_proxy_answer(raw: bytes) -> ProxyAnswer:
    """The status, ``Server``, ``Via`` and page excerpt of an HTTP answer (possibly cut)."""
    text = raw.decode("latin-1")
    head, sep, body = text.partition("\r\n\r\n")
    if not sep:
        head, _, body = text.partition("\n\n")
    lines = head.splitlines()
    status_line = lines[0].strip() if lines else ""
    match = re.match(r"HTTP/\d(?:\.\d)?\s+(\d{3})", status_line)
    if match is None:
        return ProxyAnswer(status_line=status_line[:120],
                           error="the proxy's answer is not HTTP" if text else "no answer")
    words = " ".join(re.sub(r"<[^>]*>", " ", body).split())
    return ProxyAnswer(status=int(match.group(1)), status_line=status_line,
                       server=_header(lines[1:], "server"), via=_header(lines[1:], "via"),
                       body=words[:BODY_EXCERPT_CHARS])


TYPE_WORDS = {
    "http": "HTTP proxy", "https": "HTTPS proxy", "socks4": "SOCKS4 proxy",
    "socks4a": "SOCKS4a proxy", "socks5": "SOCKS5 proxy", "socks5h": "SOCKS5 proxy",
    "ssh": "SSH jump host", "telnet": "telnet proxy", "relay": "relay",
}
"""How the report names a first hop by what it speaks."""


@dataclass(frozen=True, kw_only=True)
class PathHop:
    """One protocol's path as the report shows it."""

    protocol: str
    """``h1``, ``h2``, ``ssh`` or ``git``."""
    kind: str
    """See :data:`HopKind`."""
    proxy: str = ""
    """The proxy's ``host:port`` (or SSH jump host / command); "" when direct."""
    source: str = ""
    """The setting that sends it there (``https_proxy``, ``http.proxy``, ``ssh -G proxyjump``)."""
    product: str = ""
    """Knowledge-base id of the proxy product, "" when unknown or not asked."""
    said: str = ""
    """What the proxy said of itself (``Server: tinyproxy/1.11.1``), or why it said nothing."""
    leg_endpoint: str = ""
    """The ``host:port`` the path check timed for this leg, "" when it timed none."""
    leg_rtt_s: float | None = None
    """Its smallest TCP connect time (the leg client -> proxy's RTT), None when not measured."""
    leg: str = ""
    """``host:port`` of the first hop (:attr:`FirstHop.leg`), "" when direct or unknown."""
    proxy_type: str = ""
    """What the first hop speaks (:attr:`FirstHop.proxy_type`)."""
    program: str = ""
    """The recognised proxy command's program, "" when none."""
    unplaced: str = ""
    """Why the first hop is unknown and the leg was not captured, "" when it is known."""

    @property
    def proxied(self) -> bool:
        return self.kind != "direct"

    @property
    def proxy_text(self) -> str:
        """``proxy 10.0.0.1:8888 (tinyproxy/1.11.1)``, ``SOCKS5 proxy 127.0.0.1:1080
        (socks5h, all_proxy)``, ``HTTP proxy gate:3128 (SSH ProxyCommand: OpenBSD netcat)``,
        or an unrecognised command said as such."""
        words = TYPE_WORDS.get(self.proxy_type, "proxy")
        if self.kind in ("ssh-proxy", "git-proxy"):
            setting = ("core.gitProxy" if self.kind == "git-proxy" else "core.sshCommand"
                       if self.source == "core.sshCommand" else "SSH ProxyCommand")
            if self.unplaced:
                return f"{setting} `{self.proxy}` ({self.unplaced})"
            if self.program:
                return f"{words} {self.leg} ({setting}: {self.program})"
            return f"SSH proxy {self.proxy}"
        if self.kind == "socks-proxy":
            return f"{words} {self.proxy} ({self.proxy_type}, {self.source})"
        who = self.said if self.product else "unknown product" + (
            f": {self.said}" if self.said else "")
        return f"proxy {self.proxy} ({who})"

    @property
    def text(self) -> str:
        """``client -> proxy 10.0.0.1:8888 (...) -> server``, or ``direct``."""
        return f"client -> {self.proxy_text} -> server" if self.proxied else "direct"


def _jump_endpoint(proxyjump: str) -> tuple[str, int] | None:
    """``(host, port)`` of the first hop of a ``ProxyJump`` value (``[user@]host[:port]``,
    comma-separated hops, an ``ssh://`` URL), None when it does not read as one."""
    first = proxyjump.split(",", 1)[0].strip().removeprefix("ssh://")
    host_port = first.rsplit("@", 1)[-1]
    return _host_port(host_port, 22)


def _host_port(text: str, default_port: int) -> tuple[str, int] | None:
    """``host[:port]`` / ``[v6]:port`` read, ``default_port`` when none (0: none known)."""
    match = re.fullmatch(r"\[([^\]]+)\](?::(\d+))?|([^:\[\]\s/]+)(?::(\d+))?", text.strip())
    if match is None:
        return None
    host = match.group(1) or match.group(3)
    port = match.group(2) or match.group(4)
    return host, int(port) if port else default_port


def endpoint_text(host: str, port: int) -> str:
    """``host:port``, ``[v6]:port`` for an IPv6 address."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def leg_endpoint(hop: FirstHop | None, endpoint: tuple[str, int]) -> tuple[str, int] | None:
    """Where the protocol's TCP connection goes (what a client-side capture must watch): the
    recorded first hop (the proxy's ``host:port``, the first ``ProxyJump`` host's, the one a
    recognised proxy command names), else ``endpoint`` (the server's) when direct; None when
    the first hop is not known (an unrecognised ``ProxyCommand`` / ``core.gitProxy``): no
    address to capture, and the server's would show nothing of the leg."""
    if hop is None or not hop.proxied:
        return endpoint
    if hop.leg:
        return _host_port(hop.leg, 0) or None
    if hop.unplaced:
        return None
    if hop.kind in ("http-proxy", "socks-proxy"):
        found = _host_port(hop.proxy, 0)
        return found if found and found[1] else endpoint
    if hop.source.endswith("proxyjump") or hop.source == "core.sshCommand":
        return _jump_endpoint(hop.proxy) or None
    return None


def unplaced_text(hop: FirstHop) -> str:
    """The warning of a leg not captured: the command, why its first hop is unknown."""
    setting = "core.gitProxy" if hop.kind == "git-proxy" else hop.source or "ProxyCommand"
    return (f"the connection goes through the proxy command `{hop.proxy}` ({setting}): "
            f"{hop.unplaced}; its transfers' TCP_INFO is of the sockets git's processes own, "
            "whatever their address")


@dataclass(frozen=True, kw_only=True)
class JumpHost:
    """The one jump host of a ``ProxyJump`` (``[user@]host[:port]``, ``ssh://`` form too) that
    the native SSH probes follow as OpenSSH does (a TCP connection to it, SSH, then a
    ``direct-tcpip`` channel to the server)."""

    host: str
    """The jump host as written (an address, or a name the ssh config may resolve)."""
    port: int = 0
    """Its port, 0 when the spec gives none (the ssh config's ``Port``, else 22)."""
    user: str = ""
    """Its user, "" when the spec gives none (the ssh config's ``User``, else the target's)."""

    @property
    def text(self) -> str:
        """``user@host:port`` as given (the parts the spec left out left out)."""
        where = endpoint_text(self.host, self.port) if self.port else self.host
        return f"{self.user}@{where}" if self.user else where


def jump_spec(value: str) -> JumpHost | None:
    """The jump host of a single-hop ``ProxyJump`` value; None for a chain (``a,b``), ``none``
    or a value that does not read as ``[user@]host[:port]``."""
    value = value.strip()
    if not value or "," in value or value.lower() == "none":
        return None
    user, at, rest = value.removeprefix("ssh://").rstrip("/").rpartition("@")
    found = _host_port(rest, 0)
    if found is None or (at and not user):
        return None
    return JumpHost(host=found[0], port=found[1], user=user)


def _is_proxyjump(hop: FirstHop) -> bool:
    """The hop is a ``ProxyJump`` (``ssh -G proxyjump``, or ``-J`` in ``core.sshCommand``),
    not a ``ProxyCommand`` (whose program, if recognised, is recorded)."""
    return (hop.kind == "ssh-proxy" and not hop.program and not hop.unplaced
            and (hop.source.endswith("proxyjump") or hop.proxy_type == "ssh"))


def followed_jump(hop: FirstHop | None) -> JumpHost | None:
    """The jump host the native SSH probes go through: git's SSH first hop when it is a
    single ``ProxyJump`` host; None when git's SSH goes direct, through a chain of jump
    hosts or a ``ProxyCommand`` (the native probes then connect directly:
    :func:`native_ssh_note`)."""
    if hop is None or not _is_proxyjump(hop):
        return None
    return jump_spec(hop.proxy)


def native_ssh_note(hop: FirstHop | None, what: str) -> str:
    """The warning of a native SSH probe (paramiko) that did not take git's SSH path: git's
    SSH went through a proxy hop it does not follow (a ``ProxyCommand``, a chain of
    ``ProxyJump`` hosts), so it measured the direct path; "" when git's SSH went direct or
    through the single jump host the probe followed (:func:`followed_jump`)."""
    if hop is None or not hop.proxied or followed_jump(hop) is not None:
        return ""
    why = ("it follows a single ProxyJump host, not a chain" if _is_proxyjump(hop)
           else "it does not follow a ProxyCommand or another ssh command")
    return (f"the {what} connected directly to the server: {why} ({hop.source}: "
            f"{hop.proxy}), so its ledger is of the direct path, not of the path git's SSH "
            "transfers took")


# --------------------------------------------------------------------------
# Proxy commands: ssh's ProxyCommand, the script core.gitProxy runs
# --------------------------------------------------------------------------

COMMANDS_FILE = "proxy_commands.toml"
STYLES = ("option", "positional", "ssh")


@dataclass(frozen=True, kw_only=True)
class ProxyProgram:
    """One proxy program of ``data/proxy_commands.toml``: how its words name its first hop."""

    id: str
    name: str
    programs: tuple[str, ...]
    style: str
    proxy_options: dict[str, str]
    type_option: str
    types: dict[str, str]
    default_ports: dict[str, int]
    value_options: frozenset[str]
    source: str


def _program(raw: dict[str, Any], where: str) -> ProxyProgram:
    require_text(raw, ("id", "name", "style"), where)
    if raw["style"] not in STYLES:
        raise KnowledgeBaseError(f"{where}: style must be one of {', '.join(STYLES)}")
    for key in ("programs", "value_options"):
        if not isinstance(raw.get(key), list) or not all(isinstance(v, str) for v in raw[key]):
            raise KnowledgeBaseError(f"{where}: {key} must be a list of strings")
    for key in ("proxy_options", "types", "default_ports"):
        if not isinstance(raw.get(key), dict):
            raise KnowledgeBaseError(f"{where}: {key} must be a table")
    if not all(isinstance(v, int) for v in raw["default_ports"].values()):
        raise KnowledgeBaseError(f"{where}: default_ports must be port numbers")
    return ProxyProgram(
        id=raw["id"], name=raw["name"], programs=tuple(raw["programs"]), style=raw["style"],
        proxy_options=dict(raw["proxy_options"]), type_option=str(raw.get("type_option", "")),
        types=dict(raw["types"]), default_ports=dict(raw["default_ports"]),
        value_options=frozenset(raw["value_options"]),
        source=require_source(raw.get("source"), where))


def load_programs(text: str | None = None) -> dict[str, ProxyProgram]:
    """The table shipped with gitnetdiag (or the one in ``text``), keyed by id."""
    return load_table(COMMANDS_FILE, "command", _program, text=text)


PROGRAMS: dict[str, ProxyProgram] = load_programs()
"""Every recognised proxy program, in file order."""


@dataclass(frozen=True, kw_only=True)
class CommandHop:
    """What a proxy command's words say of its first hop."""

    program: str = ""
    """The recognised program's display name, "" when the command is not recognised."""
    proxy_type: str = ""
    """See :attr:`FirstHop.proxy_type`."""
    host: str = ""
    port: int = 0
    """The first hop's port, 0 when the command gives none and its manual documents none."""
    jump_options: tuple[str, ...] = ()
    """``ssh -W``: the options of that ssh (``-F``, ``-o``) that ``ssh -G`` needs to resolve
    the jump host as it will."""
    why: str = ""
    """Why no first hop was read, "" when one was."""

    @property
    def placed(self) -> bool:
        return bool(self.host and self.port and not self.why)


def expand_tokens(command: str, host: str, port: int, user: str = "") -> str:
    """ssh's ``%h``, ``%p``, ``%r`` and ``%%`` in a ``ProxyCommand`` (ssh_config(5) TOKENS)."""
    return re.sub(r"%(.)", lambda m: {"h": host, "p": str(port), "r": user, "%": "%"}.get(
        m.group(1), m.group(0)), command)


def _words(command: str) -> list[str] | None:
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return None
    while words and words[0] in ("exec", "command", "env"):
        words = words[1:]
    return words


def _options_and_args(words: list[str], program: ProxyProgram
                      ) -> tuple[list[tuple[str, str]], list[str]]:
    """``(option, value)`` pairs (value "" for a flag) and the positional arguments."""
    options: list[tuple[str, str]] = []
    args: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word.startswith("--") and "=" in word:
            name, _, value = word.partition("=")
            options.append((name, value))
        elif word in program.value_options:
            options.append((word, words[index] if index < len(words) else ""))
            index += 1
        elif word.startswith("-") and len(word) > 2 and word[:2] in program.value_options \
                and not word.startswith("--"):
            options.append((word[:2], word[2:]))
        elif word.startswith("-") and len(word) > 1:
            options += [(f"-{flag}", "") for flag in word[1:]] if not word.startswith("--") \
                else [(word, "")]
        else:
            args.append(word)
    return options, args


def _with_port(program: ProxyProgram, kind: str, text: str) -> CommandHop:
    found = _host_port(text.rsplit("@", 1)[-1], program.default_ports.get(kind, 0))
    if found is None:
        return CommandHop(program=program.name, proxy_type=kind,
                          why=f"{program.name}: cannot read the proxy {text!r}")
    host, port = found
    why = "" if port else (f"{program.name}: the proxy {host} has no port and its manual "
                           "gives no default")
    return CommandHop(program=program.name, proxy_type=kind, host=host, port=port, why=why)


def _option_hop(program: ProxyProgram, words: list[str]) -> CommandHop:
    options, args = _options_and_args(words, program)
    named = [(program.proxy_options[name], value) for name, value in options
             if name in program.proxy_options]
    types = [program.types.get(value.lower(), "") for name, value in options
             if program.type_option and name == program.type_option]
    if not named:  # no proxy: it connects to its host argument itself
        if len(args) < 2 or not args[1].isdigit():
            return CommandHop(program=program.name, why=f"{program.name}: no host and port")
        return CommandHop(program=program.name, proxy_type="relay", host=args[0],
                          port=int(args[1]))
    kind, value = named[-1]
    if types:
        if not types[-1]:
            return CommandHop(program=program.name, why=f"{program.name}: proxy type not known")
        kind = types[-1]
    return _with_port(program, kind, value)


def _ssh_hop(program: ProxyProgram, words: list[str]) -> CommandHop:
    options, args = _options_and_args(words, program)
    if not any(name == "-W" for name, _ in options):
        return CommandHop(why="ssh without -W: not a stdio forward")
    if not args:
        return CommandHop(program=program.name, why="ssh -W without a jump host")
    jumps = [value for name, value in options if name == "-J"]
    if jumps:
        found = _jump_endpoint(jumps[0])
        if found is None:
            return CommandHop(program=program.name, why=f"cannot read -J {jumps[0]!r}")
        return CommandHop(program=program.name, proxy_type="ssh", host=found[0],
                          port=found[1])
    target = args[0].removeprefix("ssh://").rsplit("@", 1)[-1]
    found = _host_port(target, 22)
    if found is None:
        return CommandHop(program=program.name, why=f"cannot read the jump host {args[0]!r}")
    port = found[1]
    for name, value in options:
        if name == "-p" and value.isdigit():
            port = int(value)
        elif name == "-o" and value.lower().replace(" ", "=").startswith("port="):
            port = int(value.split("=", 1)[1]) if value.split("=", 1)[1].isdigit() else port
    kept = tuple(part for name, value in options if name in ("-F", "-o")
                 for part in (name, value))
    return CommandHop(program=program.name, proxy_type="ssh", host=found[0], port=port,
                      jump_options=kept)


def parse_proxy_command(command: str) -> CommandHop:
    """The first hop of an expanded proxy command (its ``%h``/``%p`` already replaced: see
    :func:`expand_tokens`), or why none is known (``why``; ``program`` "" when the program
    is not one of :data:`PROGRAMS`)."""
    words = _words(command)
    if not words:
        return CommandHop(why="the command cannot be read" if words is None else "no command")
    name = os.path.basename(words[0])
    program = next((p for p in PROGRAMS.values() if name in p.programs), None)
    if program is None:
        return CommandHop(why=f"unrecognised program {name!r}")
    if program.style == "positional":
        args = [w for w in words[1:] if not w.startswith("-")]
        if len(args) < 2 or not args[1].isdigit():
            return CommandHop(program=program.name, why=f"{program.name}: no proxy host and port")
        return _with_port(program, program.types.get("positional", "http"),
                          f"{args[0]}:{args[1]}")
    if program.style == "ssh":
        return _ssh_hop(program, words[1:])
    return _option_hop(program, words[1:])


def parse_proxy_script(text: str, host: str, port: int) -> CommandHop:
    """The first hop of a ``core.gitProxy`` script (git runs it as ``command host port``):
    its first line that runs a recognised program, ``$1``/``$2``/``$@`` replaced."""
    tried = CommandHop(why="no line of the script runs a recognised proxy program")
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        line = re.sub(r'"?\$(?:\{)?(@|\*)(?:\})?"?', f"{host} {port}", line)
        line = re.sub(r"\$(?:\{)?1(?:\})?", host, line)
        line = re.sub(r"\$(?:\{)?2(?:\})?", str(port), line)
        found = parse_proxy_command(line)
        if found.program:
            return found
    return tried


def git_proxy_command(host: str, values: list[str], env_command: str | None
                      ) -> tuple[str, str] | None:
    """``(command, setting)`` git runs for a git:// ``host`` (git-config(1) core.gitProxy):
    ``GIT_PROXY_COMMAND`` for every host; else the first ``core.gitProxy`` value that matches,
    ``COMMAND for DOMAIN`` only for hosts ending in ``DOMAIN`` at a dot, ``none`` no proxy;
    None when no proxy is used."""
    if env_command:
        return env_command, "GIT_PROXY_COMMAND"
    for value in values:
        command, sep, domain = value.partition(" for ")
        if sep and not (host == domain or host.endswith("." + domain)):
            continue
        command = command.strip()
        return (command, "core.gitProxy") if command and command != "none" else None
    return None
