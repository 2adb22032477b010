"""The lab's servers in the server namespace: their configuration files, starting them
one role at a time, and waiting until each listens (used by ``lab up`` and ``lab fix``)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import time
from pathlib import Path

from gitnetdiag.errors import LabError
from gitnetdiag.lab import cgroups, clonefaults, config, edges, idlefaults
from gitnetdiag.lab.config import LabPaths
from gitnetdiag.lab.netns import Namespaces
from gitnetdiag.lab.spec import LabSpec
from gitnetdiag.model.lab.state import (
    PORT_GIT,
    PORT_HTTP_BACKEND,
    PORT_HTTPS_DIRECT,
    PORT_HTTPS_EDGE,
    PORT_SSH,
    SERVER_IP,
    STATE_ROOT,
)
from gitnetdiag.proc import run, start

SERVICE_USER = "gnd-git"


def nsexec(ns: str, *argv: str, check: bool = True, timeout_s: float = 30.0) -> str:
    return run(["ip", "netns", "exec", ns, *argv], check=check, timeout_s=timeout_s).stdout


def write_configs(paths: LabPaths, spec: LabSpec) -> dict[str, Path]:
    paths.bin.mkdir(parents=True, exist_ok=True)
    paths.run.mkdir(parents=True, exist_ok=True)
    cgi = paths.bin / "git-http-backend.cgi"
    cgi.write_text(config.http_backend_cgi(paths, clonefaults.cgi_lines(spec, paths.bin)
                                           + idlefaults.cgi_lines(spec, paths.bin)))
    cgi.chmod(0o755)
    slow_pack = paths.bin / clonefaults.SLOW_PACK_SCRIPT
    slow_pack.write_text(clonefaults.slow_pack_script())
    slow_pack.chmod(0o755)
    idle_pack = paths.bin / idlefaults.IDLE_PACK_SCRIPT
    idle_pack.write_text(idlefaults.idle_pack_script())
    idle_pack.chmod(0o755)
    if spec.auth_delay_s > 0:
        keys = paths.bin / "slow-auth-keys"
        keys.write_text(config.slow_auth_keys(paths, spec.auth_delay_s))
        keys.chmod(0o755)
    files = {
        "apache": paths.root / "apache2.conf",
        "edge": paths.root / edges.edge_config_name(spec.edge),
        "sshd": paths.root / "sshd_config",
    }
    files["apache"].write_text(
        config.apache_conf(paths, spec, server_ip=SERVER_IP, user=SERVICE_USER))
    files["edge"].write_text(_edge_config(paths, spec))
    files["sshd"].write_text(
        config.sshd_config(paths, spec, server_ip=SERVER_IP, user=SERVICE_USER))
    return files


def _edge_config(paths: LabPaths, spec: LabSpec) -> str:
    if spec.edge == "nginx":
        for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (paths.nginx_temp / sub).mkdir(parents=True, exist_ok=True)
        account = pwd.getpwnam(SERVICE_USER)
        run(["chown", "-R", f"{account.pw_uid}:{account.pw_gid}",
             str(paths.nginx_temp)])
        return edges.nginx_conf(paths, spec, server_ip=SERVER_IP, user=SERVICE_USER)
    if spec.edge == "caddy":
        return edges.caddyfile(paths, spec, server_ip=SERVER_IP)
    if spec.edge == "h2o":
        return edges.h2o_conf(paths, spec, server_ip=SERVER_IP, user=SERVICE_USER)
    if spec.edge == "trafficserver":
        _trafficserver_tree(paths, spec)
        return edges.trafficserver_runroot(paths)
    return config.haproxy_cfg(paths, spec, server_ip=SERVER_IP)


TRAFFICSERVER_PACKAGE_CONFIG = Path("/etc/trafficserver")
"""The Debian package's configuration, copied into each lab instance's private directory."""


def _trafficserver_tree(paths: LabPaths, spec: LabSpec) -> None:
    """Traffic Server's private directories: the package's configuration copied, the lab's
    own files written over it (``lab fix`` rewrites them in place)."""
    dirs = edges.trafficserver_dirs(paths)
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    shutil.copytree(TRAFFICSERVER_PACKAGE_CONFIG, dirs["sysconfdir"], dirs_exist_ok=True)
    for name, text in edges.trafficserver_files(paths, spec, server_ip=SERVER_IP).items():
        (dirs["sysconfdir"] / name).write_text(text)


def spawn(ns: str, argv: list[str], log: Path, env: dict[str, str] | None = None,
           cgroup: str = "") -> int:
    command = ["ip", "netns", "exec", ns, *argv]
    with open(log, "ab") as out:
        proc = start(cgroups.in_cgroup(cgroup, command) if cgroup else command,
                     isolate="session", stdout=out, stderr=subprocess.STDOUT, env=env,
                     outlive=True)
    return proc.pid


SERVER_ROLES = ("apache", "edge", "sshd", "git")
"""The lab's servers; ``edge`` is the TLS edge the spec names (HAProxy, nginx, Caddy, h2o,
Traffic Server)."""


def _server_command(role: str, paths: LabPaths, spec: LabSpec,
                    files: dict[str, Path]) -> tuple[list[str], str, dict[str, str]]:
    """argv, log file name and environment of one of the lab's servers."""
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C",
           "HOME": str(STATE_ROOT / "home")}
    srv = str(paths.srv)
    if role == "apache":
        return ["apache2", "-f", str(files["apache"]), "-DFOREGROUND"], "apache.log", env
    if role == "edge":
        return (edges.edge_argv(spec.edge, files["edge"]), f"{spec.edge}.log",
                {**env, **edges.edge_env(paths)})
    if role == "sshd":
        return ([_sshd_path(env["PATH"]), "-D", "-e", "-f", str(files["sshd"])], "sshd.log",
                env)
    if spec.real_git_daemon:
        return ([
            "git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
            f"--base-path={srv}", f"--listen={SERVER_IP}", f"--port={PORT_GIT}",
            f"--user={SERVICE_USER}", f"--group={SERVICE_USER}", srv,
        ], "git-daemon.log", env)
    return ([
        sys.executable, "-m", "gitnetdiag.lab.inetd", "--listen", SERVER_IP,
        "--port", str(PORT_GIT), "--backlog", str(spec.git_backlog),
        "--user", SERVICE_USER, "--base-path", srv,
        *(["--relay"] if spec.server_wmem is not None else []),
    ], "git-inetd.log", {**env, "PYTHONPATH": package_parent()})


