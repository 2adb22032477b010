"""Bring the reproduction lab up and down (the I/O side of the lab).

Topology (one instance; several instances can coexist, each closed in its
own namespaces, so they may reuse the same addresses)::

    <prefix>client          <prefix>router                <prefix>server
    veth-c 198.18.1.2 ---- veth-cr 198.18.1.1
                            veth-sr 198.18.2.1 ---------- veth-s 198.18.2.2
                            FORWARD: reset / loss / NFQUEUE delay      Apache :443 (h2, TLS)
                            tbf rate limit on both legs                TLS edge :8443 (--edge)
                                                                       Apache :8080 on lo
                                                                       sshd :22, git :9418
                                                      forward-proxy*: tinyproxy 198.18.2.3:8888
                                                      ssh-jump-host: jump sshd 198.18.2.4:22

198.18.0.0/15 is the range set aside for benchmarking (RFC 2544); it only
exists inside the lab's namespaces.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from gitnetdiag.errors import GitnetdiagError, LabError
from gitnetdiag.lab import (
    edgefaults,
    fetchlab,
    h2window,
    idlefaults,
    pathfaults,
    pmtufix,
    proxyfaults,
    proxyhosts,
    slowclient,
    slowdisk,
)
from gitnetdiag.lab.config import LabPaths
from gitnetdiag.lab.edges import EDGE_PROGRAMS
from gitnetdiag.lab.httpauth import make_http_auth
from gitnetdiag.lab.netns import Namespaces
from gitnetdiag.lab.provision import (
    ensure_user,
    make_pki,
    make_repo,
    make_ssh_keys,
    remove_user_if_ours,
)
from gitnetdiag.lab.servers import (
    SERVICE_USER,
    alive,
    log_tail,
    nsexec,
    package_parent,
    spawn,
    start_servers,
    wait_listening,
    write_configs,
)
from gitnetdiag.lab.spec import (
    EDGE_BACKEND_RATE,
    EDGE_TEMP_BYTES_PER_S,
    EDGE_TEMP_IOPS,
    SLOW_DISK_BYTES_PER_S,
    LabSpec,
)
from gitnetdiag.model.lab.state import (
    CLIENT_IP,
    PORT_GIT,
    PORT_HTTPS_DIRECT,
    PORT_HTTPS_EDGE,
    PORT_SSH,
    ROUTER_CLIENT_SIDE_IP,
    ROUTER_SERVER_SIDE_IP,
    SERVER_IP,
    STATE_ROOT,
    LabEndpoints,
    LabState,
    load_state,
    save_state,
    state_dir,
)
from gitnetdiag.proc import require_program, require_root, run

NFQUEUE_NUM = 1
RMEM_DEFAULT_BYTES = 131072
REQUIRED_PROGRAMS = {
    "ip": "iproute2", "tc": "iproute2", "iptables-legacy": "iptables", "ethtool": "ethtool",
    "apache2": "apache2", "haproxy": "haproxy", "sshd": "openssh-server",
    "ssh-keygen": "openssh-client", "openssl": "openssl", "git": "git", "ss": "iproute2",
    "htpasswd": "apache2-utils",
}
EDGE_PACKAGES = {"haproxy": "haproxy", "nginx": "nginx", "caddy": "caddy", "h2o": "h2o",
                 "trafficserver": "trafficserver"}
Progress = Callable[[str], None]


def _quiet(_msg: str) -> None:
    return None


@contextlib.contextmanager
def _shared_files_lock() -> Iterator[None]:
    """Held while an instance creates its state directory or the service user, and while the
    last one down removes what instances share (the user, STATE_ROOT, the allowed congestion
    controls): two labs built or taken down at once (the suite's two lanes) must not race."""
    lock = STATE_ROOT.with_name(STATE_ROOT.name + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def existing_namespaces() -> set[str]:
    out = run(["ip", "netns", "list"], timeout_s=10).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def list_instances() -> list[str]:
    """Instances that have a state directory."""
    if not STATE_ROOT.is_dir():
        return []
    return sorted(p.name for p in STATE_ROOT.iterdir() if (p / "state.json").exists())


# --- building -----------------------------------------------------------------


def _build_topology(ns: Namespaces, spec: LabSpec) -> None:
    for name in ns.all():
        run(["ip", "netns", "add", name], timeout_s=10)
        nsexec(name, "ip", "link", "set", "lo", "up")
    run(["ip", "link", "add", "veth-c", "netns", ns.client, "type", "veth",
         "peer", "name", "veth-cr", "netns", ns.router], timeout_s=10)
    run(["ip", "link", "add", "veth-s", "netns", ns.server, "type", "veth",
         "peer", "name", "veth-sr", "netns", ns.router], timeout_s=10)
    links = (
        (ns.client, "veth-c", f"{CLIENT_IP}/24"),
        (ns.router, "veth-cr", f"{ROUTER_CLIENT_SIDE_IP}/24"),
        (ns.router, "veth-sr", f"{ROUTER_SERVER_SIDE_IP}/24"),
        (ns.server, "veth-s", f"{SERVER_IP}/24"),
    )
    for name, dev, addr in links:
        nsexec(name, "ip", "addr", "add", addr, "dev", dev)
        nsexec(name, "ip", "link", "set", dev, "up")
        # Real segments on the wire: no TSO/GSO super-packets in captures, no GRO in the router.
        nsexec(name, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", check=False)
    for address in proxyfaults.extra_addresses(spec):  # the proxy's, the jump host's
        nsexec(ns.server, "ip", "addr", "add", f"{address}/24", "dev", "veth-s")
    nsexec(ns.client, "ip", "route", "add", "default", "via", ROUTER_CLIENT_SIDE_IP)
    nsexec(ns.server, "ip", "route", "add", "default", "via", ROUTER_SERVER_SIDE_IP)
    nsexec(ns.router, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    # cubic, what most clients and servers run; BBR (this kernel's default) paces by its own
    # bandwidth estimate and would hide the loss fault.
    _allow_cubic()
    for name in (ns.client, ns.server):
        nsexec(name, "sysctl", "-qw", "net.ipv4.tcp_congestion_control=cubic")
    if spec.server_rmem_max is not None:
        set_server_rmem(ns, spec.server_rmem_max)
    _host_tcp_faults(ns, spec)

    if spec.edge_buffering:
        # The edge -> backend leg (loopback in the server namespace) gets the rate of a
        # far backend, so forwarding a buffered body takes time that grows with the pack.
        nsexec(ns.server, "tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate",
                EDGE_BACKEND_RATE, "burst", "128kb", "latency", "2s")
    if spec.rate:
        for dev in ("veth-cr", "veth-sr"):
            nsexec(ns.router, "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate",
                   spec.rate, "burst", "256kb", "latency", "200ms")


def set_server_rmem(ns: Namespaces, rmem_max: int) -> None:
    # The default stays at Linux's 128 KiB unless the max is below it (the clamp).
    nsexec(ns.server, "sysctl", "-qw",
           f"net.ipv4.tcp_rmem=4096 {min(RMEM_DEFAULT_BYTES, rmem_max)} {rmem_max}")


def _host_tcp_faults(ns: Namespaces, spec: LabSpec) -> None:
    """Per-namespace TCP sysctls of the transport faults."""
    if not spec.server_window_scaling:
        nsexec(ns.server, "sysctl", "-qw", "net.ipv4.tcp_window_scaling=0")
    if spec.tcp_buffer_max is not None:
        # Buffers far above the path's BDP: TCP never binds, the SSH channel window does.
        big = spec.tcp_buffer_max
        nsexec(ns.client, "sysctl", "-qw", f"net.ipv4.tcp_wmem=4096 16384 {big}")
        nsexec(ns.server, "sysctl", "-qw", f"net.ipv4.tcp_rmem=4096 131072 {big}")
    if spec.client_rmem is not None:  # the receiver of a fetch
        nsexec(ns.client, "sysctl", "-qw",
               "net.ipv4.tcp_rmem=" + " ".join(str(v) for v in spec.client_rmem))
    if spec.server_wmem is not None:  # the sender of a fetch
        nsexec(ns.server, "sysctl", "-qw",
               "net.ipv4.tcp_wmem=" + " ".join(str(v) for v in spec.server_wmem))


def _allow_cubic() -> None:
    key = "net.ipv4.tcp_allowed_congestion_control"
    current = run(["sysctl", "-n", key], timeout_s=10).stdout.split()
    if "cubic" in current:
        return
    saved = STATE_ROOT / "allowed_cc.orig"
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(" ".join(current) + "\n")
    run(["sysctl", "-qw", f"{key}={' '.join([*current, 'cubic'])}"], timeout_s=10)


def _restore_cubic() -> None:
    saved = STATE_ROOT / "allowed_cc.orig"
    if saved.exists():
        key = "net.ipv4.tcp_allowed_congestion_control"
        run(["sysctl", "-qw", f"{key}={saved.read_text().strip()}"], timeout_s=10, check=False)
        saved.unlink()


def router_rules(ns: Namespaces, spec: LabSpec) -> None:
    ipt = ("iptables-legacy", "-w", "5", "-A", "FORWARD")
    for rule in pathfaults.router_rules(spec):  # first: no later rule sees those SYNs
        nsexec(ns.router, *ipt, *rule)
    if spec.reset_port is not None and spec.reset_after_bytes is None:
        nsexec(ns.router, *ipt, "-p", "tcp", "-d", SERVER_IP, "--dport", str(spec.reset_port),
               "-j", "REJECT", "--reject-with", "tcp-reset")
    elif spec.reset_port is not None:
        # Past the byte count (conntrack accounting, client -> server), the client's next
        # segment and the server's next ACK are each answered with an RST: both ends see
        # the connection cut, as an IPS or a session-size limit does it.
        cut = ("-m", "connbytes", "--connbytes", f"{spec.reset_after_bytes}:",
               "--connbytes-dir", "original", "--connbytes-mode", "bytes",
               "-j", "REJECT", "--reject-with", "tcp-reset")
        port = str(spec.reset_port)
        nsexec(ns.router, *ipt, "-p", "tcp", "-d", SERVER_IP, "--dport", port, *cut)
        nsexec(ns.router, *ipt, "-p", "tcp", "-s", SERVER_IP, "--sport", port, *cut)
    if spec.syn_drop_share > 0:
        nsexec(ns.router, *ipt, "-p", "tcp", "-d", SERVER_IP, "--syn", "-m", "statistic",
                "--mode", "random", "--probability", f"{spec.syn_drop_share:.6f}", "-j", "DROP")
    # The black holes: a narrower link each way whose ICMP "fragmentation needed" never
    # comes back (full-size segments vanish, small ones pass); fixed, the MSS clamp.
    for rule in pmtufix.forward_rules(spec):
        nsexec(ns.router, *ipt, *rule)
    for rule in pmtufix.mangle_rules(spec):
        nsexec(ns.router, "iptables-legacy", "-w", "5", "-t", "mangle", "-A", "FORWARD", *rule)
    if spec.loss > 0:
        nsexec(ns.router, *ipt, "-m", "statistic", "--mode", "random",
               "--probability", f"{spec.loss:.6f}", "-j", "DROP")
    for argv in idlefaults.router_commands(spec):
        nsexec(ns.router, *argv)
    if spec.rtt_ms > 0:
        nsexec(ns.router, *ipt, "-j", "NFQUEUE", "--queue-num", str(NFQUEUE_NUM))


def _start_delay(ns: Namespaces, paths: LabPaths, spec: LabSpec) -> int | None:
    if spec.rtt_ms <= 0:
        return None
    argv = [sys.executable, "-m", "gitnetdiag.lab.delay",
            "--queue", str(NFQUEUE_NUM), "--delay-ms", f"{spec.rtt_ms / 2:g}"]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": package_parent()}
    return spawn(ns.router, argv, paths.run / "delay.log", env)


def _check_can_build(spec: LabSpec, ns: Namespaces, root: Path,
                     progress: Progress) -> None:
    """Root, the programs, and no lab of that name up; leftovers of a crashed one removed."""
    require_root("gitnetdiag lab up")
    for program, package in REQUIRED_PROGRAMS.items():
        require_program(program, package=package)
    require_program(EDGE_PROGRAMS[spec.edge], package=EDGE_PACKAGES[spec.edge])
    if (root / "state.json").exists():
        raise LabError(
            f"lab instance '{spec.instance}' is already up",
            hint="run 'gitnetdiag lab down' first, or pick another --name",
            reference="lab-already-up",
        )
    leftovers = existing_namespaces() & set(ns.all())
    if leftovers or root.exists():
        progress("removing leftovers of an earlier lab")
        down(spec.instance)


def _lab_state(spec: LabSpec, ns: Namespaces, paths: LabPaths, pids: dict[str, int],
               cgroup: str, client_path: str) -> LabState:
    """What ``lab up`` records of the lab it built (state.json)."""
    return LabState(
        instance=spec.instance, client_ns=ns.client, router_ns=ns.router,
        server_ns=ns.server, client_ip=CLIENT_IP, server_ip=SERVER_IP,
        rtt_ms=spec.rtt_ms, loss=spec.loss, rate=spec.rate, faults=list(spec.faults),
        endpoints=LabEndpoints(
            https_edge=f"https://{SERVER_IP}:{PORT_HTTPS_EDGE}/git/lab.git",
            https_direct=f"https://{SERVER_IP}:{PORT_HTTPS_DIRECT}/git/lab.git",
            ssh=f"ssh://{SERVICE_USER}@{SERVER_IP}:{PORT_SSH}{paths.repo}",
            git=f"git://{SERVER_IP}:{PORT_GIT}/lab.git",
        ),
        ca_file=str(paths.ca_cert), ssh_key=str(paths.client_key),
        # under ssh-jump-host the file that lists the jump host too: the native SSH probes
        # go through it, checking its key in the --ssh-known-hosts file
        ssh_known_hosts=str(proxyhosts.jump_known_hosts(paths) if proxyfaults.jump_host(spec)
                            else paths.known_hosts), ssh_user=SERVICE_USER,
        repo_path=str(paths.repo), edge_h2_window=spec.edge_h2_window,
        apache_h2_window=spec.apache_h2_window, hook_delay_s=spec.hook_delay_s,
        auth_delay_s=spec.auth_delay_s, reset_port=spec.reset_port, pids=pids,
        edge=spec.edge, edge_buffering=spec.edge_buffering,
        state_dir=str(paths.root),
        http_credential_store=str(paths.credential_store) if spec.http_auth else "",
        reset_after_bytes=spec.reset_after_bytes, fixed=list(spec.fixed),
        storage_cgroup=cgroup, client_path=client_path,
        client_env=proxyfaults.client_env(spec),
        ssh_config=str(paths.root / "ssh_config") if proxyfaults.jump_host(spec) else "",
    )


def _wait_delay_bound(paths: LabPaths, pid: int, timeout_s: float = 5.0) -> None:
    """Until the delay program prints that it holds its queue (it does once bound), or dies."""
    log = paths.run / "delay.log"
    deadline = time.monotonic() + timeout_s
    while alive(pid):
        if "delay: queue" in log.read_text(errors="replace") or time.monotonic() > deadline:
            return
        time.sleep(0.02)
    raise LabError("the delay program died: " + log_tail(paths.run, "delay"),
                   hint=f"see {log}", reference="lab-delay-failed")


def _shape_path(ns: Namespaces, paths: LabPaths, spec: LabSpec, state: LabState,
                progress: Progress) -> None:
    """The router's delay, loss and rate, and the faults' rules (after readiness)."""
    progress(f"router: {spec.rtt_ms:g} ms RTT, loss {spec.loss:.1%}, "
             f"rate {spec.rate or 'none'}")
    delay_pid = _start_delay(ns, paths, spec)
    if delay_pid is not None:
        state.pids["delay"] = delay_pid
        _wait_delay_bound(paths, delay_pid)
    router_rules(ns, spec)


def up(spec: LabSpec, progress: Progress = _quiet) -> LabState:
    """Build the lab described by ``spec``; on any failure remove what was made."""
    ns = Namespaces.of(spec.instance)
    root = state_dir(spec.instance)
    _check_can_build(spec, ns, root, progress)
    with _shared_files_lock():
        STATE_ROOT.mkdir(parents=True, exist_ok=True)
        STATE_ROOT.chmod(0o755)
        root.mkdir(mode=0o755)
    paths = LabPaths(root=root)
    try:
        progress("network namespaces, veth pairs, routes")
        _build_topology(ns, spec)
        progress("certificate authority and server certificate")
        make_pki(paths)
        progress("SSH keys, service user, bare repository")
        make_ssh_keys(paths)
        with _shared_files_lock():
            account = ensure_user()
        paths.home.mkdir(exist_ok=True)
        cgroup = ""
        if spec.slow_disk_iops is not None:
            progress("throttled loop device under the repositories")
            cgroup = slowdisk.attach(root, paths.srv, spec.instance, slowdisk.DiskLimits(
                iops=spec.slow_disk_iops, bytes_per_s=SLOW_DISK_BYTES_PER_S))
        io_cgroup = cgroup  # the group the servers start in: the throttle applies per group
        if spec.edge_response_buffering:
            progress("throttled loop device under the edge's temp files")
            io_cgroup = slowdisk.attach(root, paths.nginx_temp, spec.instance, slowdisk.DiskLimits(
                iops=EDGE_TEMP_IOPS, bytes_per_s=EDGE_TEMP_BYTES_PER_S), sync=True,
                fault="edge-response-buffering")
        client_path = (slowclient.attach(root, spec.instance, spec.client_cpu_share)
                       if spec.client_cpu_share is not None else "")
        if spec.client_h2_window is not None:
            progress(f"client git's HTTP/2 window held at {spec.client_h2_window} B (shim)")
            client_path = h2window.attach(
                root, spec.client_h2_window,
                next_git=f"{client_path}/git" if client_path else None)
        make_repo(paths, spec, account)
        files = write_configs(paths, spec)
        if spec.http_auth:
            make_http_auth(paths, account)
        progress(f"starting Apache, {spec.edge}, sshd, git daemon")
        servers_cgroup = (fetchlab.attach_server_cpu(root, spec.instance, spec.server_cpu_share)
                          if spec.server_cpu_share is not None else io_cgroup)
        pids = start_servers(ns, paths, spec, files, cgroup=servers_cgroup)
        wait_listening(ns, paths, pids, spec.edge)
        pids |= proxyhosts.start(ns.server, paths, spec, SERVICE_USER)
        state = _lab_state(spec, ns, paths, pids, cgroup, client_path)
        # Readiness before the faults: a reset port or loss must not fail the check.
        progress("waiting until every endpoint answers git ls-remote")
        wait_ready(state)
        _shape_path(ns, paths, spec, state, progress)
        save_state(state)
        return state
    except BaseException as exc:
        keep_logs = _collect_logs(paths)
        down(spec.instance)
        if isinstance(exc, GitnetdiagError) and keep_logs:
            exc.hint = (exc.hint + "; " if exc.hint else "") + f"logs kept in {keep_logs}"
        raise


def lab_git_env(state: LabState) -> dict[str, str]:
    """Environment for git in the client namespace: the lab's CA and SSH key, nothing inherited
    that could point git elsewhere (GIT_SSL_CAINFO, proxies)."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TERM")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(GIT_SSL_CAINFO=state.ca_file, GIT_SSH_COMMAND=state.ssh_command(),
               GIT_TERMINAL_PROMPT="0")
    if state.http_credential_store:
        # The lab's own credential, the way a user's helper would give it to git.
        env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="credential.helper",
                   GIT_CONFIG_VALUE_0=f"store --file={state.http_credential_store}")
    return env


def wait_ready(state: LabState, timeout_s: float = 45.0,
               urls: list[str] | None = None) -> None:
    """Apache takes seconds before its first TLS handshake; wait until all four ways in work
    (or the ``urls`` given)."""
    env = lab_git_env(state)
    deadline = time.monotonic() + timeout_s
    endpoints = state.endpoints
    pending = urls if urls is not None else [
        endpoints.https_direct, endpoints.https_edge, endpoints.ssh, endpoints.git]
    if edgefaults.edge_unanswered(state.faults):  # its 503 to everything is the fault
        pending = [url for url in pending if url != endpoints.https_edge]
    while pending:
        url = pending[0]
        # Under h2-frame-settings the edge drops HTTP/2 by design; it must answer HTTP/1.1.
        h1 = ["-c", "http.version=HTTP/1.1"] if (
            url == endpoints.https_edge and "h2-frame-settings" in state.faults) else []
        # Under edge-backend-errors every second request is redirected: protocol v0 lists
        # the refs in one GET, and git follows a redirect of that first request.
        if url == endpoints.https_edge and "edge-backend-errors" in state.faults:
            h1 += ["-c", "protocol.version=0"]
        proc = run(["ip", "netns", "exec", state.client_ns, "git", *h1, "ls-remote", url],
                   env=env, check=False, timeout_s=max(5.0, deadline - time.monotonic()))
        if proc.returncode == 0 and "refs/heads/main" in proc.stdout:
            pending.pop(0)
            continue
        if time.monotonic() > deadline:
            raise LabError(
                f"{url} does not answer git ls-remote: {proc.stderr.strip()[-300:]}",
                hint=f"see the logs in {Path(state.state_dir) / 'run'}",
                reference="lab-not-ready",
            )
        time.sleep(0.3)


def _collect_logs(paths: LabPaths) -> str:
    if not paths.run.is_dir():
        return ""
    dest = Path("/tmp") / f"gitnetdiag-lab-{paths.root.name}-logs"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(paths.run, dest, ignore=shutil.ignore_patterns("*.sock", "cgisock*"))
    return str(dest)


# --- tearing down ---------------------------------------------------------------


def _in_netns(pid: int, netns: str) -> bool:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(f"/run/netns/{netns}").st_ino
    except OSError:
        return False


def stop_pids(pids: list[int], timeout_s: float = 5.0) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    for pid in pids:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    for pid in pids:  # reap our own children so they do not linger as zombies
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def down(instance: str) -> list[str]:
    """Remove everything one lab instance made; safe to run twice. Returns what it removed."""
    require_root("gitnetdiag lab down")
    ns = Namespaces.of(instance)
    removed: list[str] = []
    present = existing_namespaces() & set(ns.all())
    for name in sorted(present):
        out = run(["ip", "netns", "pids", name], check=False, timeout_s=10).stdout
        pids = [int(p) for p in out.split() if p.isdigit() and _in_netns(int(p), name)]
        if pids:
            stop_pids(pids)
            removed.append(f"{len(pids)} process(es) in {name}")
    for name in sorted(present):
        run(["ip", "netns", "del", name], check=False, timeout_s=10)
        removed.append(f"namespace {name} (with its interfaces and iptables rules)")
    root = state_dir(instance)
    lab_paths = LabPaths(root=root)
    removed += slowdisk.detach(root, (lab_paths.srv, lab_paths.nginx_temp), instance)
    removed += fetchlab.detach_server_cpu(root, instance)
    removed += slowclient.detach(root, instance)
    if root.exists():
        shutil.rmtree(root, ignore_errors=True)
        removed.append(f"files in {root}")
    with _shared_files_lock():
        if STATE_ROOT.is_dir() and not any(p.is_dir() and p.name != "home"
                                           for p in STATE_ROOT.iterdir()):
            _restore_cubic()
            remove_user_if_ours()
            shutil.rmtree(STATE_ROOT, ignore_errors=True)
            removed.append("service user and shared lab files")
    return removed


def status(instance: str) -> tuple[LabState, dict[str, bool]]:
    """The running instance's state and which of its processes are alive."""
    state = load_state(instance)
    return state, {role: alive(pid) for role, pid in state.pids.items()}
