"""Each protocol's first hop, resolved the way git does, and a forward proxy's own words.

HTTP(S): ``http[.<url>].proxy``, else ``https_proxy`` / ``all_proxy`` (``http_proxy`` for an
``http://`` remote), skipped for ``no_proxy`` hosts (:func:`credentials.proxy_for`, the
native probes' reading). The proxy is then asked a plain ``GET http://<proxy>/`` (not a
CONNECT: nothing reaches the server), bounded to :data:`ASK_TIMEOUT_S` and
:data:`ASK_MAX_BYTES`; its status, ``Server``, ``Via`` and error page are recorded.
SSH: ``ssh -G`` for the host, with the probe's ``GIT_SSH_COMMAND`` / ``core.sshCommand``
options, names any ``ProxyJump`` / ``ProxyCommand``. git:// goes direct here (``core.gitProxy``
is a command, not a hop this reads).
"""

from __future__ import annotations

import os
import shlex
import socket
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.hops import FirstHop, ProxyAnswer, parse_proxy_answer, ssh_proxy_of
from gitnetdiag.probe.credentials import proxy_for, proxy_setting
from gitnetdiag.proc import run

ASK_TIMEOUT_S = 3.0
"""Bound of the whole plain request to the proxy (connect, send, read)."""
ASK_MAX_BYTES = 8192
"""Bytes of its answer read at most: the head and the start of an error page."""
SSH_G_TIMEOUT_S = 10.0


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
    """``url``'s first hop for git over HTTP(S), the proxy asked who it is."""
    warnings: list[str] = []
    proxy = proxy_for(url, env, warnings)
    if proxy is None:
        return FirstHop(protocol=protocol)
    setting = proxy_setting(url, env)
    return FirstHop(protocol=protocol, kind="http-proxy", proxy=f"{proxy.host}:{proxy.port}",
                    source=setting[1] if setting else "", answer=ask_proxy(proxy.host, proxy.port))


def _ssh_target(url: str) -> list[str]:
    """``ssh -G`` arguments naming the URL's user, host and port."""
    if "://" in url:
        parts = urlsplit(url)
        args = ["-p", str(parts.port)] if parts.port else []
        user = f"{parts.username}@" if parts.username else ""
        return [*args, f"{user}{parts.hostname}"]
    return [url.split(":", 1)[0]]


def ssh_first_hop(url: str, ssh_command: str | None, env: Mapping[str, str]) -> FirstHop:
    """The SSH remote's first hop from ``ssh -G`` with the probe's ssh command options."""
    command = ssh_command or env.get("GIT_SSH_COMMAND") or ""
    if not command:
        done = run(["git", "config", "core.sshCommand"], what="git config", env=env,
                   check=False, timeout_s=SSH_G_TIMEOUT_S)
        command = done.stdout.strip() if done.returncode == 0 else ""
    argv = shlex.split(command) if command else ["ssh"]
    if os.path.basename(argv[0]) != "ssh":
        return FirstHop(protocol="ssh", kind="ssh-proxy", proxy=command,
                        source="core.sshCommand") if command else FirstHop(protocol="ssh")
    done = run([*argv, "-G", *_ssh_target(url)], what="ssh -G", env=env, check=False,
               timeout_s=SSH_G_TIMEOUT_S, missing_hint="install the OpenSSH client")
    found = ssh_proxy_of(done.stdout) if done.returncode == 0 else None
    if found is None:
        return FirstHop(protocol="ssh")
    value, key = found
    via_command = command and any(key in arg.lower() or arg == "-J" for arg in argv)
    return FirstHop(protocol="ssh", kind="ssh-proxy", proxy=value,
                    source="core.sshCommand" if via_command else f"ssh -G {key}")


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
    except GitnetdiagError:
        pass
    return FirstHop(protocol=protocol)
