"""Each protocol's first hop, resolved the way git does, and a forward proxy's own words.

HTTP(S): ``http[.<url>].proxy``, else ``https_proxy`` / ``all_proxy`` (``http_proxy`` for an
``http://`` remote), skipped for ``no_proxy`` hosts (:func:`credentials.proxy_for`, the
native probes' reading). The proxy is then asked a plain ``GET http://<proxy>/`` (not a
CONNECT: nothing reaches the server), bounded to :data:`ASK_TIMEOUT_S` and
:data:`ASK_MAX_BYTES`; its status, ``Server``, ``Via`` and error page are recorded.
A ``socks4[a]://`` / ``socks5[h]://`` proxy (git hands it to libcurl) is a SOCKS hop, not
asked anything. SSH: ``ssh -G`` for the host, with the probe's ``GIT_SSH_COMMAND`` /
``core.sshCommand`` options, names any ``ProxyJump`` / ``ProxyCommand``; a ``ProxyCommand`` is
read for its first hop (:func:`gitnetdiag.hops.parse_proxy_command`; ``ssh -W``'s jump host
resolved by ``ssh -G`` too), an unrecognised one recorded as such (``unplaced``). git://: the
command of ``GIT_PROXY_COMMAND``, else of the first ``core.gitProxy`` that matches the host
(``COMMAND for DOMAIN``, ``none``), as git-config(1) says; git runs it as ``command host port``
(no shell), so the script it names is read for a line that runs a recognised program.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Literal
from urllib.parse import urlsplit

from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.hops import (
    CommandHop,
    FirstHop,
    ProxyAnswer,
    endpoint_text,
    expand_tokens,
    git_proxy_command,
    leg_endpoint,
    parse_proxy_answer,
    parse_proxy_command,
    parse_proxy_script,
    ssh_proxy_of,
)
from gitnetdiag.probe.credentials import bypassed, proxy_setting, proxy_url_parts
from gitnetdiag.proc import run

ASK_TIMEOUT_S = 3.0
"""Bound of the whole plain request to the proxy (connect, send, read)."""
ASK_MAX_BYTES = 8192
"""Bytes of its answer read at most: the head and the start of an error page."""
SSH_G_TIMEOUT_S = 10.0
SCRIPT_MAX_BYTES = 65536
"""A ``core.gitProxy`` script larger than this is not read (not a small wrapper)."""


def ask_proxy(host: str, port: int, timeout_s: float = ASK_TIMEOUT_S) -> ProxyAnswer:
    """The proxy's answer to ``GET http://host:port/`` sent to itself: a request for the
    proxy's own address, which a forward proxy answers with its own error page and headers."""
    deadline = time.monotonic() + timeout_s
    request = (f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\n"
               "User-Agent: gitnetdiag\r\nConnection: close\r\n\r\n").encode()
    received = b""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(request)
            while len(received) < ASK_MAX_BYTES and (left := deadline - time.monotonic()) > 0:
                sock.settimeout(left)
                chunk = sock.recv(ASK_MAX_BYTES - len(received))
                if not chunk:
                    break
                received += chunk
    except OSError as exc:
        if not received:
            return ProxyAnswer(error=f"no answer from {host}:{port}: {exc}")
    return parse_proxy_answer(received)


def http_first_hop(protocol: str, url: str, env: Mapping[str, str]) -> FirstHop:
    """``url``'s first hop for git over HTTP(S): an HTTP proxy asked who it is, a SOCKS proxy
    recorded as such."""
    setting = proxy_setting(url, env)
    if setting is None or bypassed(url, env):
        return FirstHop(protocol=protocol)
    configured, source = setting
    scheme, host, port = proxy_url_parts(configured)
    if not host:
        return FirstHop(protocol=protocol)
    address = endpoint_text(host, port)
    if scheme.startswith("socks"):
        return FirstHop(protocol=protocol, kind="socks-proxy", proxy=address, source=source,
                        leg=address, proxy_type=scheme)
    answer = ask_proxy(host, port) if scheme == "http" else None  # https: TLS to the proxy
    return FirstHop(protocol=protocol, kind="http-proxy", proxy=address, source=source,
                    answer=answer, leg=address, proxy_type=scheme)


def _ssh_target(url: str) -> list[str]:
    """``ssh -G`` arguments naming the URL's user, host and port."""
    if "://" in url:
        parts = urlsplit(url)
        args = ["-p", str(parts.port)] if parts.port else []
        user = f"{parts.username}@" if parts.username else ""
        return [*args, f"{user}{parts.hostname}"]
    return [url.split(":", 1)[0]]


def _ssh_g(argv: list[str], target: list[str], env: Mapping[str, str]) -> str:
    done = run([*argv, "-G", *target], what="ssh -G", env=env, check=False,
               timeout_s=SSH_G_TIMEOUT_S, missing_hint="install the OpenSSH client")
    return done.stdout if done.returncode == 0 else ""


def _ssh_g_value(output: str, key: str) -> str:
    return next((line.split(" ", 1)[1].strip() for line in output.splitlines()
                 if line.lower().startswith(key + " ")), "")


