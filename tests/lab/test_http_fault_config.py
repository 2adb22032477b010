"""Issue 33's lab faults as server configuration, and their fixes (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitnetdiag.errors import UsageError
from gitnetdiag.lab import httpfaults
from gitnetdiag.lab.config import LabPaths, apache_conf, haproxy_cfg
from gitnetdiag.lab.fix import _roles_to_restart
from gitnetdiag.lab.httpfaults import (
    BODY_LIMIT_BYTES,
    EDGE_IDLE_HOOK_S,
    EDGE_IDLE_TIMEOUT_S,
    FIXED_EDGE_TIMEOUT_S,
    HTTP_FAULT_CULPRIT,
    HTTP_FAULTS,
    SERVER_KEEPALIVE_S,
)
from gitnetdiag.lab.spec import (
    FAULT_CULPRIT,
    FAULT_FIX_NAMES,
    FAULT_FIXED_SETTINGS,
    FAULT_PROBE_ARGS,
    FAULTS,
    LabSpec,
    build_spec,
    fixed_spec,
)

PATHS = LabPaths(root=Path("/lab"))
STREAMED_RULE = ("http-request return status 411 content-type text/plain string "
                 '"Length Required" if METH_POST !{ req.hdr(content-length) -m found }')


def _apache(spec: LabSpec) -> str:
    return apache_conf(PATHS, spec, server_ip="198.18.2.2", user="gnd-git")


def _haproxy(spec: LabSpec) -> str:
    return haproxy_cfg(PATHS, spec, server_ip="198.18.2.2")


def test_the_faults_are_in_every_lab_table_but_the_ranked_one() -> None:
    """Named, fixable, with probe args and a fix name; their culprits wait apart until the
    detectors (and recorded runs) exist."""
    assert set(HTTP_FAULTS) == set(HTTP_FAULT_CULPRIT) == {
        "request-body-limit", "edge-idle-timeout", "streamed-body-refused"}
    for fault, culprit in HTTP_FAULT_CULPRIT.items():
        assert fault in FAULTS and fault in FAULT_FIXED_SETTINGS and fault == culprit
        assert fault not in FAULT_CULPRIT
        assert "--size" in FAULT_PROBE_ARGS[fault]
    assert FAULT_FIX_NAMES["request-body-limit"] == "LimitRequestBody"
    assert FAULT_FIX_NAMES["edge-idle-timeout"] == "timeout server"
    assert FAULT_FIX_NAMES["streamed-body-refused"] == "http.postBuffer"


def test_request_body_limit_on_the_git_location_and_its_fix() -> None:
    spec = build_spec(instance="a", faults=["request-body-limit"])
    assert spec.edge == "haproxy" and BODY_LIMIT_BYTES == 1024 * 1024
    text = _apache(spec)
    location = text.split("<Location /git/>")[1].split("</Location>")[0]
    assert f"LimitRequestBody {BODY_LIMIT_BYTES}" in location
    assert text.index("<Location /git/>") < text.index("<VirtualHost")  # every vhost
    fixed = fixed_spec(spec)
    assert fixed.faults == ("healthy",) and fixed.fixed == ("request-body-limit",)
    assert "<Location" not in _apache(fixed) and "LimitRequestBody 0" in _apache(fixed)
    assert _roles_to_restart(spec, fixed) == ("apache",)
    assert httpfaults.fix_notes(spec, fixed) == [
        f"Apache LimitRequestBody {BODY_LIMIT_BYTES} on the git location removed"]
    # Under auth too: two Location blocks for /git/, merged by Apache.
    both = _apache(build_spec(instance="a", faults=["request-body-limit", "auth"]))
    assert both.count("<Location /git/>") == 2 and "Require valid-user" in both


def test_edge_idle_timeout_below_the_silent_hook_and_its_fix() -> None:
    spec = build_spec(instance="a", faults=["edge-idle-timeout"])
    # The edge gives up well inside the hook's silence, which no keepalive breaks.
    assert 2 * EDGE_IDLE_TIMEOUT_S <= EDGE_IDLE_HOOK_S < SERVER_KEEPALIVE_S
    assert spec.hook_delay_s == EDGE_IDLE_HOOK_S
    assert f"    timeout server {EDGE_IDLE_TIMEOUT_S}s\n" in _haproxy(spec)
    assert httpfaults.repo_config(spec) == [("receive.keepAlive", str(SERVER_KEEPALIVE_S))]
    fixed = fixed_spec(spec)
    assert f"    timeout server {FIXED_EDGE_TIMEOUT_S}s\n" in _haproxy(fixed)
    assert FIXED_EDGE_TIMEOUT_S > EDGE_IDLE_HOOK_S
    assert fixed.hook_delay_s == EDGE_IDLE_HOOK_S  # the hook stays: only the edge changes
    assert httpfaults.repo_config(fixed) == httpfaults.repo_config(spec)
    assert _roles_to_restart(spec, fixed) == ("edge",)
    assert (f"timeout server {EDGE_IDLE_TIMEOUT_S} s -> {FIXED_EDGE_TIMEOUT_S} s"
            in httpfaults.fix_notes(spec, fixed)[0])
    healthy = build_spec(instance="a", faults=[])
    assert "    timeout server 600s\n" in _haproxy(healthy) and healthy.hook_delay_s == 0
    assert httpfaults.repo_config(healthy) == []
    # slow-hook's own delay wins when both are asked for.
    assert build_spec(instance="a", faults=["edge-idle-timeout", "slow-hook"],
                      hook_delay_s=2.0).hook_delay_s == 2.0


def test_streamed_body_refused_rule_and_its_fix() -> None:
    spec = build_spec(instance="a", faults=["streamed-body-refused"])
    text = _haproxy(spec)
    frontend = text.split("frontend edge")[1].split("\nbackend apache")[0]
    assert STREAMED_RULE in frontend
    assert frontend.index("http-request return") < frontend.index("default_backend")
    fixed = fixed_spec(spec)
    assert "411" not in _haproxy(fixed)
    assert _roles_to_restart(spec, fixed) == ("edge",)
    assert "411" in httpfaults.fix_notes(spec, fixed)[0]
    assert "411" not in _haproxy(build_spec(instance="a", faults=[]))


def test_every_fix_at_once_restarts_each_server_once() -> None:
    spec = build_spec(instance="a", faults=[*HTTP_FAULTS, "slow-auth", "h2-small-window"])
    fixed = fixed_spec(spec)
    assert sorted(_roles_to_restart(spec, fixed)) == ["apache", "edge", "sshd"]
    assert len(httpfaults.fix_notes(spec, fixed)) == 3


@pytest.mark.parametrize("fault", httpfaults.HAPROXY_FAULTS)
def test_the_edge_faults_need_haproxy(fault: str) -> None:
    with pytest.raises(UsageError, match=f"the {fault} fault needs the haproxy edge"):
        build_spec(instance="a", faults=[fault], edge="nginx")
    assert build_spec(instance="a", faults=["request-body-limit"], edge="nginx").edge == "nginx"
