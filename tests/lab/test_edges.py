"""The lab's TLS edges: which edge a spec picks and what each edge's config says (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitnetdiag.errors import UsageError
from gitnetdiag.lab import edges
from gitnetdiag.lab.config import LabPaths
from gitnetdiag.lab.spec import EDGES, LARGE_WINDOW, build_spec

PATHS = LabPaths(root=Path("/x"))
IP = "198.18.2.2"


def test_edge_defaults_to_haproxy_and_edge_buffering_to_nginx() -> None:
    assert build_spec(instance="a", faults=[]).edge == "haproxy"
    buffered = build_spec(instance="a", faults=["edge-buffering"])
    assert (buffered.edge, buffered.edge_buffering) == ("nginx", True)
    assert buffered.edge_h2_window == LARGE_WINDOW  # the window is not what this fault shows
    assert build_spec(instance="a", faults=[], edge="caddy").edge == "caddy"


def test_bad_edges_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="unknown edge"):
        build_spec(instance="a", faults=[], edge="iis")
    with pytest.raises(UsageError, match="needs the nginx edge"):
        build_spec(instance="a", faults=["edge-buffering"], edge="haproxy")


def test_nginx_default_window_has_no_window_lines_and_streams() -> None:
    """h2-small-window: nginx's own defaults; buffering off so the window alone binds."""
    small = edges.nginx_conf(PATHS, build_spec(instance="a", faults=["h2-small-window"],
                                               edge="nginx"), server_ip=IP, user="gnd-git")
    assert "http2_body_preread_size" not in small and "client_body_buffer_size" not in small
    assert "proxy_request_buffering off;" in small
    assert f"listen {IP}:8443 ssl http2;" in small
    assert "proxy_pass http://127.0.0.1:8080;" in small


def test_nginx_healthy_and_buffering_configs() -> None:
    healthy = edges.nginx_conf(PATHS, build_spec(instance="a", faults=[], edge="nginx"),
                               server_ip=IP, user="gnd-git")
    assert f"http2_body_preread_size {LARGE_WINDOW};" in healthy
    assert f"client_body_buffer_size {LARGE_WINDOW};" in healthy
    assert "proxy_request_buffering off;" in healthy
    buffered = edges.nginx_conf(PATHS, build_spec(instance="a", faults=["edge-buffering"]),
                                server_ip=IP, user="gnd-git")
    assert "proxy_request_buffering on;" in buffered


def test_caddy_and_h2o_configs_are_the_same_with_and_without_the_fault() -> None:
    """Neither has an HTTP/2 window setting in the Debian versions: nothing to make small."""
    for edge, render in (("caddy", lambda s: edges.caddyfile(PATHS, s, server_ip=IP)),
                         ("h2o", lambda s: edges.h2o_conf(PATHS, s, server_ip=IP, user="u"))):
        small = render(build_spec(instance="a", faults=["h2-small-window"], edge=edge))
        assert small == render(build_spec(instance="a", faults=[], edge=edge))
    caddy = edges.caddyfile(PATHS, build_spec(instance="a", faults=[], edge="caddy"), server_ip=IP)
    assert "admin off" in caddy and f"https://{IP}:8443" in caddy
    assert "reverse_proxy 127.0.0.1:8080" in caddy
    h2o = edges.h2o_conf(PATHS, build_spec(instance="a", faults=[], edge="h2o"), server_ip=IP,
                         user="u")
    assert "proxy.reverse.url: http://127.0.0.1:8080/" in h2o and "port: 8443" in h2o


@pytest.mark.parametrize("edge", EDGES)
def test_every_edge_runs_in_the_foreground_with_its_file(edge: str) -> None:
    config = PATHS.root / edges.edge_config_name(edge)
    argv = edges.edge_argv(edge, config)
    assert argv[0] == edges.EDGE_PROGRAMS[edge]
    assert edges.EDGE_WINDOW_SETTING[edge]  # what ``lab fix`` says it changed
    assert any(str(config) in arg for arg in argv)


def test_trafficserver_runs_privately_with_its_default_window() -> None:
    """h2-small-window: no window line (Traffic Server's protocol default, 65535 B); a
    raised window goes to proxy.config.http2.initial_window_size_in; every directory it
    writes is the instance's own."""
    small = edges.trafficserver_files(
        PATHS, build_spec(instance="a", faults=["h2-small-window"], edge="trafficserver"),
        server_ip=IP)
    records = small["records.config"]
    assert "initial_window_size_in" not in records
    assert "CONFIG proxy.config.admin.user_id STRING #-1" in records
    assert "CONFIG proxy.config.http.server_ports STRING 8443:ssl" in records
    assert small["remap.config"] == "map / http://127.0.0.1:8080/\n"
    assert f"ssl_cert_name={PATHS.server_cert}" in small["ssl_multicert.config"]
    healthy = edges.trafficserver_files(
        PATHS, build_spec(instance="a", faults=[], edge="trafficserver"), server_ip=IP)
    assert (f"CONFIG proxy.config.http2.initial_window_size_in INT {LARGE_WINDOW}"
            in healthy["records.config"])
    runroot = edges.trafficserver_runroot(PATHS)
    for key, path in edges.trafficserver_dirs(PATHS).items():
        assert f"{key}: {path}" in runroot and str(path).startswith(str(PATHS.run))
    assert edges.edge_argv("trafficserver", Path("/x/r.yaml")) == [
        "traffic_server", "--run-root=/x/r.yaml"]


def test_edge_response_buffering_is_nginx_at_its_default_with_temp_files_on_their_mount() -> None:
    """The fault leaves proxy_buffering out (nginx's default, on) and puts the temp files
    under the mount point of the throttled device; the config lint flags it; the healthy
    nginx edge streams responses and is not flagged."""
    from gitnetdiag.model.host.configlint import ConfigFile, lint_nginx_response_buffering

    spec = build_spec(instance="a", faults=["edge-response-buffering"])
    assert (spec.edge, spec.edge_response_buffering, spec.fetch_history) == (
        "nginx", True, "random")
    faulty = edges.nginx_conf(PATHS, spec, server_ip=IP, user="gnd-git")
    assert "proxy_buffering" not in faulty
    assert f"proxy_temp_path {PATHS.nginx_temp}/proxy;" in faulty
    (found,) = lint_nginx_response_buffering([ConfigFile(path="nginx.conf", text=faulty)])
    assert found.value == "on (default)"
    healthy = edges.nginx_conf(PATHS, build_spec(instance="a", faults=[], edge="nginx"),
                               server_ip=IP, user="gnd-git")
    assert "proxy_buffering off;" in healthy
    assert lint_nginx_response_buffering([ConfigFile(path="nginx.conf", text=healthy)]) == []
    with pytest.raises(UsageError, match="needs the nginx edge"):
        build_spec(instance="a", faults=["edge-response-buffering"], edge="haproxy")
    with pytest.raises(UsageError, match="throttled device"):
        build_spec(instance="a", faults=["edge-response-buffering", "slow-storage"])
