"""The fixes ``gitnetdiag lab fix`` applies to the lab's hosts, not to a server's config.

What each fault's fix sets is :func:`gitnetdiag.lab.spec.fixed_spec`'s; this module makes
the client and server namespaces match it:

- the client's ``net.ipv4.tcp_rmem`` and the server's ``net.ipv4.tcp_wmem`` back to
  Linux's defaults (each connection opened after takes them: the probe's next clone);
- the repository repacked into one pack with a reachability bitmap
  (:func:`gitnetdiag.lab.fetchlab.repack`);
- the client's ``git`` wrappers (``client_path``): out of the CPU-starved cgroup, without
  the shim that holds libcurl's HTTP/2 window small. A wrapper that stays runs the real git
  next; the files and the cgroup stay until ``lab down``, unused.
"""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.lab import fetchlab, h2window, slowclient
from gitnetdiag.lab.netns import Namespaces
from gitnetdiag.lab.servers import nsexec
from gitnetdiag.lab.spec import LabSpec
from gitnetdiag.model.lab.state import LabState


def _sysctl_value(values: tuple[int, int, int] | None) -> str:
    return " ".join(map(str, values)) if values is not None else "the kernel's"


def _buffers(ns: Namespaces, before: LabSpec, after: LabSpec) -> list[str]:
    done = []
    if after.client_rmem != before.client_rmem and after.client_rmem is not None:
        nsexec(ns.client, "sysctl", "-qw", f"net.ipv4.tcp_rmem={_sysctl_value(after.client_rmem)}")
        done.append(f"client net.ipv4.tcp_rmem {_sysctl_value(before.client_rmem)} -> "
                    f"{_sysctl_value(after.client_rmem)} (Linux's default)")
    if after.server_wmem != before.server_wmem and after.server_wmem is not None:
        nsexec(ns.server, "sysctl", "-qw", f"net.ipv4.tcp_wmem={_sysctl_value(after.server_wmem)}")
        done.append(f"server net.ipv4.tcp_wmem {_sysctl_value(before.server_wmem)} -> "
                    f"{_sysctl_value(after.server_wmem)} (Linux's default)")
    return done


def client_path(root: Path, current: str, before: LabSpec, after: LabSpec
                ) -> tuple[str, list[str]]:
    """The client's wrapper directory once ``after``'s client faults are all that is left
    ("" for the real git), and what changed."""
    cpu_gone = before.client_cpu_share is not None and after.client_cpu_share is None
    shim_gone = before.client_h2_window is not None and after.client_h2_window is None
    if not (cpu_gone or shim_gone):
        return current, []
    done = []
    if cpu_gone:
        done.append(f"client git out of its cgroup of {before.client_cpu_share:.0%} of one core "
                    "(its wrapper no longer first on PATH)")
    if shim_gone:
        done.append(f"client git without the LD_PRELOAD shim that held its HTTP/2 window at "
                    f"{before.client_h2_window} B (libcurl's own window)")
    if after.client_h2_window is not None:  # the shim stays, now in front of the real git
        shim = h2window.shim_path(root)
        return slowclient.install_wrapper(
            h2window.bin_dir(root), h2window.git_wrapper(shim, slowclient.real_git())), done
    if after.client_cpu_share is not None:
        return str(slowclient.bin_dir(root)), done
    return "", done


def apply(state: LabState, before: LabSpec, after: LabSpec) -> tuple[str, list[str]]:
    """Make the hosts match ``after``; returns the client's new ``client_path`` and what
    was changed, one line each."""
    done = _buffers(Namespaces.of(state.instance), before, after)
    if after.repository_packed and not before.repository_packed:
        fetchlab.repack(Path(state.repo_path))
        done.append("server repository repacked: git repack -adb (one pack with a "
                    "reachability bitmap), repack.writeBitmaps true; the servers' CPU quota "
                    "stays")
    path, wrappers = client_path(Path(state.state_dir), state.client_path, before, after)
    return path, done + wrappers
