"""Apply the fix of a running lab's faults in place (``gitnetdiag lab fix``).

What each fault's fix sets is the pure mapping :func:`gitnetdiag.lab.spec.fixed_spec`;
this module makes the running lab match it, touching only what changed:

- a server whose configuration changed restarts with the new one (HAProxy for
  the edge window, Apache and sshd for the slow key lookup, the git service for
  the backlog: git daemon's fixed backlog of 5 is replaced by the ``--inetd``
  socket the fix names);
- the server namespace's ``net.ipv4.tcp_rmem`` max is raised;
- the router's FORWARD rules are rebuilt without the loss or the reset rule, or with the
  MSS clamp below a path-MTU black hole (:mod:`gitnetdiag.lab.pmtufix`);
- the pre-receive hook is removed;
- sshd restarts with ``MaxStartups 100:30:300`` (``ssh-maxstartups``);
- Apache's body limit and the edge's 411 rule are removed, the edge's ``timeout server``
  raised (:mod:`gitnetdiag.lab.httpfaults`);
- the nginx edge restarts with ``proxy_buffering off`` (``edge-response-buffering``);
- HAProxy restarts without ``tune.sndbuf.client`` (``edge-sndbuf-clamp``);
- the client's ``tcp_rmem`` and the server's ``tcp_wmem`` go back to Linux's defaults, the
  repository is repacked with a bitmap, the client's git leaves its CPU-starved cgroup and
  its HTTP/2 shim (:mod:`gitnetdiag.lab.hostfix`).

A restarted server goes back to the servers' CPU-starved cgroup while
``slow-pack-generation`` stays (its fix repacks; it does not idle a busy server).

The namespaces, keys, CA and repository stay: every endpoint URL is unchanged,
so a run before and a run after the fix compare like for like.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from gitnetdiag.lab import (
    clonefaults,
    edgefaults,
    edges,
    fetchlab,
    hostfix,
    httpfaults,
    manager,
    pmtufix,
    servers,
)
from gitnetdiag.lab.config import LabPaths
from gitnetdiag.lab.manager import Progress
from gitnetdiag.lab.netns import Namespaces
from gitnetdiag.lab.spec import (
    FIXED_MAX_STARTUPS,
    LARGE_WINDOW,
    LabSpec,
    build_spec,
    fixed_spec,
)
from gitnetdiag.model.lab.state import PORT_SSH, LabState, load_state, save_state
from gitnetdiag.proc import require_root


def spec_of(state: LabState) -> LabSpec:
    """The settings a running lab was built with, from its saved state."""
    spec = build_spec(
        instance=state.instance, faults=list(state.faults), rtt_ms=state.rtt_ms,
        loss=state.loss, rate=state.rate, edge_h2_window=state.edge_h2_window,
        apache_h2_window=state.apache_h2_window, edge=state.edge,
        hook_delay_s=state.hook_delay_s, auth_delay_s=state.auth_delay_s,
        reset_after_bytes=state.reset_after_bytes if state.reset_port is not None else None)
    # sshd's MaxStartups is not in the state: a fixed ssh-maxstartups keeps its fix when
    # another fix restarts sshd.
    startups = FIXED_MAX_STARTUPS if "ssh-maxstartups" in state.fixed else spec.sshd_max_startups
    return replace(spec, fixed=tuple(state.fixed), sshd_max_startups=startups)


def _roles_to_restart(before: LabSpec, after: LabSpec) -> tuple[str, ...]:
    roles = []
    if after.auth_delay_s != before.auth_delay_s:
        roles += ["apache", "sshd"]
    if after.sshd_max_startups != before.sshd_max_startups:
        roles.append("sshd")
    if (after.edge_h2_window, after.edge_health_checks, after.edge_response_buffering,
            after.edge_sndbuf_client) != (
            before.edge_h2_window, before.edge_health_checks, before.edge_response_buffering,
            before.edge_sndbuf_client):
        roles.append("edge")
    if (after.git_backlog, after.real_git_daemon) != (before.git_backlog, before.real_git_daemon):
        roles.append("git")
    if clonefaults.edge_server_timeout_s(after) != clonefaults.edge_server_timeout_s(before):
        roles.append("edge")
    return tuple(dict.fromkeys([*roles, *httpfaults.roles_to_restart(before, after)]))


def _ready_urls(state: LabState, roles: tuple[str, ...], spec: LabSpec) -> list[str]:
    urls = {"apache": state.endpoints.https_direct, "edge": state.endpoints.https_edge,
            "sshd": state.endpoints.ssh, "git": state.endpoints.git}
    blocked = {"sshd"} if spec.reset_port == PORT_SSH else set()
    return [urls[role] for role in roles if role not in blocked]


def fix(instance: str, faults: Sequence[str] | None = None, *, h2_window: int = LARGE_WINDOW,
        progress: Progress | None = None) -> tuple[LabState, list[str]]:
    """Apply the fixes; returns the new state and what was changed, one line each."""
    require_root("gitnetdiag lab fix")
    say = progress or (lambda _msg: None)
    state = load_state(instance)
    before = spec_of(state)
    after = fixed_spec(before, faults, h2_window=h2_window)
    ns = Namespaces.of(instance)
    paths = LabPaths(root=Path(state.state_dir))
    done: list[str] = []
    if after.server_rmem_max != before.server_rmem_max and after.server_rmem_max is not None:
        manager.set_server_rmem(ns, after.server_rmem_max)
        done.append(f"server net.ipv4.tcp_rmem max raised to {after.server_rmem_max} B")
    if after.server_window_scaling and not before.server_window_scaling:
        servers.nsexec(ns.server, "sysctl", "-qw", "net.ipv4.tcp_window_scaling=1")
        done.append("server net.ipv4.tcp_window_scaling set to 1")
    if (after.loss, after.reset_port, after.syn_drop_share) != (
            before.loss, before.reset_port, before.syn_drop_share) or pmtufix.fixed_now(
            before, after):
        say("router: rebuilding the FORWARD rules")
        for table in ("filter", "mangle"):
            servers.nsexec(ns.router, "iptables-legacy", "-w", "5", "-t", table, "-F", "FORWARD")
        manager.router_rules(ns, after)
        done += pmtufix.fix_notes(before, after)
        if after.loss != before.loss:
            done.append(f"router loss {before.loss:.1%} removed")
        if after.syn_drop_share != before.syn_drop_share:
            done.append(f"router SYN drop ({before.syn_drop_share:.0%}) removed")
        if after.reset_port != before.reset_port:
            done.append(f"router TCP reset rule on port {before.reset_port} removed")
    if after.hook_delay_s != before.hook_delay_s:
        (paths.repo / "hooks" / "pre-receive").unlink(missing_ok=True)
        done.append("pre-receive hook removed")
    roles = _roles_to_restart(before, after)
    pids = dict(state.pids)
    if roles:
        say("restarting " + ", ".join(roles))
        files = servers.write_configs(paths, after)
        keys = [after.edge if role == "edge" else role for role in roles]
        manager.stop_pids([pids[key] for key in keys if key in pids])
        cgroup = (fetchlab.server_cpu_group(paths.root, instance)
                  if after.server_cpu_share is not None else state.storage_cgroup)
        pids.update(servers.start_servers(ns, paths, after, files, roles, cgroup=cgroup))
        servers.wait_listening(ns, paths, {key: pids[key] for key in keys}, after.edge)
    if after.edge_h2_window != before.edge_h2_window and "edge" in roles:
        done.append(f"edge {edges.EDGE_WINDOW_SETTING[after.edge]} {before.edge_h2_window} -> "
                    f"{after.edge_h2_window}")
    if after.edge_health_checks != before.edge_health_checks:
        done.append("edge pool health-checked (option httpchk, check on each server line): "
                    "the failing member is taken out")
    if "git" in roles:
        done.append(f"git:// listen backlog {before.git_backlog} -> {after.git_backlog}")
    if after.sshd_max_startups != before.sshd_max_startups:
        done.append(f"sshd MaxStartups {before.sshd_max_startups} -> {after.sshd_max_startups}")
    if after.auth_delay_s != before.auth_delay_s:
        done.append("slow key lookup and ref advertisement delay removed")
    if before.edge_response_buffering and not after.edge_response_buffering:
        done.append("nginx edge proxy_buffering off: responses streamed, not spilled to its "
                    "temp files")
    if before.edge_sndbuf_client is not None and after.edge_sndbuf_client is None:
        done.append(f"HAProxy edge restarted without {edgefaults.EDGE_SNDBUF_SETTING} "
                    f"{before.edge_sndbuf_client}: the kernel autotunes its send buffers")
    done += httpfaults.fix_notes(before, after) + clonefaults.fix_notes(before, after)
    client_path, host_done = hostfix.apply(state, before, after)
    done += host_done
    new_state = replace(
        state, faults=list(after.faults), fixed=list(after.fixed), loss=after.loss,
        edge_h2_window=after.edge_h2_window, hook_delay_s=after.hook_delay_s,
        auth_delay_s=after.auth_delay_s, reset_port=after.reset_port,
        reset_after_bytes=after.reset_after_bytes, pids=pids, client_path=client_path)
    save_state(new_state)
    if roles:
        say("waiting until the restarted servers answer git ls-remote")
        manager.wait_ready(new_state, urls=_ready_urls(new_state, roles, after))
    return new_state, done
