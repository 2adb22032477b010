"""Issue 42's edge faults as server configuration (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitnetdiag.errors import UsageError
from gitnetdiag.lab.config import LabPaths, haproxy_cfg
from gitnetdiag.lab.edgefaults import (
    DEAD_BACKEND_PORT,
    EDGE_FAULT_CULPRIT,
    EDGE_FAULTS,
    EDGE_SNDBUF_CLIENT_BYTES,
    edge_unanswered,
)
from gitnetdiag.lab.spec import (
    FAULT_CULPRIT,
    FAULT_FIX_NAMES,
    FAULT_FIXED_SETTINGS,
    FAULT_PROBE_ARGS,
    FAULTS,
    FETCH_FAULT_CULPRIT,
    FETCH_FAULT_FIX_NAMES,
    build_spec,
    fixed_spec,
)
from gitnetdiag.model.lab.state import PORT_HTTP_BACKEND


def _haproxy(faults: list[str]) -> str:
    return haproxy_cfg(LabPaths(root=Path("/lab")), build_spec(instance="a", faults=faults),
                       server_ip="198.18.2.2")


def test_the_faults_are_in_the_lab_tables_but_the_ranked_one() -> None:
    assert set(EDGE_FAULTS) == set(EDGE_FAULT_CULPRIT) == {"edge-no-backend"}
    for fault, culprit in EDGE_FAULT_CULPRIT.items():
        assert fault in FAULTS and fault == culprit and fault not in FAULT_CULPRIT
        assert "ssh" in FAULT_PROBE_ARGS[fault][1], "SSH shows the server behind works"
        assert fault not in FAULT_FIXED_SETTINGS, "the fix is a working backend, not a knob"
    assert FAULT_FIX_NAMES["edge-no-backend"] == "option httpchk"


def test_the_edge_backend_points_at_a_dead_port_marked_down() -> None:
    dead = _haproxy(["edge-no-backend"])
    assert (f"    server apache 127.0.0.1:{DEAD_BACKEND_PORT} check inter 500ms fall 1 rise 1"
            in dead.splitlines())
    assert f"127.0.0.1:{PORT_HTTP_BACKEND}" not in dead, "no working backend at all"
    healthy = _haproxy([])
    assert f"    server apache 127.0.0.1:{PORT_HTTP_BACKEND}" in healthy.splitlines()
    assert str(DEAD_BACKEND_PORT) not in healthy
    assert edge_unanswered(("edge-no-backend",)) and not edge_unanswered(("healthy",))


def test_it_needs_the_haproxy_edge_and_has_no_fix_to_apply() -> None:
    with pytest.raises(UsageError, match="needs the haproxy edge"):
        build_spec(instance="a", faults=["edge-no-backend"], edge="nginx")
    with pytest.raises(UsageError, match="no fault with a fix"):
        fixed_spec(build_spec(instance="a", faults=["edge-no-backend"]))


def test_the_edge_send_buffer_is_haproxy_s_global_setting_and_its_fix_removes_it() -> None:
    """``edge-sndbuf-clamp``: ``tune.sndbuf.client`` in HAProxy's ``global`` section, a
    clone to fetch, ranked as a download's send buffer; the fix leaves the line out."""
    lines = _haproxy(["edge-sndbuf-clamp"]).splitlines()
    line = f"    tune.sndbuf.client {EDGE_SNDBUF_CLIENT_BYTES}"
    assert line in lines
    assert lines.index("global") < lines.index(line) < lines.index("defaults")
    assert "tune.sndbuf" not in _haproxy([])
    spec = build_spec(instance="a", faults=["edge-sndbuf-clamp"])
    assert spec.fetch_history == "random" and spec.server_wmem is None
    assert FETCH_FAULT_CULPRIT["edge-sndbuf-clamp"] == "server-send-buffer"
    assert FETCH_FAULT_FIX_NAMES["edge-sndbuf-clamp"] == "tune.sndbuf.client"
    fixed = fixed_spec(spec)
    assert fixed.edge_sndbuf_client is None and fixed.fixed == ("edge-sndbuf-clamp",)
    assert "tune.sndbuf" not in haproxy_cfg(LabPaths(root=Path("/lab")), fixed,
                                            server_ip="198.18.2.2")
    with pytest.raises(UsageError, match="needs the haproxy edge"):
        build_spec(instance="a", faults=["edge-sndbuf-clamp"], edge="nginx")