def start_servers(ns: Namespaces, paths: LabPaths, spec: LabSpec,
                  files: dict[str, Path], roles: tuple[str, ...] = SERVER_ROLES,
                  cgroup: str = "") -> dict[str, int]:
    """Start ``roles``; ``cgroup`` (slow-storage's throttled blkio group) holds them all."""
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation dir
    pids = {}
    for role in roles:
        argv, log, env = _server_command(role, paths, spec, files)
        pids[spec.edge if role == "edge" else role] = spawn(ns.server, argv, paths.run / log,
                                                             env, cgroup)
    return pids


def _sshd_path(search_path: str) -> str:
    """sshd insists on being started by its absolute path."""
    return shutil.which("sshd", path=search_path) or "/usr/sbin/sshd"


def package_parent() -> str:
    return str(Path(__file__).resolve().parents[2])


def wait_listening(ns: Namespaces, paths: LabPaths, pids: dict[str, int], edge: str,
                    timeout_s: float = 30.0) -> None:
    wanted = {PORT_HTTPS_DIRECT: "apache", PORT_HTTP_BACKEND: "apache",
              PORT_HTTPS_EDGE: edge, PORT_SSH: "sshd", PORT_GIT: "git"}
    deadline = time.monotonic() + timeout_s
    while True:
        out = nsexec(ns.server, "ss", "-ltnH", check=False)
        ports = {int(line.split()[3].rsplit(":", 1)[1])
                 for line in out.splitlines() if line.strip()}
        missing = [p for p in wanted if p not in ports]
        if not missing:
            return
        dead = [role for role, pid in pids.items() if not alive(pid)]
        if dead or time.monotonic() > deadline:
            role = dead[0] if dead else wanted[missing[0]]
            raise LabError(
                f"{role} did not start (port {missing[0] if missing else '?'} not listening): "
                + log_tail(paths.run, role),
                hint=f"see the logs in {paths.run}",
                reference="lab-server-failed",
            )
        time.sleep(0.2)


def log_tail(run_dir: Path, role: str) -> str:
    for name in (f"{role}.log", "git-daemon.log", "git-inetd.log", "apache-error.log"):
        p = run_dir / name
        if p.exists() and p.stat().st_size and (name.startswith(role) or role == "apache"):
            lines = p.read_text(errors="replace").strip().splitlines()
            if lines:
                return lines[-1][:300]
    return "no log output"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
