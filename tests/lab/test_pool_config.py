"""The edge-backend-errors lab fault as HAProxy configuration (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitnetdiag.errors import UsageError
from gitnetdiag.lab.config import PORT_BAD_MEMBER, LabPaths, haproxy_cfg
from gitnetdiag.lab.spec import build_spec, fixed_spec


def test_bad_pool_without_checks_and_its_fix_with_them() -> None:
    spec = build_spec(instance="a", faults=["edge-backend-errors"])
    assert spec.edge == "haproxy" and spec.edge_bad_member and not spec.edge_health_checks
    cfg = haproxy_cfg(LabPaths(root=Path("/x")), spec, server_ip="10.0.0.2")
    assert "balance roundrobin" in cfg and f"server redirector 127.0.0.1:{PORT_BAD_MEMBER}\n" in cfg
    assert "http-request redirect scheme https code 308" in cfg
    assert "check" not in cfg.replace("httpchk", "")
    fixed = fixed_spec(spec)
    assert fixed.edge_health_checks and fixed.faults == ("healthy",)
    cfg = haproxy_cfg(LabPaths(root=Path("/x")), fixed, server_ip="10.0.0.2")
    assert "option httpchk GET /git/lab.git/HEAD" in cfg
    assert "http-check expect status 200" in cfg
    assert cfg.count(" check inter 500ms fall 1 rise 1") == 2


def test_healthy_edge_has_one_member() -> None:
    cfg = haproxy_cfg(LabPaths(root=Path("/x")), build_spec(instance="a", faults=["healthy"]),
                      server_ip="10.0.0.2")
    assert "redirector" not in cfg and "balance" not in cfg


def test_bad_pool_needs_the_haproxy_edge() -> None:
    with pytest.raises(UsageError, match="needs the haproxy edge"):
        build_spec(instance="a", faults=["edge-backend-errors"], edge="nginx")
