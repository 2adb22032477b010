"""The lab status view: endpoints, keys and which processes run."""

from __future__ import annotations

from gitnetdiag.model.lab.state import LabEndpoints, LabState
from gitnetdiag.report.lab import render_lab_status


def _state() -> LabState:
    return LabState(
        instance="t1", client_ns="gnd-t1-client", router_ns="gnd-t1-router",
        server_ns="gnd-t1-server", client_ip="198.18.1.2", server_ip="198.18.2.2",
        rtt_ms=40.0, loss=0.0, rate=None, faults=["h2-small-window"],
        endpoints=LabEndpoints(https_edge="https://198.18.2.2:8443/git/lab.git",
                               https_direct="https://198.18.2.2:9443/git/lab.git",
                               ssh="ssh://git@198.18.2.2:2222/srv/lab.git",
                               git="git://198.18.2.2:9418/lab.git"),
        ca_file="/tmp/ca.pem", ssh_key="/tmp/key", ssh_known_hosts="/tmp/known_hosts",
        ssh_user="git", repo_path="/srv/lab.git", edge_h2_window=65535,
        apache_h2_window=65535, hook_delay_s=0.0, auth_delay_s=0.0, reset_port=None,
        pids={"haproxy": 1, "sshd": 2}, state_dir="/tmp/state", http_credential_store="",
    )


def test_status_lists_endpoints_and_processes_without_markup_left_over() -> None:
    text = render_lab_status(_state(), alive={"haproxy": True, "sshd": False}, width=120)
    assert "gitnetdiag lab 't1'" in text
    assert "https://198.18.2.2:8443/git/lab.git  (HAProxy, h2 window 65535)" in text
    assert "haproxy up, sshd DOWN" in text
    assert "[red]" not in text and "\x1b[" not in text
    assert "\x1b[" in render_lab_status(_state(), alive={"sshd": False}, color=True)