def _jump_resolved(found: CommandHop, env: Mapping[str, str]) -> CommandHop:
    """``ssh -W``'s jump host as that ssh (a process of its own: its options alone) reaches
    it: ``ssh -G`` with its ``-F`` / ``-o`` (HostName, Port; its own ProxyJump's first host)."""
    output = _ssh_g(["ssh", *found.jump_options], [found.host], env)
    if not output:
        return found
    jump = ssh_proxy_of(output)
    if jump is not None and jump[1] == "proxyjump":
        first = leg_endpoint(FirstHop(protocol="ssh", kind="ssh-proxy", proxy=jump[0],
                                      source="ssh -G proxyjump"), (found.host, found.port))
        if first is not None:
            return replace(found, host=first[0], port=first[1])
    if jump is not None:
        return replace(found, why=f"the jump host {found.host} has a ProxyCommand of its own")
    port = _ssh_g_value(output, "port")
    return replace(found, host=_ssh_g_value(output, "hostname") or found.host,
                   port=int(port) if port.isdigit() else found.port)


def command_hop(protocol: str, kind: Literal["ssh-proxy", "git-proxy"], command: str,
                found: CommandHop, source: str) -> FirstHop:
    """The first hop a proxy command's words named, or why the capture cannot be placed."""
    if found.placed:
        return FirstHop(protocol=protocol, kind=kind, proxy=command, source=source,
                        leg=endpoint_text(found.host, found.port), proxy_type=found.proxy_type,
                        program=found.program)
    why = found.why if found.program else "not a proxy command gitnetdiag recognises"
    return FirstHop(protocol=protocol, kind=kind, proxy=command, source=source,
                    program=found.program, proxy_type=found.proxy_type,
                    unplaced=f"{why}: first hop unknown, not captured")


def ssh_first_hop(url: str, ssh_command: str | None, env: Mapping[str, str]) -> FirstHop:
    """The SSH remote's first hop from ``ssh -G`` with the probe's ssh command options."""
    command = ssh_command or env.get("GIT_SSH_COMMAND") or ""
    if not command:
        done = run(["git", "config", "core.sshCommand"], what="git config", env=env,
                   check=False, timeout_s=SSH_G_TIMEOUT_S)
        command = done.stdout.strip() if done.returncode == 0 else ""
    argv = shlex.split(command) if command else ["ssh"]
    if os.path.basename(argv[0]) != "ssh":
        return FirstHop(protocol="ssh", kind="ssh-proxy", proxy=command, source="core.sshCommand",
                        unplaced="core.sshCommand is not ssh: first hop unknown, not captured"
                        ) if command else FirstHop(protocol="ssh")
    output = _ssh_g(argv, _ssh_target(url), env)
    found = ssh_proxy_of(output) if output else None
    if found is None:
        return FirstHop(protocol="ssh")
    value, key = found
    via_command = command and any(key in arg.lower() or arg == "-J" for arg in argv)
    source = "core.sshCommand" if via_command else f"ssh -G {key}"
    if key == "proxyjump":
        hop = FirstHop(protocol="ssh", kind="ssh-proxy", proxy=value, source=source,
                       proxy_type="ssh")
        first = leg_endpoint(hop, ("", 0))
        return replace(hop, leg=endpoint_text(*first)) if first else hop
    host, port = _ssh_g_value(output, "hostname"), _ssh_g_value(output, "port")
    expanded = expand_tokens(value, host, int(port) if port.isdigit() else 22,
                             _ssh_g_value(output, "user"))
    parsed = parse_proxy_command(expanded)
    if parsed.placed and parsed.proxy_type == "ssh":
        parsed = _jump_resolved(parsed, env)
    return command_hop("ssh", "ssh-proxy", value, parsed, source)


def _script_hop(command: str, host: str, port: int, env: Mapping[str, str]) -> CommandHop:
    """What the program ``core.gitProxy`` names says of its first hop: a recognised program
    itself, else the script it is, read for a line that runs one."""
    path = shutil.which(command, path=env.get("PATH")) or command
    try:
        with open(path, "rb") as handle:
            text = handle.read(SCRIPT_MAX_BYTES + 1)
    except OSError as exc:
        return CommandHop(why=f"cannot read {command}: {exc.strerror}")
    if b"\0" in text or len(text) > SCRIPT_MAX_BYTES:
        direct = parse_proxy_command(f"{shlex.quote(command)} {host} {port}")
        return direct if direct.program else CommandHop(why=f"{command} is not a script")
    return parse_proxy_script(text.decode(errors="replace"), host, port)


def git_first_hop(url: str, env: Mapping[str, str]) -> FirstHop:
    """git://'s first hop: the proxy command git would run for the host, read."""
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 9418
    values: list[str] = []
    if not env.get("GIT_PROXY_COMMAND"):
        done = run(["git", "config", "--get-all", "core.gitProxy"], what="git config",
                   env=env, check=False, timeout_s=SSH_G_TIMEOUT_S)
        values = done.stdout.splitlines() if done.returncode == 0 else []
    chosen = git_proxy_command(host, values, env.get("GIT_PROXY_COMMAND"))
    if chosen is None:
        return FirstHop(protocol="git")
    command, source = chosen
    return command_hop("git", "git-proxy", command, _script_hop(command, host, port, env),
                       source)


def first_hop(protocol: str, url: str, ssh_command: str | None = None,
              env: Mapping[str, str] | None = None) -> FirstHop:
    """One protocol's first hop; a lookup that fails leaves it direct (the transfers say
    whether the path worked)."""
    environ = dict(os.environ if env is None else env)
    try:
        if protocol in ("h1", "h2"):
            return http_first_hop(protocol, url, environ)
        if protocol == "ssh":
            return ssh_first_hop(url, ssh_command, environ)
        if protocol == "git":
            return git_first_hop(url, environ)
    except GitnetdiagError:
        pass
    return FirstHop(protocol=protocol)
