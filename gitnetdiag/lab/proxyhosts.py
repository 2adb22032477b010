"""What ``lab up`` starts for :mod:`gitnetdiag.lab.proxyfaults` (the I/O side): the forward
proxy (tinyproxy, its socket-buffer shim compiled with ``gcc`` under ``forward-proxy-buffer``)
and the SSH jump host's sshd, in the server namespace on their own addresses, and the ssh
config the lab's probe runs ``ssh -F`` with.

    <state dir>/tinyproxy.conf                 the proxy's config
    <state dir>/forward-proxy/sockbuf.so       the shim (LD_PRELOAD of tinyproxy)
    <state dir>/jump_sshd_config               the jump host's sshd
    <state dir>/jump_known_hosts, ssh_config   what the client's ssh reads for both hops
"""

from __future__ import annotations

import shutil
import time
from importlib import resources
from pathlib import Path

from gitnetdiag.errors import LabError
from gitnetdiag.lab.config import LabPaths
from gitnetdiag.lab.proxyfaults import (
    JUMP_IP,
    PROXY_IP,
    PROXY_PORT,
    PROXY_SOCKET_BUFFER,
    jump_host,
    jump_sshd_config,
    proxy_kind,
    ssh_client_config,
    tinyproxy_conf,
)
from gitnetdiag.lab.servers import _sshd_path, alive, log_tail, nsexec, spawn
from gitnetdiag.lab.spec import LabSpec
from gitnetdiag.model.lab.state import PORT_SSH
from gitnetdiag.proc import run

SHIM_SOURCE = "sockbuf_shim.c"
COMPILE_TIMEOUT_S = 60.0


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


def proxy_command(paths: LabPaths, spec: LabSpec) -> tuple[list[str], dict[str, str]]:
    """tinyproxy's argv and environment (the shim preloaded under ``forward-proxy-buffer``)."""
    conf = paths.root / "tinyproxy.conf"
    conf.write_text(tinyproxy_conf(paths.run))
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}
    if proxy_kind(spec) == "buffered":
        env["LD_PRELOAD"] = str(compile_shim(paths.root, PROXY_SOCKET_BUFFER))
    tinyproxy = shutil.which("tinyproxy", path=env["PATH"])
    if tinyproxy is None:
        raise LabError("the forward-proxy faults need tinyproxy",
                       hint="install the Debian package 'tinyproxy' (scripts/setup.sh does)")
    return [tinyproxy, "-d", "-c", str(conf)], env


def jump_known_hosts(paths: LabPaths) -> Path:
    """The known_hosts of the server and the jump host (both sshds share the host key)."""
    return paths.root / "jump_known_hosts"


def write_jump_files(paths: LabPaths, user: str) -> tuple[Path, Path]:
    """The jump sshd's config and the client's ssh config; returns their paths."""
    base = paths.root / "sshd_config"
    jump_conf = paths.root / "jump_sshd_config"
    jump_conf.write_text(jump_sshd_config(base.read_text(), paths.run))
    known = jump_known_hosts(paths)
    server_line = paths.known_hosts.read_text().strip()
    known.write_text(f"{server_line}\n{JUMP_IP} {server_line.split(' ', 1)[1]}\n")
    client_conf = paths.root / "ssh_config"
    client_conf.write_text(ssh_client_config(paths.client_key, user, known))
    return jump_conf, client_conf


def _listening(netns: str, address: str, port: int) -> bool:
    out = nsexec(netns, "ss", "-ltnH", f"src {address}:{port}", check=False)
    return bool(out.strip())


def start(server_ns: str, paths: LabPaths, spec: LabSpec, user: str,
          timeout_s: float = 15.0) -> dict[str, int]:
    """Start the proxy and the jump host the faults need in the server namespace (their
    addresses already on its link); returns their pids once each listens."""
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
