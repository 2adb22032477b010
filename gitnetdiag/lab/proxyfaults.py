"""Issue 43's lab hops: a forward proxy on the HTTPS path and an SSH jump host. The data
:mod:`gitnetdiag.lab.spec` merges into its tables, and what ``lab up`` starts for them.

- ``forward-proxy``: tinyproxy (the Debian package) listens on :data:`PROXY_IP` (an address
  of its own in the server namespace, across the router from the client: the leg
  client -> proxy has the lab's RTT, the leg proxy -> server is local). The lab's client
  gets ``https_proxy=http://PROXY_IP:PROXY_PORT`` (``LabState.client_env``, set by
  ``--lab`` as a user's shell sets it): git's HTTPS goes through a CONNECT tunnel. SSH and
  git:// go direct. Nothing is wrong with it: a run through it is healthy.
- ``forward-proxy-buffer``: the same proxy, every socket it creates or accepts given a
  small FIXED ``SO_RCVBUF`` / ``SO_SNDBUF`` of :data:`PROXY_SOCKET_BUFFER` by an
  ``LD_PRELOAD`` shim (``sockbuf_shim.c``; tinyproxy has no buffer setting). A fixed
  buffer is not autotuned: a push through it is held by the proxy's receive window, a
  clone by its send buffer, each about 64 KiB a round trip at 50 ms (~1.3 MB/s).
- ``ssh-jump-host``: a second sshd on :data:`JUMP_IP` (the jump host, across the router,
  ``AllowTcpForwarding yes``, no shell needed), and an ssh config the lab's probe runs
  ``ssh -F`` with: ``ProxyJump`` to it for the server's address. The SSH path is
  client -> jump host -> sshd.

None has a ``lab fix``: the proxy's buffer is the proxy's setting, not the lab's.
"""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.lab.httpfaults import FaultSettings
from gitnetdiag.model.lab.state import PORT_HTTPS_DIRECT, PORT_HTTPS_EDGE, PORT_SSH, SERVER_IP

PROXY_IP = "198.18.2.3"
"""The forward proxy's address (on the server namespace's link, beside the server's)."""
PROXY_PORT = 8888
"""tinyproxy's port (its package's default ``Port 8888``)."""
PROXY_SOCKET_BUFFER = 32768
"""``SO_RCVBUF`` / ``SO_SNDBUF`` the shim sets under ``forward-proxy-buffer``; Linux doubles
it (socket(7)): 64 KiB of buffer, as the ``tcp-rmem-clamp`` fault's 64 KiB ``tcp_rmem``."""
JUMP_IP = "198.18.2.4"
"""The SSH jump host's address."""

PROXY_FAULTS: dict[str, str] = {
    "forward-proxy": f"HTTPS goes through a tinyproxy forward proxy ({PROXY_IP}:{PROXY_PORT}, "
    "CONNECT, https_proxy set for the client); SSH and git:// go direct",
    "forward-proxy-buffer": f"HTTPS goes through a tinyproxy forward proxy ({PROXY_IP}:"
    f"{PROXY_PORT}) whose every socket has a fixed {PROXY_SOCKET_BUFFER} B SO_RCVBUF and "
    "SO_SNDBUF (an LD_PRELOAD shim; Linux doubles it, no autotuning); SSH goes direct",
    "ssh-jump-host": f"SSH reaches the server through a jump host ({JUMP_IP}, sshd allowing TCP "
    "forwarding) by ProxyJump in the ssh config the lab's probe uses",
}

PROXY_FAULT_CULPRIT: dict[str, str | None] = {
    "forward-proxy": None,
    "forward-proxy-buffer": "tcp-receive-window-clamp",
    "ssh-jump-host": None,
}
"""The culprit each must rank first under pushes (None: none, the run is healthy); kept
apart from :data:`~gitnetdiag.lab.expectations.FAULT_CULPRIT` (no recorded run in
``captures/``); ``tests/acceptance/test_proxy_lab.py`` runs them."""
PROXY_FETCH_CULPRIT: dict[str, str | None] = {
    "forward-proxy": None, "forward-proxy-buffer": "server-send-buffer", "ssh-jump-host": None}
"""The same under ``--direction fetch``: the proxy sends the clone from its fixed buffer."""

PROXY_FAULT_PROBE_ARGS: dict[str, tuple[str, ...]] = {
    "forward-proxy": ("--protocols", "h2,ssh"),
    "forward-proxy-buffer": ("--protocols", "h2,ssh"),
    "ssh-jump-host": ("--protocols", "ssh", "--size", "1MiB"),
}
"""How ``diagnose --lab`` exercises each (HTTPS through the proxy beside SSH direct)."""


def proxy_kind_of(faults: tuple[str, ...]) -> str | None:
    """``buffered``, ``plain`` or None: the forward proxy ``faults`` put on the path."""
    if "forward-proxy-buffer" in faults:
        return "buffered"
    return "plain" if "forward-proxy" in faults else None


def proxy_kind(spec: FaultSettings) -> str | None:
    return proxy_kind_of(spec.faults)


def jump_host(spec: FaultSettings) -> bool:
    return "ssh-jump-host" in spec.faults


def extra_addresses(spec: FaultSettings) -> list[str]:
    """The addresses the server namespace's link gets beside the server's."""
    return ([PROXY_IP] if proxy_kind(spec) else []) + ([JUMP_IP] if jump_host(spec) else [])


def tinyproxy_conf(run_dir: Path) -> str:
    """tinyproxy.conf: CONNECT to the server's HTTPS ports from the client's side only."""
    return f"""# gitnetdiag lab: forward proxy
Port {PROXY_PORT}
Listen {PROXY_IP}
Timeout 600
MaxClients 100
Allow 198.18.1.0/24
ConnectPort {PORT_HTTPS_EDGE}
ConnectPort {PORT_HTTPS_DIRECT}
LogLevel Info
LogFile "{run_dir / 'tinyproxy.log'}"
PidFile "{run_dir / 'tinyproxy.pid'}"
"""


def client_env(spec: FaultSettings) -> dict[str, str]:
    """What the lab client's environment gets (``--lab`` sets it): the proxy, as a user's
    shell profile exports it."""
    if proxy_kind(spec) is None:
        return {}
    proxy = f"http://{PROXY_IP}:{PROXY_PORT}"
    return {"https_proxy": proxy, "HTTPS_PROXY": proxy}


def jump_sshd_config(sshd_config: str, run_dir: Path) -> str:
    """The jump host's sshd: the server's sshd config on :data:`JUMP_IP`, forwarding on."""
    lines = []
    for line in sshd_config.splitlines():
        key = line.split(" ", 1)[0]
        if key == "ListenAddress":
            line = f"ListenAddress {JUMP_IP}"
        elif key == "PidFile":
            line = f"PidFile {run_dir / 'jump-sshd.pid'}"
        elif key == "AllowTcpForwarding":
            line = "AllowTcpForwarding yes\nPermitOpen any"
        lines.append(line)
    return "\n".join(lines) + "\n"


def ssh_client_config(client_key: Path, user: str, known_hosts: Path) -> str:
    """The ssh config the lab's probe runs ``ssh -F`` with: ProxyJump for the server, and
    the key and host keys for both (the jump's own ssh reads only this file)."""
    return f"""# gitnetdiag lab: ssh-jump-host fault
Host {SERVER_IP}
    ProxyJump {user}@{JUMP_IP}:{PORT_SSH}
Host *
    IdentityFile {client_key}
    IdentitiesOnly yes
    UserKnownHostsFile {known_hosts}
    StrictHostKeyChecking yes
    BatchMode yes
    ConnectTimeout 10
"""
