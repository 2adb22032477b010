"""The fetch faults' fixes (pure settings, the client's wrappers, the edge's restart)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitnetdiag.lab import edges, fix, h2window, hostfix, slowclient
from gitnetdiag.lab.config import LabPaths
from gitnetdiag.lab.fetchlab import FETCH_FAULT_FIXED_SETTINGS, LINUX_TCP_RMEM, LINUX_TCP_WMEM
from gitnetdiag.lab.spec import (
    FETCH_FAULT_CULPRIT,
    SERVER_CPU_SHARE,
    build_spec,
    fixed_spec,
)


def test_every_fetch_fault_has_a_fix() -> None:
    assert set(FETCH_FAULT_FIXED_SETTINGS) == set(FETCH_FAULT_CULPRIT)


@pytest.mark.parametrize(("fault", "field", "faulty", "fixed"), [
    ("client-rmem-clamp", "client_rmem", (4096, 32768, 65536), (4096, 131072, 6291456)),
    ("server-sndbuf-clamp", "server_wmem", (4096, 16384, 65536), (4096, 16384, 4194304)),
    ("slow-pack-generation", "repository_packed", False, True),
    ("client-index-cpu", "client_cpu_share", 0.05, None),
    ("client-h2-window", "client_h2_window", 65535, None),
    ("edge-response-buffering", "edge_response_buffering", True, False),
    ("edge-sndbuf-clamp", "edge_sndbuf_client", 32768, None),
])
def test_fixed_spec_of_each_fetch_fault(fault: str, field: str, faulty: object,
                                        fixed: object) -> None:
    """The knob goes to what the culprit's fix names; the history to clone stays."""
    spec = build_spec(instance="a", faults=[fault])
    after = fixed_spec(spec)
    assert getattr(spec, field) == faulty and getattr(after, field) == fixed
    assert after.faults == ("healthy",) and after.fixed == (fault,)
    assert after.fetch_history == spec.fetch_history is not None
    assert after.edge == spec.edge


def test_linux_defaults_are_the_kernel_documentation_s() -> None:
    """Documentation/networking/ip-sysctl.rst: tcp_rmem 4096 131072 6291456, tcp_wmem
    4096 16384 4194304."""
    assert LINUX_TCP_RMEM == (4096, 131072, 6291456) and LINUX_TCP_WMEM == (4096, 16384, 4194304)


def test_repacking_leaves_the_busy_server_busy() -> None:
    """The fix names a repack, not more CPU: the servers' quota stays."""
    after = fixed_spec(build_spec(instance="a", faults=["slow-pack-generation"]))
    assert after.repository_packed and after.server_cpu_share == SERVER_CPU_SHARE


def test_only_the_edge_restarts_and_with_proxy_buffering_off() -> None:
    spec = build_spec(instance="a", faults=["edge-response-buffering"])
    after = fixed_spec(spec)
    assert fix._roles_to_restart(spec, after) == ("edge",)
    conf = edges.nginx_conf(LabPaths(root=Path("/x")), after, server_ip="198.18.2.2", user="u")
    assert "proxy_buffering off;" in conf
    before = edges.nginx_conf(LabPaths(root=Path("/x")), spec, server_ip="198.18.2.2", user="u")
    assert "proxy_buffering" not in before
    sndbuf = build_spec(instance="a", faults=["edge-sndbuf-clamp"])
    assert fix._roles_to_restart(sndbuf, fixed_spec(sndbuf)) == ("edge",)
    for fault in set(FETCH_FAULT_FIXED_SETTINGS) - {"edge-response-buffering",
                                                   "edge-sndbuf-clamp"}:
        spec = build_spec(instance="a", faults=[fault])
        assert fix._roles_to_restart(spec, fixed_spec(spec)) == (), fault


def test_client_path_of_each_client_fix(tmp_path: Path) -> None:
    both = build_spec(instance="a", faults=["client-index-cpu", "client-h2-window"])
    current = str(h2window.bin_dir(tmp_path))
    unchanged = hostfix.client_path(tmp_path, current, both, both)
    assert unchanged == (current, [])

    only_cpu = build_spec(instance="a", faults=["client-index-cpu"])
    path, done = hostfix.client_path(tmp_path, "x", only_cpu, fixed_spec(only_cpu))
    assert path == "" and len(done) == 1 and "5% of one core" in done[0]

    path, done = hostfix.client_path(tmp_path, current, both,
                                     fixed_spec(both, ["client-h2-window"]))
    assert path == str(slowclient.bin_dir(tmp_path)) and "65535 B" in done[0]

    path, done = hostfix.client_path(tmp_path, current, both,
                                     fixed_spec(both, ["client-index-cpu"]))
    wrapper = (Path(path) / "git").read_text()
    assert path == current and str(h2window.shim_path(tmp_path)) in wrapper
    assert f"exec {slowclient.real_git()} " in wrapper and "client-bin" not in wrapper
