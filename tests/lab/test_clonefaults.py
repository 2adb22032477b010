"""Issue 42's clone faults as lab settings: the HAProxy edge's timeout below git's default
uploadpack.keepAlive, the server's silent pack preparation on the HTTPS path (before or
after the response headers) and on SSH, and the fix that raises the edge's timeout."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitnetdiag.errors import UsageError
from gitnetdiag.lab import clonefaults, config
from gitnetdiag.lab.clonefaults import (
    CLONE_EDGE_TIMEOUT_S,
    CLONE_FAULT_CULPRIT,
    CLONE_FAULTS,
    FIXED_CLONE_EDGE_TIMEOUT_S,
    SILENT_PACK_S,
)
from gitnetdiag.lab.config import LabPaths
from gitnetdiag.lab.spec import FAULT_FIX_NAMES, FAULTS, build_spec, fixed_spec

PATHS = LabPaths(root=Path("/run/gitnetdiag-lab/t"))
KEEPALIVE_DEFAULT_S = 5
"""git's uploadpack.keepAlive default (git-config)."""


def _edge(fault: str) -> str:
    return config.haproxy_cfg(PATHS, build_spec(instance="t", faults=[fault]),
                              server_ip="198.18.2.2")


@pytest.mark.parametrize("fault", sorted(CLONE_FAULTS))
def test_each_clone_fault_cuts_below_the_first_keepalive(fault: str) -> None:
    assert fault in FAULTS and CLONE_FAULT_CULPRIT[fault] == "edge-idle-timeout"
    assert FAULT_FIX_NAMES[fault] == "timeout server"
    assert CLONE_EDGE_TIMEOUT_S < KEEPALIVE_DEFAULT_S and SILENT_PACK_S >= 2 * CLONE_EDGE_TIMEOUT_S
    spec = build_spec(instance="t", faults=[fault])
    assert spec.edge == "haproxy" and spec.fetch_history == "random"
    assert f"timeout server {CLONE_EDGE_TIMEOUT_S}s" in _edge(fault)
    sshd = config.sshd_config(PATHS, spec, server_ip="198.18.2.2", user="gnd-git")
    assert (f"SetEnv GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=uploadpack.packObjectsHook "
            f"GIT_CONFIG_VALUE_0={PATHS.bin}/slow-pack-objects") in sshd
    with pytest.raises(UsageError, match="needs the haproxy edge"):
        build_spec(instance="t", faults=[fault], edge="nginx")


def test_after_the_headers_the_hook_makes_pack_objects_silent() -> None:
    cgi = config.http_backend_cgi(PATHS, clonefaults.cgi_lines(
        build_spec(instance="t", faults=["clone-edge-cut"]), PATHS.bin))
    assert "export GIT_CONFIG_KEY_0='uploadpack.packObjectsHook'" in cgi
    assert cgi.index("packObjectsHook") < cgi.index("exec /usr/lib/git-core/git-http-backend")
    assert f"sleep {SILENT_PACK_S:g}\nexec \"$@\"" in clonefaults.slow_pack_script()


def test_before_the_headers_only_a_fetch_command_waits() -> None:
    """ls-refs is a POST git-upload-pack too (git ls-remote, the lab's readiness check): the
    CGI reads the small body and waits on a fetch command only, then hands the body on."""
    lines = clonefaults.cgi_lines(build_spec(instance="t", faults=["clone-edge-504"]), PATHS.bin)
    assert '"POST "*/git-upload-pack)' in lines
    assert f'grep -aq "command=fetch" "$body" && sleep {SILENT_PACK_S:g}' in lines
    assert 'exec 0<"$body"' in lines and "packObjectsHook" not in lines
    healthy = build_spec(instance="t", faults=[])
    assert clonefaults.cgi_lines(healthy, PATHS.bin) == ""
    assert clonefaults.sshd_lines(healthy, PATHS.bin) == ""
    assert "timeout server 600s" in config.haproxy_cfg(PATHS, healthy, server_ip="198.18.2.2")


@pytest.mark.parametrize("fault", sorted(CLONE_FAULTS))
def test_the_fix_raises_the_edge_timeout_and_keeps_the_silence(fault: str) -> None:
    before = build_spec(instance="t", faults=[fault])
    after = fixed_spec(before)
    assert after.fixed == (fault,) and after.faults == ("healthy",)
    assert f"timeout server {FIXED_CLONE_EDGE_TIMEOUT_S}s" in config.haproxy_cfg(
        PATHS, after, server_ip="198.18.2.2")
    assert clonefaults.cgi_lines(after, PATHS.bin) == clonefaults.cgi_lines(before, PATHS.bin)
    assert clonefaults.fix_notes(before, after) == [
        f"edge timeout server {CLONE_EDGE_TIMEOUT_S} s -> {FIXED_CLONE_EDGE_TIMEOUT_S} s (the "
        f"server's {SILENT_PACK_S:g} s silent pack preparation stays)"]
