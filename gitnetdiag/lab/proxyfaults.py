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

import shutil
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from gitnetdiag.errors import LabError
from gitnetdiag.lab.httpfaults import FaultSettings
from gitnetdiag.model.lab.state import PORT_HTTPS_DIRECT, PORT_HTTPS_EDGE, PORT_SSH, SERVER_IP
from gitnetdiag.proc import run

if TYPE_CHECKING:  # config imports spec, which imports this module's tables
    from gitnetdiag.lab.config import LabPaths

PROXY_IP = "198.18.2.3"
"""The forward proxy's address (on the server namespace's link, beside the server's)."""
PROXY_PORT = 8888
"""tinyproxy's port (its package's default ``Port 8888``)."""
PROXY_SOCKET_BUFFER = 32768
"""``SO_RCVBUF`` / ``SO_SNDBUF`` the shim sets under ``forward-proxy-buffer``; Linux doubles
it (socket(7)): 64 KiB of buffer, as the ``tcp-rmem-clamp`` fault's 64 KiB ``tcp_rmem``."""
JUMP_IP = "198.18.2.4"
"""The SSH jump host's address."""
SHIM_SOURCE = "sockbuf_shim.c"
COMPILE_TIMEOUT_S = 60.0

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


def tinyproxy_conf(paths: LabPaths) -> str:
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
LogFile "{paths.run / 'tinyproxy.log'}"
PidFile "{paths.run / 'tinyproxy.pid'}"
"""


def compile_shim(root: Path, buffer_bytes: int) -> Path:
    """Build the socket-buffer shim into the state directory; returns its path."""
    gcc = shutil.which("gcc")
    if gcc is None:
        raise LabError("the forward-proxy-buffer fault needs gcc to build its shim",
                       hint="install the Debian package 'gcc' (scripts/setup.sh does)")
    out = root / "forward-proxy" / "sockbuf.so"
    out.parent.mkdir(exist_ok=True)
    source = out.parent / SHIM_SOURCE
    source.write_text(resources.files("gitnetdiag.lab").joinpath(SHIM_SOURCE).read_text())
    proc = run([gcc, "-shared", "-fPIC", "-O2", "-Wall", "-Werror",
                f"-DGND_SOCKET_BUFFER={int(buffer_bytes)}", "-o", str(out), str(source),
                "-ldl"], check=False, timeout_s=COMPILE_TIMEOUT_S)
    if proc.returncode != 0 or not out.exists():
        raise LabError("the socket-buffer shim did not compile: "
                       + (proc.stderr.strip().splitlines() or ["no output"])[-1],
                       hint=f"see {source}; gcc must build a shared object")
    return out


def proxy_command(paths: LabPaths, spec: FaultSettings) -> tuple[list[str], dict[str, str]]:
    """tinyproxy's argv and environment (the shim preloaded under ``forward-proxy-buffer``)."""
    conf = paths.root / "tinyproxy.conf"
    conf.write_text(tinyproxy_conf(paths))
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}
    if proxy_kind(spec) == "buffered":
        env["LD_PRELOAD"] = str(compile_shim(paths.root, PROXY_SOCKET_BUFFER))
    tinyproxy = shutil.which("tinyproxy", path=env["PATH"])
    if tinyproxy is None:
        raise LabError("the forward-proxy faults need tinyproxy",
                       hint="install the Debian package 'tinyproxy' (scripts/setup.sh does)")
    return [tinyproxy, "-d", "-c", str(conf)], env


def client_env(spec: FaultSettings) -> dict[str, str]:
    """What the lab client's environment gets (``--lab`` sets it): the proxy, as a user's
    shell profile exports it."""
    if proxy_kind(spec) is None:
        return {}
    proxy = f"http://{PROXY_IP}:{PROXY_PORT}"
    return {"https_proxy": proxy, "HTTPS_PROXY": proxy}


def jump_sshd_config(sshd_config: str, paths: LabPaths) -> str:
    """The jump host's sshd: the server's sshd config on :data:`JUMP_IP`, forwarding on."""
    lines = []
    for line in sshd_config.splitlines():
        key = line.split(" ", 1)[0]
        if key == "ListenAddress":
            line = f"ListenAddress {JUMP_IP}"
        elif key == "PidFile":
            line = f"PidFile {paths.run / 'jump-sshd.pid'}"
        elif key == "AllowTcpForwarding":
            line = "AllowTcpForwarding yes\nPermitOpen any"
        lines.append(line)
    return "\n".join(lines) + "\n"


def ssh_client_config(paths: LabPaths, user: str, known_hosts: Path) -> str:
    """The ssh config the lab's probe runs ``ssh -F`` with: ProxyJump for the server, and
    the key and host keys for both (the jump's own ssh reads only this file)."""
    return f"""# gitnetdiag lab: ssh-jump-host fault
Host {SERVER_IP}
    ProxyJump {user}@{JUMP_IP}:{PORT_SSH}
Host *
    IdentityFile {paths.client_key}
    IdentitiesOnly yes
    UserKnownHostsFile {known_hosts}
    StrictHostKeyChecking yes
    BatchMode yes
    ConnectTimeout 10
"""


def write_jump_files(paths: LabPaths, user: str) -> tuple[Path, Path]:
    """The jump sshd's config and the client's ssh config; returns their paths."""
    base = paths.root / "sshd_config"
    jump_conf = paths.root / "jump_sshd_config"
    jump_conf.write_text(jump_sshd_config(base.read_text(), paths))
    known = paths.root / "jump_known_hosts"
    server_line = paths.known_hosts.read_text().strip()
    known.write_text(f"{server_line}\n{JUMP_IP} {server_line.split(' ', 1)[1]}\n")
    client_conf = paths.root / "ssh_config"
    client_conf.write_text(ssh_client_config(paths, user, known))
    return jump_conf, client_conf


def _listening(netns: str, address: str, port: int) -> bool:
    from gitnetdiag.lab.servers import nsexec

    out = nsexec(netns, "ss", "-ltnH", f"src {address}:{port}", check=False)
    return bool(out.strip())


def start(server_ns: str, paths: LabPaths, spec: FaultSettings, user: str,
          timeout_s: float = 15.0) -> dict[str, int]:
    """Start the proxy and the jump host the faults need in the server namespace (their
    addresses already on its link); returns their pids once each listens."""
    import time

    from gitnetdiag.lab.servers import _sshd_path, alive, log_tail, spawn

    pids: dict[str, int] = {}
    wanted: dict[str, tuple[str, int]] = {}
    if proxy_kind(spec):
        argv, env = proxy_command(paths, spec)
        pids["tinyproxy"] = spawn(server_ns, argv, paths.run / "tinyproxy-stderr.log", env)
        wanted["tinyproxy"] = (PROXY_IP, PROXY_PORT)
    if jump_host(spec):
        jump_conf, _ = write_jump_files(paths, user)
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}
        pids["jump-sshd"] = spawn(server_ns, [_sshd_path(env["PATH"]), "-D", "-e", "-f",
                                              str(jump_conf)], paths.run / "jump-sshd.log", env)
        wanted["jump-sshd"] = (JUMP_IP, PORT_SSH)
    deadline = time.monotonic() + timeout_s
    for role, (address, port) in wanted.items():
        while not _listening(server_ns, address, port):
            if not alive(pids[role]) or time.monotonic() > deadline:
                raise LabError(f"{role} did not start ({address}:{port} not listening): "
                               + log_tail(paths.run, role), hint=f"see the logs in {paths.run}",
                               reference="lab-server-failed")
            time.sleep(0.1)
    return pids
